//! One module per builtin subcommand: each takes the [`hrr::context::Context`]
//! and its clap arguments and returns the exit code.

pub mod archive;
pub mod classify;
pub mod completions;
pub mod config;
pub mod list;
pub mod lua_types;
pub mod mcp;
pub mod playback;
pub mod preflight;
pub mod render;
pub mod replay;
pub mod report;
pub mod schema;
pub mod triage;
