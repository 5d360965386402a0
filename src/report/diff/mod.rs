//! Two triage reports compared: BASE against NEW, stage by stage. Per stage
//! present on both sides, the timeline figures side by side with their
//! change, the kernels matched by canonical name with their change in GPU
//! time (per step or per ms of window as well when the sides cover
//! different spans), the same rolled up by category, and optionally a
//! regression gate. Pure: reads two [`TriageReport`](crate::report::model::TriageReport)s, does no I/O.
//! `compare` builds the model, [`markdown`] renders it; the JSON of
//! [`DiffReport`] is described in `docs/json-schema.md`, "Diff".

mod compare;
mod markdown;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde::Serialize;

use crate::analysis::stage::Stage;
use crate::analysis::types::{Text, TextList};

pub use compare::{diff, shared_once};
pub use markdown::markdown;

/// The figure a regression gate compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GateBasis {
    /// GPU busy time of the stage (summed over its GPUs).
    Busy,
    /// Median step time of the stage.
    Step,
    /// Total kernel time of the stage (its kernel table).
    Kernel,
}

impl GateBasis {
    /// The name as messages and tables print it.
    pub fn label(self) -> &'static str {
        match self {
            GateBasis::Busy => "busy",
            GateBasis::Step => "step p50",
            GateBasis::Kernel => "kernel",
        }
    }
}

/// A regression gate: NEW may be worse than BASE by at most
/// `threshold_pct` percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GateOptions {
    pub threshold_pct: f64,
    /// `None`: the step median where both sides have steps that span their
    /// GPU work ([`StageFigures::steps_span_gpu`]), else busy time; where
    /// the GPU idles within those steps ([`StageFigures::gpu_idles_in_steps`]),
    /// the worse of the step median and busy time.
    pub basis: Option<GateBasis>,
}

/// Options of [`diff`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffOptions {
    /// Kernel rows whose share of the stage's kernel time is below this
    /// percentage on both sides are left out.
    pub min_share: f64,
    pub gate: Option<GateOptions>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { min_share: 1.0, gate: None }
    }
}

/// BASE against NEW.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    #[serde(serialize_with = "display_paths")]
    pub base_traces: Vec<PathBuf>,
    #[serde(serialize_with = "display_paths")]
    pub new_traces: Vec<PathBuf>,
    #[serde(rename = "min_share_pct")]
    pub min_share: f64,
    /// Stages on both sides, in report order.
    pub stages: Vec<StageDiff>,
    /// Stages only BASE has.
    pub only_in_base: Vec<Stage>,
    /// Stages only NEW has.
    pub only_in_new: Vec<Stage>,
    pub gate: GateSummary,
    /// The two sides' triage notes (what a directory left out, a process
    /// filter that matched nothing), a note both share once.
    pub notes: Vec<String>,
    /// Events each side left out for unusable times (BASE, NEW): skipped
    /// at ingest, or left out of the timeline. A side that left out any
    /// has figures the gate cannot trust.
    #[serde(skip)]
    pub skipped_events: (u64, u64),
}

fn display_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.display().to_string()))
}

/// "1 kernel", "3 kernels".
pub(crate) fn kernels_count(n: usize) -> String {
    if n == 1 {
        "1 kernel".to_string()
    } else {
        format!("{n} kernels")
    }
}

/// Where a trace's stages come from, for a diff whose sides' stages differ.
const STAGE_SOURCE: &str = ": a trace's stages come from its annotations, else from its file and folder names";

/// Stage names joined with `, `.
pub(crate) fn stage_labels(stages: &[Stage]) -> String {
    stages.iter().map(|s| s.label()).collect::<Vec<_>>().join(", ")
}

/// The note of a gate that compared some stages while others are on one
/// side only: those passed the gate unseen. `None` without a gate, when
/// the gate compared nothing (its reason says why), or when both sides
/// have the same stages.
pub(crate) fn uncompared_stages_note(
    gate: &GateSummary,
    only_in_base: &[Stage],
    only_in_new: &[Stage],
) -> Option<String> {
    if gate.threshold_pct.is_none() || gate.not_evaluated() || (only_in_base.is_empty() && only_in_new.is_empty()) {
        return None;
    }
    let mut sides = Vec::new();
    if !only_in_base.is_empty() {
        sides.push(format!("base: {}", stage_labels(only_in_base)));
    }
    if !only_in_new.is_empty() {
        sides.push(format!("new: {}", stage_labels(only_in_new)));
    }
    Some(format!("warning: the gate did not compare the stages only one side has ({}){STAGE_SOURCE}", sides.join("; ")))
}

