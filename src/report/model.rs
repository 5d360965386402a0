//! The report model: what a triage run produces and every renderer reads.

use std::path::PathBuf;

use crate::analysis::framework::Framework;
use crate::analysis::ranks::RankFacts;
use crate::analysis::stage::Stage;
use crate::analysis::timeline::{Caveat, StepsLeftOut, Timeline};
use crate::error::Result;

use serde::Serialize;

use crate::analysis::fusion::FusionOpportunity;
use crate::analysis::overlap::ActionRow;
use crate::analysis::types::{cpu_op_cell, location_cell, Text, TextList, UNRESOLVED};

/// Version of the JSON layout ([`crate::report::json`]); documented in
/// `docs/json-schema.md`. Raised whenever a field changes meaning or type.
pub const SCHEMA_VERSION: u32 = 8;

/// Whether the trace served as its own mapping trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    SingleTrace,
    MappingFormal,
}

/// How closely the report keeps to the reference tool's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Compat {
    /// torchtriage's own report: the reference's tables plus what it does
    /// not say (timeline, notes on hidden rows).
    #[default]
    Default,
    /// The reference's Kernel, Overlap and Fuse sections line for line.
    Reference,
}

/// The framework each side was read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Frameworks {
    pub mapping: Framework,
    pub formal: Framework,
}

/// Every kernel row of one (formal trace, stage), with the share filter's
/// verdict per row.
#[derive(Clone, Debug, Serialize)]
pub struct KernelTable {
    #[serde(serialize_with = "display_path")]
    pub trace: PathBuf,
    pub stage: Stage,
    /// GPU time of the stage's kernels.
    pub total_us: f64,
    /// GPU time of all ranked kernels of the trace.
    pub trace_total_us: f64,
    pub rows: Vec<KernelTableRow>,
}

/// One kernel (canonical name) of a stage. The texts are shared with the
/// kernel maps and between rows: a stage can have hundreds of thousands.
#[derive(Clone, Debug, Serialize)]
pub struct KernelTableRow {
    pub kernel: Text,
    pub category: &'static str,
    pub total_us: f64,
    /// Share of the stage's GPU time, percent.
    pub share_pct: f64,
    pub launches: u64,
    pub max_us: f64,
    pub avg_us: f64,
    /// Python locations launching it (empty: unresolved).
    pub location: TextList,
    /// CPU ops launching it (empty: none known).
    pub cpu_op: TextList,
    /// Within the row limit and at or above the share bar: shown in tables.
    pub rendered: bool,
}

impl KernelTableRow {
    /// The location cell as tables print it: `<br>`-joined, or `unresolved`.
    pub fn location_cell(&self) -> String {
        location_cell(&self.location)
    }

    /// The CPU-op cell as tables print it: `<br>`-joined, or `-`.
    pub fn cpu_op_cell(&self) -> String {
        cpu_op_cell(&self.cpu_op)
    }
}

/// An overlap action row of one stage.
#[derive(Clone, Debug, Serialize)]
pub struct OverlapRow {
    pub stage: Stage,
    #[serde(flatten)]
    pub row: ActionRow,
    /// Cleared the share bar (shown in tables); JSON lists every row.
    pub rendered: bool,
}

