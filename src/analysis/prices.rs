//! Device prices for the cross-hardware report's perf per dollar: the `[prices]` table of
//! `stackbench.toml`.
//!
//! ```toml
//! [prices]
//! basis = "hour"        # "hour": rental price per device-hour; "unit": purchase price per device
//! currency = "USD"
//! [prices.devices]
//! "NVIDIA H100 80GB HBM3" = 2.49
//! "AMD EPYC" = 0.05
//! ```
//!
//! Keys are device kinds as the system probe names them (the GPU's name, or the CPU model
//! for CPU figures). One basis for the whole table, so every perf-per-dollar figure in a
//! report is comparable with every other. A device without a price gets "n/a", never 0.
//!
//! This reads only the `[prices]` section of the file (other sections are ignored) and is
//! reached through [`PriceList`], so the config module can supply prices later without the
//! report changing.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A source of device prices.
pub trait PriceList {
    /// The price of one device of `kind`, on [`PriceList::basis`], if known.
    fn price(&self, kind: &str) -> Option<f64>;
    /// `USD per device-hour`, `USD per device`: how to read every price.
    fn basis(&self) -> String;
}

/// How a price is meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriceBasis {
    Hour,
    Unit,
}

/// The `[prices]` table.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub basis: PriceBasis,
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(default)]
    pub devices: BTreeMap<String, f64>,
}

fn default_currency() -> String {
    "USD".into()
}

/// Why a prices file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read prices from {}: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: the [prices] table is not valid: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: price of '{device}' is {value}: a price must be a positive number", path.display())]
    NotPositive {
        path: PathBuf,
        device: String,
        value: f64,
    },
}

#[derive(Deserialize)]
struct File {
    prices: Option<Prices>,
}

impl Prices {
    /// The `[prices]` table of `text` (read from `path`, named in errors); `None` when the
    /// file has no such table.
    pub fn parse(text: &str, path: &Path) -> Result<Option<Prices>, PricesError> {
        let file: File = toml::from_str(text).map_err(|error| PricesError::Parse {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        if let Some(prices) = &file.prices {
            for (device, &value) in &prices.devices {
                if !(value.is_finite() && value > 0.0) {
                    return Err(PricesError::NotPositive {
                        path: path.to_path_buf(),
                        device: device.clone(),
                        value,
                    });
                }
            }
        }
        Ok(file.prices)
    }

    /// Reads `path`; a missing file is no prices, not an error (every default works without it).
    pub fn load(path: &Path) -> Result<Option<Prices>, PricesError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Prices::parse(&text, path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(PricesError::Read {
                path: path.to_path_buf(),
                error,
            }),
        }
    }
}

impl PriceList for Prices {
    fn price(&self, kind: &str) -> Option<f64> {
        self.devices.get(kind).copied()
    }

    fn basis(&self) -> String {
        match self.basis {
            PriceBasis::Hour => format!("{} per device-hour", self.currency),
            PriceBasis::Unit => format!("{} per device", self.currency),
        }
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

    #[test]
    fn reads_the_prices_table_and_ignores_other_sections() {
        let text = "[suite]\nname = \"x\"\n[prices]\nbasis = \"hour\"\n[prices.devices]\n\"NVIDIA H100 80GB HBM3\" = 2.49\n";
        let prices = Prices::parse(text, Path::new("s.toml")).unwrap().unwrap();
        assert_eq!(prices.price("NVIDIA H100 80GB HBM3"), Some(2.49));
        assert_eq!(prices.price("AMD EPYC"), None);
        assert_eq!(prices.basis(), "USD per device-hour");
    }

    #[test]
    fn bad_tables_name_the_file_and_the_problem() {
        let path = Path::new("stackbench.toml");
        let zero = "[prices]\nbasis = \"unit\"\n[prices.devices]\nA = 0.0\n";
        let error = Prices::parse(zero, path).unwrap_err().to_string();
        assert!(
            error.contains("stackbench.toml") && error.contains("'A'"),
            "{error}"
        );
        let basis = "[prices]\nbasis = \"day\"\n";
        let error = Prices::parse(basis, path).unwrap_err().to_string();
        assert!(error.contains("day"), "{error}");
        let typo = "[prices]\nbasis = \"hour\"\ndevice = {}\n";
        assert!(Prices::parse(typo, path).is_err());
        assert_eq!(Prices::parse("[other]\n", path).unwrap(), None);
    }

    #[test]
    fn a_missing_file_is_no_prices() {
        assert_eq!(
            Prices::load(Path::new("/nonexistent/stackbench.toml")).unwrap(),
            None
        );
    }
}
