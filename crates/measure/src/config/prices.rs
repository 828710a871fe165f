//! `[prices]` of `stackbench.toml`: what a device costs, for the cross-hardware report's
//! performance per dollar (`analyze-trends hardware`, `stackbench show --page hardware`).
//!
//! ```toml
//! [prices]
//! basis = "hour"        # "hour": rental price per device-hour; "unit": purchase price per device
//! currency = "USD"      # the default
//! [prices.devices]
//! "H100 80GB HBM3" = 2.50
//! "AMD EPYC" = 0.10
//! ```
//!
//! One basis and one currency for the whole table, so every perf-per-dollar figure of a
//! report is comparable with every other: a table that mixed hourly and purchase prices
//! (an earlier per-device format allowed it) could only be ranked by dropping one kind.
//! Keys are device kinds as the system probe names them (the GPU's name, or the CPU
//! model); a device takes the price of its exact name, else of the longest key its name
//! contains, ignoring case (`"H100"` prices every `NVIDIA H100 ...`). A device without a
//! price gets "n/a", never 0. This is the only reader of the table: `--prices FILE` reads
//! FILE as a whole `stackbench.toml`.

use super::{Config, ConfigError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How every price of the table is meant.
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

impl Prices {
    /// The `[prices]` table of `text` (read from `path`, named in errors), read and
    /// checked as the rest of the config is; `None` when the file has no such table.
    pub fn parse(text: &str, path: &Path) -> Result<Option<Prices>, ConfigError> {
        Ok(Config::parse(text, path)?.prices)
    }

    /// The `[prices]` table of the config file `path`; a missing file is no prices, not an
    /// error (every default works without it).
    pub fn load(path: &Path) -> Result<Option<Prices>, ConfigError> {
        if !path.exists() {
            return Ok(None);
        }
        Ok(Config::load(path)?.prices)
    }

    /// The price of `device`: its exact name, else the longest key its name contains.
    pub fn price_for(&self, device: &str) -> Option<f64> {
        if let Some(&price) = self.devices.get(device) {
            return Some(price);
        }
        let lower = device.to_lowercase();
        self.devices
            .iter()
            .filter(|(key, _)| !key.is_empty() && lower.contains(&key.to_lowercase()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, &price)| price)
    }

    /// `USD per device-hour`, `USD per device`: how to read every price.
    pub fn basis_text(&self) -> String {
        match self.basis {
            PriceBasis::Hour => format!("{} per device-hour", self.currency),
            PriceBasis::Unit => format!("{} per device", self.currency),
        }
    }

    /// Every price positive and finite (a price of 0 would make perf/$ infinite); the
    /// error names the key under `prices`.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        for (device, &value) in &self.devices {
            if !(value.is_finite() && value > 0.0) {
                return Err((
                    format!("prices.devices.\"{device}\""),
                    format!("{value} is not a price: a price must be a positive number"),
                ));
            }
        }
        if self.currency.trim().is_empty() {
            return Err(("prices.currency".into(), "must not be empty".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices(devices: &[(&str, f64)]) -> Prices {
        Prices {
            basis: PriceBasis::Hour,
            currency: "USD".into(),
            devices: devices.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn exact_names_first_then_the_longest_contained_key() {
        let p = prices(&[("H100", 2.0), ("H100 80GB", 3.0), ("AMD EPYC", 0.1)]);
        assert_eq!(p.price_for("NVIDIA H100 80GB HBM3"), Some(3.0));
        assert_eq!(p.price_for("NVIDIA H100 PCIe"), Some(2.0));
        assert_eq!(p.price_for("AMD EPYC"), Some(0.1));
        assert_eq!(p.price_for("amd epyc 9654 96-core processor"), Some(0.1));
        assert_eq!(p.price_for("NVIDIA Grace"), None);
        assert_eq!(p.basis_text(), "USD per device-hour");
    }

    #[test]
    fn non_positive_prices_name_their_key() {
        let (key, message) = prices(&[("A", 0.0)]).check().unwrap_err();
        assert!(key.contains("\"A\""), "{key}");
        assert!(message.contains("positive"), "{message}");
        assert!(prices(&[("A", f64::NAN)]).check().is_err());
    }
}