/// Overlap statistics of one formal stage bundle.
#[derive(Clone, Debug, Serialize)]
pub struct OverlapStageStats {
    pub bundle: String,
    pub stage: Stage,
    pub total_busy_us: f64,
    #[serde(rename = "total_overlap_us")]
    pub overlap_us: f64,
    pub max_concurrent_streams: usize,
    /// Exclusive (exposed) time per communication kernel of the sweep:
    /// (canonical name, overlap category, exclusive µs), first-seen order.
    /// The batch summary reads no other category.
    #[serde(skip)]
    pub exclusive_comm_by_kernel: Vec<(String, &'static str, f64)>,
}

/// A fusion opportunity that cleared the share bar.
#[derive(Clone, Debug, Serialize)]
pub struct FuseRow {
    pub stage: Stage,
    pub pattern: String,
    /// `mainline|upstream|pending` + ` direct|split`.
    pub status: String,
    /// `Confirmed` or `Candidate`.
    pub confidence: String,
    pub related_us: f64,
    pub share_pct: f64,
    pub evidence: Vec<String>,
    /// Where the pattern's kernels are launched; tables print the list as
    /// the reference does, `unresolved` included, and JSON leaves out a
    /// list that says only that.
    #[serde(serialize_with = "known_locations")]
    pub current_locations: Vec<String>,
    pub candidate_path: Vec<String>,
    pub rationale: String,
}

/// A location list as JSON writes it: empty when no location is known.
fn known_locations<S: serde::Serializer>(list: &[String], s: S) -> std::result::Result<S::Ok, S::Error> {
    let known = list.iter().any(|l| l != UNRESOLVED);
    s.collect_seq(list.iter().filter(|_| known))
}

impl FuseRow {
    pub fn new(stage: Stage, share_pct: f64, item: FusionOpportunity) -> Self {
        FuseRow {
            stage,
            pattern: item.pattern,
            status: item.status,
            confidence: item.confidence,
            related_us: item.related_us,
            share_pct,
            evidence: item.evidence,
            current_locations: item.current_locations,
            candidate_path: item.candidate_path,
            rationale: item.rationale,
        }
    }
}

/// Everything a triage run reports; the JSON form is this, with
/// `schema_version` in front.
#[derive(Clone, Debug, Serialize)]
pub struct TriageReport {
    pub mode: Mode,
    pub compat: Compat,
    pub framework: Frameworks,
    #[serde(serialize_with = "display_paths")]
    pub mapping_traces: Vec<PathBuf>,
    #[serde(serialize_with = "display_paths")]
    pub formal_traces: Vec<PathBuf>,
    pub model: Option<String>,
    /// Rows under this share (percent) are not shown in tables.
    #[serde(rename = "min_share_pct")]
    pub min_share: f64,
    /// GPU busy and idle time, its causes, launch overhead and steps, per
    /// stage ([`crate::analysis::timeline`]); `None` when no formal trace
    /// was loaded.
    pub timeline: Option<Timeline>,
    pub kernel_tables: Vec<KernelTable>,
    #[serde(rename = "overlap")]
    pub overlap_rows: Vec<OverlapRow>,
    pub overlap_stats: Vec<OverlapStageStats>,
    #[serde(rename = "fuse")]
    pub fuse_rows: Vec<FuseRow>,
    /// Events skipped, over every trace read: complete events whose `ts` or
    /// `dur` is not a number, GPU events with a missing one or a negative
    /// `dur`, and events written as begin/end pairs.
    pub skipped_events: u64,
    /// The same count per trace file (named as the user named the input),
    /// for the warnings on stderr.
    #[serde(skip)]
    pub skipped_by_trace: Vec<(PathBuf, u64)>,
    /// Traces none of whose kernels' processes the `--pid-substring` filter
    /// matches (their overlap tables are empty), named as the user named
    /// the input, for the warnings on stderr.
    #[serde(skip)]
    pub pid_unmatched: Vec<PathBuf>,
    /// Inputs (directories) whose traces were not all analysed, for the
    /// note on stderr.
    #[serde(skip)]
    pub left_out: Vec<LeftOut>,
    /// `distributedInfo` of the first formal trace, if it has one.
    #[serde(skip)]
    pub distributed_info: Option<serde_json::Value>,
    /// What the first formal trace ran on, for a comparison of two runs.
    #[serde(skip)]
    pub hardware: crate::analysis::hardware::Hardware,
    /// What the reader should know about how the report was made, one line
    /// each (`note: ...` or `warning: ...`), as the command also prints
    /// them on stderr: inputs not wholly analysed, events skipped, a pid
    /// filter that kept nothing.
    pub notes: Vec<String>,
}

/// The warning for events skipped in `path` for a non-numeric `ts` or `dur`.
pub fn skipped_note(path: &std::path::Path, skipped: u64) -> String {
    format!(
        "warning: {}: {} skipped (non-numeric ts or dur; a GPU event without them or with a negative, NaN or infinite dur; an event written as a begin/end pair)",
        crate::error::shown(path),
        crate::report::counted(skipped, "event", "events")
    )
}

/// The warning for a trace none of whose kernels' processes the
/// `--pid-substring` filter `sub` matches.
pub fn pid_unmatched_note(path: &std::path::Path, sub: Option<&str>) -> String {
    format!(
        "warning: {}: --pid-substring {:?} matches no process with kernels; the overlap table is empty",
        crate::error::shown(path),
        sub.unwrap_or_default()
    )
}

/// The warning for GPU events the timeline (and the overlap step, which
/// leaves the same kernels out) left out for a start or end that is not a
/// finite number (`1e999`, `NaN`): the kernel table, as the reference's,
/// still counts them.
pub fn non_finite_note(path: &std::path::Path, events: u64) -> String {
    let (what, times, them) = if events == 1 {
        ("event", "its start or end is", "it")
    } else {
        ("events", "their starts or ends are", "them")
    };
    format!(
        "warning: {}: {events} GPU {what} left out of the timeline and the overlap table: {times} not a finite number (the kernel table keeps {them})",
        crate::error::shown(path)
    )
}

/// Timestamps (µs) from which a double's steps are longer than the
/// microsecond: 2^53. A profiler's clock since the epoch is near 1.7e15 µs
/// (steps of a quarter µs); one in nanoseconds taken for microseconds is
/// near 1.7e18 (steps of 256 µs).
pub const COARSE_CLOCK_US: f64 = 9_007_199_254_740_992.0;

/// The warning for a trace whose timestamps reach `extreme_us` (the one
/// farthest from zero), where a double holds a time only to its step:
/// shorter kernels, gaps and steps are not exact, so the timeline's figures
/// are not to be trusted.
pub fn coarse_clock_note(path: &std::path::Path, extreme_us: f64) -> String {
    // The spacing of doubles at that timestamp.
    let step = 2f64.powi(extreme_us.abs().log2().floor() as i32 - 52);
    // Written out while short (256 µs), in exponent form past that.
    let step = if step < 1e6 { step.to_string() } else { format!("{step:.3e}") };
    format!(
        "warning: {}: timestamps reach {extreme_us:.3e} µs, where a double holds a time only to {step} µs: \
         kernels, gaps and steps shorter than that are not measured exactly (a clock in nanoseconds written as microseconds?)",
        crate::error::shown(path)
    )
}

/// The warning for a trace with a [`Caveat`].
pub fn caveat_note(path: &std::path::Path, caveat: &Caveat) -> String {
    let path = crate::error::shown(path);
    match caveat {
        Caveat::GraphCapture => format!(
            "warning: {path}: the trace records a CUDA graph capture (a stream capture begins in it): the kernels \
             launched while capturing run only when the graph is replayed, so the GPU idles through the capture and \
             the timeline and verdict describe the capture, not the steady state; profile the replays"
        ),
        Caveat::Sampled(s) => format!(
            "warning: {path}: the trace looks sampled or filtered: the correlation ids of its {} host calls step by \
             {} at the median and {} at the 90th percentile, where the profiler's own traces step by a few, so most \
             calls and the kernels they launched were left out; the GPU looks idle where they ran, and the timeline \
             and verdict describe only the events kept",
            s.calls, s.median, s.p90
        ),
        Caveat::StepsLeftOut(StepsLeftOut { source, left_out: n, kept }) => {
            let (times, number) = if *n == 1 {
                ("its start or duration is", "a finite number")
            } else {
                ("their starts or durations are", "finite numbers")
            };
            let rest = match kept {
                0 if *n == 1 => "no step is made of it, so the steps come from another rule, if any".to_string(),
                0 => "no step is made of them, so the steps come from another rule, if any".to_string(),
                k => format!("the steps count the other {k}"),
            };
            format!(
                "warning: {path}: {n} of the trace's {} left out of the step figures: {times} missing, not {number}, or not \
                 positive; {rest}",
                crate::report::timeline::step_source_name(*source)
            )
        }
    }
}

impl TriageReport {
    /// [`TriageReport::notes`] from the report's other fields, the GPU
    /// events each trace's timeline left out (`non_finite`, by trace), the
    /// timestamp of each trace farthest from zero (`clocks`, µs) and each
    /// analysed trace's [`Caveat`]s.
    pub fn make_notes(
        &self,
        pid_substring: Option<&str>,
        non_finite: &[(PathBuf, u64)],
        clocks: &[(PathBuf, f64)],
        caveats: &[(PathBuf, Caveat)],
    ) -> Vec<String> {
        let left_out = self.left_out.iter().map(LeftOut::note);
        let skipped = self.skipped_by_trace.iter().map(|(p, n)| skipped_note(p, *n));
        let pid = self.pid_unmatched.iter().map(|p| pid_unmatched_note(p, pid_substring));
        let non_finite = non_finite.iter().filter(|(_, n)| *n > 0).map(|(p, n)| non_finite_note(p, *n));
        let coarse = clocks
            .iter()
            .filter(|(_, m)| m.is_finite() && m.abs() >= COARSE_CLOCK_US)
            .map(|(p, m)| coarse_clock_note(p, *m));
        let caveats = caveats.iter().map(|(p, c)| caveat_note(p, c));
        left_out.chain(skipped).chain(pid).chain(non_finite).chain(coarse).chain(caveats).collect()
    }

