//! Two triage reports compared: BASE against NEW, stage by stage. Per stage
//! present on both sides, the timeline figures side by side with their
//! change, and the kernels matched by canonical name with their change in
//! GPU time; optionally a regression gate. Pure: reads two
//! [`TriageReport`]s, does no I/O. Renderers: [`markdown`] and the JSON of
//! [`DiffReport`] (`docs/json-schema.md`, "Diff").

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::analysis::stage::Stage;
use crate::analysis::timeline::StageTimeline;
use crate::analysis::types::Text;
use crate::report::markdown::{escape_md_cell, fixed};
use crate::report::model::TriageReport;
use crate::report::timeline::stage_sum;

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
    /// `None`: the step median where both sides have steps, else busy time.
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
    pub step_p50_us: Option<f64>,
    pub step_p90_us: Option<f64>,
    pub launch_delay_p50_us: Option<f64>,
    pub kernels_per_step: Option<f64>,
    /// Total time of the stage's kernel table.
    pub kernel_us: Option<f64>,
}

/// How a figure is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Time,
    /// A share, 0–100; its change is in points.
    Percent,
    Count,
}

/// The figures in display order: (label, unit, value).
type FigureRow = (&'static str, Unit, Option<f64>);

impl StageFigures {
    fn of(timeline: Option<&StageTimeline>, kernel_us: Option<f64>) -> Self {
        let mut f = StageFigures { kernel_us, ..StageFigures::default() };
        if let Some(t) = timeline {
            let sum = stage_sum(t);
            f.window_us = Some(sum.window_us);
            f.busy_us = Some(sum.busy_us);
            f.idle_us = Some(sum.idle_us);
            f.idle_pct = sum.idle_pct;
            f.compute_us = Some(sum.compute_us);
            f.comm_us = Some(sum.comm_us);
            f.comm_comp_overlap_pct = sum.comm_comp_overlap_pct;
            f.step_p50_us = t.steps.p50_us;
            f.step_p90_us = t.steps.p90_us;
            f.launch_delay_p50_us = t.launch.delay_p50_us;
            f.kernels_per_step = t.launch.kernels_per_step;
        }
        f
    }

    fn rows(&self) -> [FigureRow; 12] {
        [
            ("window", Unit::Time, self.window_us),
            ("busy", Unit::Time, self.busy_us),
            ("idle", Unit::Time, self.idle_us),
            ("idle share", Unit::Percent, self.idle_pct),
            ("compute", Unit::Time, self.compute_us),
            ("communication", Unit::Time, self.comm_us),
            ("comm/compute overlap", Unit::Percent, self.comm_comp_overlap_pct),
            ("step p50", Unit::Time, self.step_p50_us),
            ("step p90", Unit::Time, self.step_p90_us),
            ("launch delay p50", Unit::Time, self.launch_delay_p50_us),
            ("kernels per step", Unit::Count, self.kernels_per_step),
            ("kernel time", Unit::Time, self.kernel_us),
        ]
    }

    fn delta(base: &Self, new: &Self) -> Self {
        let d = |b: Option<f64>, n: Option<f64>| Some(n? - b?);
        StageFigures {
            window_us: d(base.window_us, new.window_us),
            busy_us: d(base.busy_us, new.busy_us),
            idle_us: d(base.idle_us, new.idle_us),
            idle_pct: d(base.idle_pct, new.idle_pct),
            compute_us: d(base.compute_us, new.compute_us),
            comm_us: d(base.comm_us, new.comm_us),
            comm_comp_overlap_pct: d(base.comm_comp_overlap_pct, new.comm_comp_overlap_pct),
            step_p50_us: d(base.step_p50_us, new.step_p50_us),
            step_p90_us: d(base.step_p90_us, new.step_p90_us),
            launch_delay_p50_us: d(base.launch_delay_p50_us, new.launch_delay_p50_us),
            kernels_per_step: d(base.kernels_per_step, new.kernels_per_step),
            kernel_us: d(base.kernel_us, new.kernel_us),
        }
    }
}

/// The timeline figures of a stage: BASE, NEW and NEW minus BASE.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineDiff {
    pub base: StageFigures,
    pub new: StageFigures,
    pub delta: StageFigures,
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
    #[serde(rename = "name")]
    pub kernel: Text,
    pub category: &'static str,
    pub base_us: f64,
    pub new_us: f64,
    pub delta_us: f64,
    /// Change relative to BASE, percent; `None` when BASE has no time.
    pub delta_pct: Option<f64>,
    pub base_count: u64,
    pub new_count: u64,
    pub status: KernelStatus,
}

