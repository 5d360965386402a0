//! The host calls the GPU waited through: while a GPU sits idle waiting for
//! the host (an idle gap whose next kernel's launch call began after the gap
//! opened), which runtime calls other than launches (`cudaFree`, `hipFree`,
//! `cudaStreamSynchronize`, synchronous copies) the launching threads were
//! in, and for how much of that time.
//!
//! The calls are the correlated runtime rows (`trace.runtime`) that are not
//! launch calls, on the threads that launch kernels. A trace whose launches
//! come from more than one process names none: a call of one process would
//! be set against the GPU of another. Per gap, a name's time is the union of
//! its calls clipped to the gap, so calls of one name on two threads at once
//! count once; a call counts once however many gaps it spans.

use rustc_hash::FxHashMap as HashMap;

use super::events::Clock;
use super::launch::is_launch_call;
use super::types::HostWaitCall;
use crate::columns::{Sym, Trace};
use crate::pysem::fcmp;

#[derive(Clone, Copy, Debug)]
struct Call {
    start: f64,
    end: f64,
    /// Index into [`HostCalls::names`].
    name: u32,
}

/// The launching threads' calls, sorted by start.
#[derive(Debug, Default)]
pub(crate) struct HostCalls {
    calls: Vec<Call>,
    names: Vec<String>,
}

impl HostCalls {
    /// The calls of `trace` on `clock`.
    pub(crate) fn build(trace: &Trace, clock: Clock) -> HostCalls {
        let (l, r) = (&trace.launches, &trace.runtime);
        let mut launch_named: HashMap<Sym, bool> = HashMap::default();
        let mut is_launch = |name: Sym| *launch_named.entry(name).or_insert_with(|| is_launch_call(trace.s(name)));
        // The launching threads, and their process, which must be one.
        let mut launching = vec![false; trace.threads.len()];
        let launch_threads = (0..l.len())
            .map(|i| l.thread(i))
            .chain((0..r.len()).filter(|&i| is_launch(r.name[i])).map(|i| r.thread[i]));
        let mut pid = None;
        for t in launch_threads {
            let Some(slot) = launching.get_mut(t as usize) else { continue };
            *slot = true;
            let p = trace.threads[t as usize].pid;
            if *pid.get_or_insert(p) != p {
                return HostCalls::default();
            }
        }
        let mut index: HashMap<Sym, u32> = HashMap::default();
        let mut names = Vec::new();
        let mut calls = Vec::new();
        for i in 0..r.len() {
            let on_launching = launching.get(r.thread[i] as usize).copied().unwrap_or(false);
            if !on_launching || is_launch(r.name[i]) {
                continue;
            }
            let (start, end) = clock.interval(r.ts[i], r.dur[i]);
            if !(start.is_finite() && end.is_finite() && end > start) {
                continue;
            }
            let name = *index.entry(r.name[i]).or_insert_with(|| {
                names.push(trace.s(r.name[i]).to_string());
                names.len() as u32 - 1
            });
            calls.push(Call { start, end, name });
        }
        calls.sort_unstable_by(|a, b| fcmp(a.start, b.start).then(a.name.cmp(&b.name)));
        HostCalls { calls, names }
    }

    /// A sweep over gaps given in increasing, disjoint order.
    pub(crate) fn sweep(&self) -> Sweep<'_> {
        Sweep {
            calls: self,
            next: 0,
            active: Vec::new(),
            parts: Vec::new(),
            per_name: vec![(0.0, 0); self.names.len()],
        }
    }
}

/// Host-wait time by call name over a run of gaps.
pub(crate) struct Sweep<'a> {
    calls: &'a HostCalls,
    /// The first call not yet seen.
    next: usize,
    /// Calls that may overlap the next gap: (call, counted already).
    active: Vec<(usize, bool)>,
    /// Scratch: (name, start, end) of the current gap's overlaps.
    parts: Vec<(u32, f64, f64)>,
    /// (time, calls) per name.
    per_name: Vec<(f64, u64)>,
}

impl Sweep<'_> {
    /// Adds the gap `start..end`, which must start no earlier than the
    /// previous gap ended.
    pub(crate) fn gap(&mut self, start: f64, end: f64) {
        if !(end > start) || self.calls.calls.is_empty() {
            return;
        }
        let calls = &self.calls.calls;
        self.active.retain(|&(c, _)| calls[c].end > start);
        while self.next < calls.len() && calls[self.next].start < end {
            if calls[self.next].end > start {
                self.active.push((self.next, false));
            }
            self.next += 1;
        }
        self.parts.clear();
        for (c, counted) in &mut self.active {
            let call = calls[*c];
            let (s, e) = (call.start.max(start), call.end.min(end));
            if e > s {
                self.parts.push((call.name, s, e));
                if !*counted {
                    *counted = true;
                    self.per_name[call.name as usize].1 += 1;
                }
            }
        }
        self.parts.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(fcmp(a.1, b.1)));
        let mut i = 0;
        while i < self.parts.len() {
            let (name, mut s, mut e) = self.parts[i];
            let mut total = 0.0;
            i += 1;
            while i < self.parts.len() && self.parts[i].0 == name {
                let (_, ns, ne) = self.parts[i];
                if ns > e {
                    total += e - s;
                    s = ns;
                }
                e = e.max(ne);
                i += 1;
            }
            self.per_name[name as usize].0 += total + (e - s);
        }
    }

    /// The names with host-wait time, the most time first.
    pub(crate) fn rows(&self) -> Vec<HostWaitCall> {
        let mut rows: Vec<HostWaitCall> = self
            .per_name
            .iter()
            .enumerate()
            .filter(|(_, &(us, _))| us > 0.0)
            .map(|(i, &(wait_us, calls))| HostWaitCall { name: self.calls.names[i].clone(), calls, wait_us })
            .collect();
        rows.sort_by(|a, b| fcmp(b.wait_us, a.wait_us).then_with(|| a.name.cmp(&b.name)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(list: &[(f64, f64, u32)], names: usize) -> HostCalls {
        let calls = list.iter().map(|&(start, end, name)| Call { start, end, name }).collect();
        HostCalls { calls, names: (0..names).map(|n| n.to_string()).collect() }
    }

    #[test]
    fn a_gap_counts_each_name_once_over_concurrent_calls() {
        // Name 0 on two threads at once (10..30 and 20..40), name 1 at 50..60.
        let h = calls(&[(10.0, 30.0, 0), (20.0, 40.0, 0), (50.0, 60.0, 1)], 2);
        let mut s = h.sweep();
        s.gap(0.0, 100.0);
        assert_eq!(s.per_name, vec![(30.0, 2), (10.0, 1)]);
    }

    #[test]
    fn a_call_spanning_gaps_counts_once_and_only_inside_them() {
        let h = calls(&[(5.0, 95.0, 0), (96.0, 97.0, 1)], 2);
        let mut s = h.sweep();
        s.gap(0.0, 10.0);
        s.gap(20.0, 30.0);
        s.gap(90.0, 96.0);
        // 5..10, 20..30 and 90..95; the call at 96 starts as the last gap ends.
        assert_eq!(s.per_name, vec![(20.0, 1), (0.0, 0)]);
    }

    #[test]
    fn calls_outside_every_gap_are_not_counted() {
        let h = calls(&[(0.0, 5.0, 0), (12.0, 18.0, 0), (40.0, 41.0, 0)], 1);
        let mut s = h.sweep();
        s.gap(5.0, 12.0);
        s.gap(18.0, 30.0);
        s.gap(30.0, 30.0);
        assert_eq!(s.per_name, vec![(0.0, 0)]);
    }
}
