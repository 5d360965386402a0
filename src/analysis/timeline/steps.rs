//! Steps (iterations) from CPU annotations, and which stage each belongs to.
//!
//! The first rule that finds any step decides, over CPU-side (not
//! `gpu_user_annotation`) annotations:
//! 1. `ProfilerStep#N` (also when recorded as an operator) — [`StepSource::ProfilerStep`];
//! 2. SGLang's `step[…]` batch annotations — [`StepSource::SglangStep`];
//! 3. vLLM's `execute_…` annotations naming `_context_` and `_generation_` —
//!    [`StepSource::VllmExecute`];
//! 4. Python frames of vLLM's `…model_runner.py(N): execute_model` —
//!    [`StepSource::VllmExecuteModelFrame`];
//! 5. Python frames of SGLang's `…tp_worker.py(N): forward_batch_generation` —
//!    [`StepSource::SglangForwardFrame`].
//!
//! A step belongs to the stage of most of the GPU events launched inside it
//! (host-side call start, else kernel start, within the step's interval;
//! ties go to the earlier stage in report order), unless its own name
//! names a stage some of those events are in (SGLang's `step[EXTEND …]`,
//! `step[DECODE …]`): a GPU far behind its host can run most of an extend
//! step's kernels after the stage's annotations end. A step that launched
//! no GPU event belongs to no stage. A stage's steps count the GPU events
//! of that stage launched inside them. Steps use the trace's own times.

use super::events::EventSet;
use super::intervals::{percentiles, Sum};
use super::types::{SlowStep, StepSource, Steps, StepsLeftOut};
use crate::analysis::stage::Stage;
use crate::columns::{Frame, Sym, Trace};
use crate::pysem::fcmp;
use rayon::slice::ParallelSliceMut;

/// How many of the longest steps a stage lists.
pub const SLOWEST_STEPS: usize = 3;

/// One step found in the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Span {
    pub name: Sym,
    pub ts: f64,
    pub dur: f64,
    /// The stage the step's own name names, if any.
    pub named: Option<Stage>,
}

/// The stage an SGLang step annotation names by its forward mode.
fn sglang_step_stage(name: &str) -> Option<Stage> {
    let mode = name.strip_prefix("step[")?;
    if mode.starts_with("EXTEND") || mode.starts_with("PREFILL") {
        Some(Stage::Extend)
    } else if mode.starts_with("DECODE") {
        Some(Stage::Decode)
    } else {
        None
    }
}

fn rule_matches(source: StepSource, name: &str) -> bool {
    match source {
        StepSource::ProfilerStep => name.starts_with("ProfilerStep#"),
        StepSource::SglangStep => name.starts_with("step["),
        StepSource::VllmExecute => {
            name.starts_with("execute_") && name.contains("_context_") && name.contains("_generation_")
        }
        StepSource::VllmExecuteModelFrame => {
            name.ends_with(": execute_model") && name.split('(').next().is_some_and(|p| p.ends_with("model_runner.py"))
        }
        StepSource::SglangForwardFrame => {
            name.ends_with(": forward_batch_generation")
                && name.split('(').next().is_some_and(|p| p.ends_with("tp_worker.py"))
        }
    }
}

/// The annotation rules, in the order they are tried.
const ANNOTATION_SOURCES: [StepSource; 3] = [StepSource::ProfilerStep, StepSource::SglangStep, StepSource::VllmExecute];

/// The CPU-side annotations (and, for `ProfilerStep`, the step marks)
/// `source` matches, whatever their times, in trace order.
fn annotated(trace: &Trace, source: StepSource) -> impl Iterator<Item = Span> + '_ {
    let a = &trace.annotations;
    let m = &trace.step_marks;
    let mut cache: rustc_hash::FxHashMap<Sym, bool> = Default::default();
    let mut hit = move |name: Sym| *cache.entry(name).or_insert_with(|| rule_matches(source, trace.s(name)));
    let marks = if source == StepSource::ProfilerStep { m.len() } else { 0 };
    let spans = (0..a.len()).filter(move |&i| !a.is_gpu[i]).map(|i| Span {
        name: a.name[i],
        ts: a.ts[i],
        dur: a.dur[i],
        named: None,
    });
    let marks = (0..marks).map(|i| Span { name: m.name[i], ts: m.ts[i], dur: m.dur[i], named: None });
    spans.chain(marks).filter(move |s| hit(s.name)).map(move |s| Span {
        named: (source == StepSource::SglangStep).then(|| sglang_step_stage(trace.s(s.name))).flatten(),
        ..s
    })
}

/// Whether a step's interval can be placed: a finite start and a finite,
/// non-negative duration.
fn placeable(s: &Span) -> bool {
    s.ts.is_finite() && s.dur.is_finite() && s.dur >= 0.0
}

/// The trace's steps, sorted by start, and the rule that found them.
pub(crate) fn detect(trace: &Trace) -> Option<(StepSource, Vec<Span>)> {
    for source in ANNOTATION_SOURCES {
        let mut spans: Vec<Span> = annotated(trace, source).filter(placeable).collect();
        if !spans.is_empty() {
            spans.sort_by(|x, y| fcmp(x.ts, y.ts));
            without_copies(&mut spans);
            return Some((source, spans));
        }
    }
    frame_steps(trace)
}

