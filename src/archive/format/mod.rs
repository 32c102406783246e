//! What the capture writes, read byte by byte (reference §3–§14): the record
//! framing of `events.bin` and region sidecars, the fixed and launch
//! payloads, the event-id → API tables, the manifest, and the blob and
//! code-object files.

pub mod apis;
pub mod blobs;
pub mod framing;
pub mod launch;
pub mod manifest;
pub mod payloads;
pub mod regions;
