//! Where in Python a kernel was launched, from the mapping trace: the
//! Python frames active on the CPU op's thread when the op sharing the
//! kernel's External id started, the CUDA launch call sharing its
//! correlation, or, failing both, the meaningful frames on any thread that
//! span the kernel's start (the bisect-based time-window lookup).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use indexmap::IndexMap;

use super::detect::Masking;
use super::scopes::{canonicalize_python_scope_name, is_fallback_python_scope, is_meaningful_python_scope};
use crate::columns::frames::BlockMark;
use crate::columns::{Frame, Sym, ThreadIdx, Trace};
use crate::pysem::fcmp;
use crate::pysem::normalize_text;

/// A Python scope chain, outermost first, at most six entries.
pub type ScopeChain = Arc<[Arc<str>]>;

/// Per frame name: canonical form and whether it is meaningful / fallback.
pub struct FrameNames {
    /// Indexed by frame-name symbol, filled on first use.
    by_sym: Vec<Option<(Arc<str>, bool, bool)>>,
    masking: Masking,
}

impl FrameNames {
    pub fn new(masking: Masking) -> Self {
        FrameNames { by_sym: Vec::new(), masking }
    }

    fn get(&mut self, trace: &Trace, sym: Sym) -> &(Arc<str>, bool, bool) {
        let i = sym as usize;
        if self.by_sym.len() <= i {
            self.by_sym.resize(i + 1, None);
        }
        self.by_sym[i].get_or_insert_with(|| {
            let normalized = canonicalize_python_scope_name(trace.s(sym), self.masking);
            let meaningful = is_meaningful_python_scope(&normalized);
            let fallback = is_fallback_python_scope(&normalized);
            (Arc::from(normalized), meaningful, fallback)
        })
    }
}

/// A CPU op with the scope chain active when it started.
#[derive(Clone, Debug)]
pub struct CpuContext {
    pub cpu_op_name: Sym,
    pub ts: f64,
    pub dur: f64,
    pub scope_chain: ScopeChain,
}

/// A CUDA launch call.
#[derive(Clone, Debug)]
pub struct LaunchContext {
    pub ts: f64,
    pub dur: f64,
    pub launch_name: Sym,
}

/// For each External id (restricted to `targets` when given), the CPU ops
/// carrying it with the last six meaningful Python scopes open on their
/// thread at their start (or, when none is meaningful, the last six
/// fallback scopes). Threads are visited in first-seen order. (The
/// reference walks them in set order, which depends on Python's string-hash
/// seed: when two CPU ops with one External id on different threads are
/// equally close to a kernel, its pick varies from run to run; ours is the
/// first thread seen.)
///
/// The reference sorts one timeline of scope starts, op starts and scope
/// ends by (time, kind); this walks the same order without building it: a
/// scope is open at an op when its start does not sort after the op's time
/// and its end does not sort before it (a scope whose end sorts before its
/// own start is never closed once opened), and open scopes are listed in
/// start order.
pub fn cpu_launch_contexts(
    trace: &Trace,
    targets: Option<&HashSet<i64>>,
    names: &mut FrameNames,
) -> HashMap<i64, Vec<CpuContext>> {
    let mut ops_by_thread: IndexMap<ThreadIdx, Vec<u32>> = IndexMap::new();
    for i in 0..trace.cpu_ops.len() {
        let op = trace.cpu_ops.get(i);
        let Some(ext) = op.external_id else { continue };
        if !op.complete || targets.is_some_and(|t| !t.contains(&ext)) {
            continue;
        }
        ops_by_thread.entry(op.thread).or_default().push(i as u32);
    }
    let mut out: HashMap<i64, Vec<CpuContext>> = HashMap::default();
    if ops_by_thread.is_empty() {
        return out;
    }

    let ops_ts = &trace.cpu_ops.ts;
    for (thread, ops) in ops_by_thread.iter_mut() {
        // The store yields a thread's frames by (start, trace order), as a
        // stable sort by start would (fcmp is a total order).
        let mut frames = trace.frames.cursor(*thread);
        ops.sort_unstable_by(|&a, &b| fcmp(ops_ts[a as usize], ops_ts[b as usize]).then(a.cmp(&b)));
        let mut open: Vec<Frame> = Vec::new();
        for &op_row in ops.iter() {
            let t = ops_ts[op_row as usize];
            // A scope stays open at the op unless it ended before it (one
            // that ends before its own start is never closed).
            let stays_open = |s: &Frame| {
                let e = s.end();
                fcmp(e, t) != std::cmp::Ordering::Less || fcmp(e, s.ts) == std::cmp::Ordering::Less
            };
            // Blocks whose frames all start by the op and end before it
            // (none ending before its own start) open no scope.
            let skip =
                |b: &BlockMark| fcmp(b.last_ts, t) != std::cmp::Ordering::Greater && b.max_end < t && b.min_dur >= 0.0;
            while let Some(&s) = frames.peek_skipping(skip).filter(|s| fcmp(s.ts, t) != std::cmp::Ordering::Greater) {
                frames.advance();
                // Only complete frames with a meaningful or fallback name
                // count as scopes; one the retain below would close is not
                // opened (between two sparse ops most frames start and end).
                if !s.complete || !stays_open(&s) {
                    continue;
                }
                let (_, meaningful, fallback) = names.get(trace, s.name);
                if *meaningful || *fallback {
                    open.push(s);
                }
            }
            open.retain(stays_open);
            let mut last_six = |meaningful: bool| -> Vec<Arc<str>> {
                open.iter()
                    .rev()
                    .filter_map(|s| {
                        let (name, m, fb) = names.get(trace, s.name);
                        (if meaningful { *m } else { *fb }).then(|| name.clone())
                    })
                    .take(6)
                    .collect()
            };
            let mut chain = last_six(true);
            if chain.is_empty() {
                chain = last_six(false);
            }
            chain.reverse();
            let op = trace.cpu_ops.get(op_row as usize);
            let ext = op.external_id.unwrap_or_default();
            out.entry(ext).or_default().push(CpuContext {
                cpu_op_name: op.name,
                ts: op.ts,
                dur: op.dur,
                scope_chain: chain.into(),
            });
        }
    }
    out
}

