//! The `torchtriage` binary: process set-up, then [`torchtriage::cli::run`].

/// An allocation the system refuses ends the run with one line on stderr.
#[global_allocator]
static ALLOCATOR: torchtriage::run::memory::ExitOnOom = torchtriage::run::memory::ExitOnOom;

fn main() {
    torchtriage::run::progress::phase("start");
    torchtriage::input::guard_mapped_reads();
    torchtriage::run::memory::tune_allocator();
    std::process::exit(torchtriage::cli::run(std::env::args_os()));
}
