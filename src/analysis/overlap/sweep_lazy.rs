//! The sweep's accounting for a large active set. Per slice, every active
//! kernel on a stream receives the same charge (exclusive, or hidden with
//! or without compute, and the same dominant overlapper), so the charges
//! are summed per stream and each kernel takes the difference between its
//! stream's sums when it leaves and when it joined. A slice then costs
//! O(streams with active kernels) instead of O(active kernels); the
//! strongest kernel per stream, and the two strongest streams, are kept in
//! ordered sets. The dominant overlapper's name is logged per stream as
//! runs, with each name's running total, so a kernel's `overlap_with` is
//! rebuilt from the names charged while it was active (in first-seen
//! order) at a cost per name, not per run.
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
    /// clock), and the runs of one name on it: (name id, start).
    overlap: f64,
    runs: Vec<(u32, f64)>,
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

/// One name's runs on a stream: (run index, start on the overlap clock,
/// the name's total before the run), and its total so far.
struct NameLog {
    name: Arc<KernelName>,
    total: f64,
    runs: Vec<(u32, f64, f64)>,
}

impl StreamSums {
    /// Charges `segment` to `name` on the overlap clock.
    fn charge(&mut self, name: &Arc<KernelName>, segment: f64) {
        let current = self.runs.last().map(|&(id, _)| id).filter(|&id| same_name(&self.names[id as usize].name, name));
        let id = match current {
            Some(id) => id,
            None => {
                let next = self.names.len() as u32;
                let id = *self.ids.entry(NameKey(name.clone())).or_insert(next);
                if id == next {
                    self.names.push(NameLog { name: name.clone(), total: 0.0, runs: Vec::new() });
                }
                let run = self.runs.len() as u32;
                let log = &mut self.names[id as usize];
                if let Some(&(last, _, _)) = log.runs.last() {
                    self.recent.remove(&last);
                }
                log.runs.push((run, self.overlap, log.total));
                self.recent.insert(run, id);
                self.runs.push((id, self.overlap));
                id
            }
        };
        self.names[id as usize].total += segment;
        self.overlap += segment;
    }

    /// Where run `run` ends on the overlap clock.
    fn run_end(&self, run: u32) -> f64 {
        self.runs.get(run as usize + 1).map_or(self.overlap, |r| r.1)
    }

    /// Each name's time on the overlap clock from `from` to now, in the
    /// order the names were first charged after `from`; `run` is the
    /// number of runs there were at `from`.
    fn charged_since(&self, from: f64, run: u32) -> Vec<(&Arc<KernelName>, f64)> {
        let mut found: Vec<(f64, u32, f64)> = Vec::new();
        for (_, &id) in self.recent.range(run.saturating_sub(1)..) {
            let log = &self.names[id as usize];
            let k = log.runs.partition_point(|r| r.1 <= from);
            let (before, first) = match k.checked_sub(1).map(|i| log.runs[i]) {
                Some((r, start, before)) => {
                    let end = self.run_end(r);
                    let first = if from < end { from } else { log.runs.get(k).map_or(f64::INFINITY, |r| r.1) };
                    (before + (from.min(end) - start).max(0.0), first)
                }
                None => (0.0, log.runs[0].1),
            };
            let amount = log.total - before;
            if amount > 0.0 {
                found.push((first, id, amount));
            }
        }
        found.sort_by(|a, b| fcmp(a.0, b.0));
        found.into_iter().map(|(_, id, amount)| (&self.names[id as usize].name, amount)).collect()
    }
}

/// A kernel's view of its stream's sums when it joined.
#[derive(Clone, Copy)]
struct Joined {
    exclusive: f64,
    hidden: f64,
    by_compute: f64,
    overlap: f64,
    run: usize,
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
        let joined = Joined {
            exclusive: sums.exclusive,
            hidden: sums.hidden,
            by_compute: sums.by_compute,
            overlap: sums.overlap,
            run: sums.runs.len(),
        };
        self.joined.insert(pos, joined);
        if let Some(best) = self.best(s) {
            self.bests.insert((best, s));
        }
    }

    /// Gives kernel `pos` its charges since it joined (or since the last
    /// settlement) and restarts its clock.
    fn settle(&mut self, keys: &Keys, events: &mut [OverlapKernel], pos: u32) {
        let s = keys.stream[pos as usize] as usize;
        let Some(j) = self.joined.get_mut(&pos) else { return };
        let sums = &self.streams[s];
        let e = &mut events[pos as usize];
        e.exclusive_us += sums.exclusive - j.exclusive;
        e.hidden_us += sums.hidden - j.hidden;
        e.hidden_by_compute_us += sums.by_compute - j.by_compute;
        for (name, amount) in sums.charged_since(j.overlap, j.run as u32) {
            e.overlap_with.add(name, amount);
        }
        *j = Joined {
            exclusive: sums.exclusive,
            hidden: sums.hidden,
            by_compute: sums.by_compute,
            overlap: sums.overlap,
            run: sums.runs.len(),
        };
    }

    pub(super) fn leave(&mut self, keys: &Keys, events: &mut [OverlapKernel], pos: u32) {
        self.settle(keys, events, pos);
        self.joined.remove(&pos);
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