    /// Why a stage's overlap table may be empty other than for want of rows
    /// above the bar: the `--pid-substring` filter kept no process, or the
    /// traces hold no GPU kernel.
    pub fn overlap_filtered_out(&self) -> Option<&'static str> {
        if !self.pid_unmatched.is_empty() {
            Some("No process with kernels matches --pid-substring, so no kernel was analysed for overlap.")
        } else if self.has_no_kernels() {
            Some("No GPU kernels in this trace, so nothing to overlap.")
        } else {
            None
        }
    }

    /// The row an empty kernel table shows: no kernel at all (in the
    /// default report), or none above the share bar.
    pub fn no_kernel_rows_text(&self) -> String {
        if self.compat == Compat::Default && self.has_no_kernels() {
            "No GPU kernels in this trace.".into()
        } else {
            format!("No kernel rows at or above {}% share.", crate::report::markdown::fixed(self.min_share, 1))
        }
    }

    /// The timeline a rendered view shows: none under `--compat reference`,
    /// whose report holds only the reference's sections (the JSON and CSV
    /// forms keep it as data).
    pub fn shown_timeline(&self) -> Option<&crate::analysis::timeline::Timeline> {
        self.timeline.as_ref().filter(|_| self.compat == Compat::Default)
    }

    /// Whether the kernel tables hold no kernel at all (a CPU-only trace),
    /// not merely none above the share bar.
    pub fn has_no_kernels(&self) -> bool {
        self.kernel_tables.iter().all(|t| t.rows.is_empty())
    }

