//! How many memory channels the populated DIMMs occupy, inferred from their locator
//! strings. SMBIOS has no channel field; boards name slots in a few recognisable ways:
//! - an explicit channel word: `ChannelA-DIMM0`, `P0 CHANNEL A`, `P0_Node0_Channel0_Dimm0`;
//! - a channel letter then a slot digit: `DIMM_A1`, `CPU1_DIMM_B2`, `P1-DIMMA1`, `DIMM_P0_A0`.
//!
//! The channel is the text up to and including the channel token (so a socket or node
//! prefix keeps two sockets' channel A apart). Where the pattern does not fit, the count
//! falls back to the populated DIMMs, which assumes one DIMM per channel, and the probe
//! records which basis it used.

use super::MemoryDevice;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// How the channel count was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelBasis {
    /// Distinct channels named by the locator strings of the populated DIMMs.
    Locators,
    /// The locators follow no recognisable channel pattern: one channel per populated DIMM.
    PopulatedDimms,
}

/// DDR4 registered DIMMs allow at most three per channel (DDR5 two). A "channel" holding
/// more slots than that is a letter naming something else (Dell's `A1`..`A12` name the
/// socket), so the pattern is not trusted.
const MAX_SLOTS_PER_CHANNEL: usize = 3;

fn channel_word() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?i)^.*?channel[ _-]?[a-z0-9]+").expect("valid regex"))
}

fn letter_then_slot() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // The letter must start a token (after a separator, the start, or "DIMM"), so the
    // "M" of "DIMM0" is not taken for a channel.
    RE.get_or_init(|| {
        Regex::new(r"(?i)^(.*?(?:^|[^a-z]|dimm))([a-z])[ _-]?[0-9]{1,2}$").expect("valid regex")
    })
}

/// The channel a slot sits on, by its locator strings.
fn channel_of(device: &MemoryDevice) -> Option<String> {
    // The bank locator first: where both name a channel, it is the one that means it.
    let strings = [device.bank_locator.as_deref(), device.locator.as_deref()];
    if let Some(m) = strings
        .iter()
        .flatten()
        .find_map(|t| channel_word().find(t))
    {
        return Some(with_socket(m.as_str(), &strings));
    }
    let locator = device.locator.as_deref()?;
    let caps = letter_then_slot().captures(locator)?;
    Some(with_socket(&format!("{}{}", &caps[1], &caps[2]), &strings))
}

/// `key` prefixed with a socket token (`P1`, `CPU1`, `NODE 1`, `Socket 1`) found in either
/// locator string, so a board that puts the socket in the bank locator and the channel in
/// the locator still keeps its sockets apart.
fn with_socket(key: &str, strings: &[Option<&str>; 2]) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let socket = RE.get_or_init(|| {
        Regex::new(r"(?i)(?:^|[^a-z])(p|cpu|proc|node|socket)[ _-]?([0-9]+)").expect("valid regex")
    });
    let token = strings
        .iter()
        .flatten()
        .find_map(|s| socket.captures(s))
        .map(|c| format!("{}{}", c[1].to_lowercase(), &c[2]));
    let key = key.to_lowercase();
    match token {
        Some(t) if !key.contains(&t) => format!("{t}/{key}"),
        _ => key,
    }
}

