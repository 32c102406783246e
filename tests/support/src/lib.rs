//! Test-only support for `hrr`: never installed, never shipped.
