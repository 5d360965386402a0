//! Subcommands: argument structs (clap derive) and their handlers. The
//! binary only parses and dispatches; each handler returns the exit code.

pub mod patterns;
pub mod stats;
pub mod triage;

/// Options every subcommand accepts.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Global {
    /// No progress bars and no warnings on stderr.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}
