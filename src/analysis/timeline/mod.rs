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
//! kernel classes, overlap, per-stream idle), `hostcalls` (the runtime calls
//! the host was in while the GPU waited for it), `launch`, `steps`, `verdict`
//! (the rule is documented in [`verdict`]), `types` (the serializable
//! result) and `caveats` (signs that the timeline does not describe the run:
//! a graph capture, a sampled trace).
//!
//! Cost: it runs alone after ingest, on the columns only. One sort of the
//! GPU events (40 bytes each; they are nearly in order already), host-side
//! starts and launch calls in direct tables over the correlation ids
//! (`corr`), one launch lookup per event, the statistics of every stage in
//! one pass, percentiles by selection, the Python frames read only when
//! their names can mark steps (runs decoded in parallel); no per-kernel
//! strings.

pub mod caveats;
mod corr;
mod events;
mod figures;
mod hostcalls;
mod intervals;
mod launch;
mod steps;
pub mod types;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use caveats::{caveats, Caveat};
pub use events::trace_rank;
pub use figures::KERNEL_WAIT_US;
pub(crate) use intervals::Union;
pub use steps::SLOWEST_STEPS;
pub use types::*;
pub use verdict::{HostWorkReason, EXPOSED_COMM_PCT, ONE_GAP_SHARE};

use crate::analysis::stage::{RowStages, Stage};
use crate::columns::Trace;

use figures::IdleRule;

/// The timeline of `trace` on `opts.basis`; `stages` is the stage of each
/// kernel row. Never panics, whatever the times (a GPU event whose start or
/// end is not finite is left out and counted).
pub fn timeline(trace: &Trace, stages: &RowStages, opts: &TimelineOptions) -> Timeline {
    // The events, and apart from them the steps and the launch calls.
    let (set, (found, launches)) = rayon::join(
        || events::build(trace, stages, opts.basis),
        || rayon::join(|| steps::detect(trace), || launch::LaunchIndex::build(trace)),
    );
    let hta = opts.basis != Basis::Trace;
    let rank = opts.rank.or_else(|| trace_rank(trace));
    let pid_label = |p: u32| trace.s(set.pids[p as usize]).to_string();
    let calls = hostcalls::HostCalls::build(trace, set.clock);

    // With one GPU its figures are the whole trace's, computed once.
    let one_gpu = set.pids.len() == 1;
    let (((whole, whole_per), matched), (gpus, step_stage)) = rayon::join(
        || {
            rayon::join(
                || {
                    figures::compute(
                        &set,
                        &pid_label,
                        set.events.iter(),
                        IdleRule { hta, by_pid: !hta && set.pids.len() > 1 },
                        &calls,
                    )
                },
                || launch::matches(trace, &set, &launches),
            )
        },
        || {
            rayon::join(
                || (!one_gpu).then(|| per_gpu(&set, &pid_label, hta, rank, &calls)),
                || found.as_ref().map(|(_, spans)| steps::assign(spans, &set)).unwrap_or_default(),
            )
        },
    );
    drop((launches, calls));
    let mut gpus = gpus.unwrap_or_else(|| {
        whole_per
            .map(|fig| fig.map(|figures| vec![GpuTimeline { pid: pid_label(0), rank, figures }]).unwrap_or_default())
    });
    // The events are read no further: their pages go before the launch
    // statistics allocate.
    let (rounded_to_us, step_filter, skipped_non_finite) = (set.clock.round, set.filter.clone(), set.skipped);
    let filtered_by_stage = set.filtered_by_stage;
    drop(set);

    let mut step_counts = [0u64; 3];
    for stage in step_stage.stages.iter().flatten() {
        step_counts[stage.code() as usize] += 1;
    }
    let per_step = launch::StepKernels {
        steps: step_counts,
        kernels: step_stage.events,
        // The steps of some stage, as each stage counts its own: a step
        // that launched nothing (one cut by the profiler's end) is none.
        all_steps: step_stage.with_events,
        all_kernels: step_stage.all_events,
    };
    let present: Vec<Stage> = [Stage::Extend, Stage::Decode, Stage::All]
        .into_iter()
        .filter(|s| !gpus[s.code() as usize].is_empty())
        .collect();
    let (summaries, (mut by_stage, launch)) = rayon::join(
        || {
            present
                .iter()
                .map(|&stage| match &found {
                    Some((source, spans)) => steps::summary(trace, *source, spans, &step_stage.stages, stage),
                    None => Steps::default(),
                })
                .collect::<Vec<Steps>>()
        },
        || launch::stats_by_stage(trace, matched, &per_step),
    );
    let parts: Vec<(Stage, Vec<GpuTimeline>, Steps)> = present
        .into_iter()
        .zip(summaries)
        .map(|(stage, steps)| (stage, std::mem::take(&mut gpus[stage.code() as usize]), steps))
        .collect();
    let out_stages: Vec<StageTimeline> = parts
        .into_iter()
        .map(|(stage, gpus, mut steps)| {
            steps.filtered_kernels = filtered_by_stage[stage.code() as usize];
            let launch = std::mem::take(&mut by_stage[stage.code() as usize]);
            let verdict = verdict::decide(gpus.iter().map(|g| &g.figures), &launch, steps.total_us());
            StageTimeline { stage, gpus, launch, steps, verdict }
        })
        .collect();

    // The whole trace's window is one span over all its GPUs, so its step
    // time compares with it only when there is one GPU.
    let one_gpu = {
        let mut pids = out_stages.iter().flat_map(|s| s.gpus.iter().map(|g| &g.pid));
        pids.next().is_some_and(|first| pids.all(|p| p == first))
    };
    let whole_steps = one_gpu.then(|| out_stages.iter().map(|s| s.steps.total_us()).sum::<Option<f64>>()).flatten();
    let verdict = verdict::decide([&whole], &launch, whole_steps);
    // The step indexes go before the result is made, so that the
    // allocator can hand their pages back.
    drop((found, step_stage));
    Timeline {
        basis: opts.basis,
        rounded_to_us,
        step_filter,
        skipped_non_finite,
        steps_left_out: steps::left_out(trace).map_or(0, |s| s.left_out),
        trace: whole,
        launch,
        verdict,
        stages: out_stages,
    }
}