/// Drops from `spans` (sorted by start) each span that repeats an earlier
/// one's name, start and duration: a step written twice (as a user
/// annotation and as an operator) is one step.
fn without_copies(spans: &mut Vec<Span>) {
    let mut run_start = 0;
    let mut kept = 0;
    for i in 0..spans.len() {
        let s = spans[i];
        if kept > 0 && spans[kept - 1].ts != s.ts {
            run_start = kept;
        }
        if !spans[run_start..kept].iter().any(|k| k.name == s.name && k.dur == s.dur) {
            spans[kept] = s;
            kept += 1;
        }
    }
    spans.truncate(kept);
}

/// Step annotations no step was made of, as [`detect`] tries the rules: of
/// each rule up to the one the steps come from, the annotations whose
/// start or duration is not a finite number, or whose duration is negative
/// (or, for annotations other than `ProfilerStep#N`, not positive: those
/// are not kept). The first rule with such annotations, with how many it
/// left out and how many steps it made.
pub(crate) fn left_out(trace: &Trace) -> Option<StepsLeftOut> {
    let mut first = None;
    for source in ANNOTATION_SOURCES {
        let (kept, bad) = tally(trace, source);
        let unplaced: u64 = trace
            .counts
            .unplaced_annotations
            .iter()
            .filter(|(&name, _)| rule_matches(source, trace.s(name)))
            .map(|(_, &n)| n)
            .sum();
        let left_out = bad + unplaced;
        if left_out > 0 && first.is_none() {
            first = Some(StepsLeftOut { source, left_out, kept });
        }
        if kept > 0 {
            break;
        }
    }
    first
}

/// The annotations [`annotated`] gives for `source`, counted without being
/// collected (a trace may hold hundreds of thousands): how many place a
/// step, and how many do not.
fn tally(trace: &Trace, source: StepSource) -> (u64, u64) {
    annotated(trace, source)
        .fold((0, 0), |(kept, bad), s| if placeable(&s) { (kept + 1, bad) } else { (kept, bad + 1) })
}

/// Steps from Python frames, when no annotation marks them: the frame
/// names are matched first (one test per distinct string), and the frames
/// are read only when some name matches.
fn frame_steps(trace: &Trace) -> Option<(StepSource, Vec<Span>)> {
    for source in [StepSource::VllmExecuteModelFrame, StepSource::SglangForwardFrame] {
        let wanted: Vec<bool> = (0..trace.strings.len() as Sym).map(|sym| rule_matches(source, trace.s(sym))).collect();
        if !wanted.contains(&true) {
            continue;
        }
        let mut frames: Vec<Frame> = trace
            .frames
            .par_filter(|f| {
                f.complete && wanted.get(f.name as usize) == Some(&true) && f.ts.is_finite() && f.dur.is_finite()
            })
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        if !frames.is_empty() {
            // Outer calls first; equal calls in trace order.
            frames.par_sort_unstable_by(|x, y| fcmp(x.ts, y.ts).then(fcmp(y.dur, x.dur)).then(x.row.cmp(&y.row)));
            let spans = frames.into_iter().map(|f| Span { name: f.name, ts: f.ts, dur: f.dur, named: None });
            // A nested call of the same function (a wrapper) is the same step.
            let mut outer: Vec<Span> = Vec::with_capacity(spans.len());
            for s in spans {
                if outer.last().is_some_and(|o| s.ts + s.dur <= o.ts + o.dur) {
                    continue;
                }
                outer.push(s);
            }
            return Some((source, outer));
        }
    }
    None
}

/// The steps' stages and GPU events.
#[derive(Debug, Default)]
pub(crate) struct Assigned {
    /// The stage of each span (`None`: no GPU event launched inside).
    pub stages: Vec<Option<Stage>>,
    /// The GPU events of each stage code launched inside that stage's
    /// spans, and the GPU events launched inside any span.
    pub events: [u64; 3],
    pub all_events: u64,
    /// Spans that launched some GPU event (those with a stage).
    pub with_events: u64,
}

/// The stage of each span and the GPU events launched inside the spans:
/// an event belongs to the latest-starting span that holds its launch (the
/// innermost, when spans nest or overlap).
pub(crate) fn assign(spans: &[Span], set: &EventSet) -> Assigned {
    let mut counts = vec![[0u64; 3]; spans.len()];
    let outer = outer_spans(spans);
    let mut i = 0;
    for e in &set.events {
        let probe = if e.host_ts.is_finite() { e.host_ts } else { e.start };
        // Events come in start order, so the step moves little from one
        // event to the next.
        i = point_near(spans, i, probe);
        let mut at = i.checked_sub(1);
        // A span that ended before the launch: the launch may still be in
        // one that started earlier and ends later.
        while let Some(j) = at.filter(|&j| probe > spans[j].ts + spans[j].dur) {
            at = outer[j];
        }
        if let Some(j) = at {
            counts[j][e.stage().code() as usize] += 1;
        }
    }
    let mut out = Assigned::default();
    for (c, span) in counts.iter().zip(spans) {
        let most = (0..3).fold(0, |b, i| if c[i] > c[b] { i } else { b });
        let best = span.named.map(|s| s.code() as usize).filter(|&named| c[named] > 0).unwrap_or(most);
        let inside: u64 = c.iter().sum();
        out.all_events += inside;
        if inside > 0 {
            out.events[best] += c[best];
            out.with_events += 1;
        }
        out.stages.push((inside > 0).then(|| Stage::from_code(best as u8)));
    }
    out
}

