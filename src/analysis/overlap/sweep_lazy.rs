//! The sweep's accounting for a large active set. Per slice, every active
//! kernel on a stream receives the same charge (exclusive, or hidden with
//! or without compute, and the same dominant overlapper), so the charges
//! are summed per stream and each kernel takes the difference between its
//! stream's sums when it leaves and when it joined. A slice then costs
//! O(streams with active kernels) instead of O(active kernels); the
//! strongest kernel per stream, and the two strongest streams, are kept in
//! ordered sets. Per stream, each dominant overlapper's name keeps its
//! running total and marks its first run after each join, so a kernel's
//! `overlap_with` is rebuilt from the names charged while it was active
//! (in first-seen order) at a cost per name, not per run, and the marks
//! grow with the kernels that join, not with the slices.
//!
//! Results equal the slice-by-slice accounting up to floating-point
//! rounding (sums of differences instead of sums of slices), so the sweep
//! uses this only while the active set is large, which no real trace
//! reaches.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::sweep::Keys;
use super::{OverlapKernel, OverlapStats};
use crate::analysis::kernels::KernelName;
use crate::pysem::fcmp;

/// One active kernel as an overlapper: stronger sorts later, with the
/// sweep's rule (priority, then duration, then the earlier entered).
#[derive(Clone, Copy, Debug)]
struct Strength {
    priority: u8,
    dur: f64,
    entered: u32,
    pos: u32,
}

impl Strength {
    fn of(keys: &Keys, events: &[OverlapKernel], pos: u32) -> Self {
        let p = pos as usize;
        Strength { priority: keys.priority[p], dur: events[p].dur, entered: keys.entered[p], pos }
    }
}

impl Ord for Strength {
    fn cmp(&self, o: &Self) -> Ordering {
        self.priority
            .cmp(&o.priority)
            .then_with(|| fcmp(self.dur, o.dur))
            .then_with(|| o.entered.cmp(&self.entered))
            .then_with(|| self.pos.cmp(&o.pos))
    }
}

impl PartialOrd for Strength {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Strength {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Strength {}

/// One stream's active kernels and the charges summed over its slices.
#[derive(Default)]
struct StreamSums {
    members: BTreeSet<Strength>,
    compute: u32,
    exclusive: f64,
    hidden: f64,
    by_compute: f64,
    /// Time charged to a named dominant overlapper (the stream's overlap
    /// clock), the runs of one name on it so far, and the name of the run
    /// still open (none right after a kernel joined, so that no run spans
    /// a join).
    overlap: f64,
    runs: u32,
    open: Option<u32>,
    /// Joins so far: each name marks its first run after each of them.
    epoch: u32,
    names: Vec<NameLog>,
    ids: HashMap<NameKey, u32>,
    /// Name ids by the index of their latest run.
    recent: BTreeMap<u32, u32>,
}

/// A dominant overlapper's name as a map key (kernels with the same
/// canonical name are one overlapper).
struct NameKey(Arc<KernelName>);

impl PartialEq for NameKey {
    fn eq(&self, o: &Self) -> bool {
        same_name(&self.0, &o.0)
    }
}

impl Eq for NameKey {}

impl std::hash::Hash for NameKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.canonical.hash(h)
    }
}

/// One name's time on a stream: its total so far, its latest run, and its
/// first run after each join (run index, the name's total before it). A
/// kernel needs no more: what the name had when the kernel joined, and
/// which of its names came first. Marks grow with joins, not with runs, so
/// an active set whose dominant overlapper changes every slice keeps a few
/// marks per name instead of a log of every run.
struct NameLog {
    name: Arc<KernelName>,
    total: f64,
    latest: u32,
    marks: Vec<(u32, f64)>,
    marked_epoch: u32,
}

