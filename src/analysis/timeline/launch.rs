//! Launch overhead of a stage: its GPU events matched by correlation to a
//! launch call (`trace.launches`, and correlated runtime calls of other
//! categories whose name contains `launch`, such as older profilers'
//! `Runtime` category; a CUDA-graph launch counts once however many kernels
//! it starts), the launch delay (kernel start − launch end,
//! at least 0), median kernel and launch durations, and the share of
//! kernels shorter than their own launch call.

use super::corr::CorrTable;
use super::events::EventSet;
use super::intervals::{percentiles, Sum};
use super::types::LaunchStats;
use crate::analysis::stage::Stage;
use crate::columns::{Pack, Trace};

/// Marks a runtime row in [`LaunchIndex`] entries.
const RUNTIME_ROW: u64 = 1 << 32;

/// Launch call per correlation (the last launch row of a correlation wins,
/// launch rows over runtime rows), as a tagged row.
pub(crate) struct LaunchIndex {
    by_corr: CorrTable<u64>,
}

impl LaunchIndex {
    pub(crate) fn build(trace: &Trace) -> LaunchIndex {
        let l = &trace.launches;
        let r = &trace.runtime;
        let mut named: rustc_hash::FxHashMap<crate::columns::Sym, bool> = Default::default();
        let launch_named: Vec<bool> = (0..r.len())
            .map(|i| *named.entry(r.name[i]).or_insert_with(|| trace.s(r.name[i]).to_lowercase().contains("launch")))
            .collect();
        // Runtime rows come before the launch rows, so a launch row wins.
        let rows = || {
            let runtime = (0..r.len()).filter(|&i| launch_named[i]).map(|i| (r.correlation[i], RUNTIME_ROW | i as u64));
            runtime.chain((0..l.len()).map(|i| (l.correlation[i], i as u64)))
        };
        LaunchIndex { by_corr: CorrTable::build(rows, |old: &mut u64, new: u64| *old = new) }
    }

    /// The launch call of `corr` (a tagged row for [`LaunchIndex::times`]).
    pub(crate) fn get(&self, corr: i64) -> Option<u64> {
        self.by_corr.get(corr)
    }

    /// A tagged row as a dense index: launch rows first, then runtime rows.
    fn dense(launches: usize, row: u64) -> usize {
        let i = (row & !RUNTIME_ROW) as usize;
        if row & RUNTIME_ROW != 0 {
            launches + i
        } else {
            i
        }
    }

    /// The tagged row of a [`LaunchIndex::dense`] index.
    fn tagged(launches: usize, dense: usize) -> u64 {
        if dense >= launches {
            RUNTIME_ROW | (dense - launches) as u64
        } else {
            dense as u64
        }
    }

    /// (ts, dur) of a tagged row.
    fn times(trace: &Trace, row: u64) -> (f64, f64) {
        let i = (row & !RUNTIME_ROW) as usize;
        if row & RUNTIME_ROW != 0 {
            (trace.runtime.ts[i], trace.runtime.dur[i])
        } else {
            (trace.launches.ts[i], trace.launches.dur[i])
        }
    }
}

/// One GPU event matched to its launch call.
pub(crate) struct Matched {
    /// Kernel start − launch end, at least 0.
    delay: f64,
    kernel_dur: f64,
    /// The launch call as a [`LaunchIndex::dense`] index (24 bytes a
    /// match, not the 32 a tagged 64-bit row takes).
    launch: u32,
    stage: Stage,
    /// The kernel ran shorter than its launch call.
    short: bool,
}

/// The events of `set` that have a launch call, in event order: one lookup
/// per event, shared by every stage's statistics.
pub(crate) fn matches(trace: &Trace, set: &EventSet, index: &LaunchIndex) -> Vec<Matched> {
    let k = &trace.kernels;
    let launches = trace.launches.len();
    let mut out = Vec::with_capacity(set.events.len());
    for e in &set.events {
        let Some(corr) = <Option<i64> as Pack>::unpack(k.correlation[e.row as usize]) else { continue };
        let Some(row) = index.get(corr) else { continue };
        let (ts, dur) = LaunchIndex::times(trace, row);
        let (ls, le) = set.clock.interval(ts, dur);
        if !ls.is_finite() || !le.is_finite() {
            continue;
        }
        let Ok(launch) = u32::try_from(LaunchIndex::dense(launches, row)) else { continue };
        let kernel_dur = e.end - e.start;
        out.push(Matched {
            delay: (e.start - le).max(0.0),
            kernel_dur,
            launch,
            stage: e.stage(),
            short: kernel_dur < le - ls,
        });
    }
    out
}

