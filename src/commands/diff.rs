//! `torchtriage diff BASE NEW`: two traces (or profile directories) triaged
//! alike and compared stage by stage, with an optional regression gate.

use std::io::Write;
use std::path::PathBuf;

use super::output::OutputArgs;
use super::{AnalysisArgs, Global};
use crate::error::{Error, Result};
use crate::report::diff::{diff, shared_once, DiffOptions, GateBasis, GateOptions};
use crate::report::model::TriageReport;
use crate::run::triage::{run_triage, TriageInput, TriageOptions};

#[derive(Clone, Debug, clap::Args)]
pub struct DiffArgs {
    /// The baseline: a trace file or profile directory.
    pub base: PathBuf,
    /// The trace file or profile directory compared against it.
    pub new: PathBuf,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Exit 1 when some stage of NEW is worse than BASE by more than this
    /// percentage (one line per such stage on stderr), or when no stage
    /// could be compared (the gate is then not evaluated). A side that is a
    /// directory of which diff reads only some traces (rank 0 of several) is
    /// refused with exit 2: gate each pair of files.
    #[arg(long, value_name = "PCT", value_parser = super::percent, allow_hyphen_values = true)]
    pub gate: Option<f64>,
    /// The figure the gate compares: `busy` (GPU busy time), `step` (median
    /// step time) or `kernel` (total kernel time). Default: the step median
    /// where both sides have steps that span their GPU work (and where the
    /// GPU idles within those steps, the step median or busy time, whichever
    /// grew more: the worse change), else busy time. Busy and kernel time are
    /// compared per step when the step counts differ, and, without steps,
    /// per BASE's work when the kernels both sides ran were launched a
    /// different number of times.
    #[arg(long, value_enum, requires = "gate")]
    pub gate_on: Option<GateBasis>,
}

/// Triages one side.
fn side(path: &std::path::Path, opts: &TriageOptions) -> Result<TriageReport> {
    run_triage(&TriageInput::Single(path.to_path_buf()), opts)
}

/// The notes `triage` prints, of the sides that were triaged: a note the
/// two share (the same directory on both sides) once.
fn warn_sides(base: Option<&TriageReport>, new: Option<&TriageReport>) {
    let (base, new) = (base.map_or(&[][..], |r| &r.notes), new.map_or(&[][..], |r| &r.notes));
    for note in shared_once(base, new) {
        let _ = writeln!(std::io::stderr(), "torchtriage: {note}");
    }
}

/// A gate judges the traces it compared: a side that is a directory of
/// which `diff` reads only some traces (rank 0 of several ranks, or the
/// newest trace of each stage) would let the others pass unseen, or
/// compare unrelated traces, so it is refused (exit 2) rather than passed.
fn gate_covers_every_trace(side: &TriageReport) -> Result<()> {
    let Some(l) = side.left_out.first() else { return Ok(()) };
    if !l.unseen.is_empty() {
        return Err(Error::usage(format!(
            "--gate compares whole inputs, and diff could not look at {} below this directory, which may hold other ranks or a newer run",
            l.unseen.join(", ")
        ))
        .in_file(&l.input));
    }
    let read = match l.rank {
        Some(rank) => format!("rank {rank} only"),
        None => format!("the newest trace of each stage only ({})", l.analysed.join(", ")),
    };
    Err(Error::usage(format!(
        "--gate compares whole inputs, and this directory holds {} traces, of which diff reads {read}; \
         gate each pair of traces (`torchtriage diff BASE/FILE NEW/FILE --gate PCT`)",
        l.count + l.analysed.len(),
    ))
    .in_file(&l.input))
}

pub fn run(args: &DiffArgs, global: &Global) -> Result<i32> {
    if args.base == args.new && crate::run::discover::is_stream_path(&args.base) {
        // Both sides would read the same pipe, each getting part of it.
        return Err(Error::usage("BASE and NEW name the same stream, which can be read only once").in_file(&args.base));
    }
    let gate = match args.gate {
        Some(pct) if !pct.is_finite() || pct < 0.0 => {
            return Err(Error::usage("--gate must be a finite number, 0 or more"));
        }
        Some(threshold_pct) => Some(GateOptions { threshold_pct, basis: args.gate_on }),
        None => None,
    };
    let output = args.output.resolve(global.quiet)?;
    output.check_not_input([args.base.as_path(), args.new.as_path()])?;
    output.check_not_trace_below([args.base.as_path(), args.new.as_path()])?;
    let opts = args.analysis.triage_options(global.quiet)?;
    let (base, new) = rayon::join(|| side(&args.base, &opts), || side(&args.new, &opts));
    if gate.is_some() {
        // Refused before any note, so that the refusal is the one line.
        for side in [&base, &new].into_iter().flatten() {
            gate_covers_every_trace(side)?;
        }
    }
    if !opts.quiet {
        warn_sides(base.as_ref().ok(), new.as_ref().ok());
    }
    let (base, new) = (base?, new?);
    // The traces found in an input directory, too.
    output.check_not_input(
        [&base, &new].into_iter().flat_map(|r| r.mapping_traces.iter().chain(&r.formal_traces)).map(PathBuf::as_path),
    )?;
    let d = diff(&base, &new, &DiffOptions { min_share: opts.min_share, gate });
    if !opts.quiet {
        // The diff's own notes (stages the gate did not compare).
        for note in d.notes.iter().filter(|n| !base.notes.contains(n) && !new.notes.contains(n)) {
            let _ = writeln!(std::io::stderr(), "torchtriage: {note}");
        }
    }
    output.emit(output.renderer().diff(&d))?;
    let failures = d.gate_failures();
    if !global.embedded {
        for line in &failures {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
    Ok(if failures.is_empty() { 0 } else { 1 })
}
