//! `hrr schema finding|archive-info|preflight|events|report`: prints the JSON
//! Schema [`hrr::schema`] derives for one machine-readable output.

use hrr::schema::{schema, Document};

/// Prints the schema of `document` on stdout.
pub fn run(document: Document) -> anyhow::Result<i32> {
    let mut text = serde_json::to_string_pretty(&schema(document))?;
    text.push('\n');
    hrr::ui::print(&text)?;
    Ok(0)
}
