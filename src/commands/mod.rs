//! Subcommands: argument structs (clap derive) and their handlers. The
//! binary only parses and dispatches; each handler returns the exit code.

pub mod batch;
pub mod diff;
pub mod merge;
pub mod output;
pub mod patterns;
pub mod stats;
pub mod triage;

use crate::analysis::framework::FrameworkChoice;
use crate::analysis::timeline::{Basis, TimelineOptions};
use crate::run::triage::TriageOptions;
use std::io::Write;

/// Reads a percentage option as a number, with or without a trailing `%`
/// (`5`, `5%`), `-0` as `0` (so that no report says "more than -0%"); the
/// range is checked by the command, which names the option in its refusal.
pub fn percent(text: &str) -> std::result::Result<f64, String> {
    let text = text.trim();
    let number = text.strip_suffix('%').unwrap_or(text).trim_end();
    number.parse::<f64>().map(|x| x + 0.0).map_err(|e| e.to_string())
}

/// Analysis options shared by `triage` and `batch`.
#[derive(Clone, Debug, clap::Args)]
pub struct AnalysisArgs {
    /// Serving framework: auto (detect it from the trace, path and server
    /// args; generic when nothing names one), sglang, vllm, trtllm,
    /// tokenspeed, or generic (plain PyTorch: only fuse patterns tied to no
    /// serving framework apply).
    #[arg(long, default_value = "auto", value_parser = parse_framework)]
    pub framework: FrameworkChoice,
    /// Restrict the overlap analysis to process ids containing this text.
    #[arg(long)]
    pub pid_substring: Option<String>,
    /// Hide rows below this share of the stage's GPU time, in percent.
    #[arg(long, default_value_t = 1.0, value_parser = percent, allow_hyphen_values = true)]
    pub min_share: f64,
    /// Timeline basis: `trace` (every GPU kernel at the trace's own times),
    /// `hta` (Holistic Trace Analysis 0.5.0's figures, µs rounding and all)
    /// or `hta-exact` (HTA without its µs rounding).
    #[arg(long, default_value = "trace", value_parser = parse_basis)]
    pub timeline_basis: Basis,
}

fn parse_basis(value: &str) -> std::result::Result<Basis, String> {
    match value {
        "trace" => Ok(Basis::Trace),
        "hta" => Ok(Basis::Hta),
        // `hta_exact` is how the JSON report writes it.
        "hta-exact" | "hta_exact" => Ok(Basis::HtaExact),
        other => Err(format!("unknown timeline basis `{other}` (trace, hta, hta-exact)")),
    }
}

fn parse_framework(value: &str) -> std::result::Result<FrameworkChoice, String> {
    value.parse()
}

impl AnalysisArgs {
    /// Triage options with these settings and defaults elsewhere.
    pub fn triage_options(&self, quiet: bool) -> crate::Result<TriageOptions> {
        if !self.min_share.is_finite() || !(0.0..=100.0).contains(&self.min_share) {
            // Above 100 no row could clear the bar: a share is a percentage.
            return Err(crate::Error::usage("--min-share must be a percentage from 0 to 100"));
        }
        Ok(TriageOptions {
            framework: self.framework,
            pid_substring: self.pid_substring.clone().filter(|s| !s.is_empty()),
            min_share: self.min_share,
            quiet,
            timeline: TimelineOptions { basis: self.timeline_basis, ..TimelineOptions::default() },
            ..TriageOptions::default()
        })
    }
}

/// Options every subcommand accepts.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Global {
    /// No progress bars and no warnings on stderr.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Run from a library (the Python package), which hands the report to
    /// its caller: what the report already carries (a tripped gate, the
    /// files of a batch that failed) is not repeated on stderr. Not a
    /// command-line option.
    #[arg(skip)]
    pub embedded: bool,
}

