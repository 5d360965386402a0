//! The `torchtriage` binary: process set-up, then [`torchtriage::cli::run`].

fn main() {
    torchtriage::run::progress::phase("start");
    torchtriage::input::guard_mapped_reads();
    torchtriage::run::memory::tune_allocator();
    std::process::exit(torchtriage::cli::run(std::env::args_os()));
}
