//! Builds a [`DiffReport`] from two triage reports: stage matching, the
//! timeline figures, normalisation, kernel and category rows, the gate.

use std::collections::BTreeMap;

use super::*;
use crate::analysis::kernels::family::comparison_category;
use crate::analysis::timeline::StageTimeline;
use crate::report::model::TriageReport;
use crate::report::timeline::stage_sum;

/// Below this share of the steps' total time busy on the busiest GPU, the
/// GPU sits idle within the steps: the run is host-bound, and its step time
/// hides a change in GPU work.
const HOST_BOUND_BUSY_SHARE: f64 = 0.9;

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
            f.steps = (t.steps.count > 0).then_some(t.steps.count as f64);
            f.kernel_steps = f.steps.map(|s| s + if t.steps.filtered_kernels > 0 { 1.0 } else { 0.0 });
            f.step_p50_us = t.steps.p50_us;
            f.step_p90_us = t.steps.p90_us;
            // A delay measured across two clocks is not compared.
            f.launch_delay_p50_us = t.launch.delays_on_one_clock().and_then(|[p50, _, _]| p50);
            f.clock_offset_us = t.launch.clock_offset_us;
            f.kernels_per_step = t.launch.kernels_per_step;
            let busiest = t.gpus.iter().map(|g| g.figures.busy_us).fold(0.0, f64::max);
            let steps_total = t.steps.mean_us.map_or(0.0, |m| m * t.steps.count as f64);
            f.steps_launch_the_work = t.steps.count > 0 && !t.steps_launch_part_of_the_work();
            f.steps_span_gpu = f.steps_launch_the_work && steps_total >= busiest;
            f.gpu_idles_in_steps = f.steps_span_gpu && busiest < HOST_BOUND_BUSY_SHARE * steps_total;
        }
        f
    }

    /// Applies `f` to each pair of figures.
    fn zip(a: &Self, b: &Self, f: impl Fn(Option<f64>, Option<f64>) -> Option<f64>) -> Self {
        StageFigures {
            window_us: f(a.window_us, b.window_us),
            busy_us: f(a.busy_us, b.busy_us),
            idle_us: f(a.idle_us, b.idle_us),
            idle_pct: f(a.idle_pct, b.idle_pct),
            compute_us: f(a.compute_us, b.compute_us),
            comm_us: f(a.comm_us, b.comm_us),
            comm_comp_overlap_pct: f(a.comm_comp_overlap_pct, b.comm_comp_overlap_pct),
            steps: f(a.steps, b.steps),
            step_p50_us: f(a.step_p50_us, b.step_p50_us),
            step_p90_us: f(a.step_p90_us, b.step_p90_us),
            launch_delay_p50_us: f(a.launch_delay_p50_us, b.launch_delay_p50_us),
            kernels_per_step: f(a.kernels_per_step, b.kernels_per_step),
            kernel_us: f(a.kernel_us, b.kernel_us),
            kernel_steps: f(a.kernel_steps, b.kernel_steps),
            steps_launch_the_work: a.steps_launch_the_work && b.steps_launch_the_work,
            steps_span_gpu: a.steps_span_gpu && b.steps_span_gpu,
            gpu_idles_in_steps: a.gpu_idles_in_steps || b.gpu_idles_in_steps,
            // An offset is a side's, not a change.
            clock_offset_us: None,
        }
    }

    fn delta(base: &Self, new: &Self) -> Self {
        Self::zip(base, new, |b, n| Some(n? - b?))
    }
}

/// Windows closer than this (relative) cover the same span.
const SAME_WINDOW: f64 = 0.01;

impl Normalization {
    const NONE: Normalization = Normalization { basis: NormBasis::None, base_units: None, new_units: None };

    /// Per step when both sides have steps that launched their GPU work
    /// and their numbers differ; per ms of window when a side has no such
    /// steps and the windows differ by more than [`SAME_WINDOW`]; else
    /// none. Steps that launched part of a side's kernels time part of its
    /// work: dividing all of it by them would read a missing step
    /// annotation as a slower step. The units are the steps of the kernel
    /// table's kernels ([`StageFigures::kernel_steps`]), which the kernel
    /// and category rows are divided by.
    fn of(base: &StageFigures, new: &StageFigures) -> Self {
        let by_steps = base.steps_launch_the_work && new.steps_launch_the_work;
        match (base.kernel_steps, new.kernel_steps, base.window_us, new.window_us) {
            (Some(b), Some(n), ..) if by_steps && b != n => {
                Normalization { basis: NormBasis::Step, base_units: Some(b), new_units: Some(n) }
            }
            (Some(_), Some(_), ..) if by_steps => Self::NONE,
            (_, _, Some(b), Some(n)) if b > 0.0 && n > 0.0 && ((n - b) / b).abs() > SAME_WINDOW => {
                Normalization { basis: NormBasis::WindowMs, base_units: Some(b / 1e3), new_units: Some(n / 1e3) }
            }
            _ => Self::NONE,
        }
    }

