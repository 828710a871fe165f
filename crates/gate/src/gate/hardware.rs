//! The machine the gate measured on, for the runs it records. A stackbench crate writes a
//! system probe beside Criterion's output and the rounds read it; any other crate writes
//! none, and its runs would say `unknown hardware`, leaving the rule "never compare across
//! hardware without saying so" nothing to check. The gate process runs on the same machine
//! as both sides, so it probes the system itself and gives that probe to each side that
//! has none, with a note saying where it came from.

use super::rounds::Collected;
use crate::results::GATE_PROBE_NOTE;

/// Gives each side without a system probe one made by this process. Probes once, after the
/// rounds (its ~0.1 s FMA measurement must not disturb them), and only when needed.
pub fn fill_missing(collected: &mut Collected) {
    if collected.system.iter().all(Option::is_some) {
        return;
    }
    let mut probe = crate::probe::SystemProbe::collect();
    probe.notes.push(GATE_PROBE_NOTE.to_string());
    let value = match serde_json::to_value(&probe) {
        Ok(value) => value,
        Err(e) => {
            eprintln!("analyze-trends gate: warning: the system probe is not recorded: {e}");
            return;
        }
    };
    for side in collected.system.iter_mut().filter(|s| s.is_none()) {
        *side = Some(value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_with_its_own_probe_keeps_it_and_the_other_gets_the_gates() {
        let mut collected = Collected::default();
        let own = serde_json::json!({"fingerprint": "from the crate"});
        collected.system[0] = Some(own.clone());
        fill_missing(&mut collected);
        assert_eq!(collected.system[0].as_ref(), Some(&own));
        let made = collected.system[1].as_ref().expect("probed");
        assert!(made["fingerprint"].as_str().is_some_and(|f| !f.is_empty()));
        let notes = made["notes"].as_array().expect("notes");
        assert!(notes.iter().any(|n| n == GATE_PROBE_NOTE), "{notes:?}");
    }
}
