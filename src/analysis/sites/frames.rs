//! Python frames as site attribution reads them, without copying the trace's
//! frame columns: per thread, the frame rows (indexes into `trace.frames`)
//! in sweep order, and per distinct frame name its display form and rank,
//! computed once per name rather than once per frame.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::locations::{frame_priority, normalize_source_location};
use crate::analysis::kernels::extract::py_cmp;
use crate::columns::{FrameColumns, Sym, ThreadIdx, Trace};

/// Display form and rank of one frame name.
#[derive(Clone, Debug)]
pub struct FrameName {
    pub normalized: Arc<str>,
    pub priority: i32,
}

/// Frames of the threads that can be queried (those with CPU ops or launch
/// calls), as row indexes sorted by start, longer (later end) first on
/// equal starts, trace order on full ties.
#[derive(Clone, Debug, Default)]
pub struct FrameIndex {
    by_thread: FxHashMap<ThreadIdx, Vec<u32>>,
    /// Indexed by frame-name symbol; `None` for symbols no frame uses.
    names: Vec<Option<FrameName>>,
}

/// Sorts frame rows (given in trace order) by (ts, later end first),
/// stable. Without NaNs that is one in-place sort with the row index as the
/// last key; with them the original two stable passes (by (ts, end), then
/// by (ts, -end)) are replayed so the result does not change.
fn sort_rows(rows: &mut [u32], f: &FrameColumns) {
    let t = |r: u32| f.ts[r as usize];
    let e = |r: u32| f.ts[r as usize] + f.dur(r as usize);
    if rows.iter().any(|&r| t(r).is_nan() || e(r).is_nan()) {
        rows.sort_by(|&a, &b| py_cmp(t(a), t(b)).then_with(|| py_cmp(e(a), e(b))));
        rows.sort_by(|&a, &b| py_cmp(t(a), t(b)).then_with(|| py_cmp(e(b), e(a))));
    } else {
        // Ends are only computed on equal starts.
        rows.sort_unstable_by(|&a, &b| py_cmp(t(a), t(b)).then_with(|| py_cmp(e(b), e(a))).then(a.cmp(&b)));
    }
}

impl FrameIndex {
    pub fn build(trace: &Trace) -> Self {
        let mut wanted = vec![false; trace.threads.len()];
        for &t in trace.cpu_ops.thread.iter().chain(&trace.launches.thread) {
            if let Some(w) = wanted.get_mut(t as usize) {
                *w = true;
            }
        }
        let f = &trace.frames;
        let mut names: Vec<Option<FrameName>> = vec![None; trace.strings.len()];
        let mut by_thread: FxHashMap<ThreadIdx, Vec<u32>> = FxHashMap::default();
        for i in 0..f.len() {
            let thread = f.thread[i];
            if !wanted.get(thread as usize).copied().unwrap_or(false) {
                continue;
            }
            let sym = f.name[i];
            if let Some(slot) = names.get_mut(sym as usize) {
                if slot.is_none() {
                    let name = trace.s(sym);
                    *slot = Some(FrameName {
                        normalized: Arc::from(normalize_source_location(name)),
                        priority: frame_priority(name),
                    });
                }
            }
            by_thread.entry(thread).or_default().push(i as u32);
        }
        for rows in by_thread.values_mut() {
            rows.shrink_to_fit();
            sort_rows(rows, f);
        }
        FrameIndex { by_thread, names }
    }

    /// Frame rows of one thread in sweep order.
    pub fn thread(&self, thread: ThreadIdx) -> &[u32] {
        self.by_thread.get(&thread).map_or(&[], Vec::as_slice)
    }

    /// Display form and rank of a frame name.
    pub fn name(&self, sym: Sym) -> Option<&FrameName> {
        self.names.get(sym as usize).and_then(Option::as_ref)
    }

    /// Heap bytes held (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.by_thread.values().map(|v| v.capacity() * 4).sum::<usize>()
            + self.names.capacity() * std::mem::size_of::<Option<FrameName>>()
    }
}