/// The gate's verdict on one stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageGate {
    /// The figure compared (the default picks it per stage).
    pub basis: GateBasis,
    pub base_us: f64,
    pub new_us: f64,
    /// `None` when BASE is zero: nothing to compare against.
    pub change_pct: Option<f64>,
    pub tripped: bool,
}

/// One stage on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageDiff {
    pub stage: Stage,
    pub timeline: TimelineDiff,
    /// At or above the share bar on either side, largest change first.
    pub kernels: Vec<KernelDiff>,
    /// Kernels below the share bar on both sides.
    pub kernels_hidden: usize,
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
    /// have steps, else busy time.
    pub basis: Option<&'static str>,
    /// Some stage's NEW is worse than its BASE by more than the threshold.
    pub tripped: Option<bool>,
}

/// Per-kernel totals of one side of a stage.
#[derive(Default)]
struct KernelTotals {
    category: &'static str,
    total_us: f64,
    launches: u64,
}

/// The stage's kernels by name (tables of one stage from several traces
/// summed) and the stage's total kernel time.
fn stage_kernels(r: &TriageReport, stage: Stage) -> Option<(BTreeMap<Text, KernelTotals>, f64)> {
    let mut found = false;
    let mut total = 0.0;
    let mut rows: BTreeMap<Text, KernelTotals> = BTreeMap::new();
    for t in r.kernel_tables.iter().filter(|t| t.stage == stage) {
        found = true;
        total += t.total_us;
        for row in &t.rows {
            let e = rows.entry(row.kernel.clone()).or_default();
            e.category = row.category;
            e.total_us += row.total_us;
            e.launches += row.launches;
        }
    }
    found.then_some((rows, total))
}

fn stage_timeline(r: &TriageReport, stage: Stage) -> Option<&StageTimeline> {
    r.timeline.as_ref()?.stages.iter().find(|s| s.stage == stage)
}

/// The stages a report has: a timeline stage or a kernel table.
fn stages_of(r: &TriageReport) -> Vec<Stage> {
    let mut stages: Vec<Stage> = r.kernel_tables.iter().map(|t| t.stage).collect();
    if let Some(t) = &r.timeline {
        stages.extend(t.stages.iter().map(|s| s.stage));
    }
    stages.sort();
    stages.dedup();
    stages
}

fn share(us: f64, total: f64) -> f64 {
    if total > 0.0 {
        100.0 * us / total
    } else {
        0.0
    }
}

fn kernel_rows(
    base: Option<(BTreeMap<Text, KernelTotals>, f64)>,
    new: Option<(BTreeMap<Text, KernelTotals>, f64)>,
    min_share: f64,
) -> (Vec<KernelDiff>, usize) {
    let (base, base_total) = base.unwrap_or_default();
    let (mut new, new_total) = new.unwrap_or_default();
    let mut all = Vec::with_capacity(base.len().max(new.len()));
    for (name, b) in base {
        let n = new.remove(&name);
        all.push(make_row(name, Some(b), n));
    }
    for (name, n) in new {
        all.push(make_row(name, None, Some(n)));
    }
    let before = all.len();
    all.retain(|k| share(k.base_us, base_total).max(share(k.new_us, new_total)) >= min_share);
    let hidden = before - all.len();
    all.sort_by(|a, b| b.delta_us.abs().total_cmp(&a.delta_us.abs()).then_with(|| a.kernel.cmp(&b.kernel)));
    (all, hidden)
}

fn make_row(kernel: Text, base: Option<KernelTotals>, new: Option<KernelTotals>) -> KernelDiff {
    let status = match (&base, &new) {
        (Some(_), Some(_)) => KernelStatus::Changed,
        (None, _) => KernelStatus::New,
        (Some(_), None) => KernelStatus::Gone,
    };
    let category = new.as_ref().or(base.as_ref()).map_or("", |k| k.category);
    let (base_us, base_count) = base.map_or((0.0, 0), |k| (k.total_us, k.launches));
    let (new_us, new_count) = new.map_or((0.0, 0), |k| (k.total_us, k.launches));
    let delta_us = new_us - base_us;
    let delta_pct = (base_us > 0.0).then(|| 100.0 * delta_us / base_us);
    KernelDiff { kernel, category, base_us, new_us, delta_us, delta_pct, base_count, new_count, status }
}

