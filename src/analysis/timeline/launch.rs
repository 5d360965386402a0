//! Launch overhead of a stage: its GPU events matched by correlation to a
//! launch call (`trace.launches`, and the correlated host calls of other
//! categories that [`is_launch_call`] names, such as older profilers'
//! `Runtime` category or the MTIA runtime's; a CUDA-graph launch counts once
//! however many kernels it starts), the launch delay (kernel start − launch end,
//! at least 0), median kernel and launch durations, the share of
//! kernels shorter than their own launch call, and whether the CPU's and
//! the GPU's clocks look offset from each other (no kernel starts within
//! [`CLOCK_OFFSET_US`] of its launch call's end although the GPU sat idle for
//! most of that wait, or one starts more than that before its launch call).

use super::corr::CorrTable;
use super::events::EventSet;
use super::intervals::{percentiles, Sum};
use super::types::LaunchStats;
use crate::analysis::kernels::extract::gpu_kernel_mask_without_host_calls;
use crate::columns::{Sym, Trace};
use crate::pysem::fcmp;

/// Gap (µs) between launch calls and their kernels that one clock cannot
/// explain. On a shared clock some kernel of a trace starts within tens of
/// µs of its launch call's end (the one launched onto an idle GPU), and
/// none starts before its launch call.
pub const CLOCK_OFFSET_US: f64 = 1000.0;

/// Matched kernels a trace needs before its clocks are judged.
pub const CLOCK_OFFSET_MIN_KERNELS: u64 = 10;

/// Share of a kernel's wait (launch end to start) its GPU may be busy for
/// the wait to count as an offset. A kernel queued behind earlier work (a
/// deep queue, or work launched before the profiler started) also starts
/// long after its launch call, but its GPU is busy meanwhile; on two clocks
/// the GPU sits idle through the apparent wait. In `../shared/traces` the
/// least-delayed kernel's GPU is busy for 0.4 % and 0.7 % of its wait in the
/// two traces this flags, and for 99.6 % in a trace whose first 30 ms are
/// kernels launched before the profiler started.
pub const CLOCK_OFFSET_MAX_BUSY_SHARE: f64 = 0.5;

/// Whether a correlated host call of any category launches device work: its
/// name contains `launch` in any case (CUDA and HIP kernel and graph
/// launches), or it is the MTIA runtime's `runFunction` call, which submits
/// a job to the device. The runtime's other correlated calls (copies,
/// event records, synchronisation) are not launches.
pub(crate) fn is_launch_call(name: &str) -> bool {
    name.starts_with("runFunction") || name.to_lowercase().contains("launch")
}

/// Launch call per correlation (the last launch row of a correlation wins,
/// launch rows over runtime rows), as a dense row index: launch rows
/// first, then runtime rows (4 bytes a slot).
pub(crate) struct LaunchIndex {
    by_corr: CorrTable<u32>,
}

impl LaunchIndex {
    pub(crate) fn build(trace: &Trace) -> LaunchIndex {
        let l = &trace.launches;
        let r = &trace.runtime;
        let mut named: rustc_hash::FxHashMap<crate::columns::Sym, bool> = Default::default();
        let launch_named: Vec<bool> = (0..r.len())
            .map(|i| *named.entry(r.name[i]).or_insert_with(|| is_launch_call(trace.s(r.name[i]))))
            .collect();
        // Runtime rows come before the launch rows, so a launch row wins.
        // A row whose index does not fit 32 bits is not indexed.
        let dense = |i: usize| u32::try_from(i).ok();
        let rows = || {
            let runtime = (0..r.len())
                .filter(|&i| launch_named[i])
                .filter_map(|i| Some((r.correlation.get(i), dense(l.len() + i)?)));
            runtime.chain((0..l.len()).filter_map(|i| Some((l.correlation.get(i), dense(i)?))))
        };
        LaunchIndex { by_corr: CorrTable::build(rows, |old: &mut u32, new: u32| *old = new) }
    }

    /// The launch call of `corr`, as a dense row index.
    pub(crate) fn get(&self, corr: i64) -> Option<u32> {
        self.by_corr.get(corr)
    }

    /// (ts, dur) of a dense row index.
    fn times(trace: &Trace, dense: usize) -> (f64, f64) {
        let launches = trace.launches.len();
        if dense >= launches {
            let i = dense - launches;
            (trace.runtime.ts[i], trace.runtime.dur[i])
        } else {
            (trace.launches.ts[dense], trace.launches.dur[dense])
        }
    }
}

/// The GPU events of a set that have a launch call, grouped by stage code:
/// 16 bytes a match, in two arrays that every stage's statistics and the
/// whole trace's share (a stage's values are a slice of them).
pub(crate) struct Matches {
    /// Kernel start − launch end, at least 0; stage 0's matches first, in
    /// event order, then stage 1's and stage 2's.
    delays: Vec<f64>,
    /// Kernel durations, in the same order.
    kernel_durs: Vec<f64>,
    /// Matches per stage code.
    counts: [usize; 3],
    /// Matched kernels that ran shorter than their launch call.
    short: [u64; 3],
    /// Bit per launch call (dense row index) behind each stage's kernels.
    seen: [Vec<u64>; 3],
    /// The trace's apparent clock offset ([`clock_offset`]).
    offset: Option<f64>,
    clock: super::events::Clock,
}