/// The line under a stage's kernel table for the kernels under the share
/// bar on both sides, which no format lists; `None` when there are none.
pub(crate) fn hidden_kernels_note(hidden: usize, min_share: f64) -> Option<String> {
    (hidden > 0).then(|| {
        format!(
            "{} below {}% of the stage's kernel time on both sides {} not shown (--min-share 0 shows {}).",
            kernels_count(hidden),
            crate::report::markdown::fixed(min_share, 1),
            if hidden == 1 { "is" } else { "are" },
            if hidden == 1 { "it" } else { "them" },
        )
    })
}

/// The timeline figures of one stage on one side (GPUs summed), or their
/// change. A figure is `None` when the side does not define it (no steps,
/// no communication, no timeline) or, for a change, when either side does
/// not.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StageFigures {
    pub window_us: Option<f64>,
    pub busy_us: Option<f64>,
    pub idle_us: Option<f64>,
    pub idle_pct: Option<f64>,
    pub compute_us: Option<f64>,
    pub comm_us: Option<f64>,
    pub comm_comp_overlap_pct: Option<f64>,
    /// Steps found in the stage (`None`: none found). Held as a float like
    /// the other figures, written as the whole number it is.
    #[serde(serialize_with = "whole_number")]
    pub steps: Option<f64>,
    pub step_p50_us: Option<f64>,
    pub step_p90_us: Option<f64>,
    pub launch_delay_p50_us: Option<f64>,
    pub kernels_per_step: Option<f64>,
    /// Total time of the stage's kernel table.
    pub kernel_us: Option<f64>,
    /// The side has steps, and they launched at least nine in ten of the
    /// stage's GPU events: its figures can be divided by its steps.
    #[serde(skip)]
    pub steps_launch_the_work: bool,
    /// The steps whose kernels the kernel table holds: `steps`, and the
    /// last step too when HTA's step filter left its GPU events out of the
    /// timeline (the kernel table keeps them).
    #[serde(skip)]
    pub kernel_steps: Option<f64>,
    /// The steps last together at least as long as the busiest GPU's busy
    /// time, as steps that enclose the GPU work they launch do, and launched
    /// at least nine in ten of the stage's GPU events. Steps that end before
    /// their kernels (a server's host-side ranges, which return once the
    /// work is queued) time the host, not the GPU; steps that launched part
    /// of the kernels time part of the work.
    #[serde(skip)]
    pub steps_span_gpu: bool,
    /// The steps span the GPU work, but the busiest GPU is busy for under
    /// nine tenths of their total time: the host sets the pace, and a slower
    /// kernel leaves the step time as it was.
    #[serde(skip)]
    pub gpu_idles_in_steps: bool,
    /// How far apart the side's CPU and GPU clocks look
    /// ([`LaunchStats::clock_offset_us`](crate::analysis::timeline::LaunchStats::clock_offset_us)):
    /// its launch delay is then not compared. Always `None` in a change.
    pub clock_offset_us: Option<f64>,
}

impl StageDiff {
    /// The kernels the text reports show: at or above the share bar on
    /// either side.
    pub fn shown_kernels(&self) -> impl Iterator<Item = &KernelDiff> {
        self.kernels.iter().filter(|k| k.rendered)
    }

    /// What the step counts of a per-step normalisation include beyond the
    /// steps the timeline counts: the last step, when HTA's step filter
    /// left its GPU events out of the timeline on a side.
    pub fn kernel_steps_note(&self) -> &'static str {
        let more = |f: &StageFigures| f.kernel_steps.zip(f.steps).is_some_and(|(k, s)| k > s);
        if more(&self.timeline.base) || more(&self.timeline.new) {
            ", counting the last step, whose GPU events HTA's step filter leaves out of the timeline"
        } else {
            ""
        }
    }

    /// Why the stage's launch delays are not compared, when a side's CPU and
    /// GPU clocks look offset.
    pub fn clocks_note(&self) -> Option<String> {
        let offset = |f: &StageFigures| f.clock_offset_us.is_some();
        let sides = match (offset(&self.timeline.base), offset(&self.timeline.new)) {
            (true, true) => "both sides",
            (true, false) => "the base side",
            (false, true) => "the new side",
            (false, false) => return None,
        };
        Some(format!(
            "Launch delay not compared: the CPU's and GPU's clocks look offset on {sides}, so launch delays there compare two clocks."
        ))
    }
}