/// The channels the populated slots occupy, and how that was found. `slots` is every
/// type-17 record, empty ones included (they show how many slots a channel has).
pub fn infer(slots: &[MemoryDevice]) -> (u32, ChannelBasis) {
    let populated: Vec<&MemoryDevice> = slots.iter().filter(|d| d.is_populated()).collect();
    let fallback = (populated.len() as u32, ChannelBasis::PopulatedDimms);
    let mut slots_per_channel: BTreeMap<String, usize> = BTreeMap::new();
    for slot in slots {
        match channel_of(slot) {
            Some(channel) => *slots_per_channel.entry(channel).or_default() += 1,
            None if slot.is_populated() => return fallback,
            None => {}
        }
    }
    if slots_per_channel
        .values()
        .any(|n| *n > MAX_SLOTS_PER_CHANNEL)
    {
        return fallback;
    }
    let channels: BTreeSet<String> = populated.iter().filter_map(|d| channel_of(d)).collect();
    if channels.is_empty() {
        return fallback;
    }
    (channels.len() as u32, ChannelBasis::Locators)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(locator: &str, bank: &str, populated: bool) -> MemoryDevice {
        MemoryDevice {
            locator: Some(locator.into()).filter(|s: &String| !s.is_empty()),
            bank_locator: Some(bank.into()).filter(|s: &String| !s.is_empty()),
            size_bytes: Some(if populated { 16 << 30 } else { 0 }),
            ..MemoryDevice::default()
        }
    }

    fn channels(slots: &[(&str, &str, bool)]) -> (u32, ChannelBasis) {
        let slots: Vec<MemoryDevice> = slots.iter().map(|(l, b, p)| slot(l, b, *p)).collect();
        infer(&slots)
    }

    #[test]
    fn channel_words_and_letters() {
        use ChannelBasis::*;
        // A laptop: two channels, one DIMM each.
        assert_eq!(
            channels(&[
                ("ChannelA-DIMM0", "BANK 0", true),
                ("ChannelB-DIMM0", "BANK 2", true)
            ]),
            (2, Locators)
        );
        // Two DIMMs in one channel share its bus: one channel, not two.
        assert_eq!(
            channels(&[
                ("DIMM_A1", "", true),
                ("DIMM_A2", "", true),
                ("DIMM_B1", "", false)
            ]),
            (1, Locators)
        );
        // AMD's bank locators name socket, node and channel.
        assert_eq!(
            channels(&[
                ("DIMM_A1", "P0_Node0_Channel0_Dimm0", true),
                ("DIMM_B1", "P0_Node0_Channel1_Dimm0", true),
                ("DIMM_A1", "P1_Node0_Channel0_Dimm0", true),
            ]),
            (3, Locators)
        );
        // The socket in the bank locator keeps two sockets' channel A apart.
        assert_eq!(
            channels(&[("DIMM_A1", "NODE 0", true), ("DIMM_A1", "NODE 1", true)]),
            (2, Locators)
        );
        assert_eq!(
            channels(&[
                ("P1-DIMMA1", "", true),
                ("P1-DIMMB1", "", true),
                ("P2-DIMMA1", "", true)
            ]),
            (3, Locators)
        );
        assert_eq!(
            channels(&[("DIMM_P0_A0", "", true), ("DIMM_P0_B0", "", true)]),
            (2, Locators)
        );
    }

    #[test]
    fn unrecognised_or_implausible_patterns_fall_back_to_populated_dimms() {
        use ChannelBasis::*;
        // QEMU and HPE number slots, not channels; "DIMM0" has no channel letter.
        assert_eq!(
            channels(&[("DIMM 0", "", true), ("DIMM 1", "", true)]),
            (2, PopulatedDimms)
        );
        assert_eq!(
            channels(&[("DIMM0", "", true), ("DIMM1", "", true)]),
            (2, PopulatedDimms)
        );
        assert_eq!(
            channels(&[("PROC 1 DIMM 1", "", true), ("PROC 1 DIMM 4", "", true)]),
            (2, PopulatedDimms)
        );
        // Dell's A1..A12: the letter is the socket (12 slots on "A"), not a channel.
        let dell: Vec<(String, &str, bool)> =
            (1..=12).map(|n| (format!("A{n}"), "", n <= 6)).collect();
        let dell: Vec<(&str, &str, bool)> =
            dell.iter().map(|(l, b, p)| (l.as_str(), *b, *p)).collect();
        assert_eq!(channels(&dell), (6, PopulatedDimms));
        // One populated DIMM without a recognisable name spoils the pattern for all.
        assert_eq!(
            channels(&[("DIMM_A1", "", true), ("Onboard", "", true)]),
            (2, PopulatedDimms)
        );
    }
}
