//! The host calls the GPU waited through: while a GPU sits idle waiting for
//! the host (an idle gap whose next kernel's launch call began after the gap
//! opened, up to the start of that call: after it the GPU waits on the call
//! or on other work), which runtime calls other than launches (`cudaFree`,
//! `hipFree`, `cudaStreamSynchronize`, synchronous copies) the launching
//! threads were in, and for how much of that time.
//!
//! The calls are the correlated runtime rows (`trace.runtime`) and the
//! host calls kept with the kernel-like rows (a runtime or driver category
//! with a `stream` argument, as ROCm writes `hipMemcpyWithStream`) that are
//! not launch calls, on the threads that launch kernels. A trace whose launches
//! come from more than one process names none: a call of one process would
//! be set against the GPU of another. Per gap, a name's time is the union of
//! its calls clipped to the gap, so calls of one name on two threads at once
//! count once; a call counts once however many gaps it spans.
//!
//! Bounds, whatever the trace: at most [`MAX_ACTIVE`] calls that outlast a
//! gap are carried to the next (the launching threads of a real trace have
//! a few open at once, one a thread or two with driver calls inside runtime
//! calls; more are left out of the later gaps), and a figure set lists at
//! most [`MAX_ROWS`] names.

use rustc_hash::FxHashMap as HashMap;

use super::events::Clock;
use super::launch::is_launch_call;
use super::types::HostWaitCall;
use crate::analysis::kernels::extract::host_call_category;
use crate::columns::{Sym, Trace};
use crate::pysem::fcmp;

/// Calls that outlast a gap a sweep carries to the next; past it they are
/// left out of the later gaps, so that a trace of many calls open together
/// cannot make each gap's work grow with them.
pub(crate) const MAX_ACTIVE: usize = 64;
/// Names listed per figure set, the most time first.
pub(crate) const MAX_ROWS: usize = 8;

/// One call: 16 bytes (its duration in single precision, ample for the
/// microseconds of a runtime call).
#[derive(Clone, Copy, Debug)]
struct Call {
    start: f64,
    dur: f32,
    /// Index into [`HostCalls::names`].
    name: u32,
}

impl Call {
    fn end(self) -> f64 {
        self.start + f64::from(self.dur)
    }
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
        let (l, r, k) = (&trace.launches, &trace.runtime, &trace.kernels);
        let mut launch_named: HashMap<Sym, bool> = HashMap::default();
        let mut is_launch = |name: Sym| *launch_named.entry(name).or_insert_with(|| is_launch_call(trace.s(name)));
        // Host calls kept with the kernel-like rows: a runtime or driver
        // category with a `stream` argument (ROCm's `hipMemcpyWithStream`
        // with `stream: "0x0"`).
        let mut host_cat: HashMap<Sym, bool> = HashMap::default();
        let host_rows: Vec<usize> = (0..k.len())
            .filter(|&i| *host_cat.entry(k.cat(i)).or_insert_with(|| host_call_category(trace.s(k.cat(i)))))
            .collect();
        // Every host call: (name, thread, ts, dur).
        let all = || {
            let runtime = (0..r.len()).map(|i| (r.name[i], r.thread[i], r.ts[i], r.dur[i]));
            runtime.chain(host_rows.iter().map(|&i| (k.name[i], k.thread(i), k.ts[i], k.dur[i])))
        };
        // The launching threads, and their process, which must be one.
        let mut launching = vec![false; trace.threads.len()];
        let launch_threads =
            (0..l.len()).map(|i| l.thread(i)).chain(all().filter(|c| is_launch(c.0)).map(|c| c.1).collect::<Vec<_>>());
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
        for (sym, thread, ts, dur) in all() {
            if !launching.get(thread as usize).copied().unwrap_or(false) || is_launch(sym) {
                continue;
            }
            let (start, end) = clock.interval(ts, dur);
            if !(start.is_finite() && end.is_finite() && end > start) {
                continue;
            }
            let name = *index.entry(sym).or_insert_with(|| {
                names.push(trace.s(sym).to_string());
                names.len() as u32 - 1
            });
            calls.push(Call { start, dur: (end - start) as f32, name });
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
            carried: Vec::new(),
            open: HashMap::default(),
            per_name: HashMap::default(),
        }
    }
}

/// Host-wait time by call name over a run of gaps.
pub(crate) struct Sweep<'a> {
    calls: &'a HostCalls,
    /// The first call not yet seen.
    next: usize,
    /// Calls that outlast the last gap, to be read again by the next.
    active: Vec<usize>,
    /// Scratch: `active` as the current gap found it (its buffer kept
    /// from gap to gap).
    carried: Vec<usize>,
    /// Scratch: per name, the stretch of the current gap its calls cover
    /// so far (calls come in start order).
    open: HashMap<u32, (f64, f64)>,
    /// (time, calls) per name that overlapped a gap.
    per_name: HashMap<u32, (f64, u64)>,
}

