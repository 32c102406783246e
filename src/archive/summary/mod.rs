//! The one fast pass over a process archive (DESIGN §11): [`pass`] cuts
//! `events.bin` into pieces of whole records for several decoder threads
//! (mapped windows, or read chunks), each keeps a [`tally`], and the merged
//! tally plus the files and manifest become the [`document`] with its
//! [`health`] verdicts.

pub(in crate::archive) mod arg_shapes;
#[cfg(target_os = "linux")]
pub(in crate::archive) mod boundary;
pub(in crate::archive) mod chunks;
pub mod document;
mod health;
pub(in crate::archive) mod kernel_table;
#[cfg(target_os = "linux")]
pub(in crate::archive) mod mapped;
#[cfg(target_os = "linux")]
pub(in crate::archive) mod page_guard;
pub mod pass;
pub(in crate::archive) mod prefetch;
pub(in crate::archive) mod tally;
pub(in crate::archive) mod waiters;
