//! Validation of a JSON document against one of the published schemas in schemas/, for
//! the tests that drive the real binaries: a document that breaks its schema fails the
//! test with every violation and where it is.

use serde_json::Value;
use std::path::PathBuf;

/// Every violation of `schemas/<name>` by `doc`, each with its place in the document.
pub fn violations(name: &str, doc: &Value) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", path.display()));
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Fails with every violation unless `doc` satisfies `schemas/<name>`.
pub fn assert_valid(name: &str, doc: &Value) {
    let errors = violations(name, doc);
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{doc:#}");
}