/// A count held as a float, written as an integer (a figure that is not
/// one, which a count never is, is written as it is).
fn whole_number<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => s.serialize_i64(x as i64),
        other => other.serialize(s),
    }
}

/// The timeline figures of a stage: BASE, NEW and NEW minus BASE.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineDiff {
    pub base: StageFigures,
    pub new: StageFigures,
    pub delta: StageFigures,
}

/// What kernel times are divided by to compare sides that cover different
/// spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NormBasis {
    /// Both sides cover the same steps (or, without steps, windows within
    /// 1% of each other): totals compare as they are.
    None,
    /// Per step: the sides have different numbers of steps, each of which
    /// launched its side's GPU work.
    Step,
    /// Per millisecond of the stage's window: no steps that launched the
    /// work on a side, and windows that differ by more than 1%.
    WindowMs,
}

impl NormBasis {
    /// The unit as tables print it (`per step`), empty for `None`.
    pub fn per(self) -> &'static str {
        match self {
            NormBasis::None => "",
            NormBasis::Step => "per step",
            NormBasis::WindowMs => "per ms",
        }
    }
}

/// The basis of a stage's normalised figures and each side's number of
/// units (steps or milliseconds of window); units are `None` for
/// [`NormBasis::None`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Normalization {
    pub basis: NormBasis,
    pub base_units: Option<f64>,
    pub new_units: Option<f64>,
}

/// One side's kernel time and launches divided by its units, and the
/// change.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PerUnit {
    pub base_us: f64,
    pub new_us: f64,
    pub delta_us: f64,
    /// `None` when BASE has no time.
    pub delta_pct: Option<f64>,
    pub base_count: f64,
    pub new_count: f64,
}

/// Whether a kernel ran on both sides or on one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelStatus {
    /// On both sides.
    Changed,
    /// Only in NEW.
    New,
    /// Only in BASE.
    Gone,
}

impl KernelStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            KernelStatus::Changed => "changed",
            KernelStatus::New => "new",
            KernelStatus::Gone => "gone",
        }
    }
}

/// One kernel (canonical name) of a stage on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelDiff {
    pub kernel: Text,
    /// The kernel table's category refined for comparing runs
    /// ([`comparison_category`](crate::analysis::kernels::family::comparison_category)).
    pub category: &'static str,
    pub base_us: f64,
    pub new_us: f64,
    pub delta_us: f64,
    /// Change relative to BASE, percent; `None` when BASE has no time.
    pub delta_pct: Option<f64>,
    pub base_count: u64,
    pub new_count: u64,
    pub status: KernelStatus,
    /// The same per unit of the stage's normalisation; `None` when the
    /// stage is not normalised.
    pub normalized: Option<PerUnit>,
    /// Python locations launching it (NEW's where NEW has any, else BASE's).
    pub location: TextList,
    /// CPU ops launching it (NEW's where NEW has any, else BASE's).
    pub cpu_op: TextList,
    /// At or above the share bar (`--min-share`) on either side: the text
    /// reports show it.
    pub rendered: bool,
}

impl KernelDiff {
    /// The status as the text reports show it: a kernel on both sides whose
    /// time and launches did not move is `unchanged`, not `changed`.
    pub fn label(&self) -> &'static str {
        let same = self.delta_us == 0.0 && self.base_count == self.new_count;
        if self.status == KernelStatus::Changed && same {
            "unchanged"
        } else {
            self.status.as_str()
        }
    }
}

/// One kernel category of a stage on both sides: every kernel of the
/// category summed, whatever its share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CategoryDiff {
    pub category: &'static str,
    pub base_us: f64,
    pub new_us: f64,
    pub delta_us: f64,
    pub delta_pct: Option<f64>,
    pub base_count: u64,
    pub new_count: u64,
    pub normalized: Option<PerUnit>,
}

/// The gate's verdict on one stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageGate {
    /// The figure compared (the default picks it per stage).
    pub basis: GateBasis,
    /// What `base_us` and `new_us` are per: busy and kernel time are per
    /// step when the stage is normalised per step, else totals; the step
    /// median is per step already.
    pub per: NormBasis,
    pub base_us: f64,
    pub new_us: f64,
    /// `None` when BASE is zero: nothing to compare against.
    pub change_pct: Option<f64>,
    pub tripped: bool,
    /// How many times as often NEW launched the kernels both sides ran,
    /// when busy or kernel time is compared over windows of different
    /// lengths that have no steps to divide by and the launches show
    /// different amounts of work: `new_us` is NEW's figure divided by it,
    /// so that the gate compares the same work. `None` otherwise.
    pub work_ratio: Option<f64>,
    /// Set instead of `work_ratio` when the launches disagree on it: the
    /// kernels both sides ran changed their launch counts unevenly, so no
    /// one ratio stands for a longer capture and the totals compare as
    /// captured. `None` otherwise.
    pub uneven_launches: Option<UnevenLaunches>,
    /// The threshold the stage was judged against, percent (in the report's
    /// `gate.threshold_pct`).
    #[serde(skip)]
    pub threshold_pct: f64,
}

