//! The process's memory policy: how the allocator hands memory back, and
//! what happens when the system refuses an allocation.
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

/// The system allocator, except that an allocation the system refuses
/// ends the process with one line on stderr and exit code 2, instead of
/// Rust's abort (a core dump, and a backtrace under `RUST_BACKTRACE`). The
/// binary installs it as the global allocator.
pub struct ExitOnOom;

impl ExitOnOom {
    #[cold]
    fn out_of_memory(size: usize) -> ! {
        // Threads that run out together: the first one says so and ends
        // the process; the others wait for that.
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if SAID.swap(true, std::sync::atomic::Ordering::SeqCst) {
            loop {
                #[cfg(unix)]
                // SAFETY: pause only sleeps until a signal; the exit of the
                // first thread ends this one.
                unsafe {
                    libc::pause();
                }
                #[cfg(not(unix))]
                std::thread::park();
            }
        }
        // Nothing here may allocate: the message is formatted into a
        // fixed buffer and written with one system call.
        let mut line = [0u8; 160];
        let mut n = 0;
        let mut put = |bytes: &[u8]| {
            for &b in bytes {
                if n < line.len() {
                    line[n] = b;
                    n += 1;
                }
            }
        };
        put(b"torchtriage: out of memory: an allocation of ");
        let mut digits = [0u8; 20];
        let mut d = digits.len();
        let mut v = size;
        loop {
            d -= 1;
            digits[d] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        put(&digits[d..]);
        put(b" bytes failed (raise the memory limit, or triage fewer files at once)\n");
        #[cfg(unix)]
        // SAFETY: writes `n` initialised bytes of `line` to stderr, then ends
        // the process without running anything that could allocate.
        unsafe {
            libc::write(2, line.as_ptr().cast(), n);
            libc::_exit(2);
        }
        #[cfg(not(unix))]
        std::process::abort();
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; only
// a null result (the system's refusal) is turned into an exit.
unsafe impl std::alloc::GlobalAlloc for ExitOnOom {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if p.is_null() {
            Self::out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc_zeroed(layout);
        if p.is_null() {
            Self::out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = std::alloc::System.realloc(ptr, layout, new_size);
        if p.is_null() {
            Self::out_of_memory(new_size);
        }
        p
    }
}