    fn per_unit(&self, base_us: f64, new_us: f64, base_count: u64, new_count: u64) -> Option<PerUnit> {
        let (b, n) = (self.base_units?, self.new_units?);
        let (base_us, new_us) = (base_us / b, new_us / n);
        let delta_us = new_us - base_us;
        Some(PerUnit {
            base_us,
            new_us,
            delta_us,
            delta_pct: pct_change(base_us, delta_us),
            base_count: base_count as f64 / b,
            new_count: new_count as f64 / n,
        })
    }
}

fn pct_change(base: f64, delta: f64) -> Option<f64> {
    (base > 0.0).then(|| 100.0 * delta / base)
}

/// Per-kernel totals of one side of a stage.
#[derive(Default)]
struct KernelTotals {
    category: &'static str,
    total_us: f64,
    launches: u64,
    location: TextList,
    cpu_op: TextList,
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
            e.category = comparison_category(&row.kernel, row.category);
            e.total_us += row.total_us;
            e.launches += row.launches;
            if e.location.is_empty() {
                e.location = row.location.clone();
            }
            if e.cpu_op.is_empty() {
                e.cpu_op = row.cpu_op.clone();
            }
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

/// The size of a row's change that orders the table: per step when the
/// stage is normalised per step, else the total. (A slower kernel also
/// lengthens the window, so a change per ms of window understates it.)
fn change(delta_us: f64, normalized: &Option<PerUnit>, norm: &Normalization) -> f64 {
    match (norm.basis, normalized) {
        (NormBasis::Step, Some(p)) => p.delta_us.abs(),
        _ => delta_us.abs(),
    }
}

/// Larger change first.
fn by_change(norm: &Normalization, a: (f64, &Option<PerUnit>), b: (f64, &Option<PerUnit>)) -> std::cmp::Ordering {
    change(b.0, b.1, norm).total_cmp(&change(a.0, a.1, norm))
}

type SideKernels = Option<(BTreeMap<Text, KernelTotals>, f64)>;

/// Share of BASE's kernel time in kernels NEW ran too.
fn matched_base_pct(base: &SideKernels, new: &SideKernels) -> Option<f64> {
    let (rows, total) = base.as_ref()?;
    let matched: f64 = match new {
        Some((new_rows, _)) => {
            // Summed from +0.0: an empty `sum()` of floats is -0.0.
            rows.iter().filter(|(name, _)| new_rows.contains_key(*name)).fold(0.0, |sum, (_, k)| sum + k.total_us)
        }
        None => 0.0,
    };
    // The stage's total is summed in another order than the matched rows:
    // all of them matched is 100, not a rounding error above it.
    (*total > 0.0).then(|| (100.0 * matched / total).min(100.0))
}

fn kernel_rows(base: SideKernels, new: SideKernels, min_share: f64, norm: &Normalization) -> (Vec<KernelDiff>, usize) {
    let (base, base_total) = base.unwrap_or_default();
    let (mut new, new_total) = new.unwrap_or_default();
    let mut all = Vec::with_capacity(base.len().max(new.len()));
    for (name, b) in base {
        let n = new.remove(&name);
        all.push(make_row(name, Some(b), n, norm));
    }
    for (name, n) in new {
        all.push(make_row(name, None, Some(n), norm));
    }
    // Every kernel stays, for a reader of the JSON; the text reports show
    // the rendered ones.
    for k in &mut all {
        k.rendered = share(k.base_us, base_total).max(share(k.new_us, new_total)) >= min_share;
    }
    let hidden = all.iter().filter(|k| !k.rendered).count();
    all.sort_by(|a, b| {
        by_change(norm, (a.delta_us, &a.normalized), (b.delta_us, &b.normalized)).then_with(|| a.kernel.cmp(&b.kernel))
    });
    (all, hidden)
}

fn make_row(kernel: Text, base: Option<KernelTotals>, new: Option<KernelTotals>, norm: &Normalization) -> KernelDiff {
    let status = match (&base, &new) {
        (Some(_), Some(_)) => KernelStatus::Changed,
        (None, _) => KernelStatus::New,
        (Some(_), None) => KernelStatus::Gone,
    };
    let category = new.as_ref().or(base.as_ref()).map_or("", |k| k.category);
    let pick = |f: fn(&KernelTotals) -> &TextList| {
        [new.as_ref(), base.as_ref()].into_iter().flatten().map(f).find(|l| !l.is_empty()).cloned().unwrap_or_default()
    };
    let (location, cpu_op) = (pick(|k| &k.location), pick(|k| &k.cpu_op));
    let (base_us, base_count) = base.map_or((0.0, 0), |k| (k.total_us, k.launches));
    let (new_us, new_count) = new.map_or((0.0, 0), |k| (k.total_us, k.launches));
    let delta_us = new_us - base_us;
    KernelDiff {
        kernel,
        category,
        base_us,
        new_us,
        delta_us,
        delta_pct: pct_change(base_us, delta_us),
        base_count,
        new_count,
        status,
        normalized: norm.per_unit(base_us, new_us, base_count, new_count),
        location,
        cpu_op,
        rendered: true,
    }
}

/// Every category of the stage on both sides, from the kernel rows before
/// the share bar.
fn category_rows(base: &SideKernels, new: &SideKernels, norm: &Normalization) -> Vec<CategoryDiff> {
    let mut sums: BTreeMap<&'static str, [(f64, u64); 2]> = BTreeMap::new();
    for (side, k) in [base, new].into_iter().enumerate() {
        for row in k.iter().flat_map(|(rows, _)| rows.values()) {
            let e = &mut sums.entry(row.category).or_default()[side];
            e.0 += row.total_us;
            e.1 += row.launches;
        }
    }
    let mut rows: Vec<CategoryDiff> = sums
        .into_iter()
        .map(|(category, [(base_us, base_count), (new_us, new_count)])| {
            let delta_us = new_us - base_us;
            CategoryDiff {
                category,
                base_us,
                new_us,
                delta_us,
                delta_pct: pct_change(base_us, delta_us),
                base_count,
                new_count,
                normalized: norm.per_unit(base_us, new_us, base_count, new_count),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        by_change(norm, (a.delta_us, &a.normalized), (b.delta_us, &b.normalized))
            .then_with(|| a.category.cmp(b.category))
    });
    rows
}

/// The gate's verdict on a stage with these figures. Without a basis asked
/// for: the step median where both sides have steps that span their GPU
/// work, else busy time; and where the GPU also sits idle within the steps
/// on either side (a host-bound run, whose step time a slower kernel does
/// not change), busy time as well, the worse change deciding.
fn gate_stage(
    gate: &GateOptions,
    base: &StageFigures,
    new: &StageFigures,
    norm: &Normalization,
    scale: WorkScale,
) -> Option<StageGate> {
    if let Some(basis) = gate.basis {
        return gate_on(basis, gate.threshold_pct, base, new, norm, scale);
    }
    let steps = |f: &StageFigures| f.step_p50_us.is_some() && f.steps_span_gpu;
    let busy = gate_on(GateBasis::Busy, gate.threshold_pct, base, new, norm, scale);
    if !(steps(base) && steps(new)) {
        return busy;
    }
    let step = gate_on(GateBasis::Step, gate.threshold_pct, base, new, norm, scale);
    if !(base.gpu_idles_in_steps || new.gpu_idles_in_steps) {
        return step;
    }
    let change = |g: &Option<StageGate>| g.as_ref().and_then(|g| g.change_pct).unwrap_or(f64::NEG_INFINITY);
    // The step median first, on a tie or when neither could be compared.
    if change(&busy) > change(&step) {
        busy
    } else {
        step.or(busy)
    }
}

/// The gate's verdict on `basis`'s figure.
fn gate_on(
    basis: GateBasis,
    threshold_pct: f64,
    base: &StageFigures,
    new: &StageFigures,
    norm: &Normalization,
    scale: WorkScale,
) -> Option<StageGate> {
    let pick = |f: &StageFigures| match basis {
        GateBasis::Busy => f.busy_us,
        GateBasis::Step => f.step_p50_us,
        GateBasis::Kernel => f.kernel_us,
    };
    let (mut base_us, mut new_us) = (pick(base)?, pick(new)?);
    let mut per = NormBasis::None;
    if basis != GateBasis::Step && norm.basis == NormBasis::Step {
        // Busy time is the timeline's, over the steps it counts; kernel
        // time the kernel table's, over the steps of its kernels.
        let units = match basis {
            GateBasis::Busy => (base.steps, new.steps),
            _ => (norm.base_units, norm.new_units),
        };
        if let (Some(b), Some(n)) = units {
            (base_us, new_us, per) = (base_us / b, new_us / n, NormBasis::Step);
        }
    }
    // Totals of captures of different lengths: NEW's to BASE's amount of work.
    let totals = basis != GateBasis::Step && norm.basis == NormBasis::WindowMs;
    let (work_ratio, uneven_launches) = match scale {
        WorkScale::Scaled(r) if totals => (Some(r), None),
        WorkScale::Uneven(u) if totals => (None, Some(u)),
        _ => (None, None),
    };
    if let Some(r) = work_ratio {
        new_us /= r;
    }
    let change_pct = pct_change(base_us, new_us - base_us);
    let tripped = change_pct.is_some_and(|c| c > threshold_pct);
    Some(StageGate { basis, per, base_us, new_us, change_pct, tripped, work_ratio, uneven_launches, threshold_pct })
}

/// Launches off by less than this (relative) count as the same work.
const SAME_WORK: f64 = 0.02;
/// A kernel's launch ratio within this (relative) of the median agrees
/// with it.
const AGREES: f64 = 0.10;
/// Share of the matched kernels' BASE time, percent, whose launch ratios
/// must agree with the median for it to stand for the whole capture.
const AGREEING_PCT: f64 = 90.0;

/// What the launches of the kernels both sides ran say of the amount of
/// work each side captured.
#[derive(Clone, Copy, Debug, PartialEq)]
enum WorkScale {
    /// The same work, or too little matched to say: totals compare.
    Same,
    /// NEW captured this many times BASE's work.
    Scaled(f64),
    /// The launch ratios disagree: no one ratio stands for the capture.
    Uneven(UnevenLaunches),
}

/// How many times as often NEW launched the kernels both sides ran: the
/// median of each such kernel's launch ratio, weighted by BASE's time in
/// it, so that a kernel fused away or added (which only one side ran) or
/// a few kernels launched a different number of times do not move it.
/// [`WorkScale::Same`] when it is within [`SAME_WORK`] of 1 (the sides
/// captured the same work) or when the kernels both ran hold under half of
/// BASE's kernel time (too little to say); [`WorkScale::Uneven`] when the
/// kernels whose ratio is within [`AGREES`] of it hold under
/// [`AGREEING_PCT`] of their BASE time: a longer capture of the same work
/// launches every kernel more often alike, while a kernel that holds most
/// of the time and alone ran more often (a GEMM launched twice) is more
/// work in each step, which the gate must see.
fn work_scale(base: &SideKernels, new: &SideKernels, matched_base_pct: Option<f64>) -> WorkScale {
    let (Some(pct), Some((base_rows, _)), Some((new_rows, _))) = (matched_base_pct, base.as_ref(), new.as_ref()) else {
        return WorkScale::Same;
    };
    if pct < 50.0 {
        return WorkScale::Same;
    }
    let mut ratios: Vec<(f64, f64)> = base_rows
        .iter()
        .filter_map(|(name, b)| {
            let n = new_rows.get(name)?;
            (b.launches > 0 && n.launches > 0 && b.total_us > 0.0)
                .then(|| (n.launches as f64 / b.launches as f64, b.total_us))
        })
        .collect();
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = ratios.iter().map(|r| r.1).sum::<f64>();
    let mut seen = 0.0;
    let Some(&(median, _)) = ratios.iter().find(|r| {
        seen += r.1;
        seen >= total / 2.0
    }) else {
        return WorkScale::Same;
    };
    if (median - 1.0).abs() <= SAME_WORK {
        return WorkScale::Same;
    }
    // The bounds hold as written despite rounding: 22 launches against 10
    // is 10% off a median of 2, and 6.3 µs of 7.0 is 90%.
    let slack = 1e-9;
    let agreeing: f64 = ratios.iter().filter(|r| (r.0 / median - 1.0).abs() <= AGREES + slack).map(|r| r.1).sum();
    let agreeing_pct = 100.0 * agreeing / total;
    if agreeing_pct < AGREEING_PCT - slack {
        return WorkScale::Uneven(UnevenLaunches { ratio: median, agreeing_pct });
    }
    WorkScale::Scaled(median)
}

/// Compares NEW against BASE.
pub fn diff(base: &TriageReport, new: &TriageReport, opts: &DiffOptions) -> DiffReport {
    // Events a side left out for unusable times: skipped at ingest, kept
    // by the kernel table but left out of the timeline, or step
    // annotations no step was made of (which change the steps compared).
    let left_out = |r: &TriageReport| {
        r.skipped_events + r.timeline.as_ref().map_or(0, |t| t.skipped_non_finite + t.steps_left_out)
    };
    let skipped = (left_out(base), left_out(new));
    // A side missing events has figures no gate can judge: no stage is
    // gated, and the gate says why it was not evaluated.
    let gate_opts = opts.gate.filter(|_| skipped == (0, 0));
    let base_stages = stages_of(base);
    let new_stages = stages_of(new);
    let mut stages = Vec::new();
    for &stage in base_stages.iter().filter(|s| new_stages.contains(s)) {
        let base_k = stage_kernels(base, stage);
        let new_k = stage_kernels(new, stage);
        let base_f = StageFigures::of(stage_timeline(base, stage), base_k.as_ref().map(|k| k.1));
        let new_f = StageFigures::of(stage_timeline(new, stage), new_k.as_ref().map(|k| k.1));
        let normalization = Normalization::of(&base_f, &new_f);
        let matched_base_pct = matched_base_pct(&base_k, &new_k);
        let gate = gate_opts.as_ref().and_then(|g| {
            let scale = work_scale(&base_k, &new_k, matched_base_pct);
            gate_stage(g, &base_f, &new_f, &normalization, scale)
        });
        let categories = category_rows(&base_k, &new_k, &normalization);
        let (kernels, kernels_hidden) = kernel_rows(base_k, new_k, opts.min_share, &normalization);
        let delta = StageFigures::delta(&base_f, &new_f);
        stages.push(StageDiff {
            stage,
            timeline: TimelineDiff { base: base_f, new: new_f, delta },
            normalization,
            kernels,
            kernels_hidden,
            matched_base_pct,
            categories,
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
        // Not evaluated when no stage has the figure on both sides: a gate
        // that compared nothing has not passed.
        tripped: stages
            .iter()
            .any(|s| s.gate.as_ref().is_some_and(|g| g.change_pct.is_some()))
            .then(|| stages.iter().any(|s| s.gate.as_ref().is_some_and(|g| g.tripped))),
        not_evaluated: None,
        messages: Vec::new(),
    });
    let only_in_base: Vec<Stage> = base_stages.iter().copied().filter(|s| !new_stages.contains(s)).collect();
    let only_in_new: Vec<Stage> = new_stages.iter().copied().filter(|s| !base_stages.contains(s)).collect();
    let mut notes = shared_once(&base.notes, &new.notes);
    notes.extend(base.hardware.difference(&new.hardware).map(|d| {
        format!("warning: the sides ran on different hardware ({d}): a change may be the hardware's, not the code's")
    }));
    notes.extend(super::uncompared_stages_note(&gate, &only_in_base, &only_in_new));
    let mut d = DiffReport {
        base_traces: base.formal_traces.clone(),
        new_traces: new.formal_traces.clone(),
        min_share: opts.min_share,
        only_in_base,
        only_in_new,
        stages,
        gate,
        notes,
        skipped_events: skipped,
    };
    d.settle_gate();
    d
}

/// The notes of both sides, in order, each text once.
pub fn shared_once(base: &[String], new: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for note in base.iter().chain(new) {
        if !out.contains(note) {
            out.push(note.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_matched_is_at_most_100_percent() {
        let row = |us: f64| KernelTotals {
            category: "gemm",
            total_us: us,
            launches: 1,
            location: TextList::from([]),
            cpu_op: TextList::from([]),
        };
        let rows = |v: &[(&str, f64)]| v.iter().map(|&(n, us)| (Text::from(n), row(us))).collect::<BTreeMap<_, _>>();
        // 0.1 + 0.2 summed is a little over the stage's total of 0.3.
        let base = Some((rows(&[("a", 0.1), ("b", 0.2)]), 0.3));
        let new = Some((rows(&[("a", 1.0), ("b", 1.0)]), 2.0));
        assert_eq!(matched_base_pct(&base, &new), Some(100.0));
        let new = Some((rows(&[("a", 1.0)]), 1.0));
        assert!((matched_base_pct(&base, &new).unwrap() - 100.0 / 3.0).abs() < 1e-9);
    }
}
