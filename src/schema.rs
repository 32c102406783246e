//! The JSON Schema (draft 2020-12) of each machine-readable output of `hrr`,
//! derived from the serde types that produce it, so the schema cannot drift
//! from what `hrr` prints. `hrr schema` prints them; the MCP server declares
//! its tools' output schemas from them.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};

use crate::archive::event_stream::DecodedEvent;
use crate::archive::Info;
use crate::finding::Finding;
use crate::preflight::PreflightReport;
use crate::report::Report;

/// A machine-readable output of `hrr` that `hrr schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Document {
    /// A finding, as `hrr triage --format json`, `hrr classify --format json`
    /// and `hrr render --format json` print it.
    Finding,
    /// `hrr archive info --json`: a process summary or a capture-root listing.
    ArchiveInfo,
    /// `hrr preflight --json`.
    Preflight,
    /// One line of `hrr archive events --json`: a decoded event.
    Events,
    /// `hrr report --format json`: findings grouped by crash signature.
    Report,
}

/// The schema of `document`. It describes what `hrr` writes (serialize
/// contract): every field it always prints is required, and an unknown
/// value is `null`, not absent. Every document is a JSON object, and its
/// root says so (`"type": "object"`) also where it is a choice of shapes,
/// as MCP clients require of a tool's output schema.
pub fn schema(document: Document) -> Schema {
    match document {
        Document::Finding => generate::<Finding>(
            "hrr finding",
            "One finding (schema_version 1), as `hrr triage --format json` and `hrr classify \
             --format json` print it and `hrr render` reads it. `hrr triage --all --format json` \
             prints an array of these.",
        ),
        Document::ArchiveInfo => generate::<Info>(
            "hrr archive info --json",
            "A process archive's summary (kind \"process\"), or, for a capture root holding \
             several processes, the process table (kind \"root\").",
        ),
        Document::Preflight => generate::<PreflightReport>(
            "hrr preflight --json",
            "Whether a capture can be replayed faithfully in the probed environment, and why.",
        ),
        Document::Events => generate::<DecodedEvent>(
            "hrr archive events --json",
            "One decoded event: one line of `hrr archive events --json` (JSON Lines). The \
             header fields are always present; the decoded payload fields depend on the API.",
        ),
        Document::Report => generate::<Report>(
            "hrr report --format json",
            "Findings grouped by crash signature (outcome, fault class, kernel, failing API, \
             labels other than MULTI-PROCESS and BUILD-NEEDED), largest group first.",
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
