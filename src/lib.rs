//! `hrr`: decode and triage HRR (HIP Record & Replay) capture archives.
//!
//! The binary's `main` only hands argv to [`dispatch`]; everything else lives
//! in the modules below, one per core primitive (DESIGN §2).

pub mod classify;
pub mod finding;
pub mod render;
