//! Test-only support for `hrr`: never installed, never shipped.

#[cfg(unix)]
pub mod player;
