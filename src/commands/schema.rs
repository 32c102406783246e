//! `hrr schema finding|archive-info|preflight|events`: the JSON Schema
//! (draft 2020-12) of each machine-readable output, derived from the serde
//! types that produce it, so the schema cannot drift from what `hrr` prints.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};

use crate::archive::event_stream::DecodedEvent;
use crate::archive::Info;
use crate::cli::SchemaDocument;
use crate::finding::Finding;
use crate::preflight::PreflightReport;

/// Prints the schema of `document` on stdout.
pub fn run(document: SchemaDocument) -> anyhow::Result<i32> {
    let mut text = serde_json::to_string_pretty(&schema(document))?;
    text.push('\n');
    crate::ui::print(&text)?;
    Ok(0)
}

/// The schema of `document`. It describes what `hrr` writes (serialize
/// contract): every field it always prints is required, and an unknown
/// value is `null`, not absent. Every document is a JSON object, and its
/// root says so (`"type": "object"`) also where it is a choice of shapes,
/// as MCP clients require of a tool's output schema.
pub fn schema(document: SchemaDocument) -> Schema {
    match document {
        SchemaDocument::Finding => generate::<Finding>(
            "hrr finding",
            "One finding (schema_version 1), as `hrr triage --format json` and `hrr classify \
             --format json` print it and `hrr render` reads it. `hrr triage --all --format json` \
             prints an array of these.",
        ),
        SchemaDocument::ArchiveInfo => generate::<Info>(
            "hrr archive info --json",
            "A process archive's summary (kind \"process\"), or, for a capture root holding \
             several processes, the process table (kind \"root\").",
        ),
        SchemaDocument::Preflight => generate::<PreflightReport>(
            "hrr preflight --json",
            "Whether a capture can be replayed faithfully in the probed environment, and why.",
        ),
        SchemaDocument::Events => generate::<DecodedEvent>(
            "hrr archive events --json",
            "One decoded event: one line of `hrr archive events --json` (JSON Lines). The \
             header fields are always present; the decoded payload fields depend on the API.",
        ),
    }
}

/// The generator behind every schema `hrr` publishes (draft 2020-12, the
/// serialize contract), for documents assembled from several types.
pub fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

fn generate<T: JsonSchema>(title: &str, description: &str) -> Schema {
    let mut schema = generator().into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    schema.insert("description".into(), description.into());
    if schema.get("type").is_none() {
        schema.insert("type".into(), "object".into());
    }
    schema
}
