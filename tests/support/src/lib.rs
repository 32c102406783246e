//! Test-only support for `hrr`: never installed, never shipped.
//!
//! - [`events`]: a byte-exact `events.bin` writer (v6/v7/v8 headers, fixed
//!   events, launch payloads, trailers, hostile bytes) and the FNV-1a-128
//!   blob hash;
//! - [`alloc`]: an allocator that records the largest allocation;
//! - [`archive`]: process archives and capture roots on disk (blobs, code
//!   objects, manifests with `metadata`, root manifests);
//! - [`regions`]: region sidecar streams (`regions/*.hrrr`);
//! - [`synth`]: the `examples/` capture root and the large benchmark stream;
//! - [`fleet`]: many capture roots of mixed shapes, for the fleet recipes;
//! - [`bench`]: building the release `hrr` and timing it, for the
//!   `hrr-bench-*` binaries;
//! - `player`: the test player standing in for `hrr-playback` (Unix and
//!   Windows), and on Unix the fake `docker`/`sudo` it becomes through a
//!   symlink;
//! - `tree` (Unix): fingerprints of directory trees (archive immutability)
//!   and the search for torn `.hrr-tmp-*` files.

pub mod alloc;
pub mod archive;
pub mod bench;
pub mod events;
pub mod fleet;
pub mod regions;
pub mod synth;

#[cfg(any(unix, windows))]
pub mod player;
#[cfg(unix)]
pub mod tree;