/// Launch ratios that disagree ([`StageGate::uneven_launches`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UnevenLaunches {
    /// NEW ÷ BASE launch count at the median, weighted by BASE's time.
    pub ratio: f64,
    /// Share of the matched kernels' BASE time, percent, in kernels whose
    /// ratio is within 10% of `ratio`.
    pub agreeing_pct: f64,
}

impl StageGate {
    /// What the compared figures are per, as the gate's lines word it after
    /// the figure's name (` per step`); empty for totals.
    pub fn per_label(&self) -> String {
        match (self.per, self.work_ratio) {
            (NormBasis::None, Some(_)) => " per base's work".to_string(),
            (NormBasis::None, None) => String::new(),
            (per, _) => format!(" {}", per.per()),
        }
    }

    /// The change as the gate's lines write it (`+4.0%`): one decimal, or
    /// as many more (up to nine) as it takes to read on the side of the
    /// threshold the verdict is on (`+5.02%` exceeds 5%, where `+5.0%`
    /// would not seem to); `-` when BASE is zero.
    pub fn change_text(&self) -> String {
        let Some(c) = self.change_pct.filter(|c| c.is_finite()) else { return "-".into() };
        let reads = |d: usize| {
            let shown: f64 = format!("{c:.d$}").parse().unwrap_or(c);
            (shown > self.threshold_pct) == self.tripped
        };
        let d = (1..=9).find(|&d| reads(d)).unwrap_or(9);
        crate::report::markdown::unsigned_zero(format!("{c:+.d$}%"))
    }

    /// Why NEW's figure was divided, for a gate that compares the same work
    /// over captures of different lengths; `None` otherwise.
    pub fn work_note(&self) -> Option<String> {
        if let Some(u) = self.uneven_launches {
            return Some(format!(
                "The sides cover different spans without steps to divide by, and the launches do not say how much more work new captured: kernels holding {}% of base's time (of those both ran) were launched {} as often, the rest otherwise, so the gate compares {} time as captured.",
                // Rounded down: a share just under the bar never reads as it.
                (u.agreeing_pct + 1e-9).floor(),
                ratio_text(u.ratio),
                self.basis.label()
            ));
        }
        let r = self.work_ratio?;
        Some(format!(
            "The sides cover different spans without steps to divide by, and new launched the kernels both ran {} as often: the gate divides new's {} time by that to compare the same work.",
            ratio_text(r),
            self.basis.label()
        ))
    }
}

/// A ratio as the gate's lines write it: `2.00×`, `0.500×`.
fn ratio_text(r: f64) -> String {
    if r >= 1.0 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}

/// One stage on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageDiff {
    pub stage: Stage,
    pub timeline: TimelineDiff,
    pub normalization: Normalization,
    /// Every kernel of either side, largest change first (the change per
    /// step when the stage is normalised per step); those below the share
    /// bar on both sides are not `rendered`.
    pub kernels: Vec<KernelDiff>,
    /// Kernels below the share bar on both sides.
    pub kernels_hidden: usize,
    /// Share of BASE's kernel time in kernels NEW ran too (matched by
    /// name), percent; `None` when BASE has no kernel time.
    pub matched_base_pct: Option<f64>,
    /// Every category, largest change first.
    pub categories: Vec<CategoryDiff>,
    /// The gate's verdict; `None` without a gate or when the figure it
    /// compares is missing on a side.
    pub gate: Option<StageGate>,
}

/// The gate as asked for and its outcome; every field `None` without a
/// gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GateSummary {
    pub threshold_pct: Option<f64>,
    /// The figure asked for; `auto` picks the step median where both sides
    /// have steps that span their GPU work, else busy time.
    pub basis: Option<&'static str>,
    /// Some stage's NEW is worse than its BASE by more than the threshold;
    /// `None` with a gate when no stage could be compared.
    pub tripped: Option<bool>,
    /// Why a gate that compared no stage was not evaluated
    /// ([`DiffReport::gate_not_evaluated_reason`]); `None` otherwise.
    pub not_evaluated: Option<String>,
    /// The lines the command prints on stderr as it exits 1 for the gate
    /// ([`DiffReport::gate_failures`]), without their `torchtriage: `.
    pub messages: Vec<String>,
}

