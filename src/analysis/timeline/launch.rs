//! Launch overhead of a stage: its GPU events matched by correlation to a
//! launch call (`trace.launches`, and correlated runtime calls of other
//! categories whose name contains `launch`, such as older profilers'
//! `Runtime` category; a CUDA-graph launch counts once however many kernels
//! it starts), the launch delay (kernel start − launch end,
//! at least 0), median kernel and launch durations, and the share of
//! kernels shorter than their own launch call.

use super::events::EventSet;
use super::intervals::{percentiles, Sum};
use super::types::LaunchStats;
use crate::analysis::stage::Stage;
use crate::columns::{Pack, Trace};

/// Marks a runtime row in [`LaunchIndex`] entries.
const RUNTIME_ROW: u64 = 1 << 32;

/// Launch call per correlation (the last launch row of a correlation wins,
/// launch rows over runtime rows): entries are (correlation, tagged row).
pub(crate) struct LaunchIndex {
    by_corr: Vec<(i64, u64)>,
}

impl LaunchIndex {
    pub(crate) fn build(trace: &Trace) -> LaunchIndex {
        let l = &trace.launches;
        let r = &trace.runtime;
        let mut named: rustc_hash::FxHashMap<crate::columns::Sym, bool> = Default::default();
        let mut by_corr: Vec<(i64, u64)> = (0..r.len())
            .filter(|&i| {
                *named.entry(r.name[i]).or_insert_with(|| trace.s(r.name[i]).to_lowercase().contains("launch"))
            })
            .map(|i| (r.correlation[i], RUNTIME_ROW | i as u64))
            .collect();
        by_corr.extend((0..l.len()).map(|i| (l.correlation[i], i as u64)));
        // Runtime rows sort before the launch rows of their correlation, so
        // a launch row wins.
        by_corr.sort_unstable_by_key(|&(c, row)| (c, row & RUNTIME_ROW == 0, row));
        // Keep the last row of each correlation.
        let mut out: Vec<(i64, u64)> = Vec::with_capacity(by_corr.len());
        for e in by_corr {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        LaunchIndex { by_corr: out }
    }

    /// The launch call of `corr` (a tagged row for [`LaunchIndex::times`]).
    pub(crate) fn get(&self, corr: i64) -> Option<u64> {
        let i = self.by_corr.partition_point(|e| e.0 < corr);
        self.by_corr.get(i).filter(|e| e.0 == corr).map(|e| e.1)
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
    /// Tagged row of the launch call ([`LaunchIndex::times`]).
    row: u64,
    stage: Stage,
    /// The kernel ran shorter than its launch call.
    short: bool,
}

/// The events of `set` that have a launch call, in event order: one lookup
/// per event, shared by every stage's statistics.
pub(crate) fn matches(trace: &Trace, set: &EventSet, index: &LaunchIndex) -> Vec<Matched> {
    let k = &trace.kernels;
    let mut out = Vec::with_capacity(set.events.len());
    for e in &set.events {
        let Some(corr) = <Option<i64> as Pack>::unpack(k.correlation[e.row as usize]) else { continue };
        let Some(row) = index.get(corr) else { continue };
        let (ts, dur) = LaunchIndex::times(trace, row);
        let (ls, le) = set.clock.interval(ts, dur);
        if !ls.is_finite() || !le.is_finite() {
            continue;
        }
        let kernel_dur = e.end - e.start;
        out.push(Matched {
            delay: (e.start - le).max(0.0),
            kernel_dur,
            row,
            stage: e.stage(),
            short: kernel_dur < le - ls,
        });
    }
    out
}

/// Launch statistics of the events of `stage` (`None`: of every event);
/// `matched` is [`matches`] of the set, `steps` the step count that goes
/// with them, for `kernels_per_step`.
pub(crate) fn stats(
    trace: &Trace,
    set: &EventSet,
    matched: &[Matched],
    stage: Option<Stage>,
    steps: u64,
) -> LaunchStats {
    let stage_kernels = set.events.iter().filter(|e| stage.is_none_or(|s| e.stage() == s)).count() as u64;
    let mine = || matched.iter().filter(|m| stage.is_none_or(|s| m.stage == s));
    let mut delays: Vec<f64> = mine().map(|m| m.delay).collect();
    let mut kernel_durs: Vec<f64> = mine().map(|m| m.kernel_dur).collect();
    let short = mine().filter(|m| m.short).count() as u64;
    let matched = kernel_durs.len() as u64;
    // Each launch call once (a graph launch starts many kernels), in row
    // order, so that the sum is the same on every run.
    let launches = trace.launches.len();
    let mut seen = vec![0u64; (launches + trace.runtime.len()).div_ceil(64)];
    for m in mine() {
        let bit = LaunchIndex::dense(launches, m.row);
        seen[bit / 64] |= 1 << (bit % 64);
    }
    let mut cpu = Sum::default();
    let mut launch_durs: Vec<f64> = Vec::new();
    for (w, &bits) in seen.iter().enumerate() {
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
    drop(seen);
    let [delay_p50_us, delay_p90_us, delay_p99_us] = percentiles(&mut delays, [0.5, 0.9, 0.99]);
    let [kernel_p50_us] = percentiles(&mut kernel_durs, [0.5]);
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
        short_kernel_pct: (matched > 0).then(|| 100.0 * short as f64 / matched as f64),
        kernels_per_step: (steps > 0).then(|| stage_kernels as f64 / steps as f64),
    }
}
