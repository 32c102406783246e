//! A global allocator that remembers the largest single allocation, so
//! tests can prove hostile input never makes `hrr` allocate beyond its caps.
//! A test binary installs it with
//! `#[global_allocator] static A: LargestAllocation = LargestAllocation;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, recording the largest size ever requested.
pub struct LargestAllocation;

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// The largest single allocation (bytes) made so far in this process.
pub fn largest() -> usize {
    LARGEST.load(Ordering::Relaxed)
}