/// The reference's test for a CUDA launch call. It lowercases the name and
/// then compares it with camel-case spellings (`cudaLaunchKernel`, ...), so
/// it can never succeed and the launch-correlation path never contributes a
/// scope. Kept as is because the reference's output depends on it.
pub fn is_cuda_launch_event(name: &str, cat: &str) -> bool {
    let lowered_name = normalize_text(name).to_lowercase();
    let lowered_cat = normalize_text(cat).to_lowercase();
    let runtime: &[&str] = &["cudaLaunchKernel", "cudaLaunchKernelExC"];
    let any: &[&str] = &["cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernel", "cudaLaunchKernelExC"];
    let set = if lowered_cat == "cuda_runtime" { runtime } else { any };
    set.contains(&lowered_name.as_str())
}

/// Launch calls by correlation, each list sorted by start. Built from the
/// trace's launch rows (runtime / driver calls with "launch" in the name),
/// which cover everything [`is_cuda_launch_event`] could accept on the
/// runtime category; in practice it accepts nothing.
pub fn launch_contexts(trace: &Trace) -> HashMap<i64, Vec<LaunchContext>> {
    let mut out: HashMap<i64, Vec<LaunchContext>> = HashMap::default();
    for l in trace.launches.iter() {
        if !l.complete {
            continue;
        }
        // The launch rows keep no category; runtime and driver calls are
        // both tested against the wider name set, which is equally empty.
        if !is_cuda_launch_event(trace.s(l.name), "") {
            continue;
        }
        out.entry(l.correlation).or_default().push(LaunchContext { ts: l.ts, dur: l.dur, launch_name: l.name });
    }
    for items in out.values_mut() {
        items.sort_by(|a, b| fcmp(a.ts, b.ts));
    }
    out
}

/// The context closest in start time to the kernel, shorter on ties, first
/// on full ties.
fn closest<T>(items: &[T], kernel_ts: f64, key: impl Fn(&T) -> (f64, f64)) -> Option<&T> {
    let mut best: Option<(&T, f64, f64)> = None;
    for item in items {
        let (ts, dur) = key(item);
        let gap = (ts - kernel_ts).abs();
        let better = match best {
            None => true,
            Some((_, bg, bd)) => gap < bg || (gap == bg && dur < bd),
        };
        if better {
            best = Some((item, gap, dur));
        }
    }
    best.map(|b| b.0)
}

pub fn choose_cpu_context(contexts: &[CpuContext], kernel_ts: f64) -> Option<&CpuContext> {
    closest(contexts, kernel_ts, |c| (c.ts, c.dur))
}