/// The figures of each GPU (pid), per stage code, pids in order of their
/// first event.
fn per_gpu(
    set: &events::EventSet,
    pid_label: &(dyn Fn(u32) -> String + Sync),
    hta: bool,
    rank: Option<u64>,
    calls: &hostcalls::HostCalls,
) -> [Vec<GpuTimeline>; 3] {
    // Events per pid, start order kept (a counting sort of indexes).
    let npids = set.pids.len();
    let mut starts = vec![0usize; npids + 1];
    for e in &set.events {
        starts[set.pid(e) as usize + 1] += 1;
    }
    for i in 0..npids {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let mut by_pid = vec![0u32; set.events.len()];
    for (i, e) in set.events.iter().enumerate() {
        let pid = set.pid(e) as usize;
        by_pid[fill[pid]] = i as u32;
        fill[pid] += 1;
    }
    // Pids in order of their first event.
    let mut pid_order: Vec<u32> = (0..npids as u32).collect();
    pid_order.sort_by_key(|&p| by_pid.get(starts[p as usize]).copied().unwrap_or(u32::MAX));

    let gpu_rank = if npids == 1 { rank } else { None };
    let mut gpus: [Vec<GpuTimeline>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for &p in &pid_order {
        let idx = &by_pid[starts[p as usize]..starts[p as usize + 1]];
        let evs = idx.iter().map(|&i| &set.events[i as usize]);
        let (_, per) = figures::compute(set, pid_label, evs, IdleRule { hta, by_pid: false }, calls);
        for (code, fig) in per.into_iter().enumerate() {
            if let Some(figures) = fig {
                gpus[code].push(GpuTimeline { pid: pid_label(p), rank: gpu_rank, figures });
            }
        }
    }
    gpus
}
