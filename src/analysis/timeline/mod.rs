//! The GPU timeline of a trace: how much of the time the GPU was busy,
//! idle, computing, communicating or copying; why it sat idle (waiting for
//! the host, for the previous kernel, or otherwise); launch overhead; the
//! steps (iterations) and a verdict per stage on what bounds it.
//!
//! [`timeline`] is a pure function of a trace, the stage of each kernel row
//! and [`TimelineOptions`]. It gives whole-trace figures (every GPU process
//! in one timeline, as HTA reads a trace) with their launch statistics and
//! verdict, then per stage the figures of each GPU (kernel process), the
//! stage's launch statistics, steps and verdict. A GPU gets the trace's rank
//! (`distributedInfo.rank`) when it is the trace's only GPU. The [`Basis`] chooses the kernels and clock:
//! `trace` (the default) reads every GPU kernel at the trace's own times;
//! `hta` and `hta_exact` reproduce Holistic Trace Analysis 0.5.0's temporal,
//! idle-time and communication-overlap figures (with and without its µs
//! rounding), so users can compare the two tools.
//!
//! The parts: `events` (the GPU events of a basis), `intervals` (unions,
//! sums, percentiles, HTA's kernel type), `figures` (window, busy, idle,
//! kernel classes, overlap, per-stream idle), `launch`, `steps`, `verdict`
//! (the rule is documented in [`verdict`]) and `types` (the serializable
//! result).
//!
//! Cost: one sort of the GPU events (40 bytes each) and of the correlated
//! host-side rows (24 bytes each), then a few linear passes; no per-kernel
//! strings.

mod events;
mod figures;
mod intervals;
mod launch;
mod steps;
pub mod types;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use events::trace_rank;
pub use figures::KERNEL_WAIT_US;
pub use steps::SLOWEST_STEPS;
pub use types::*;

use crate::analysis::stage::{RowStages, Stage};
use crate::columns::Trace;

use figures::IdleRule;

/// The timeline of `trace` on `opts.basis`; `stages` is the stage of each
/// kernel row. Never panics, whatever the times (a GPU event whose start or
/// end is not finite is left out and counted).
pub fn timeline(trace: &Trace, stages: &RowStages, opts: &TimelineOptions) -> Timeline {
    let set = events::build(trace, stages, opts.basis);
    let hta = opts.basis != Basis::Trace;
    let rank = opts.rank.or_else(|| trace_rank(trace));
    let pid_label = |p: u32| trace.s(set.pids[p as usize]).to_string();

    let (whole, _) =
        figures::compute(&set, &pid_label, set.events.iter(), IdleRule { hta, by_pid: !hta && set.pids.len() > 1 });

    // Events per pid, start order kept (a counting sort of indexes).
    let npids = set.pids.len();
    let mut starts = vec![0usize; npids + 1];
    for e in &set.events {
        starts[e.pid as usize + 1] += 1;
    }
    for i in 0..npids {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let mut by_pid = vec![0u32; set.events.len()];
    for (i, e) in set.events.iter().enumerate() {
        by_pid[fill[e.pid as usize]] = i as u32;
        fill[e.pid as usize] += 1;
    }
    // Pids in order of their first event.
    let mut pid_order: Vec<u32> = (0..npids as u32).collect();
    pid_order.sort_by_key(|&p| by_pid.get(starts[p as usize]).copied().unwrap_or(u32::MAX));

    let gpu_rank = if npids == 1 { rank } else { None };
    let mut gpus: [Vec<GpuTimeline>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for &p in &pid_order {
        let idx = &by_pid[starts[p as usize]..starts[p as usize + 1]];
        let evs = idx.iter().map(|&i| &set.events[i as usize]);
        let (_, per) = figures::compute(&set, &pid_label, evs, IdleRule { hta, by_pid: false });
        for (code, fig) in per.into_iter().enumerate() {
            if let Some(figures) = fig {
                gpus[code].push(GpuTimeline { pid: pid_label(p), rank: gpu_rank, figures });
            }
        }
    }

    let found = steps::detect(trace);
    let step_stage = found.as_ref().map(|(_, spans)| steps::assign(spans, &set)).unwrap_or_default();
    let launches = launch::LaunchIndex::build(trace);
    let mut out_stages = Vec::new();
    for stage in [Stage::Extend, Stage::Decode, Stage::All] {
        let g = std::mem::take(&mut gpus[stage.code() as usize]);
        if g.is_empty() {
            continue;
        }
        let steps = match &found {
            Some((source, spans)) => steps::summary(trace, *source, spans, &step_stage, stage),
            None => Steps::default(),
        };
        let launch = launch::stats(trace, &set, &launches, Some(stage), steps.count);
        let verdict = verdict::decide(g.iter().map(|g| &g.figures), &launch);
        out_stages.push(StageTimeline { stage, gpus: g, launch, steps, verdict });
    }

    let all_steps = found.as_ref().map_or(0, |(_, spans)| spans.len() as u64);
    let launch = launch::stats(trace, &set, &launches, None, all_steps);
    let verdict = verdict::decide([&whole], &launch);
    Timeline {
        basis: opts.basis,
        rounded_to_us: set.clock.round,
        step_filter: set.filter.clone(),
        skipped_non_finite: set.skipped,
        trace: whole,
        launch,
        verdict,
        stages: out_stages,
    }
}
