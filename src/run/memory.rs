//! The process's memory policy: how the allocator hands memory back.
//!
//! Traces are analysed in phases (ingest, timeline, kernel extraction,
//! overlap) that each allocate large arrays on several threads and free
//! them before the next phase. glibc's malloc raises its mmap threshold
//! each time a large block is freed, after which large blocks come from
//! per-thread arenas and stay in them: the next phase, on another thread,
//! cannot reuse them, so the peak RSS becomes the sum of the phases' peaks
//! rather than the largest. A fixed threshold keeps every block of
//! [`MMAP_THRESHOLD`] bytes or more in its own mapping, returned to the
//! system when freed.

/// Blocks at least this large are mapped on their own (1 MiB).
pub const MMAP_THRESHOLD: usize = 1 << 20;

/// Sets the allocator policy above. Call once at start-up, before threads
/// are spawned; the binary does. A no-op where the allocator is not glibc's.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called before
    // other threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}