impl Sweep<'_> {
    /// Adds the gap `start..end`, which must start no earlier than the
    /// previous gap ended.
    pub(crate) fn gap(&mut self, start: f64, end: f64) {
        if !(end > start) || self.calls.calls.is_empty() {
            return;
        }
        let calls = &self.calls.calls;
        // Calls seen before (counted already), then the calls that start
        // before the gap ends, in start order; each one's part of the gap
        // joins its name's stretch, or closes it and opens the next.
        let mut carried = std::mem::take(&mut self.carried);
        carried.clear();
        std::mem::swap(&mut carried, &mut self.active);
        let earlier = carried.iter().copied().filter(|&c| calls[c].end() > start).map(|c| (c, true));
        let first_new = self.next;
        while self.next < calls.len() && calls[self.next].start < end {
            self.next += 1;
        }
        let new = (first_new..self.next).filter(|&c| calls[c].end() > start).map(|c| (c, false));
        for (c, counted) in earlier.chain(new) {
            let call = calls[c];
            let (s, e) = (call.start.max(start), call.end().min(end));
            if !counted {
                self.per_name.entry(call.name).or_default().1 += 1;
            }
            match self.open.get_mut(&call.name) {
                Some(stretch) if s <= stretch.1 => stretch.1 = stretch.1.max(e),
                Some(stretch) => {
                    self.per_name.entry(call.name).or_default().0 += stretch.1 - stretch.0;
                    *stretch = (s, e);
                }
                None => {
                    self.open.insert(call.name, (s, e));
                }
            }
            // A call that outlasts the gap is read again by the next one.
            if call.end() > end && self.active.len() < MAX_ACTIVE {
                self.active.push(c);
            }
        }
        for (name, (s, e)) in self.open.drain() {
            self.per_name.entry(name).or_default().0 += e - s;
        }
        self.carried = carried;
    }

    /// The names with host-wait time, the most time first, at most
    /// [`MAX_ROWS`].
    pub(crate) fn rows(&self) -> Vec<HostWaitCall> {
        let mut rows: Vec<(u32, f64, u64)> =
            self.per_name.iter().filter(|(_, &(us, _))| us > 0.0).map(|(&i, &(us, n))| (i, us, n)).collect();
        let names = &self.calls.names;
        rows.sort_by(|a, b| fcmp(b.1, a.1).then_with(|| names[a.0 as usize].cmp(&names[b.0 as usize])));
        rows.truncate(MAX_ROWS);
        rows.into_iter()
            .map(|(i, wait_us, calls)| HostWaitCall { name: names[i as usize].clone(), calls, wait_us })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(list: &[(f64, f64, u32)], names: usize) -> HostCalls {
        let calls = list.iter().map(|&(start, end, name)| Call { start, dur: (end - start) as f32, name }).collect();
        HostCalls { calls, names: (0..names).map(|n| n.to_string()).collect() }
    }

    /// (name, time, calls) per name with time, by name.
    fn totals(s: &Sweep<'_>) -> Vec<(u32, f64, u64)> {
        let mut t: Vec<(u32, f64, u64)> =
            s.per_name.iter().filter(|(_, v)| v.0 > 0.0).map(|(&k, &(us, n))| (k, us, n)).collect();
        t.sort_by_key(|x| x.0);
        t
    }

    #[test]
    fn a_gap_counts_each_name_once_over_concurrent_calls() {
        // Name 0 on two threads at once (10..30 and 20..40), name 1 at 50..60.
        let h = calls(&[(10.0, 30.0, 0), (20.0, 40.0, 0), (50.0, 60.0, 1)], 2);
        let mut s = h.sweep();
        s.gap(0.0, 100.0);
        assert_eq!(totals(&s), vec![(0, 30.0, 2), (1, 10.0, 1)]);
    }

    #[test]
    fn a_call_spanning_gaps_counts_once_and_only_inside_them() {
        let h = calls(&[(5.0, 95.0, 0), (96.0, 97.0, 1)], 2);
        let mut s = h.sweep();
        s.gap(0.0, 10.0);
        s.gap(20.0, 30.0);
        s.gap(90.0, 96.0);
        // 5..10, 20..30 and 90..95; the call at 96 starts as the last gap ends.
        assert_eq!(totals(&s), vec![(0, 20.0, 1)]);
    }

    #[test]
    fn calls_outside_every_gap_are_not_counted() {
        let h = calls(&[(0.0, 5.0, 0), (12.0, 18.0, 0), (40.0, 41.0, 0)], 1);
        let mut s = h.sweep();
        s.gap(5.0, 12.0);
        s.gap(18.0, 30.0);
        s.gap(30.0, 30.0);
        assert_eq!(totals(&s), vec![]);
    }

    #[test]
    fn every_call_of_a_gap_counts_however_many_come_one_after_another() {
        // 100 calls of 1 µs one after the other in one gap (a ROCm trace's
        // runs of hipFree), then a longer one of another name: all count.
        let mut list: Vec<(f64, f64, u32)> = (0..100).map(|i| (i as f64 * 2.0, i as f64 * 2.0 + 1.0, 0)).collect();
        list.push((300.0, 400.0, 1));
        let h = calls(&list, 2);
        let mut s = h.sweep();
        s.gap(-1.0, 1000.0);
        assert_eq!(totals(&s), vec![(0, 100.0, 100), (1, 100.0, 1)]);
        assert!(s.active.is_empty());
    }

    #[test]
    fn many_calls_open_at_once_are_bounded() {
        // 10,000 calls open over 10,000 gaps: each gap reads at most
        // MAX_ACTIVE of them, and the rows list at most MAX_ROWS names.
        let n = 10_000;
        let list: Vec<(f64, f64, u32)> = (0..n).map(|i| (i as f64 * 1e-6, 1e9, i as u32)).collect();
        let h = calls(&list, n);
        let mut s = h.sweep();
        for g in 0..n {
            s.gap(1.0 + 2.0 * g as f64, 2.0 + 2.0 * g as f64);
        }
        // All of them met the first gap; 64 were carried through the rest.
        assert_eq!(s.active.len(), MAX_ACTIVE);
        assert_eq!(s.per_name.len(), n);
        let rows = s.rows();
        assert_eq!(rows.len(), MAX_ROWS);
        assert!(rows.iter().all(|r| r.calls == 1 && r.wait_us == n as f64), "{rows:?}");
    }
}
