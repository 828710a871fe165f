//! Device prices for the cross-hardware report's perf per dollar. The table is the
//! `[prices]` section of `stackbench.toml` ([`crate::config::prices`] documents its one
//! format); `--prices FILE` reads FILE through the config reader, so the file
//! `stackbench show`, `stackbench dashboard` and `analyze-trends hardware` take is the
//! same file every `--config` takes, checked the same way.
//!
//! The report reaches prices through [`PriceList`], so it does not depend on where they
//! came from.

use crate::config::ConfigError;
pub use crate::config::{PriceBasis, Prices};

/// A source of device prices.
pub trait PriceList {
    /// The price of one device of `kind`, on [`PriceList::basis`], if known.
    fn price(&self, kind: &str) -> Option<f64>;
    /// `USD per device-hour`, `USD per device`: how to read every price.
    fn basis(&self) -> String;
}

/// Why a prices file could not be used: the config reader's error, which names the file,
/// the line and column or the key.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl PriceList for Prices {
    fn price(&self, kind: &str) -> Option<f64> {
        self.price_for(kind)
    }

    fn basis(&self) -> String {
        self.basis_text()
    }
}

/// No prices at all: every perf-per-dollar figure is "n/a".
pub struct NoPrices;

impl PriceList for NoPrices {
    fn price(&self, _: &str) -> Option<f64> {
        None
    }

    fn basis(&self) -> String {
        "no prices given".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str, path: &Path) -> Result<Option<Prices>, ConfigError> {
        Prices::parse(text, path)
    }

    #[test]
    fn reads_the_prices_table_of_a_whole_config() {
        let text = "results_dir = \"r\"\n[gate]\nrounds = 2\n[prices]\nbasis = \"hour\"\n[prices.devices]\n\"NVIDIA H100 80GB HBM3\" = 2.49\n";
        let prices = parse(text, Path::new("s.toml")).unwrap().unwrap();
        assert_eq!(prices.price("NVIDIA H100 80GB HBM3"), Some(2.49));
        assert_eq!(prices.price("AMD EPYC"), None);
        assert_eq!(prices.basis(), "USD per device-hour");
    }

    #[test]
    fn bad_tables_name_the_file_and_the_problem() {
        let path = Path::new("stackbench.toml");
        let zero = "[prices]\nbasis = \"unit\"\n[prices.devices]\nA = 0.0\n";
        let error = parse(zero, path).unwrap_err().to_string();
        assert!(
            error.contains("stackbench.toml") && error.contains("\"A\""),
            "{error}"
        );
        let basis = "[prices]\nbasis = \"day\"\n";
        let error = parse(basis, path).unwrap_err().to_string();
        assert!(error.contains("day"), "{error}");
        let typo = "[prices]\nbasis = \"hour\"\ndevice = {}\n";
        assert!(parse(typo, path).is_err());
        // The earlier per-device format is refused, naming the key.
        let old = "[prices.cpu]\nper_hour = 0.1\n";
        let error = parse(old, path).unwrap_err().to_string();
        assert!(error.contains("cpu"), "{error}");
        assert_eq!(parse("[gate]\nrounds = 2\n", path).unwrap(), None);
    }

    #[test]
    fn a_missing_file_is_no_prices() {
        assert_eq!(
            Prices::load(Path::new("/nonexistent/stackbench.toml")).unwrap(),
            None
        );
    }
}
