//! Subcommands: argument structs (clap derive) and their handlers. The
//! binary only parses and dispatches; each handler returns the exit code.

pub mod batch;
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

/// Writes a report to stdout. A closed pipe (`| head`) ends the program
/// quietly instead of panicking.
pub fn print_report(text: &str) -> crate::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let r = out.write_all(text.as_bytes()).and_then(|_| {
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        out.flush()
    });
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(crate::Error::io(e)),
    }
}
