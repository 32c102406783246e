//! `hrr`: decode and triage HRR (HIP Record & Replay) capture archives.
//!
//! The library holds the primitives (DESIGN §2): archive decoding, config,
//! preflight, replay, classify, render and the Lua runtime, each taking
//! typed requests. The front ends that turn argv or MCP calls into those
//! requests (`cli`, `dispatch`, `commands`, `external`, `mcp`) belong to the
//! binary (`src/main.rs`), so no primitive can call a subcommand.

pub mod archive;
pub mod classify;
pub mod config;
pub mod context;
pub mod docker_env;
pub mod error;
pub mod executable;
pub mod external_search;
pub mod finding;
pub mod fleet;
pub mod interrupt;
pub mod lua;
pub mod output_file;
pub mod playback;
pub mod preflight;
pub mod render;
pub mod replay;
pub mod report;
pub mod safety;
pub mod schema;
pub mod subprocess;
pub mod suggest;
pub mod supervisor;
pub mod ui;
pub mod user_input;
pub mod workdir;
