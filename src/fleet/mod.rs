//! Triage over many archives in one run: the capture roots a run covers
//! ([`expand`]), the part of them one job-array task takes ([`shard`]), the
//! names of the files its findings go to ([`names`]), the `hrr triage`
//! worker subprocess that triages one of them ([`worker`]) and running those
//! workers, one replay per GPU or metadata-only ones on every CPU
//! ([`triage`]).

pub mod expand;
pub mod names;
pub mod shard;
pub mod triage;
pub mod worker;
