//! `torchtriage batch DIR`: triage every per-rank (and per-stage) trace
//! below a directory in parallel under a memory budget, compare the ranks
//! per stage, optionally write one JSON line per file. Failed files are
//! listed at the end and make the exit code 1.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::output::{Destination, Output, OutputArgs};
use super::{AnalysisArgs, Global};
use crate::analysis::ranks::{summarize, RankFacts, StageSummary};
use crate::error::{Error, Result};
use crate::input::ReadMode;
use crate::report::batch as render;
use crate::report::render::BatchView;
use crate::run::batch::memory::{default_budget, footprint, uncompressed_size};
use crate::run::batch::schedule::{most_at_once, run_bounded, Observer, Task};
use crate::run::batch::summary::write_summaries;
use crate::run::batch::{analyze_file, discover_batch_files, skipped_files, BatchFile, FileOutcome};
use crate::run::triage::TriageOptions;

#[derive(Clone, Debug, clap::Args)]
#[command(mut_arg("min_share", |a| a.help(
    "Hide rows below this share of the stage's GPU time, in percent, in each file's --jsonl line; the cross-rank \
     tables compare every kernel and overlap row of each file"
)))]
pub struct BatchArgs {
    /// Directory holding the per-rank traces (searched recursively), or one trace.
    pub dir: PathBuf,
    /// Files triaged at once (default: number of cores; at most 4 per core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Bar, in percent above the stage median, for the likely slow rank (the
    /// most compute time, above the bar) and for waiting ranks (exposed
    /// communication above the bar, compute time not).
    #[arg(long, default_value_t = 10.0, value_parser = super::percent, allow_hyphen_values = true)]
    pub straggler_pct: f64,
    /// Write one JSON object per input file (triage JSON plus rank, stages,
    /// size, timings; or the error) to this file (`-`: stdout, with the
    /// report sent elsewhere by -o).
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Also write one summary file per trace into this directory
    /// (`<trace name>.<hash>.summary.json`); `torchtriage merge` turns any
    /// set of them into this report.
    #[arg(long, value_name = "DIR")]
    pub summaries: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Memory (MiB) the files in flight may use together (default: half of
    /// MemAvailable).
    #[arg(long)]
    pub mem_budget_mb: Option<u64>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

/// Overall bar (files, bytes) plus one line per file in flight, on stderr.
struct BatchProgress {
    multi: indicatif::MultiProgress,
    overall: indicatif::ProgressBar,
    lines: Mutex<Vec<(usize, indicatif::ProgressBar)>>,
    counts: Mutex<(usize, usize, usize)>,
}

impl BatchProgress {
    fn new(files: &[BatchFile], quiet: bool) -> Option<BatchProgress> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr());
        let total: u64 = files.iter().map(|f| f.size).sum();
        let overall = multi.add(indicatif::ProgressBar::new(total));
        let style = indicatif::ProgressStyle::with_template(
            "[{bar:30}] {bytes}/{total_bytes} {msg} {elapsed_precise} ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
        overall.set_style(style);
        overall.set_message(format!("0/{} files", files.len()));
        Some(BatchProgress { multi, overall, lines: Mutex::new(Vec::new()), counts: Mutex::new((0, 0, files.len())) })
    }
}

impl BatchProgress {
    /// Shows which step a file in flight is at.
    fn phase(&self, f: &BatchFile, phase: &str) {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, line)) = lines.iter().find(|(i, _)| *i == f.index) {
            line.set_prefix(phase.to_string());
        }
    }
}

impl Observer<BatchFile> for BatchProgress {
    fn started(&self, f: &BatchFile) {
        let line = self.multi.add(indicatif::ProgressBar::new_spinner());
        let style = indicatif::ProgressStyle::with_template("  {spinner} {elapsed:>4} {prefix} {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
        line.set_style(style);
        let name = f.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        line.set_message(format!("{name} ({:.1} MB)", f.size as f64 / 1e6));
        line.enable_steady_tick(Duration::from_millis(200));
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).push((f.index, line));
    }

