//! The gate on the oldest Criterion it supports, in counting mode: the generated Criterion
//! 0.3 crate of `tests/gate_criterion03.rs` and its docs-only commit pass with every
//! benchmark counted and nothing flagged (exit 0), and the crate's tree gets nothing outside
//! `target/`. Instruction counts do not change with other work beside them, so this runs in
//! ci/test.sh's first phase; it also builds Criterion 0.3's dependencies there, into the
//! shared target (`tests/gate_support/repo.rs`) the time test then finds them in.

#[path = "gate_support/criterion03.rs"]
mod criterion03;
#[path = "gate_support/criterion03_gate.rs"]
mod criterion03_gate;
#[path = "gate_support/repo.rs"]
mod repo;
mod schema_support;
mod tool_support;

use criterion03_gate::{comparison, fixture, gate, listed_ids, status_of, tree_outside_target};

#[test]
fn a_docs_only_change_on_criterion_0_3_passes_in_counting_mode_with_nothing_flagged() {
    if !tool_support::tool_present("valgrind", "--version") {
        return;
    }
    let Some(f) = fixture() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let result = gate(&f.repo, &out, &["--measure", "instructions"]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    let c = comparison(&out);
    assert_eq!(c["gate"]["measure"], "instructions", "{c:#}");
    let mut expected = criterion03::ids();
    expected.sort();
    assert_eq!(listed_ids(&c), expected, "every benchmark listed: {c:#}");
    for id in &expected {
        assert_eq!(status_of(&c, id), "unchanged", "{id}: {c:#}");
    }
    let counted = c["counting"]["benchmarks"].as_array().unwrap_or_else(|| {
        panic!(
            "a counting section with its benchmarks: {:#}",
            c["counting"]
        )
    });
    assert_eq!(counted.len(), expected.len(), "every id counted: {c:#}");
    assert!(
        c["counting"]["not_countable"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{c:#}"
    );
    assert_eq!(tree_outside_target(&f.repo), f.tree, "the gate left litter");
}