/// For each span (sorted by start), the latest span before it that ends
/// later than it does: the only earlier spans that can hold a point past
/// its end are that one and the spans it leads to in turn.
fn outer_spans(spans: &[Span]) -> Vec<Option<usize>> {
    let end = |j: usize| spans[j].ts + spans[j].dur;
    let mut stack: Vec<usize> = Vec::new();
    let mut outer = Vec::with_capacity(spans.len());
    for j in 0..spans.len() {
        while stack.last().is_some_and(|&k| end(k) <= end(j)) {
            stack.pop();
        }
        outer.push(stack.last().copied());
        stack.push(j);
    }
    outer
}

/// `spans.partition_point(|s| s.ts <= probe)`, searched outward from
/// `hint` (spans sorted by start, all starts finite).
fn point_near(spans: &[Span], hint: usize, probe: f64) -> usize {
    let le = |i: usize| spans[i].ts <= probe;
    let hint = hint.min(spans.len());
    let (lo, hi) = if hint < spans.len() && le(hint) {
        // Above `hint`: every index below `lo` starts at or before the probe.
        let (mut lo, mut step) = (hint + 1, 1);
        loop {
            let at = lo + step - 1;
            if at >= spans.len() {
                break (lo, spans.len());
            }
            if le(at) {
                lo = at + 1;
                step *= 2;
            } else {
                break (lo, at);
            }
        }
    } else {
        // At or below `hint`.
        let (mut hi, mut step) = (hint, 1);
        loop {
            if hi < step {
                break (0, hi);
            }
            let at = hi - step;
            if le(at) {
                break (at + 1, hi);
            }
            hi = at;
            step *= 2;
        }
    };
    lo + spans[lo..hi].partition_point(|s| s.ts <= probe)
}

/// The steps of `stage`.
pub(crate) fn summary(
    trace: &Trace,
    source: StepSource,
    spans: &[Span],
    stages: &[Option<Stage>],
    stage: Stage,
) -> Steps {
    let mine: Vec<&Span> = spans.iter().zip(stages).filter(|(_, s)| **s == Some(stage)).map(|(sp, _)| sp).collect();
    let mut durs: Vec<f64> = mine.iter().map(|s| s.dur).collect();
    let mut total = Sum::default();
    durs.iter().for_each(|&d| total.add(d));
    let n = durs.len();
    let [p50_us, p90_us, max_us] = percentiles(&mut durs, [0.5, 0.9, 1.0]);
    drop(durs);
    // The longest steps, earlier first among equals.
    let longer = |x: &&Span, y: &&Span| fcmp(y.dur, x.dur).then(fcmp(x.ts, y.ts));
    let mut slowest: Vec<&Span> = mine;
    if slowest.len() > SLOWEST_STEPS {
        slowest.select_nth_unstable_by(SLOWEST_STEPS - 1, longer);
        slowest.truncate(SLOWEST_STEPS);
    }
    slowest.sort_by(longer);
    Steps {
        source: Some(source),
        count: n as u64,
        mean_us: (n > 0).then(|| total.value() / n as f64),
        p50_us,
        p90_us,
        max_us,
        slowest: slowest
            .into_iter()
            .map(|s| SlowStep { name: trace.s(s.name).to_string(), start_us: s.ts, dur_us: s.dur })
            .collect(),
        without_gpu_work: stages.iter().filter(|s| s.is_none()).count() as u64,
        filtered_kernels: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_near_is_partition_point_from_any_hint() {
        let mut next = crate::pysem::test_rng(0x5eed_57e9);
        for n in [0usize, 1, 2, 3, 7, 64, 300] {
            let mut starts: Vec<f64> = (0..n).map(|_| (next() % 50) as f64).collect();
            starts.sort_by(|a, b| fcmp(*a, *b));
            let spans: Vec<Span> = starts.iter().map(|&ts| Span { name: 0, ts, dur: 1.0, named: None }).collect();
            for _ in 0..400 {
                let probe = (next() % 60) as f64 - 5.0 + if next() % 2 == 0 { 0.5 } else { 0.0 };
                let hint = (next() % (n as u64 + 3)) as usize;
                let want = spans.partition_point(|s| s.ts <= probe);
                assert_eq!(point_near(&spans, hint, probe), want, "n {n} hint {hint} probe {probe}");
            }
        }
    }
}