    fn finished(&self, f: &BatchFile, ok: bool) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pos) = lines.iter().position(|(i, _)| *i == f.index) {
            let (_, line) = lines.remove(pos);
            line.finish_and_clear();
            self.multi.remove(&line);
        }
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.0 += 1;
        if !ok {
            c.1 += 1;
        }
        let failed = if c.1 > 0 { format!(", {} failed", c.1) } else { String::new() };
        self.overall.set_message(format!("{}/{} files{failed}", c.0, c.2));
        self.overall.inc(f.size);
    }
}

impl Drop for BatchProgress {
    fn drop(&mut self) {
        self.overall.finish_and_clear();
        let _ = self.multi.clear();
    }
}

struct NoProgress;
impl Observer<BatchFile> for NoProgress {}

/// `--jobs` is capped at this many workers per core.
const MAX_JOBS_PER_CORE: usize = 4;

/// The checks of `batch`'s own options (the analysis options are checked
/// by [`file_options`]).
pub fn check_args(args: &BatchArgs) -> Result<()> {
    if !args.straggler_pct.is_finite() || args.straggler_pct < 0.0 {
        return Err(Error::usage("--straggler-pct must be a finite number, 0 or more"));
    }
    if args.jobs == Some(0) {
        return Err(Error::usage("--jobs must be at least 1"));
    }
    if args.mem_budget_mb == Some(0) {
        return Err(Error::usage("--mem-budget-mb must be at least 1"));
    }
    if args.dir.as_os_str() == "-" && !args.dir.exists() {
        // `-` is standard input to triage and stats; a batch reads files.
        return Err(Error::usage("batch reads the trace files below a directory, not standard input (-)"));
    }
    if crate::run::discover::is_stream_path(&args.dir) {
        return Err(Error::usage(
            "batch reads the trace files below a directory, not a pipe or device: `triage` reads one trace from a pipe",
        )
        .in_file(&args.dir));
    }
    Ok(())
}

/// Checks `--jsonl` and `--summaries` before the run: neither may be the
/// report's file or one of the traces, and the summaries' directory must
/// take files.
fn check_side_outputs(args: &BatchArgs, output: &Output, files: &[BatchFile]) -> Result<()> {
    use crate::run::atomic::same_file;
    let report = match &output.destination {
        Destination::File(p) | Destination::Dir(p) => Some(p.as_path()),
        Destination::Stdout => None,
    };
    if let Some(jsonl) = args.jsonl.as_deref().filter(|p| p.as_os_str() != "-") {
        if report.is_some_and(|r| same_file(r, jsonl)) {
            return Err(Error::usage("--jsonl and --output name the same file; give each its own").in_file(jsonl));
        }
        if let Some(f) = files.iter().find(|f| same_file(&f.path, jsonl)) {
            return Err(Error::usage("--jsonl names a trace of the batch, which it would replace").in_file(&f.path));
        }
    }
    if let Some(dir) = &args.summaries {
        if report.is_some_and(|r| same_file(r, dir)) {
            return Err(Error::usage("--summaries and --output name the same path; give each its own").in_file(dir));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(Error::usage("--summaries: this is not a directory").in_file(dir));
        }
        crate::run::atomic::check_directory_writable(dir)
            .map_err(|e| super::output::unwritable("--summaries", e, dir))?;
    }
    Ok(())
}

/// How `batch` triages each file: the analysis options, quiet, and files
/// read rather than mapped. The Python package's map step uses the same.
pub fn file_options(args: &BatchArgs) -> Result<TriageOptions> {
    Ok(TriageOptions { read_mode: ReadMode::Read, ..args.analysis.triage_options(true)? })
}