    /// Kernel rows shown in tables, table by table.
    pub fn rendered_kernel_rows(&self) -> impl Iterator<Item = (Stage, &KernelTableRow)> {
        self.kernel_tables.iter().flat_map(|t| t.rows.iter().filter(|r| r.rendered).map(move |r| (t.stage, r)))
    }
}

fn display_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(&p.display())
}

fn display_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.display().to_string()))
}

/// One trace file of the batch, in batch order.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchFile {
    /// Position in the batch (sorted by path); the rank of last resort.
    pub index: usize,
    pub path: PathBuf,
    pub size: u64,
    /// The rank the file's name carries (the name it was found by: a
    /// symbolic link's own), if any.
    pub name_rank: Option<u64>,
}

/// A triaged file.
#[derive(Clone, Debug)]
pub struct FileAnalysis {
    /// Rank and per-stage facts, as the cross-rank comparison reads them.
    pub facts: RankFacts,
    /// Stage the file's path names (`all` when none).
    pub path_stage: Stage,
    /// Wall time of the triage run (its load plus all analyses), ms.
    pub triage_ms: f64,
    /// Events skipped ([`TriageReport::skipped_events`]).
    pub skipped_events: u64,
    /// The notes of the file's triage report (events skipped, a pid filter
    /// that kept nothing, GPU events the timeline left out), for stderr.
    pub notes: Vec<String>,
    /// The file's triage report as compact JSON text, kept only when the
    /// JSON lines file will show it: a report with hundreds of thousands of
    /// kernel rows is large, and more so as a JSON value.
    pub report_json: Option<String>,
}

/// A directory input of which only some traces were analysed: one rank of
/// several, or the newest trace of each stage.
#[derive(Clone, Debug, PartialEq)]
pub struct LeftOut {
    /// The input as given.
    pub input: PathBuf,
    /// The traces analysed, each named from the input (`rank0.json`,
    /// `run2/rank0.json`), by the name it was found by.
    pub analysed: Vec<String>,
    /// The rank analysed, when the file names carry ranks.
    pub rank: Option<u64>,
    /// Traces found and not analysed.
    pub count: usize,
    /// What below the input could not be looked at, as named from it, with
    /// why (`node0 (cannot be listed)`): the choice of rank and run did not
    /// see it.
    pub unseen: Vec<String>,
}