impl StreamSums {
    /// Charges `segment` to `name` on the overlap clock.
    fn charge(&mut self, name: &Arc<KernelName>, segment: f64) {
        let current = self.open.filter(|&id| same_name(&self.names[id as usize].name, name));
        let id = match current {
            Some(id) => id,
            None => {
                let next = self.names.len() as u32;
                let id = *self.ids.entry(NameKey(name.clone())).or_insert(next);
                let run = self.runs;
                self.runs += 1;
                if id == next {
                    let log =
                        NameLog { name: name.clone(), total: 0.0, latest: run, marks: Vec::new(), marked_epoch: 0 };
                    self.names.push(log);
                }
                let log = &mut self.names[id as usize];
                if !log.marks.is_empty() {
                    self.recent.remove(&log.latest);
                }
                if log.marks.is_empty() || log.marked_epoch != self.epoch {
                    log.marks.push((run, log.total));
                    log.marked_epoch = self.epoch;
                }
                log.latest = run;
                self.recent.insert(run, id);
                self.open = Some(id);
                id
            }
        };
        self.names[id as usize].total += segment;
        self.overlap += segment;
    }

    /// Starts a joining kernel's clock: the next charge opens a new run,
    /// which each name marks.
    fn restart(&mut self) -> Joined {
        self.open = None;
        self.epoch = self.epoch.wrapping_add(1);
        Joined { exclusive: self.exclusive, hidden: self.hidden, by_compute: self.by_compute, run: self.runs }
    }

    /// Each name's time since run `run` began (the number of runs when a
    /// kernel's clock started), in the order the names were first charged.
    fn charged_since(&self, run: u32) -> Vec<(&Arc<KernelName>, f64)> {
        let mut found: Vec<(u32, u32, f64)> = Vec::new();
        for (_, &id) in self.recent.range(run..) {
            let log = &self.names[id as usize];
            // The name has run since `run`, so its first run since then
            // is marked.
            let k = log.marks.partition_point(|m| m.0 < run);
            let Some(&(first, before)) = log.marks.get(k) else { continue };
            let amount = log.total - before;
            if amount > 0.0 {
                found.push((first, id, amount));
            }
        }
        found.sort_unstable_by_key(|f| f.0);
        found.into_iter().map(|(_, id, amount)| (&self.names[id as usize].name, amount)).collect()
    }
}

/// A kernel's view of its stream's sums when it joined.
#[derive(Clone, Copy)]
struct Joined {
    exclusive: f64,
    hidden: f64,
    by_compute: f64,
    run: u32,
}

/// Per-stream accounting of a large active set.
pub(super) struct Lazy {
    streams: Vec<StreamSums>,
    /// The strongest kernel of each stream that has active kernels.
    bests: BTreeSet<(Strength, u32)>,
    compute: u32,
    joined: HashMap<u32, Joined>,
}

fn same_name(a: &Arc<KernelName>, b: &Arc<KernelName>) -> bool {
    Arc::ptr_eq(a, b) || a.canonical == b.canonical
}

impl Lazy {
    /// Takes over the accounting of the kernels in `active`.
    pub(super) fn start(n_streams: usize, keys: &Keys, events: &[OverlapKernel], active: &[u32]) -> Self {
        let mut lazy = Lazy {
            streams: (0..n_streams).map(|_| StreamSums::default()).collect(),
            bests: BTreeSet::new(),
            compute: 0,
            joined: HashMap::default(),
        };
        for &pos in active {
            lazy.join(keys, events, pos);
        }
        lazy
    }

    fn best(&self, s: u32) -> Option<Strength> {
        self.streams[s as usize].members.last().copied()
    }

    pub(super) fn join(&mut self, keys: &Keys, events: &[OverlapKernel], pos: u32) {
        let s = keys.stream[pos as usize];
        if let Some(old) = self.best(s) {
            self.bests.remove(&(old, s));
        }
        let sums = &mut self.streams[s as usize];
        sums.members.insert(Strength::of(keys, events, pos));
        if keys.priority[pos as usize] == 4 {
            sums.compute += 1;
            self.compute += 1;
        }
        let joined = sums.restart();
        self.joined.insert(pos, joined);
        if let Some(best) = self.best(s) {
            self.bests.insert((best, s));
        }
    }

    /// Gives kernel `pos` its charges since it joined; its clock stops.
    fn settle(&mut self, keys: &Keys, events: &mut [OverlapKernel], pos: u32) {
        let s = keys.stream[pos as usize] as usize;
        let Some(j) = self.joined.remove(&pos) else { return };
        let sums = &self.streams[s];
        let e = &mut events[pos as usize];
        e.exclusive_us += sums.exclusive - j.exclusive;
        e.hidden_us += sums.hidden - j.hidden;
        e.hidden_by_compute_us += sums.by_compute - j.by_compute;
        for (name, amount) in sums.charged_since(j.run) {
            e.overlap_with.add(name, amount);
        }
    }

