//! The `torchtriage` binary: process set-up, then [`torchtriage::cli::run`].

/// An allocation the system refuses ends the run with one line on stderr.
#[global_allocator]
static ALLOCATOR: torchtriage::run::memory::ExitOnOom = torchtriage::run::memory::ExitOnOom;

/// Whether standard output was open when the process started, looked at
/// before the Rust runtime puts `/dev/null` on a closed one.
#[cfg(target_os = "linux")]
static STDOUT_OPEN_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[cfg(target_os = "linux")]
extern "C" fn look_at_stdout() {
    // SAFETY: F_GETFD on a descriptor number only reads its flags.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_OPEN_AT_START.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Runs before `main`, and so before the runtime reopens closed standard
/// descriptors.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static LOOK_AT_STDOUT: extern "C" fn() = look_at_stdout;

fn main() {
    #[cfg(target_os = "linux")]
    if !STDOUT_OPEN_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        torchtriage::commands::mark_stdout_closed();
    }
    torchtriage::run::progress::phase("start");
    torchtriage::input::guard_mapped_reads();
    torchtriage::run::memory::tune_allocator();
    std::process::exit(torchtriage::cli::run(std::env::args_os()));
}
