//! Cache prefetch hints for the decoding passes.
//!
//! Walking records is a chain of dependent loads (a record's length gives
//! the next record; a launch's name length gives its fixed part, each
//! argument's size the next argument), so without hints every step waits
//! on L2. The passes ask for the bytes they will reach a little later.

/// Cache line size assumed by the hints.
const LINE: usize = 64;

/// Asks the CPU to bring the cache lines of `buf[start..end]` into L1 (as
/// far as `buf` reaches). A hint only: it never faults, never changes what
/// the program reads, and does nothing on targets without one.
#[inline(always)]
pub(in crate::archive) fn prefetch(buf: &[u8], start: usize, end: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let end = end.min(buf.len());
        let mut at = start;
        while at < end {
            // SAFETY: a prefetch is a hint that never faults and reads
            // nothing into the program; `at < buf.len()`, so the address
            // lies inside `buf`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(buf.as_ptr().add(at).cast()) };
            at += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (buf, start, end);
}

/// Asks for the `N` cache lines from `buf[start]` on: in `N` hints with no
/// loop when they all lie inside `buf` (the common case of a record well
/// inside a window), as [`prefetch`] otherwise.
#[inline(always)]
pub(in crate::archive) fn prefetch_lines<const N: usize>(buf: &[u8], start: usize) {
    #[cfg(target_arch = "x86_64")]
    if start < buf.len() && buf.len() - start >= N * LINE {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for i in 0..N {
            // SAFETY: as in `prefetch`; `start + i * LINE < buf.len()`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(buf.as_ptr().add(start + i * LINE).cast()) };
        }
        return;
    }
    prefetch(buf, start, start.saturating_add(N * LINE));
}
