//! `hrr`: decode and triage HRR (HIP Record & Replay) capture archives.
//!
//! The binary's `main` only hands argv to [`dispatch`]; everything else lives
//! in the modules below, one per core primitive (DESIGN §2).

pub mod archive;
pub mod classify;
pub mod cli;
pub mod commands;
pub mod config;
pub mod context;
pub mod dispatch;
pub mod docker_env;
pub mod error;
pub mod external;
pub mod finding;
pub mod lua;
pub mod mcp;
pub mod output_file;
pub mod playback;
pub mod preflight;
pub mod render;
pub mod replay;
pub mod safety;
pub mod subprocess;
pub mod suggest;
pub mod supervisor;
pub mod ui;
pub mod user_input;
pub mod workdir;
