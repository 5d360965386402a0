//! Signs in a trace that its timeline does not describe the run as it
//! went: a CUDA graph capture (the kernels launched while capturing run only
//! when the graph is replayed), and a sampled or filtered trace (events were
//! dropped after profiling, so the GPU looks idle where left-out kernels
//! ran), and step annotations whose times place no step. Each is a
//! [`Caveat`]; the report turns them into warnings.

use super::types::StepsLeftOut;
use crate::columns::Trace;

/// Host calls with a correlation id a trace needs before its ids can tell
/// that it was sampled: fewer leave too few steps to judge.
pub const SAMPLED_MIN_CALLS: usize = 100;
/// The median step between consecutive correlation ids of the host calls at
/// or above which a trace looks sampled. The profiler numbers every CUDA
/// API call and leaves a few kinds out of the trace, so a complete trace
/// steps by 1–11 (the medians of the 37 complete public traces in this
/// tool's tests that have such ids);
/// a trace that kept one call in twenty steps by 20 or more.
pub const SAMPLED_MEDIAN_STEP: u64 = 24;
/// The 90th percentile of those steps at or above which a trace looks
/// sampled (at most 32 in the public traces; 280 and more in sampled ones).
pub const SAMPLED_P90_STEP: u64 = 100;

/// How the correlation ids of a trace's host calls step from one to the
/// next (distinct ids in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdSteps {
    /// Distinct correlation ids of host calls (launches and other runtime
    /// and driver calls).
    pub calls: usize,
    pub median: u64,
    pub p90: u64,
}

/// Why a trace's timeline may not describe the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caveat {
    /// A stream capture begins in the trace.
    GraphCapture,
    /// The host calls' correlation ids skip most numbers: calls (and the
    /// kernels they launched) were left out of the trace.
    Sampled(IdSteps),
    /// Step annotations whose times place no step, so the step figures
    /// lack them.
    StepsLeftOut(StepsLeftOut),
}

/// The caveats of `trace`, in the order above.
pub fn caveats(trace: &Trace) -> Vec<Caveat> {
    let mut out = Vec::new();
    if captures_graphs(trace) {
        out.push(Caveat::GraphCapture);
    }
    if let Some(steps) = sampling(trace) {
        out.push(Caveat::Sampled(steps));
    }
    if let Some(steps) = super::steps::left_out(trace) {
        out.push(Caveat::StepsLeftOut(steps));
    }
    out
}

/// Whether `trace` records a CUDA or HIP graph capture (a
/// `cudaStreamBeginCapture` or `hipStreamBeginCapture` call): the kernels
/// launched during a capture run only when the graph is replayed, so the
/// GPU idles through it whatever the host does.
pub fn captures_graphs(trace: &Trace) -> bool {
    let r = &trace.runtime;
    (0..r.len()).any(|i| trace.s(r.name[i]).ends_with("StreamBeginCapture"))
}

/// Whether ids that step like `s` mark a sampled trace.
pub fn looks_sampled(s: &IdSteps) -> bool {
    s.calls >= SAMPLED_MIN_CALLS && s.median >= SAMPLED_MEDIAN_STEP && s.p90 >= SAMPLED_P90_STEP
}

/// How `trace`'s ids step when they mark it as sampled. Percentiles are
/// taken only when at least half the steps reach the median's bar (else the
/// median cannot), so a complete trace costs one pass over its ids.
fn sampling(trace: &Trace) -> Option<IdSteps> {
    let ids = host_ids(trace);
    let steps = ids.len().checked_sub(1)?;
    let wide = ids.windows(2).filter(|w| w[1].abs_diff(w[0]) >= SAMPLED_MEDIAN_STEP).count();
    if ids.len() < SAMPLED_MIN_CALLS || 2 * wide < steps {
        return None;
    }
    steps_of(&ids).filter(looks_sampled)
}

/// The steps between the distinct correlation ids of `trace`'s host calls,
/// or `None` with fewer than two.
pub fn id_steps(trace: &Trace) -> Option<IdSteps> {
    steps_of(&host_ids(trace))
}

/// The distinct correlation ids of `trace`'s host calls, in order.
fn host_ids(trace: &Trace) -> Vec<i64> {
    let (l, r) = (&trace.launches, &trace.runtime);
    let mut ids: Vec<i64> =
        (0..l.len()).map(|i| l.correlation.get(i)).chain((0..r.len()).map(|i| r.correlation.get(i))).collect();
    // Each table is in trace order, which mostly is id order: the stable
    // sort merges such runs in linear time.
    ids.sort();
    ids.dedup();
    ids
}

/// The median and 90th percentile of the steps between `ids` (sorted,
/// distinct), or `None` with fewer than two.
fn steps_of(ids: &[i64]) -> Option<IdSteps> {
    let mut steps: Vec<u64> = ids.windows(2).map(|w| w[1].abs_diff(w[0])).collect();
    if steps.is_empty() {
        return None;
    }
    let mut at = |q: usize| -> u64 {
        let k = (q * (steps.len() - 1)) / 100;
        *steps.select_nth_unstable(k).1
    };
    let (median, p90) = (at(50), at(90));
    Some(IdSteps { calls: ids.len(), median, p90 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::load_bytes;

    fn trace_with_calls(ids: impl Iterator<Item = i64>) -> Trace {
        let events: Vec<String> = ids
            .enumerate()
            .map(|(i, c)| {
                format!(
                    r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{i},"dur":1,"args":{{"correlation":{c}}}}}"#
                )
            })
            .collect();
        load_bytes(format!(r#"{{"traceEvents":[{}]}}"#, events.join(",")).as_bytes()).expect("parses")
    }

    #[test]
    fn a_complete_trace_steps_by_a_few_and_is_not_sampled() {
        // Every third id kept, as when the profiler leaves out two calls in three.
        let t = trace_with_calls((0..500).map(|i| 3 * i));
        let s = id_steps(&t).unwrap();
        assert_eq!((s.calls, s.median, s.p90), (500, 3, 3));
        assert!(caveats(&t).is_empty());
    }

    #[test]
    fn ids_that_skip_most_numbers_mark_a_sampled_trace() {
        // Steps of 30, with every fifth one of 400.
        let ids = (0..300i64).scan(0i64, |id, i| {
            *id += if i % 5 == 4 { 400 } else { 30 };
            Some(*id)
        });
        let t = trace_with_calls(ids);
        let s = id_steps(&t).unwrap();
        assert_eq!((s.median, s.p90), (30, 400));
        assert_eq!(caveats(&t), vec![Caveat::Sampled(s)]);
    }

    #[test]
    fn few_calls_or_only_a_few_long_steps_are_not_enough() {
        // Wide steps, but only 50 calls.
        let t = trace_with_calls((0..50).map(|i| 1000 * i));
        assert_eq!(id_steps(&t).unwrap().median, 1000);
        assert!(caveats(&t).is_empty());
        // A wide median with a narrow tail, and a narrow median with a wide tail.
        assert!(!looks_sampled(&IdSteps { calls: 500, median: 30, p90: 40 }));
        assert!(!looks_sampled(&IdSteps { calls: 500, median: 5, p90: 400 }));
        assert!(looks_sampled(&IdSteps { calls: 500, median: 24, p90: 100 }));
        // No call at all, or one.
        assert_eq!(id_steps(&trace_with_calls(std::iter::once(7))), None);
    }
}
