//! Site attribution: which Python source line launched each kernel. A kernel
//! is matched to its CPU op by External id (nearest in time), and the Python
//! frames active on that op's thread at the op's start give the site; when
//! that fails, the CUDA launch call with the kernel's correlation is used the
//! same way. Sites are aggregated per canonical kernel name.

pub mod locations;

use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::analysis::kernels::extract::py_cmp;
use crate::analysis::kernels::{CpuOpEvent, KernelEvent, LaunchEvent, PythonFrame, TraceData};
use crate::columns::{ThreadIdx, Trace};

/// Launch totals of one (kernel, location) pair, with the CPU op names and
/// stacks seen there (insertion-ordered counters).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MappingSiteAggregate {
    pub total_us: f64,
    pub count: u64,
    pub cpu_ops: IndexMap<String, u64>,
    pub stacks: IndexMap<String, u64>,
}

/// canonical kernel name → location → totals, all in first-seen order.
pub type SiteStats = IndexMap<String, IndexMap<String, MappingSiteAggregate>>;

/// Events with a shared key, sorted by start time.
#[derive(Clone, Debug, Default)]
struct TimedIndex<T> {
    events: Vec<T>,
}

trait Timed {
    fn ts(&self) -> f64;
    fn dur(&self) -> f64;
}

impl Timed for CpuOpEvent {
    fn ts(&self) -> f64 {
        self.ts
    }
    fn dur(&self) -> f64 {
        self.dur
    }
}

impl Timed for LaunchEvent {
    fn ts(&self) -> f64 {
        self.ts
    }
    fn dur(&self) -> f64 {
        self.dur
    }
}

/// First element with the smallest key (Python's `min(key=...)`).
fn first_min_by<T: Copy>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> f64) -> Option<T> {
    let mut best: Option<(T, f64)> = None;
    for item in items {
        let k = key(&item);
        if best.as_ref().map_or(true, |(_, b)| k < *b) {
            best = Some((item, k));
        }
    }
    best.map(|(t, _)| t)
}

impl<T: Timed + Copy> TimedIndex<T> {
    fn build(mut events: Vec<T>) -> Self {
        events.sort_by(|a, b| py_cmp(a.ts(), b.ts()));
        TimedIndex { events }
    }

    /// The event nearest a kernel start: among the few events starting
    /// around `probe`, the one ending closest to it if any started before,
    /// else the one starting closest.
    fn nearest(&self, probe: f64) -> Option<T> {
        let ev = &self.events;
        if ev.is_empty() {
            return None;
        }
        let limit = probe + 1e-3;
        let right = ev.partition_point(|e| e.ts() <= limit);
        let lo = right.saturating_sub(4);
        let hi = (right + 2).min(ev.len());
        let candidates = &ev[lo..hi];
        let earlier = candidates.iter().copied().filter(|e| e.ts() <= limit);
        if let Some(best) = first_min_by(earlier, |e| ((e.ts() + e.dur()) - probe).abs()) {
            return Some(best);
        }
        first_min_by(candidates.iter().copied(), |e| (e.ts() - probe).abs())
    }
}

/// Lookup tables built once per trace.
#[derive(Clone, Debug, Default)]
pub struct SiteIndex {
    cpu_ops: HashMap<i64, TimedIndex<CpuOpEvent>>,
    launches: HashMap<i64, TimedIndex<LaunchEvent>>,
}

impl SiteIndex {
    pub fn build(data: &TraceData) -> Self {
        let mut cpu: HashMap<i64, Vec<CpuOpEvent>> = HashMap::new();
        for op in &data.cpu_ops {
            cpu.entry(op.external_id).or_default().push(*op);
        }
        let mut launches: HashMap<i64, Vec<LaunchEvent>> = HashMap::new();
        for l in &data.launches {
            launches.entry(l.correlation).or_default().push(*l);
        }
        SiteIndex {
            cpu_ops: cpu.into_iter().map(|(k, v)| (k, TimedIndex::build(v))).collect(),
            launches: launches.into_iter().map(|(k, v)| (k, TimedIndex::build(v))).collect(),
        }
    }

    fn cpu_op(&self, kernel: &KernelEvent) -> Option<CpuOpEvent> {
        self.cpu_ops.get(&kernel.external_id?)?.nearest(kernel.ts)
    }

