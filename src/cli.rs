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

/// The subcommands. A negative number is an option's value (`--min-share
/// -1`), for the option's own check to refuse.
#[derive(Subcommand)]
pub enum Command {
    /// Event counts, metadata and column sizes of one trace.
    #[command(allow_negative_numbers = true)]
    Stats(commands::stats::StatsArgs),
    /// Kernel, overlap and fuse tables for a trace or profile directory.
    #[command(allow_negative_numbers = true)]
    Triage(commands::triage::TriageArgs),
    /// Triage every per-rank trace below a directory and compare the ranks.
    #[command(allow_negative_numbers = true)]
    Batch(commands::batch::BatchArgs),
    /// Compare two traces or profile directories stage by stage (BASE -> NEW).
    #[command(allow_negative_numbers = true)]
    Diff(commands::diff::DiffArgs),
    /// The cross-rank report of a batch from per-trace summary files
    /// (`batch --summaries DIR`).
    #[command(allow_negative_numbers = true)]
    Merge(commands::merge::MergeArgs),
    /// List the fuse patterns, or validate a user pattern file (--check).
    #[command(allow_negative_numbers = true)]
    Patterns(commands::patterns::PatternsArgs),
}

/// Why a command line did not parse.
pub type ParseError = clap::Error;

/// Parses `args` (the first item is the program name).
pub fn parse<I, T>(args: I) -> Result<Cli, ParseError>
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
/// printing `--help` and `--version` as clap does and errors, usage errors
/// included, as one `torchtriage: ...` line on stderr. Returns the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match parse(args.clone()) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "torchtriage: {}", usage_line(&e, &args));
            return 2;
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

/// A command-line parse error in one line: clap's message, the items it
/// lists under it (missing arguments, possible values) and its tip, without
/// the usage block and the pointer to `--help`.
pub fn usage_message(e: &ParseError) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // clap renders the whole help here; its first line is the tagline.
        use clap::CommandFactory as _;
        let names: Vec<String> =
            Cli::command().get_subcommands().map(|c| c.get_name().to_string()).filter(|n| n != "help").collect();
        return format!("a command is required: {}", names.join(", "));
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim);
    let first = lines.next().unwrap_or_default();
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let body: Vec<&str> = lines
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let (tips, items): (Vec<&str>, Vec<&str>) = body.iter().partition(|l| l.starts_with("tip: "));
    if !items.is_empty() {
        message = format!("{message} {}", items.join(", "));
    }
    for tip in tips {
        message = format!("{message} ({})", tip.trim_start_matches("tip: "));
    }
    message
}

/// [`usage_message`] and where to read more: the help of the subcommand
/// the command line names, if it names one.
fn usage_line(e: &ParseError, args: &[OsString]) -> String {
    use clap::CommandFactory as _;
    let cli = Cli::command();
    // The subcommand is the command line's first positional argument.
    let sub = args.iter().skip(1).find_map(|a| cli.get_subcommands().find(|c| a.as_os_str() == c.get_name()));
    let command = match sub {
        Some(c) => format!("torchtriage {}", c.get_name()),
        None => "torchtriage".to_string(),
    };
    format!("{}; see '{command} --help'", usage_message(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(args: &[&str]) -> String {
        let args: Vec<OsString> = std::iter::once("torchtriage").chain(args.iter().copied()).map(Into::into).collect();
        match parse(args.clone()) {
            Err(e) => usage_line(&e, &args),
            Ok(_) => panic!("{args:?} parsed"),
        }
    }

    #[test]
    fn usage_errors_are_one_line_with_their_items_and_tip() {
        let cases: [(&[&str], &str); 6] = [
            (&["diff"], "the following required arguments were not provided: <BASE>, <NEW>; see 'torchtriage diff --help'"),
            (&["triage", "--quite", "f"], "unexpected argument '--quite' found (a similar argument exists: '--quiet'); see 'torchtriage triage --help'"),
            (&["bogus"], "unrecognized subcommand 'bogus'; see 'torchtriage --help'"),
            (&[], "a command is required: stats, triage, batch, diff, merge, patterns; see 'torchtriage --help'"),
            (&["-q", "triage", "-o"], "a value is required for '--output <PATH>' but none was supplied; see 'torchtriage triage --help'"),
            (&["triage", "--min-share", "abc", "f"], "invalid value 'abc' for '--min-share <MIN_SHARE>': invalid float literal; see 'torchtriage triage --help'"),
        ];
        for (args, want) in cases {
            let line = line_of(args);
            assert_eq!(line, want, "{args:?}");
            assert!(!line.contains('\n'), "{line}");
        }
    }
}
