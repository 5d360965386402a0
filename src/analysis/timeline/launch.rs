//! Launch overhead of a stage: its GPU events matched by correlation to a
//! launch call (`trace.launches`, and correlated runtime calls of other
//! categories whose name contains `launch`, such as older profilers'
//! `Runtime` category; a CUDA-graph launch counts once however many kernels
//! it starts), the launch delay (kernel start − launch end,
//! at least 0), median kernel and launch durations, and the share of
//! kernels shorter than their own launch call.

use super::events::EventSet;
use super::intervals::{percentile, sort_values, Sum};
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

/// Launch statistics of the events of `stage` (`None`: of every event);
/// `steps` is the step count that goes with them, for `kernels_per_step`.
pub(crate) fn stats(
    trace: &Trace,
    set: &EventSet,
    index: &LaunchIndex,
    stage: Option<Stage>,
    steps: u64,
) -> LaunchStats {
    let k = &trace.kernels;
    let mut delays: Vec<f64> = Vec::new();
    let mut kernel_durs: Vec<f64> = Vec::new();
    let mut rows: Vec<u64> = Vec::new();
    let mut short = 0u64;
    let mut stage_kernels = 0u64;
    for e in set.events.iter().filter(|e| stage.is_none_or(|s| e.stage() == s)) {
        stage_kernels += 1;
        let Some(corr) = <Option<i64> as Pack>::unpack(k.correlation[e.row as usize]) else { continue };
        let Some(row) = index.get(corr) else { continue };
        let (ts, dur) = LaunchIndex::times(trace, row);
        let (ls, le) = set.clock.interval(ts, dur);
        if !ls.is_finite() || !le.is_finite() {
            continue;
        }
        let dur = e.end - e.start;
        delays.push((e.start - le).max(0.0));
        kernel_durs.push(dur);
        rows.push(row);
        if dur < le - ls {
            short += 1;
        }
    }
    let matched = kernel_durs.len() as u64;
    rows.sort_unstable();
    rows.dedup();
    let mut cpu = Sum::default();
    let mut launch_durs: Vec<f64> = rows
        .iter()
        .map(|&r| {
            let (ts, dur) = LaunchIndex::times(trace, r);
            let (s, e) = set.clock.interval(ts, dur);
            cpu.add(e - s);
            e - s
        })
        .collect();
    sort_values(&mut delays);
    sort_values(&mut kernel_durs);
    sort_values(&mut launch_durs);
    LaunchStats {
        launches: rows.len() as u64,
        kernels: matched,
        cpu_us: cpu.value(),
        delay_p50_us: percentile(&delays, 0.5),
        delay_p90_us: percentile(&delays, 0.9),
        delay_p99_us: percentile(&delays, 0.99),
        kernel_p50_us: percentile(&kernel_durs, 0.5),
        launch_p50_us: percentile(&launch_durs, 0.5),
        short_kernel_pct: (matched > 0).then(|| 100.0 * short as f64 / matched as f64),
        kernels_per_step: (steps > 0).then(|| stage_kernels as f64 / steps as f64),
    }
}