    fn launch(&self, kernel: &KernelEvent) -> Option<LaunchEvent> {
        self.launches.get(&kernel.correlation?)?.nearest(kernel.ts)
    }
}

/// The site chosen for a set of active frames, and the stack shown for it.
#[derive(Clone, Debug, PartialEq)]
struct FrameResolution {
    location: Arc<str>,
    stack: String,
}

/// Highest (priority, ts, -dur), first on ties.
fn choose_mapping_frame<'a>(active: &[&'a PythonFrame]) -> Option<&'a PythonFrame> {
    let mut best: Option<&PythonFrame> = None;
    for &f in active {
        let better = match best {
            None => true,
            Some(b) => {
                (f.priority, f.ts, -f.dur).partial_cmp(&(b.priority, b.ts, -b.dur)) == Some(std::cmp::Ordering::Greater)
            }
        };
        if better {
            best = Some(f);
        }
    }
    best
}

/// The last four informative frames (or the innermost one), outermost first.
fn build_stack_display(active: &[&PythonFrame]) -> String {
    let filtered: Vec<&str> = active.iter().filter(|f| f.priority > 0).map(|f| &*f.normalized).collect();
    let shown: Vec<&str> = if filtered.is_empty() {
        active.last().map(|f| vec![&*f.normalized]).unwrap_or_default()
    } else {
        filtered[filtered.len().saturating_sub(4)..].to_vec()
    };
    shown.join(" -> ")
}

/// Resolves query times on one thread with a sweep: frames that started at
/// or before the query and end no earlier than 1 ns before it.
fn resolve_thread_queries(frames: &[PythonFrame], mut queries: Vec<f64>) -> HashMap<u64, FrameResolution> {
    let mut out = HashMap::new();
    if frames.is_empty() || queries.is_empty() {
        return out;
    }
    let mut ordered: Vec<&PythonFrame> = frames.iter().collect();
    ordered.sort_by(|a, b| py_cmp(a.ts, b.ts).then(py_cmp(b.end_ts, a.end_ts)));
    queries.sort_by(|a, b| py_cmp(*a, *b));
    queries.dedup_by(|a, b| a == b);
    let mut active: Vec<&PythonFrame> = Vec::new();
    let mut next = 0;
    for ts in queries {
        while next < ordered.len() && ordered[next].ts <= ts {
            active.push(ordered[next]);
            next += 1;
        }
        active.retain(|f| f.end_ts >= ts - 1e-3);
        if let Some(chosen) = choose_mapping_frame(&active) {
            out.insert(
                fkey(ts),
                FrameResolution { location: chosen.normalized.clone(), stack: build_stack_display(&active) },
            );
        }
    }
    out
}

/// Hash key of a query time (0.0 and -0.0 compare equal, as in Python).
fn fkey(ts: f64) -> u64 {
    if ts == 0.0 {
        0
    } else {
        ts.to_bits()
    }
}

/// (location, stack, cpu op name) of one kernel.
type SiteContext = (String, String, String);

fn resolve_site_context(
    trace: &Trace,
    kernel: &KernelEvent,
    index: &SiteIndex,
    resolved: &HashMap<ThreadIdx, HashMap<u64, FrameResolution>>,
) -> SiteContext {
    let lookup = |thread: ThreadIdx, ts: f64| resolved.get(&thread).and_then(|m| m.get(&fkey(ts)));
    let cpu_op = index.cpu_op(kernel);
    if let Some(op) = cpu_op {
        let probe = op.ts + (op.dur * 0.5).min(1.0);
        if let Some(r) = lookup(op.thread, probe) {
            return (r.location.to_string(), r.stack.clone(), trace.s(op.name).to_string());
        }
    }
    if let Some(launch) = index.launch(kernel) {
        if let Some(r) = lookup(launch.thread, launch.ts) {
            let name = cpu_op.map_or(launch.name, |op| op.name);
            return (r.location.to_string(), r.stack.clone(), trace.s(name).to_string());
        }
        return ("unresolved".into(), String::new(), trace.s(launch.name).to_string());
    }
    let name = cpu_op.map(|op| trace.s(op.name).to_string()).unwrap_or_default();
    ("unresolved".into(), String::new(), name)
}

