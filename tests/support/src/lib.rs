//! Test-only support for `hrr`: never installed, never shipped.
//!
//! - [`events`]: a byte-exact `events.bin` writer (v6/v7/v8 headers, fixed
//!   events, launch payloads, trailers, hostile bytes) and the FNV-1a-128
//!   blob hash;
//! - [`archive`]: process archives and capture roots on disk (blobs, code
//!   objects, manifests with `metadata`, root manifests);
//! - [`synth`]: the `examples/` capture root and the large benchmark stream;
//! - `player` (Unix): the test player standing in for `hrr-playback`, and
//!   the fake `docker`/`sudo` it becomes through a symlink.

pub mod archive;
pub mod events;
pub mod synth;

#[cfg(unix)]
pub mod player;