/// The launch matches of `set`: one lookup per event.
pub(crate) fn matches(trace: &Trace, set: &EventSet, index: &LaunchIndex) -> Matches {
    let k = &trace.kernels;
    let mut kernels = [0u64; 3];
    for e in &set.events {
        kernels[e.stage().code() as usize] += 1;
    }
    // Each stage fills its own region, sized for all its events; the
    // regions are closed up afterwards.
    let region = kernels.map(|n| n as usize);
    let offset = [0, region[0], region[0] + region[1]];
    let mut fill = offset;
    let n = set.events.len();
    let (mut delays, mut kernel_durs) = (vec![0.0f64; n], vec![0.0f64; n]);
    let words = (trace.launches.len() + trace.runtime.len()).div_ceil(64);
    let mut seen: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0u64; words]);
    let mut short = [0u64; 3];
    let (mut least_delay, mut earliest_start) = (f64::INFINITY, f64::INFINITY);
    // The least-delayed match: its launch end, its start and its process.
    let mut least_at = (0.0, 0.0, 0u32);
    for e in &set.events {
        let Some(corr) = k.correlation.get(e.row as usize) else { continue };
        let Some(launch) = index.get(corr) else { continue };
        let (ts, dur) = LaunchIndex::times(trace, launch as usize);
        let (ls, le) = set.clock.interval(ts, dur);
        if !ls.is_finite() || !le.is_finite() {
            continue;
        }
        let s = e.stage().code() as usize;
        let kernel_dur = e.end - e.start;
        delays[fill[s]] = (e.start - le).max(0.0);
        if e.start - le < least_delay {
            least_delay = e.start - le;
            least_at = (le, e.start, set.pid(e));
        }
        earliest_start = earliest_start.min(e.start - ls);
        kernel_durs[fill[s]] = kernel_dur;
        fill[s] += 1;
        short[s] += u64::from(kernel_dur < le - ls);
        let bit = launch as usize;
        seen[s][bit / 64] |= 1 << (bit % 64);
    }
    let counts = [0, 1, 2].map(|s| fill[s] - offset[s]);
    let mut end = counts[0];
    for s in 1..3 {
        delays.copy_within(offset[s]..fill[s], end);
        kernel_durs.copy_within(offset[s]..fill[s], end);
        end += counts[s];
    }
    delays.truncate(end);
    kernel_durs.truncate(end);
    // The share of the least-delayed kernel's wait (its launch end to its
    // start) in which its process's GPU events ran, measured only when the
    // delay is long enough to matter.
    let judged = delays.len() as u64 >= CLOCK_OFFSET_MIN_KERNELS && least_delay > CLOCK_OFFSET_US;
    let least_wait_busy = if let Some(&pid) = set.pids.get(least_at.2 as usize).filter(|_| judged) {
        let (from, to, _) = least_at;
        wait_busy_share(trace, set.clock, pid, from, to)
    } else {
        f64::NAN
    };
    let offset = clock_offset(delays.len(), least_delay, least_wait_busy, earliest_start);
    Matches { delays, kernel_durs, counts, short, seen, offset, clock: set.clock }
}

/// The share of `from..to` in which process `pid`'s GPU events ran, read
/// from all of the trace's GPU events, whatever the basis leaves out: the
/// clocks the host and the GPU keep do not depend on the figures computed,
/// and the kernels the HTA bases leave out (launched before the profiler
/// started) are what keeps a GPU busy through such a wait.
fn wait_busy_share(trace: &Trace, clock: super::events::Clock, pid: Sym, from: f64, to: f64) -> f64 {
    let k = &trace.kernels;
    let gpu = gpu_kernel_mask_without_host_calls(trace);
    let mut ran: Vec<(f64, f64)> = (0..k.len())
        .filter(|&row| gpu[row] && trace.threads[k.thread(row) as usize].pid == pid)
        .map(|row| clock.interval(k.ts[row], k.dur[row]))
        .filter(|&(start, end)| start.is_finite() && end.is_finite() && start < to && end > from)
        .collect();
    ran.sort_by(|a, b| fcmp(a.0, b.0));
    busy_share(ran.into_iter(), from, to)
}

/// The share of `from..to` covered by `intervals` (sorted by start).
fn busy_share(intervals: impl Iterator<Item = (f64, f64)>, from: f64, to: f64) -> f64 {
    let (mut covered, mut reached) = (0.0, from);
    for (start, end) in intervals {
        if start >= to {
            break;
        }
        let end = end.min(to);
        if end > reached {
            covered += end - start.max(reached);
            reached = end;
        }
    }
    covered / (to - from)
}