/// The reference's `aggregate_kernel_sites` over `kernels`.
pub fn aggregate_kernel_sites(
    trace: &Trace,
    data: &TraceData,
    index: &SiteIndex,
    kernels: &[&KernelEvent],
) -> SiteStats {
    let mut queries: IndexMap<ThreadIdx, Vec<f64>> = IndexMap::new();
    for k in kernels {
        if let Some(op) = index.cpu_op(k) {
            queries.entry(op.thread).or_default().push(op.ts + (op.dur * 0.5).min(1.0));
        }
        if let Some(l) = index.launch(k) {
            queries.entry(l.thread).or_default().push(l.ts);
        }
    }
    let empty: Vec<PythonFrame> = Vec::new();
    let resolved: HashMap<ThreadIdx, HashMap<u64, FrameResolution>> = queries
        .into_iter()
        .map(|(thread, q)| {
            let frames = data.frames.get(&thread).unwrap_or(&empty);
            (thread, resolve_thread_queries(frames, q))
        })
        .collect();

    let mut out: SiteStats = IndexMap::new();
    for k in kernels {
        let (location, stack, cpu_op) = resolve_site_context(trace, k, index, &resolved);
        let item = out.entry(k.canonical.to_string()).or_default().entry(location).or_default();
        item.total_us += k.dur;
        item.count += 1;
        if !cpu_op.is_empty() {
            *item.cpu_ops.entry(cpu_op).or_insert(0) += 1;
        }
        if !stack.is_empty() {
            *item.stacks.entry(stack).or_insert(0) += 1;
        }
    }
    out
}

/// Adds `source` into `dest` (Counter.update semantics for the counters).
pub fn merge_site_stats(dest: &mut SiteStats, source: &SiteStats) {
    for (kernel, locations) in source {
        let d = dest.entry(kernel.clone()).or_default();
        for (location, agg) in locations {
            let t = d.entry(location.clone()).or_default();
            t.total_us += agg.total_us;
            t.count += agg.count;
            for (k, v) in &agg.cpu_ops {
                *t.cpu_ops.entry(k.clone()).or_insert(0) += v;
            }
            for (k, v) in &agg.stacks {
                *t.stacks.entry(k.clone()).or_insert(0) += v;
            }
        }
    }
}

/// `Counter.most_common(1)`: highest count, first inserted on ties.
pub fn most_common(counter: &IndexMap<String, u64>) -> Option<&str> {
    let mut best: Option<(&str, u64)> = None;
    for (k, &v) in counter {
        if best.map_or(true, |(_, b)| v > b) {
            best = Some((k, v));
        }
    }
    best.map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, ts: f64, dur: f64, priority: i32) -> PythonFrame {
        PythonFrame { normalized: Arc::from(name), ts, dur, end_ts: ts + dur, priority }
    }

    #[test]
    fn sweep_picks_best_frame_and_stack() {
        let frames =
            vec![frame("outer", 0.0, 100.0, 35), frame("inner", 10.0, 5.0, 300), frame("noise", 10.0, 20.0, -20)];
        let r = resolve_thread_queries(&frames, vec![12.0, 12.0, 50.0, 200.0]);
        assert_eq!(&*r[&fkey(12.0)].location, "inner");
        assert_eq!(r[&fkey(12.0)].stack, "outer -> inner");
        assert_eq!(&*r[&fkey(50.0)].location, "outer");
        assert!(!r.contains_key(&fkey(200.0)));
    }

    #[test]
    fn nearest_prefers_earlier_events_by_end() {
        let mk = |ts: f64, dur: f64| LaunchEvent { name: 0, thread: 0, ts, dur, correlation: 1 };
        let idx = TimedIndex::build(vec![mk(0.0, 1.0), mk(5.0, 4.0), mk(20.0, 1.0)]);
        assert_eq!(idx.nearest(10.0).map(|e| e.ts), Some(5.0));
        let later = TimedIndex::build(vec![mk(30.0, 1.0), mk(20.0, 1.0)]);
        assert_eq!(later.nearest(10.0).map(|e| e.ts), Some(20.0));
    }

    #[test]
    fn most_common_first_on_ties() {
        let mut c = IndexMap::new();
        c.insert("a".to_string(), 2);
        c.insert("b".to_string(), 2);
        assert_eq!(most_common(&c), Some("a"));
    }
}
