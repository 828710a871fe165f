//! The JSON Schemas published in `schemas/`, made from the Rust types that write and read
//! each document, so a field added to a type is in its schema the moment it is written.
//! They describe what the binaries write (serde's serialising side): a field written
//! always is required, one skipped when empty is not. `tests/typed_documents.rs` fails,
//! naming the file, when a committed schema differs from the one made here, and rewrites
//! them with `STACKBENCH_UPDATE_SCHEMAS=1`.
//!
//! The constraints serde's shape cannot carry (a schema id's constant, a lower bound, "some
//! benchmark was judged") sit beside the fields as `#[schemars(...)]` attributes.

use crate::gate::ComparisonDocument;
use crate::validate::ValidationResult;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;

/// Where the published schemas say they live; each file's `$id` is this plus its name.
const SCHEMA_BASE: &str = "https://stackbench.dev/schemas/";

/// Every generated schema: its file name under `schemas/` and its text, as committed.
pub fn generated() -> Vec<(&'static str, String)> {
    vec![
        schema_of::<ComparisonDocument>(
            "comparison.schema.json",
            "stackbench comparison (stackbench.comparison.v1)",
        ),
        schema_of::<ValidationResult>(
            "validation.schema.json",
            "stackbench validation verdict (stackbench.validation.v1)",
        ),
    ]
}

/// The draft 2020-12 schema of `T` as serialised, with its `$id` and title.
fn schema_of<T: JsonSchema>(file: &'static str, title: &str) -> (&'static str, String) {
    let mut schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    schema.insert("$id".into(), format!("{SCHEMA_BASE}{file}").into());
    schema.insert("title".into(), title.into());
    // A schema is plain JSON: strings, numbers and maps always serialise.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    (file, text)
}