/// The one-line warning for events skipped ([`crate::report::model::skipped_note`];
/// nothing when none were).
pub fn warn_skipped(path: &std::path::Path, skipped: u64) {
    if skipped > 0 {
        let _ = writeln!(std::io::stderr(), "torchtriage: {}", crate::report::model::skipped_note(path, skipped));
    }
}

/// The notes on stderr a triage report carries: directories not wholly
/// analysed, events skipped, a pid filter that kept nothing.
pub fn warn_report(rep: &crate::report::model::TriageReport) {
    for note in &rep.notes {
        let _ = writeln!(std::io::stderr(), "torchtriage: {note}");
    }
}

/// Writes a report to stdout. A reader that stops early (`| head`) is not
/// an error: the rest of the report is dropped and the command ends as it
/// would have (a batch with failures still says so on stderr and exits 1).
/// A full disk or any other write error is.
pub fn print_report(text: &str) -> crate::Result<()> {
    print_report_with(|out| {
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Set by the binary when the process started with no standard output
/// (`cmd >&-`): the runtime then puts `/dev/null` there, where a report would
/// vanish without an error.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the process started with standard output closed: every
/// report for stdout is then refused (exit 2) instead of being lost.
pub fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// An error when the process started with standard output closed.
pub fn stdout_open() -> crate::Result<()> {
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) {
        let e = std::io::Error::from_raw_os_error(libc::EBADF);
        let message = "standard output is closed, so the report would be lost: give -o FILE".to_string();
        return Err(crate::Error { message, ..crate::Error::io(e) }.in_file(std::path::Path::new("stdout")));
    }
    Ok(())
}

/// [`print_report`] for a report that `write` writes to stdout as it goes
/// (through a buffer), so that a large one is not built as one string
/// first.
pub fn print_report_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> crate::Result<()> {
    stdout_open()?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let r = write(&mut out).and_then(|()| out.flush());
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(crate::Error::io(e).in_file(std::path::Path::new("stdout"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::framework::Framework;
    use clap::Parser;

    #[derive(Parser)]
    struct Probe {
        #[command(flatten)]
        analysis: AnalysisArgs,
    }

    #[test]
    fn percent_takes_a_number_with_or_without_a_percent_sign() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("5%"), Ok(5.0));
        assert_eq!(percent(" 2.5 % "), Ok(2.5));
        assert_eq!(percent("-0").map(f64::to_bits), Ok(0f64.to_bits()));
        assert!(percent("%").is_err() && percent("5%%").is_err() && percent("abc").is_err());
    }

    #[test]
    fn cli_accepts_framework_generic() {
        let parsed = Probe::try_parse_from(["probe", "--framework", "generic"]).unwrap();
        assert_eq!(parsed.analysis.framework, FrameworkChoice::Fixed(Framework::Generic));
        let auto = Probe::try_parse_from(["probe"]).unwrap();
        assert_eq!(auto.analysis.framework, FrameworkChoice::Auto);
        assert!(Probe::try_parse_from(["probe", "--framework", "nonesuch"]).is_err());
    }

    #[test]
    fn the_basis_the_json_writes_is_accepted_back() {
        for spelling in ["hta-exact", "hta_exact"] {
            let parsed = Probe::try_parse_from(["probe", "--timeline-basis", spelling]).unwrap();
            assert_eq!(parsed.analysis.timeline_basis, Basis::HtaExact);
        }
        assert!(Probe::try_parse_from(["probe", "--timeline-basis", "exact"]).is_err());
    }

    #[test]
    fn a_share_is_a_percentage() {
        let share = |v: &str| Probe::try_parse_from(["probe", &format!("--min-share={v}")]).unwrap().analysis;
        for ok in ["0", "1.5", "100"] {
            assert!(share(ok).triage_options(true).is_ok(), "{ok}");
        }
        for bad in ["-1", "100.5", "1000", "NaN", "inf"] {
            assert!(share(bad).triage_options(true).is_err(), "{bad}");
        }
    }
}
