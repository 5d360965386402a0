//! The `torchtriage` command line: parse the arguments, dispatch to
//! [`crate::commands`], print one-line errors, return the exit code. The
//! binary and the Python package's `torchtriage` command both run it.

use std::ffi::OsString;
use std::io::Write as _;

use clap::{Parser, Subcommand};

use crate::commands::{self, Global};

/// The parsed command line.
#[derive(Parser)]
#[command(
    name = "torchtriage",
    version,
    about = "Where GPU time goes in a PyTorch-profiler (Kineto) trace, and what to try next"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
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

/// Parses `args` (the first item is the program name).
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Cli::try_parse_from(args)
}

/// Runs a parsed command line: its exit code, or the error that ended it.
pub fn dispatch(cli: &Cli) -> crate::Result<i32> {
    match &cli.command {
        Command::Stats(a) => commands::stats::run(a, &cli.global),
        Command::Triage(a) => commands::triage::run(a, &cli.global),
        Command::Batch(a) => commands::batch::run(a, &cli.global),
        Command::Diff(a) => commands::diff::run(a, &cli.global),
        Command::Merge(a) => commands::merge::run(a, &cli.global),
        Command::Patterns(a) => commands::patterns::run(a, &cli.global),
    }
}

/// Parses and runs a command line (the first item is the program name),
/// printing usage errors, `--help` and `--version` as clap does and other
/// errors as one `torchtriage: ...` line on stderr. Returns the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match dispatch(&cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "torchtriage: {e}");
            e.exit_code()
        }
    }
}