impl GateSummary {
    /// A gate was asked for, but no stage had its figure on both sides.
    pub fn not_evaluated(&self) -> bool {
        self.threshold_pct.is_some() && self.tripped.is_none()
    }
}

impl DiffReport {
    /// Fills in the gate's outcome in words once the stages are compared:
    /// why it compared nothing, and its stderr lines.
    pub(crate) fn settle_gate(&mut self) {
        if self.gate.not_evaluated() {
            self.gate.not_evaluated = Some(self.gate_not_evaluated_reason());
        }
        self.gate.messages = self.gate_messages();
    }

    /// Why a gate that compared nothing was not evaluated.
    pub fn gate_not_evaluated_reason(&self) -> String {
        if let Some(why) = self.skipped_reason() {
            return why;
        }
        if self.stages.is_empty() && self.only_in_base.is_empty() && self.only_in_new.is_empty() {
            // A stage is where kernels ran: two CPU-only traces have none.
            "neither side has GPU kernels".to_string()
        } else if self.stages.is_empty() {
            let side = |stages: &[Stage]| match stages {
                [] => "no GPU kernels".to_string(),
                _ => stage_labels(stages),
            };
            let source = if self.only_in_base.is_empty() || self.only_in_new.is_empty() { "" } else { STAGE_SOURCE };
            format!(
                "no stage is present on both sides (base: {}; new: {}){source}",
                side(&self.only_in_base),
                side(&self.only_in_new)
            )
        } else {
            "no stage has the gate's figure on both sides".to_string()
        }
    }

    /// Why the gate cannot judge the sides' figures: a side left out
    /// events for their times (a GPU event without a usable start or duration is
    /// left out of every figure), so a faster-looking side may just have
    /// lost its kernels. `None` when neither did.
    fn skipped_reason(&self) -> Option<String> {
        let side =
            |name: &str, n: u64| (n > 0).then(|| format!("{name} left out {}", super::counted(n, "event", "events")));
        let (b, n) = self.skipped_events;
        let sides: Vec<String> = [side("base", b), side("new", n)].into_iter().flatten().collect();
        (!sides.is_empty()).then(|| {
            format!(
                "{} for unusable times, so the figures compared lack them; each side's notes (its warnings) say which",
                sides.join(" and ")
            )
        })
    }

    /// The gate's outcome as the text reports word it (`tripped`, `passed`,
    /// `not evaluated (why)`); `None` without a gate.
    pub fn gate_outcome(&self) -> Option<String> {
        self.gate.threshold_pct?;
        Some(match self.gate.tripped {
            Some(true) => "tripped".to_string(),
            Some(false) => "passed".to_string(),
            None => format!("not evaluated ({})", self.gate_not_evaluated_reason()),
        })
    }

    /// One line per stage whose gate tripped, for stderr, or one line when
    /// the gate could not be evaluated.
    pub fn gate_failures(&self) -> Vec<String> {
        self.gate_messages().into_iter().map(|m| format!("torchtriage: {m}")).collect()
    }

    /// [`DiffReport::gate_failures`] without the command's name.
    fn gate_messages(&self) -> Vec<String> {
        let Some(threshold) = self.gate.threshold_pct else { return Vec::new() };
        if self.gate.not_evaluated() {
            return vec![format!("gate: not evaluated: {}", self.gate_not_evaluated_reason())];
        }
        self.stages
            .iter()
            .filter_map(|s| {
                let g = s.gate.as_ref().filter(|g| g.tripped)?;
                let work = match (g.work_ratio, g.uneven_launches) {
                    (Some(r), _) => format!(
                        " (new launched the kernels both ran {} as often, without steps to divide by)",
                        ratio_text(r)
                    ),
                    (None, Some(_)) => {
                        " (as captured: the kernels' launch counts changed unevenly, without steps to divide by)"
                            .to_string()
                    }
                    (None, None) => String::new(),
                };
                Some(format!(
                    "gate: {}: {}{} {} -> {} ({}) exceeds {threshold}%{work}",
                    s.stage.label(),
                    g.basis.label(),
                    g.per_label(),
                    markdown::time(g.base_us),
                    markdown::time(g.new_us),
                    g.change_text()
                ))
            })
            .collect()
    }
}