    pub(super) fn leave(&mut self, keys: &Keys, events: &mut [OverlapKernel], pos: u32) {
        self.settle(keys, events, pos);
        let s = keys.stream[pos as usize];
        if let Some(old) = self.best(s) {
            self.bests.remove(&(old, s));
        }
        let sums = &mut self.streams[s as usize];
        sums.members.remove(&Strength::of(keys, events, pos));
        if keys.priority[pos as usize] == 4 {
            sums.compute -= 1;
            self.compute -= 1;
        }
        if sums.members.is_empty() {
            // No kernel on this stream looks at its sums any more.
            *sums = StreamSums::default();
        } else if let Some(best) = self.best(s) {
            self.bests.insert((best, s));
        }
    }

    /// Hands every active kernel its charges; the caller goes back to
    /// slice-by-slice accounting.
    pub(super) fn finish(mut self, keys: &Keys, events: &mut [OverlapKernel], active: &[u32]) {
        for &pos in active {
            self.settle(keys, events, pos);
        }
    }

    /// Charges one slice of length `segment`.
    pub(super) fn slice(&mut self, events: &[OverlapKernel], segment: f64, stats: &mut OverlapStats) {
        stats.total_busy_us += segment;
        stats.max_concurrent_streams = stats.max_concurrent_streams.max(self.bests.len());
        let mut strongest = self.bests.iter().rev();
        let Some(&(first_best, first)) = strongest.next() else { return };
        let Some(&(second_best, _)) = strongest.next() else {
            self.streams[first as usize].exclusive += segment;
            return;
        };
        stats.overlap_us += segment;
        for &(_, s) in &self.bests {
            let sums = &mut self.streams[s as usize];
            sums.hidden += segment;
            if self.compute > sums.compute {
                sums.by_compute += segment;
            }
            let dominant = if s == first { second_best } else { first_best };
            let name = &events[dominant.pos as usize].name;
            // An empty name is falsy in the reference and not counted.
            if !name.canonical.is_empty() {
                sums.charge(name, segment);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Arc<KernelName> {
        Arc::new(KernelName { canonical: n.into(), category: "other" })
    }

    fn since(sums: &StreamSums, run: u32) -> Vec<(String, f64)> {
        sums.charged_since(run).into_iter().map(|(n, v)| (n.canonical.to_string(), v)).collect()
    }

    #[test]
    fn an_overlapper_changing_every_slice_keeps_a_mark_per_join_not_per_run() {
        let (x, y) = (name("x"), name("y"));
        let mut sums = StreamSums::default();
        let first = sums.restart();
        for _ in 0..10_000 {
            sums.charge(&x, 1.0);
            sums.charge(&y, 2.0);
        }
        assert_eq!(sums.runs, 20_000);
        let marks: usize = sums.names.iter().map(|n| n.marks.len()).sum();
        assert_eq!(marks, 2);
        assert_eq!(since(&sums, first.run), vec![("x".into(), 10_000.0), ("y".into(), 20_000.0)]);
    }

    #[test]
    fn a_kernel_joining_mid_run_is_charged_from_its_join_in_first_charged_order() {
        let (x, y, z) = (name("x"), name("y"), name("z"));
        let mut sums = StreamSums::default();
        let early = sums.restart();
        sums.charge(&x, 1.0);
        sums.charge(&y, 4.0);
        let late = sums.restart();
        // The run of `y` open at the join goes on: the late kernel sees
        // only what came after, and `y` before `z` and `x`.
        sums.charge(&y, 2.0);
        sums.charge(&z, 8.0);
        sums.charge(&x, 16.0);
        assert_eq!(since(&sums, early.run), vec![("x".into(), 17.0), ("y".into(), 6.0), ("z".into(), 8.0)]);
        assert_eq!(since(&sums, late.run), vec![("y".into(), 2.0), ("z".into(), 8.0), ("x".into(), 16.0)]);
        let after = sums.restart();
        assert!(since(&sums, after.run).is_empty());
    }
}