pub fn choose_launch_context(contexts: &[LaunchContext], kernel_ts: f64) -> Option<&LaunchContext> {
    closest(contexts, kernel_ts, |c| (c.ts, c.dur))
}

/// For each query (id, time): the meaningful Python frames on any thread
/// whose span, widened by 1 ns on each side, contains the time, ordered by
/// (start, longer first, name), deduplicated by name, last six kept.
/// Frames are matched to the sorted query times by binary search, so each
/// frame costs O(log q + matches).
pub fn temporal_scope_lookup(
    trace: &Trace,
    queries: &[(usize, f64)],
    names: &mut FrameNames,
) -> HashMap<usize, ScopeChain> {
    let mut out = HashMap::default();
    if queries.is_empty() {
        return out;
    }
    let mut ordered: Vec<(f64, usize)> = queries.iter().map(|&(id, ts)| (ts, id)).collect();
    ordered.sort_by(|a, b| fcmp(a.0, b.0));
    let times: Vec<f64> = ordered.iter().map(|q| q.0).collect();
    let (first, last) = (times[0], times[times.len() - 1]);

    // Every (query id, frame start, duration, name) of a frame spanning a
    // query, in one list rather than a list per query.
    let mut matches: Vec<(usize, f64, f64, Arc<str>)> = Vec::new();
    for thread in trace.frames.threads() {
        let mut cursor = trace.frames.cursor(thread);
        // A block none of whose spans (widened by 1 ns) holds a query time
        // matches nothing.
        let no_query_in = |lo: f64, hi: f64| times.get(times.partition_point(|&t| t < lo)).is_none_or(|&t| t > hi);
        while let Some(&f) = cursor.peek_skipping(|b| no_query_in(b.first_ts - 1e-3, b.max_end + 1e-3)) {
            cursor.advance();
            if f.ts > last {
                // Starts only grow from here (a NaN start matches nothing).
                break;
            }
            if !f.complete {
                continue;
            }
            let end = f.ts + f.dur;
            if end < first {
                continue;
            }
            let (name, meaningful, _) = names.get(trace, f.name);
            if !*meaningful {
                continue;
            }
            let lo = f.ts - 1e-3;
            let hi = end + 1e-3;
            let left = times.partition_point(|&t| t < lo);
            let right = times.partition_point(|&t| t <= hi);
            for q in ordered.get(left..right).unwrap_or(&[]) {
                matches.push((q.1, f.ts, f.dur, name.clone()));
            }
        }
    }
    // Per query: (start, longer first, name), stable, so a query's frames
    // keep the order they were found in on full ties.
    matches.sort_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| fcmp(a.1, b.1)).then_with(|| fcmp(b.2, a.2)).then_with(|| a.3.cmp(&b.3))
    });
    // Queries under the same frames share one chain.
    let mut chains: HashSet<ScopeChain> = HashSet::default();
    for scopes in matches.chunk_by(|a, b| a.0 == b.0) {
        let mut seen: HashSet<&str> = HashSet::default();
        let chain: Vec<Arc<str>> = scopes.iter().filter(|s| seen.insert(&s.3)).map(|s| s.3.clone()).collect();
        let tail = &chain[chain.len().saturating_sub(6)..];
        let shared = match chains.get(tail) {
            Some(c) => c.clone(),
            None => {
                let c: ScopeChain = tail.into();
                chains.insert(c.clone());
                c
            }
        };
        out.insert(scopes[0].0, shared);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_test_never_matches_camel_case() {
        for name in ["cudaLaunchKernel", "cudalaunchkernel", "cuLaunchKernel", "cudaLaunchKernelExC"] {
            assert!(!is_cuda_launch_event(name, "cuda_runtime"));
            assert!(!is_cuda_launch_event(name, "cuda_driver"));
        }
    }

    #[test]
    fn closest_context_prefers_shorter_then_first() {
        let mk = |ts, dur, name| LaunchContext { ts, dur, launch_name: name };
        let items = [mk(8.0, 2.0, 0), mk(12.0, 1.0, 1), mk(12.0, 1.0, 2)];
        assert_eq!(choose_launch_context(&items, 10.0).map(|c| c.launch_name), Some(1));
        assert!(choose_launch_context(&[], 10.0).is_none());
    }
}