pub fn run(args: &BatchArgs, global: &Global) -> Result<i32> {
    check_args(args)?;
    let output = args.output.resolve(global.quiet)?;
    let found = discover_batch_files(&args.dir)?;
    let skipped = skipped_files(&args.dir, &found);
    let files = found.files;
    output.check_not_input(files.iter().map(|f| f.path.as_path()))?;
    output.check_not_trace_below([args.dir.as_path()])?;
    check_side_outputs(args, &output, &files)?;
    let skip_notes = crate::run::batch::skip_warnings(&skipped);
    if !global.quiet && !global.embedded {
        for warning in &skip_notes {
            let _ = writeln!(std::io::stderr(), "torchtriage: {warning}");
        }
    }
    // Open the JSON lines file before any work, so a bad path fails fast.
    let mut jsonl: Option<std::io::BufWriter<Box<dyn Write>>> = match &args.jsonl {
        // `--jsonl -` is stdout, which must then not carry the report too.
        Some(p) if p.as_os_str() == "-" => {
            if output.destination == Destination::Stdout {
                return Err(Error::usage(
                    "--jsonl - writes the lines to stdout, which carries the report: give -o FILE for the report",
                ));
            }
            super::stdout_open()?;
            Some(std::io::BufWriter::new(Box::new(std::io::stdout())))
        }
        Some(p) => Some(std::io::BufWriter::new(Box::new(
            crate::run::atomic::create_stream(p)
                .map_err(|e| Error::usage(format!("--jsonl: cannot write here: {e}")).in_file(p))?,
        ))),
        None => None,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // More workers than MAX_JOBS_PER_CORE per core only add memory and
    // threads: the work is CPU-bound.
    let jobs = args.jobs.unwrap_or(cores).min(cores * MAX_JOBS_PER_CORE).min(files.len()).max(1);
    let budget = args.mem_budget_mb.map_or_else(default_budget, |mb| mb.saturating_mul(1 << 20));
    // Per-file ingest progress has no place inside a batch. Files are read,
    // not mapped: one that is truncated while the batch runs fails alone
    // instead of faulting the process.
    let opts = file_options(args)?;
    let tasks: Vec<Task<BatchFile>> = files
        .iter()
        .map(|f| Task { footprint: footprint(uncompressed_size(&f.path, f.size)), item: f.clone() })
        .collect();
    let progress = BatchProgress::new(&files, global.quiet);
    let observer: &dyn Observer<BatchFile> = match &progress {
        Some(p) => p,
        None => &NoProgress,
    };
    // Each file's report JSON is kept only for the JSON lines file.
    let keep_json = jsonl.is_some();
    let work = |f: &BatchFile| {
        let phase = |p: &'static str| {
            if let Some(bar) = &progress {
                bar.phase(f, p);
            }
        };
        analyze_file(f, &opts, keep_json, &phase)
    };
    let on_panic = |msg: String| Error::bad_input(format!("internal error: {msg}"));
    let at_once = jobs.min(most_at_once(&tasks.iter().map(|t| t.footprint).collect::<Vec<_>>(), budget));
    let (results, _peak) = run_bounded(tasks, jobs, budget, observer, &work, &on_panic);
    drop(progress);
    let outcomes: Vec<FileOutcome> = results.into_iter().map(|(file, result)| FileOutcome { file, result }).collect();
    if let Some(dir) = &args.summaries {
        write_summaries(dir, &outcomes, &opts).map_err(|mut e| {
            if e.kind == crate::error::ErrorKind::Io {
                e.message = format!("--summaries: cannot write the summaries: {}", e.message);
            }
            e
        })?;
    }
    if let (Some(out), Some(path)) = (jsonl.as_mut(), args.jsonl.as_deref()) {
        match write_jsonl(out, &outcomes) {
            Ok(()) => {}
            // A reader of `--jsonl -` (or `/dev/stdout`) that stopped reading (`| head`) is no
            // error, and the report still goes to its file.
            Err(e)
                if e.kind() == std::io::ErrorKind::BrokenPipe
                    && (path.as_os_str() == "-" || crate::run::atomic::is_descriptor(path)) => {}
            Err(e) => {
                let mut err = Error::io(e);
                err.message = format!("--jsonl: cannot write the lines: {}", err.message);
                return Err(err.in_file(path));
            }
        }
    }
    let ok: Vec<&RankFacts> = outcomes.iter().filter_map(|o| o.result.as_ref().ok().map(|a| &a.facts)).collect();
    let failures: Vec<(&Path, &Error)> =
        outcomes.iter().filter_map(|o| o.result.as_ref().err().map(|e| (o.file.path.as_path(), e))).collect();
    let summary = summarize(&ok, args.straggler_pct);
    let info = render::RunInfo {
        source: render::Source::Batch {
            dir: &args.dir,
            file: args.dir.is_file(),
            jobs: jobs.min(outcomes.len()),
            at_once: at_once.min(outcomes.len()),
            budget,
        },
        files: outcomes.len(),
        straggler_pct: args.straggler_pct,
        failures: &failures,
        skipped: &skipped,
        world_sizes: crate::analysis::ranks::world_sizes(ok.iter().copied()),
        file_notes: outcomes.iter().filter_map(|o| o.result.as_ref().ok()).flat_map(|a| a.notes.clone()).collect(),
        skip_notes,
        incomplete: crate::run::batch::incomplete_note(&skipped),
        ranks: crate::analysis::ranks::ranks_of(&ok),
        copies: crate::analysis::ranks::copied_ranks(&ok),
    };
    print_batch(&output, &summary, &info, global)
}