impl LeftOut {
    /// The one-line note (`note: ...`), a warning (`warning: ...`) when
    /// something below the input could not be looked at (`unseen`).
    pub fn note(&self) -> String {
        let names = &self.analysed;
        let input = crate::error::shown(&self.input);
        let what = match self.rank {
            Some(rank) => format!("analysed rank {rank} only ({})", names.join(", ")),
            None if self.count == 0 => format!("analysed {}", names.join(", ")),
            None => format!("analysed the newest trace of each stage ({})", names.join(", ")),
        };
        let traces = if self.count == 1 { "trace" } else { "traces" };
        let others = match self.count {
            0 => String::new(),
            n => format!(
                "; {n} other {traces} left out (`torchtriage batch {}` reads every trace)",
                crate::error::shell_word(&self.input)
            ),
        };
        if self.unseen.is_empty() {
            return format!("note: {input}: {what}{others}");
        }
        format!(
            "warning: {input}: could not look at {} below it, which may hold other ranks or a newer run: {what}{others}",
            self.unseen.join(", ")
        )
    }
}

/// The result for one file.
#[derive(Debug)]
pub struct FileOutcome {
    pub file: BatchFile,
    pub result: Result<FileAnalysis>,
}

/// Why a JSON file below a batch directory was left out of the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    /// A `merged-` file this tool wrote.
    MergedTrace,
    /// A per-trace summary this tool wrote (`batch --summaries`, named
    /// `*.summary.json`).
    Summary,
    /// Read by content and not a trace (or unreadable).
    NotATrace,
    /// An empty file without `.trace.json` in its name.
    EmptyFile,
    /// A link whose target does not exist.
    DanglingLink,
    /// A link that leads back to itself (through other links), so it names
    /// no file.
    LinkLoop,
    /// A directory whose entries cannot be listed (no permission).
    UnreadableDirectory,
    /// A second name (a link) of a trace the batch reads under another.
    SameFile,
    /// A trace's name on something that is not a regular file: a pipe, a
    /// socket, a device (or a link to one), which a batch does not read.
    NotRegular,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::MergedTrace => "merged trace",
            SkipReason::Summary => "torchtriage summary",
            SkipReason::NotATrace => "not recognised as a trace",
            SkipReason::EmptyFile => "empty file",
            SkipReason::DanglingLink => "dangling symbolic link",
            SkipReason::LinkLoop => "symbolic link loop",
            SkipReason::UnreadableDirectory => "unreadable directory",
            SkipReason::SameFile => "the same trace as another name in the batch",
            SkipReason::NotRegular => "not a regular file (a pipe, socket or device)",
        }
    }

    /// The warning for `path` skipped for this reason when it is a sign of
    /// a rank that should have been there (an empty file, a link to a moved
    /// run, a file named as a rank, `name_rank`, that is no trace: cut
    /// short before its first event, overwritten; a second link to a trace
    /// the batch has under another name); `None` for a file worth only a
    /// line in the report.
    pub fn warning(self, path: &std::path::Path, name_rank: Option<u64>) -> Option<String> {
        let named = match (self, name_rank) {
            (SkipReason::MergedTrace | SkipReason::Summary, _) | (SkipReason::NotATrace, None) => return None,
            (SkipReason::UnreadableDirectory, _) | (_, None) => String::new(),
            (_, Some(rank)) => format!(" (its name gives rank {rank})"),
        };
        Some(format!("warning: {}: skipped, {self}{named}", crate::error::shown(path)))
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_file_named_for_a_rank_says_which_rank_whatever_the_reason() {
        let p = std::path::Path::new("rank4.json");
        for why in [SkipReason::EmptyFile, SkipReason::DanglingLink, SkipReason::NotRegular, SkipReason::NotATrace] {
            assert_eq!(
                why.warning(p, Some(4)),
                Some(format!("warning: rank4.json: skipped, {why} (its name gives rank 4)"))
            );
        }
        assert_eq!(SkipReason::EmptyFile.warning(p, None).as_deref(), Some("warning: rank4.json: skipped, empty file"));
        assert_eq!(SkipReason::NotATrace.warning(p, None), None);
        assert_eq!(SkipReason::MergedTrace.warning(p, Some(4)), None);
    }

    #[test]
    fn the_skipped_events_warning_counts_in_words() {
        let p = std::path::Path::new("t.json");
        assert_eq!(skipped_note(p, 1), "warning: t.json: 1 event skipped (non-numeric ts or dur; a GPU event without them or with a negative, NaN or infinite dur; an event written as a begin/end pair)");
        assert_eq!(skipped_note(p, 3), "warning: t.json: 3 events skipped (non-numeric ts or dur; a GPU event without them or with a negative, NaN or infinite dur; an event written as a begin/end pair)");
    }
}