/// The gate's verdict on a stage with these figures.
fn gate_stage(gate: &GateOptions, base: &StageFigures, new: &StageFigures) -> Option<StageGate> {
    let basis = gate.basis.unwrap_or(if base.step_p50_us.is_some() && new.step_p50_us.is_some() {
        GateBasis::Step
    } else {
        GateBasis::Busy
    });
    let pick = |f: &StageFigures| match basis {
        GateBasis::Busy => f.busy_us,
        GateBasis::Step => f.step_p50_us,
        GateBasis::Kernel => f.kernel_us,
    };
    let (base_us, new_us) = (pick(base)?, pick(new)?);
    let change_pct = (base_us > 0.0).then(|| 100.0 * (new_us - base_us) / base_us);
    let tripped = change_pct.is_some_and(|c| c > gate.threshold_pct);
    Some(StageGate { basis, base_us, new_us, change_pct, tripped })
}

/// Compares NEW against BASE.
pub fn diff(base: &TriageReport, new: &TriageReport, opts: &DiffOptions) -> DiffReport {
    let base_stages = stages_of(base);
    let new_stages = stages_of(new);
    let mut stages = Vec::new();
    for &stage in base_stages.iter().filter(|s| new_stages.contains(s)) {
        let base_k = stage_kernels(base, stage);
        let new_k = stage_kernels(new, stage);
        let base_f = StageFigures::of(stage_timeline(base, stage), base_k.as_ref().map(|k| k.1));
        let new_f = StageFigures::of(stage_timeline(new, stage), new_k.as_ref().map(|k| k.1));
        let gate = opts.gate.as_ref().and_then(|g| gate_stage(g, &base_f, &new_f));
        let (kernels, kernels_hidden) = kernel_rows(base_k, new_k, opts.min_share);
        let delta = StageFigures::delta(&base_f, &new_f);
        stages.push(StageDiff {
            stage,
            timeline: TimelineDiff { base: base_f, new: new_f, delta },
            kernels,
            kernels_hidden,
            gate,
        });
    }
    let gate = opts.gate.map_or_else(GateSummary::default, |g| GateSummary {
        threshold_pct: Some(g.threshold_pct),
        basis: Some(match g.basis {
            None => "auto",
            Some(GateBasis::Busy) => "busy",
            Some(GateBasis::Step) => "step",
            Some(GateBasis::Kernel) => "kernel",
        }),
        tripped: Some(stages.iter().any(|s| s.gate.as_ref().is_some_and(|g| g.tripped))),
    });
    DiffReport {
        base_traces: base.formal_traces.clone(),
        new_traces: new.formal_traces.clone(),
        min_share: opts.min_share,
        only_in_base: base_stages.iter().copied().filter(|s| !new_stages.contains(s)).collect(),
        only_in_new: new_stages.iter().copied().filter(|s| !base_stages.contains(s)).collect(),
        stages,
        gate,
    }
}

impl DiffReport {
    /// One line per stage whose gate tripped, for stderr.
    pub fn gate_failures(&self) -> Vec<String> {
        let Some(threshold) = self.gate.threshold_pct else { return Vec::new() };
        self.stages
            .iter()
            .filter_map(|s| {
                let g = s.gate.as_ref().filter(|g| g.tripped)?;
                Some(format!(
                    "torchtriage: gate: {}: {} {} -> {} ({}) exceeds {threshold}%",
                    s.stage.as_str(),
                    g.basis.label(),
                    time(g.base_us),
                    time(g.new_us),
                    signed_pct(g.change_pct)
                ))
            })
            .collect()
    }
}

fn display_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.display().to_string()))
}

/// A time in the unit that suits it: `812.4 µs`, `12.34 ms`, `3.210 s`.
fn time(us: f64) -> String {
    let a = us.abs();
    if a >= 1e6 {
        format!("{} s", fixed(us / 1e6, 3))
    } else if a >= 1e3 {
        format!("{} ms", fixed(us / 1e3, 2))
    } else {
        format!("{} µs", fixed(us, 1))
    }
}

fn signed(text: String, x: f64) -> String {
    if x > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

fn signed_pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| signed(format!("{}%", fixed(v, 1)), v))
}