/// The files' own notes, as `triage` prints them; one warning line for
/// rank numbers that more than one file holds (two profiling cycles of one
/// rank, say): the report compares each file as a rank of its own, so the
/// medians count that rank twice; and one for traces of jobs of different
/// sizes.
fn warn_notes(summary: &[StageSummary], info: &render::RunInfo) {
    for note in info.file_notes.iter().cloned().chain(render::rank_notes(summary, info)) {
        let _ = writeln!(std::io::stderr(), "torchtriage: {note}");
    }
}

/// Prints the cross-rank report and, on stderr (unless run from a
/// library), the files that failed; exit code 1 when some did, or when the
/// batch lacks ranks (a directory below it could not be listed, an entry
/// named for a rank could not be read).
pub(super) fn print_batch(
    output: &Output,
    summary: &[StageSummary],
    info: &render::RunInfo,
    global: &Global,
) -> Result<i32> {
    if !global.quiet && !global.embedded {
        warn_notes(summary, info);
    }
    // The failures go to stderr even when stdout could not take the report.
    let printed = output.emit(output.renderer().batch(BatchView { stages: summary, info }));
    let failures = info.failures;
    let incomplete = info.incomplete.as_deref();
    if failures.is_empty() && incomplete.is_none() {
        return printed.map(|()| 0);
    }
    if global.embedded {
        return printed.map(|()| 1);
    }
    if let Some(note) = incomplete {
        // Printed even with --quiet, like the failures: it explains exit code 1.
        let _ = writeln!(std::io::stderr(), "torchtriage: {note}");
    }
    if failures.is_empty() {
        return printed.map(|()| 1);
    }
    // Errors from ingest already name the file; others get it here.
    let line = |&(path, e): &(&Path, &Error)| match e.path {
        Some(_) => e.to_string(),
        None => format!("{}: {e}", crate::error::shown(path)),
    };
    let head = format!("torchtriage: {} of {} files failed:", failures.len(), info.files);
    let mut err = std::io::stderr().lock();
    // One bad file is one line; more are listed under the count.
    let _ = match failures {
        [one] => writeln!(err, "{head} {}", line(one)),
        many => writeln!(err, "{head}").and_then(|()| many.iter().try_for_each(|f| writeln!(err, "  {}", line(f)))),
    };
    printed.map(|()| 1)
}

/// One JSON object per input file, in batch (path) order.
fn write_jsonl(out: &mut impl Write, outcomes: &[FileOutcome]) -> std::io::Result<()> {
    for o in outcomes {
        let line = render::file_line(o);
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