/// The clocks' apparent offset from the matches: the smallest launch delay
/// when it is over [`CLOCK_OFFSET_US`] and the GPU was busy for at most
/// [`CLOCK_OFFSET_MAX_BUSY_SHARE`] of that kernel's wait (the GPU's clock
/// runs late), or the smallest kernel start − launch start when it is under
/// minus that (early); `None` when the clocks agree, the kernels waited
/// behind a busy GPU, or too few kernels match to tell.
fn clock_offset(matched: usize, least_delay: f64, least_wait_busy: f64, earliest_start: f64) -> Option<f64> {
    if (matched as u64) < CLOCK_OFFSET_MIN_KERNELS {
        return None;
    }
    if least_delay > CLOCK_OFFSET_US && least_wait_busy <= CLOCK_OFFSET_MAX_BUSY_SHARE {
        Some(least_delay)
    } else if earliest_start < -CLOCK_OFFSET_US {
        Some(earliest_start)
    } else {
        None
    }
}

/// Steps and the GPU events launched inside them, per stage code and over
/// the whole trace, for `kernels_per_step`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StepKernels {
    pub steps: [u64; 3],
    pub kernels: [u64; 3],
    pub all_steps: u64,
    pub all_kernels: u64,
}

/// Launch statistics per stage code and of every event, from the
/// [`matches`] of a set.
pub(crate) fn stats_by_stage(trace: &Trace, m: Matches, per_step: &StepKernels) -> ([LaunchStats; 3], LaunchStats) {
    use rayon::prelude::*;
    // The offset is the trace's clocks', so every stage gets the whole
    // trace's.
    let Matches { mut delays, mut kernel_durs, counts, short, seen, offset, clock } = m;
    let mut all_seen = seen[0].clone();
    for part in &seen[1..] {
        all_seen.iter_mut().zip(part).for_each(|(w, b)| *w |= b);
    }
    // The stages' slices first (selection reorders values only inside
    // each slice), then the whole arrays.
    let per: Vec<LaunchStats> = {
        let (d0, rest) = delays.split_at_mut(counts[0]);
        let (d1, d2) = rest.split_at_mut(counts[1]);
        let (k0, rest) = kernel_durs.split_at_mut(counts[0]);
        let (k1, k2) = rest.split_at_mut(counts[1]);
        let parts = vec![(d0, k0), (d1, k1), (d2, k2)];
        parts
            .into_par_iter()
            .zip(seen.par_iter())
            .enumerate()
            .map(|(s, ((d, k), seen))| {
                Part { delays: d, kernel_durs: k, short: short[s], seen }.finish(
                    trace,
                    clock,
                    (per_step.steps[s], per_step.kernels[s]),
                    offset,
                )
            })
            .collect()
    };
    let whole = Part { delays: &mut delays, kernel_durs: &mut kernel_durs, short: short.iter().sum(), seen: &all_seen }
        .finish(trace, clock, (per_step.all_steps, per_step.all_kernels), offset);
    let mut out = [LaunchStats::default(), LaunchStats::default(), LaunchStats::default()];
    for (slot, st) in out.iter_mut().zip(per) {
        *slot = st;
    }
    (out, whole)
}

/// The matched kernels of one stage code (or of all).
struct Part<'a> {
    delays: &'a mut [f64],
    kernel_durs: &'a mut [f64],
    short: u64,
    /// Bit per launch call (dense row index) behind these kernels.
    seen: &'a [u64],
}

impl Part<'_> {
    /// The statistics; `(steps, in_steps)` are the steps and the GPU events
    /// launched inside them, and `clock_offset_us` the trace's apparent
    /// clock offset.
    fn finish(
        self,
        trace: &Trace,
        clock: super::events::Clock,
        (steps, in_steps): (u64, u64),
        clock_offset_us: Option<f64>,
    ) -> LaunchStats {
        let matched = self.kernel_durs.len() as u64;
        // Each launch call once (a graph launch starts many kernels), in row
        // order, so that the sum is the same on every run.
        let mut cpu = Sum::default();
        let mut launch_durs: Vec<f64> = Vec::new();
        for (w, &bits) in self.seen.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let bit = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (ts, dur) = LaunchIndex::times(trace, bit);
                let (s, e) = clock.interval(ts, dur);
                cpu.add(e - s);
                launch_durs.push(e - s);
            }
        }
        let [delay_p50_us, delay_p90_us, delay_p99_us] = percentiles(self.delays, [0.5, 0.9, 0.99]);
        let [kernel_p50_us] = percentiles(self.kernel_durs, [0.5]);
        let [launch_p50_us] = percentiles(&mut launch_durs, [0.5]);
        LaunchStats {
            launches: launch_durs.len() as u64,
            kernels: matched,
            cpu_us: cpu.value(),
            delay_p50_us,
            delay_p90_us,
            delay_p99_us,
            kernel_p50_us,
            launch_p50_us,
            short_kernel_pct: (matched > 0).then(|| 100.0 * self.short as f64 / matched as f64),
            // The events launched inside the steps, not every event of the
            // stage: steps often cover only part of a profile.
            kernels_per_step: (steps > 0).then(|| in_steps as f64 / steps as f64),
            clock_offset_us,
        }
    }
}