fn cell(x: Option<f64>, unit: Unit) -> String {
    match (x, unit) {
        (None, _) => "-".into(),
        (Some(v), Unit::Time) => time(v),
        (Some(v), Unit::Percent) => format!("{}%", fixed(v, 1)),
        (Some(v), Unit::Count) => fixed(v, 1),
    }
}

fn delta_cell(base: Option<f64>, delta: Option<f64>, unit: Unit) -> String {
    let Some(d) = delta else { return "-".into() };
    match unit {
        Unit::Time => {
            let abs = signed(time(d), d);
            match base {
                Some(b) if b > 0.0 => format!("{abs} ({})", signed_pct(Some(100.0 * d / b))),
                _ => abs,
            }
        }
        Unit::Percent => format!("{} pt", signed(fixed(d, 1), d)),
        Unit::Count => {
            let abs = signed(fixed(d, 1), d);
            match base {
                Some(b) if b > 0.0 => format!("{abs} ({})", signed_pct(Some(100.0 * d / b))),
                _ => abs,
            }
        }
    }
}

/// A kernel's time on one side, `-` when it did not run there.
fn side_time(us: f64, count: u64) -> String {
    if count == 0 && us == 0.0 {
        "-".into()
    } else {
        time(us)
    }
}

fn stage_list(stages: &[Stage]) -> String {
    stages.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// The diff as markdown: per stage a timeline table and a kernel table.
pub fn markdown(d: &DiffReport) -> String {
    let mut out = vec!["# torchtriage diff".to_string(), String::new()];
    let paths = |p: &[PathBuf]| p.iter().map(|p| format!("`{}`", p.display())).collect::<Vec<_>>().join(", ");
    out.push(format!("- base: {}", paths(&d.base_traces)));
    out.push(format!("- new: {}", paths(&d.new_traces)));
    if !d.only_in_base.is_empty() {
        out.push(format!("- stages only in base: {}", stage_list(&d.only_in_base)));
    }
    if !d.only_in_new.is_empty() {
        out.push(format!("- stages only in new: {}", stage_list(&d.only_in_new)));
    }
    if let (Some(t), Some(b), Some(tripped)) = (d.gate.threshold_pct, d.gate.basis, d.gate.tripped) {
        let outcome = if tripped { "tripped" } else { "passed" };
        out.push(format!("- gate: {outcome} (basis {b}, threshold {t}%)"));
    }
    if d.stages.is_empty() {
        out.push(String::new());
        out.push("No stage is present on both sides.".into());
    }
    for s in &d.stages {
        out.push(String::new());
        out.push(format!("## Stage {}", s.stage.label()));
        out.push(String::new());
        out.push("| figure | base | new | Δ |".into());
        out.push("| --- | ---: | ---: | ---: |".into());
        let (base, new, delta) = (s.timeline.base.rows(), s.timeline.new.rows(), s.timeline.delta.rows());
        for ((b, n), dl) in base.iter().zip(&new).zip(&delta) {
            let (label, unit, bv) = *b;
            if bv.is_none() && n.2.is_none() {
                continue;
            }
            out.push(format!(
                "| {label} | {} | {} | {} |",
                cell(bv, unit),
                cell(n.2, unit),
                delta_cell(bv, dl.2, unit)
            ));
        }
        if let Some(g) = &s.gate {
            let verdict = if g.tripped { "tripped" } else { "passed" };
            out.push(String::new());
            out.push(format!(
                "Gate on {}: {} -> {} ({}), {verdict}.",
                g.basis.label(),
                time(g.base_us),
                time(g.new_us),
                signed_pct(g.change_pct)
            ));
        }
        out.push(String::new());
        out.push("| kernel | category | base | new | Δ | Δ% | launches base → new | status |".into());
        out.push("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |".into());
        for k in &s.kernels {
            out.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} → {} | {} |",
                escape_md_cell(&k.kernel),
                escape_md_cell(k.category),
                side_time(k.base_us, k.base_count),
                side_time(k.new_us, k.new_count),
                signed(time(k.delta_us), k.delta_us),
                signed_pct(k.delta_pct),
                k.base_count,
                k.new_count,
                k.status.as_str()
            ));
        }
        if s.kernels_hidden > 0 {
            out.push(String::new());
            out.push(format!(
                "{} kernels below {}% of the stage's kernel time on both sides are not shown.",
                s.kernels_hidden,
                fixed(d.min_share, 1)
            ));
        }
    }
    out.push(String::new());
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::framework::Framework;
    use crate::analysis::timeline::{Basis, Figures, GpuTimeline, LaunchStats, Steps, Timeline, Verdict, VerdictKind};
    use crate::report::model::{Compat, Frameworks, KernelTable, KernelTableRow, Mode};
    use std::sync::Arc;

    fn row(name: &str, total_us: f64, launches: u64) -> KernelTableRow {
        KernelTableRow {
            kernel: Arc::from(name),
            category: "GEMM",
            total_us,
            share_pct: 0.0,
            launches,
            max_us: total_us,
            avg_us: total_us / launches.max(1) as f64,
            location: Arc::from(Vec::<Text>::new()),
            cpu_op: Arc::from(Vec::<Text>::new()),
            rendered: true,
        }
    }

    fn verdict() -> Verdict {
        Verdict {
            kind: VerdictKind::GpuBound,
            window_us: 0.0,
            idle_pct: None,
            host_wait_pct: None,
            exposed_comm_pct: None,
            kernel_p50_us: None,
            launch_p50_us: None,
        }
    }

    /// A report with one stage's kernel table and timeline (busy time and
    /// optionally a step median).
    fn report(stage: Stage, rows: Vec<KernelTableRow>, busy_us: f64, step_p50: Option<f64>) -> TriageReport {
        let total_us = rows.iter().map(|r| r.total_us).sum();
        let figures = Figures { busy_us, window_us: busy_us * 2.0, ..Figures::default() };
        let stage_tl = StageTimeline {
            stage,
            gpus: vec![GpuTimeline { pid: "0".into(), rank: None, figures }],
            launch: LaunchStats::default(),
            steps: Steps { p50_us: step_p50, ..Steps::default() },
            verdict: verdict(),
        };
        TriageReport {
            mode: Mode::SingleTrace,
            compat: Compat::Default,
            framework: Frameworks { mapping: Framework::Generic, formal: Framework::Generic },
            mapping_traces: vec![],
            formal_traces: vec![PathBuf::from("t.json")],
            model: None,
            min_share: 1.0,
            timeline: Some(Timeline {
                basis: Basis::Trace,
                rounded_to_us: false,
                step_filter: None,
                skipped_non_finite: 0,
                trace: Figures::default(),
                launch: LaunchStats::default(),
                verdict: verdict(),
                stages: vec![stage_tl],
            }),
            kernel_tables: vec![KernelTable {
                trace: PathBuf::from("t.json"),
                stage,
                total_us,
                trace_total_us: total_us,
                rows,
            }],
            overlap_rows: vec![],
            overlap_stats: vec![],
            fuse_rows: vec![],
            skipped_events: 0,
            skipped_by_trace: vec![],
            left_out: vec![],
            distributed_info: None,
        }
    }

    fn gate(threshold_pct: f64, basis: Option<GateBasis>) -> DiffOptions {
        DiffOptions { min_share: 1.0, gate: Some(GateOptions { threshold_pct, basis }) }
    }

    #[test]
    fn same_report_has_zero_deltas_and_passes_a_zero_gate() {
        let r = report(Stage::Decode, vec![row("a", 100.0, 2), row("b", 50.0, 1)], 150.0, Some(10.0));
        let d = diff(&r, &r, &gate(0.0, None));
        assert_eq!(d.stages.len(), 1);
        let s = &d.stages[0];
        assert!(s.kernels.iter().all(|k| k.delta_us == 0.0 && k.status == KernelStatus::Changed));
        assert_eq!(s.timeline.delta.busy_us, Some(0.0));
        assert_eq!(s.timeline.delta.step_p50_us, Some(0.0));
        assert_eq!(s.gate.as_ref().map(|g| g.basis), Some(GateBasis::Step));
        assert_eq!(d.gate.tripped, Some(false));
        assert!(d.gate_failures().is_empty());
    }

    #[test]
    fn kernels_are_matched_sorted_and_marked() {
        let base =
            report(Stage::Decode, vec![row("slow", 100.0, 4), row("gone", 30.0, 3), row("same", 50.0, 1)], 180.0, None);
        let new = report(
            Stage::Decode,
            vec![row("slow", 200.0, 4), row("fresh", 10.0, 5), row("same", 50.0, 1)],
            260.0,
            None,
        );
        let d = diff(&base, &new, &DiffOptions::default());
        let k = &d.stages[0].kernels;
        let names: Vec<&str> = k.iter().map(|k| &*k.kernel).collect();
        assert_eq!(names, ["slow", "gone", "fresh", "same"]);
        assert_eq!(k[0].delta_pct, Some(100.0));
        assert_eq!((k[0].base_count, k[0].new_count), (4, 4));
        assert_eq!(k[1].status, KernelStatus::Gone);
        assert_eq!(k[1].delta_pct, Some(-100.0));
        assert_eq!(k[2].status, KernelStatus::New);
        assert_eq!(k[2].delta_pct, None);
        assert_eq!(d.stages[0].timeline.delta.kernel_us, Some(80.0));
    }

    #[test]
    fn share_bar_reads_the_larger_side() {
        // `tiny` is 0.5% of BASE and 2% of NEW: kept; `dust` is under 1% on both.
        let base = report(Stage::All, vec![row("big", 995.0, 1), row("tiny", 5.0, 1)], 1000.0, None);
        let new =
            report(Stage::All, vec![row("big", 970.0, 1), row("tiny", 20.0, 1), row("dust", 1.0, 1)], 991.0, None);
        let d = diff(&base, &new, &DiffOptions::default());
        let names: Vec<&str> = d.stages[0].kernels.iter().map(|k| &*k.kernel).collect();
        assert_eq!(names, ["big", "tiny"]);
        assert_eq!(d.stages[0].kernels_hidden, 1);
    }

    #[test]
    fn ties_are_ordered_by_name() {
        let base = report(Stage::All, vec![row("b", 10.0, 1), row("a", 10.0, 1)], 20.0, None);
        let new = report(Stage::All, vec![row("b", 20.0, 1), row("a", 20.0, 1)], 40.0, None);
        let d = diff(&base, &new, &DiffOptions::default());
        let names: Vec<&str> = d.stages[0].kernels.iter().map(|k| &*k.kernel).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn one_sided_stages_are_listed() {
        let base = report(Stage::Extend, vec![row("a", 10.0, 1)], 10.0, None);
        let new = report(Stage::Decode, vec![row("a", 10.0, 1)], 10.0, None);
        let d = diff(&base, &new, &DiffOptions::default());
        assert!(d.stages.is_empty());
        assert_eq!(d.only_in_base, [Stage::Extend]);
        assert_eq!(d.only_in_new, [Stage::Decode]);
    }

    #[test]
    fn gate_trips_above_the_threshold_only() {
        let base = report(Stage::Decode, vec![row("a", 100.0, 1)], 100.0, None);
        let new = report(Stage::Decode, vec![row("a", 110.0, 1)], 110.0, None);
        // No steps: busy time, +10%.
        let d = diff(&base, &new, &gate(5.0, None));
        let g = d.stages[0].gate.as_ref().unwrap();
        assert_eq!(g.basis, GateBasis::Busy);
        assert!(g.tripped);
        assert_eq!(d.gate.tripped, Some(true));
        let lines = d.gate_failures();
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("torchtriage: gate: decode: busy 100.0 µs -> 110.0 µs (+10.0%) exceeds 5%"),
            "{}",
            lines[0]
        );
        assert_eq!(diff(&base, &new, &gate(10.0, Some(GateBasis::Kernel))).gate.tripped, Some(false));
        // Faster is never a regression.
        assert_eq!(diff(&new, &base, &gate(0.0, None)).gate.tripped, Some(false));
        // Asked for steps where there are none: the stage is not gated.
        assert!(diff(&base, &new, &gate(0.0, Some(GateBasis::Step))).stages[0].gate.is_none());
    }

    #[test]
    fn no_gate_means_null_gate_fields() {
        let r = report(Stage::All, vec![row("a", 1.0, 1)], 1.0, None);
        let d = diff(&r, &r, &DiffOptions::default());
        assert_eq!(d.gate, GateSummary::default());
        let v = serde_json::to_value(&d).unwrap();
        assert!(v["gate"]["threshold_pct"].is_null() && v["gate"]["tripped"].is_null());
        assert!(markdown(&d).contains("| a | GEMM | 1.0 µs | 1.0 µs | 0.0 µs | 0.0% | 1 → 1 | changed |"));
    }
}
