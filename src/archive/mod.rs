//! Reading HRR capture archives without ROCm (DESIGN §2 "archive").
//!
//! Three layers, each in its own folder or file:
//! - [`format`] reads what the capture wrote: the record framing of
//!   `events.bin`, the payloads, the API tables, the manifest, blobs and
//!   region sidecars;
//! - [`summary`] is the one fast pass over a process archive that builds its
//!   [`ArchiveSummary`], on several threads, with its tally, kernel table and
//!   health verdicts;
//! - the outputs: [`event_stream`] (`archive events`) and [`report`] (the
//!   readable `archive info`).
//!
//! [`resolve`] says whether a path is a process archive or a capture root and
//! picks the process triage works on. Nothing here ever writes into an
//! archive.

pub mod event_stream;
pub mod format;
pub mod memory;
pub mod modified;
pub mod report;
mod resolve;
pub mod summary;

pub use self::resolve::{info, info_by, list_root, resolve, single_process, ArchiveRef, Info};
pub use self::summary::document::{
    ArchiveKind, ArchiveSummary, Problem, ProcessEntry, RootListing,
};
pub use self::summary::pass::summarize;