/// Launch statistics per stage code and of every event, in one pass over
/// `matched` ([`matches`] of the set); `steps` is the step count of each
/// stage code and `all_steps` the trace's, for `kernels_per_step`.
pub(crate) fn stats_by_stage(
    trace: &Trace,
    set: &EventSet,
    matched: &[Matched],
    steps: [u64; 3],
    all_steps: u64,
) -> ([LaunchStats; 3], LaunchStats) {
    use rayon::prelude::*;
    let mut kernels = [0u64; 3];
    for e in &set.events {
        kernels[e.stage().code() as usize] += 1;
    }
    let launches = trace.launches.len();
    let words = (launches + trace.runtime.len()).div_ceil(64);
    let mut counts = [0usize; 3];
    for m in matched {
        counts[m.stage.code() as usize] += 1;
    }
    let mut parts: [Part; 3] = std::array::from_fn(|i| Part::new(words, counts[i]));
    for m in matched {
        let p = &mut parts[m.stage.code() as usize];
        p.delays.push(m.delay);
        p.kernel_durs.push(m.kernel_dur);
        p.short += u64::from(m.short);
        let bit = m.launch as usize;
        p.seen[bit / 64] |= 1 << (bit % 64);
    }
    let mut whole = Part::new(words, matched.len());
    for p in &parts {
        whole.delays.extend_from_slice(&p.delays);
        whole.kernel_durs.extend_from_slice(&p.kernel_durs);
        whole.short += p.short;
        whole.seen.iter_mut().zip(&p.seen).for_each(|(w, b)| *w |= b);
    }
    let all_kernels = kernels.iter().sum();
    let mut jobs: Vec<(Part, u64, u64)> =
        parts.into_iter().zip(kernels).zip(steps).map(|((p, k), s)| (p, k, s)).collect();
    jobs.push((whole, all_kernels, all_steps));
    let mut out: Vec<LaunchStats> = jobs.into_par_iter().map(|(p, k, s)| p.finish(trace, set, k, s)).collect();
    let whole = out.pop().unwrap_or_default();
    let mut per = [LaunchStats::default(), LaunchStats::default(), LaunchStats::default()];
    for (slot, st) in per.iter_mut().zip(out) {
        *slot = st;
    }
    (per, whole)
}

/// The matched kernels of one stage code (or of all).
struct Part {
    delays: Vec<f64>,
    kernel_durs: Vec<f64>,
    short: u64,
    /// Bit per launch call ([`LaunchIndex::dense`]) behind these kernels.
    seen: Vec<u64>,
}

impl Part {
    /// A part for `matched` kernels, its arrays allocated once.
    fn new(words: usize, matched: usize) -> Part {
        Part {
            delays: Vec::with_capacity(matched),
            kernel_durs: Vec::with_capacity(matched),
            short: 0,
            seen: vec![0; words],
        }
    }

    /// The statistics; `stage_kernels` counts every event of the stage,
    /// matched or not, and `steps` its steps.
    fn finish(mut self, trace: &Trace, set: &EventSet, stage_kernels: u64, steps: u64) -> LaunchStats {
        let matched = self.kernel_durs.len() as u64;
        // Each launch call once (a graph launch starts many kernels), in row
        // order, so that the sum is the same on every run.
        let launches = trace.launches.len();
        let mut cpu = Sum::default();
        let mut launch_durs: Vec<f64> = Vec::new();
        for (w, &bits) in self.seen.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let bit = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (ts, dur) = LaunchIndex::times(trace, LaunchIndex::tagged(launches, bit));
                let (s, e) = set.clock.interval(ts, dur);
                cpu.add(e - s);
                launch_durs.push(e - s);
            }
        }
        let [delay_p50_us, delay_p90_us, delay_p99_us] = percentiles(&mut self.delays, [0.5, 0.9, 0.99]);
        let [kernel_p50_us] = percentiles(&mut self.kernel_durs, [0.5]);
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
            kernels_per_step: (steps > 0).then(|| stage_kernels as f64 / steps as f64),
        }
    }
}
