//! The `torchtriage` binary: parse the command line, dispatch to
//! [`torchtriage::commands`], print one-line errors, set the exit code.

use clap::{Parser, Subcommand};
use std::io::Write as _;
use torchtriage::commands::{self, Global};

#[derive(Parser)]
#[command(
    name = "torchtriage",
    version,
    about = "Where GPU time goes in a PyTorch-profiler (Kineto) trace, and what to try next"
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Event counts, metadata and column sizes of one trace.
    Stats(commands::stats::StatsArgs),
    /// Kernel, overlap and fuse tables for a trace or profile directory.
    Triage(commands::triage::TriageArgs),
    /// Triage every per-rank trace below a directory and compare the ranks.
    Batch(commands::batch::BatchArgs),
    /// Compare two traces or profile directories stage by stage (BASE -> NEW).
    Diff(commands::diff::DiffArgs),
    /// The cross-rank report of a batch from per-trace summary files
    /// (`batch --summaries DIR`).
    Merge(commands::merge::MergeArgs),
    /// List the fuse patterns, or validate a user pattern file (--check).
    Patterns(commands::patterns::PatternsArgs),
}

fn main() {
    torchtriage::run::progress::phase("start");
    torchtriage::input::guard_mapped_reads();
    torchtriage::run::memory::tune_allocator();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match &cli.command {
        Command::Stats(a) => commands::stats::run(a, &cli.global),
        Command::Triage(a) => commands::triage::run(a, &cli.global),
        Command::Batch(a) => commands::batch::run(a, &cli.global),
        Command::Diff(a) => commands::diff::run(a, &cli.global),
        Command::Merge(a) => commands::merge::run(a, &cli.global),
        Command::Patterns(a) => commands::patterns::run(a, &cli.global),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "torchtriage: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
