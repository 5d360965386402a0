//! Python frames as site attribution reads them, without copying the
//! trace's frame store: one thread's frames in sweep order, streamed, and
//! per distinct frame name its display form and rank, computed once per
//! name rather than once per frame.

use std::sync::Arc;

use super::locations::{frame_priority, normalize_source_location};
use crate::columns::frames::FrameCursor;
use crate::columns::{Frame, FrameStore, Sym, ThreadIdx, Trace};
use crate::pysem::fcmp;

/// Display form and rank of one frame name.
#[derive(Clone, Debug)]
pub struct FrameName {
    pub normalized: Arc<str>,
    pub priority: i32,
}

/// Display form and rank of every frame name, computed once per name.
#[derive(Clone, Debug, Default)]
pub struct FrameIndex {
    /// Indexed by frame-name symbol; `None` for symbols no frame uses.
    names: Vec<Option<FrameName>>,
}

impl FrameIndex {
    pub fn build(trace: &Trace) -> Self {
        let mut names: Vec<Option<FrameName>> = vec![None; trace.strings.len()];
        for sym in trace.frames.names() {
            if let Some(slot) = names.get_mut(sym as usize) {
                let name = trace.s(sym);
                *slot = Some(FrameName {
                    normalized: Arc::from(normalize_source_location(name)),
                    priority: frame_priority(name),
                });
            }
        }
        FrameIndex { names }
    }

    /// Display form and rank of a frame name.
    pub fn name(&self, sym: Sym) -> Option<&FrameName> {
        self.names.get(sym as usize).and_then(Option::as_ref)
    }

    /// Heap bytes held (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.names.capacity() * std::mem::size_of::<Option<FrameName>>()
    }
}

/// One thread's frames in sweep order: by start, later end first on equal
/// starts, trace order on full ties (times ordered by [`fcmp`], so NaN
/// starts and ends come last). The store yields them by (start, trace
/// order) in batches that never split a run of equal starts, so each such
/// run is re-sorted by end as its batch is read. A thread with a NaN start
/// or end is sorted whole instead, as the store's batches assume numbers.
pub fn sweep_order(frames: &FrameStore, thread: ThreadIdx) -> FrameCursor<'_> {
    if frames.thread_has_nan(thread) {
        let mut rows: Vec<Frame> = frames.thread(thread).collect();
        rows.sort_by_key(|f| f.row);
        rows.sort_by(|a, b| fcmp(a.ts, b.ts).then_with(|| fcmp(b.end(), a.end())));
        FrameCursor::from_vec(rows)
    } else {
        frames.cursor_with(thread, later_end_first)
    }
}

/// Re-sorts each run of equal starts of a batch by later end first
/// (stable: equal ends keep trace order).
fn later_end_first(batch: &mut [Frame]) {
    let mut start = 0;
    while start < batch.len() {
        let ts = batch[start].ts;
        let len = batch[start..].iter().take_while(|f| fcmp(f.ts, ts).is_eq()).count().max(1);
        if len > 1 {
            batch[start..start + len].sort_by(|a, b| fcmp(b.end(), a.end()));
        }
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::FrameRow;

    #[test]
    fn sweep_order_matches_one_sort_across_blocks_and_runs() {
        // Few distinct starts (long runs of ties that cross the 512-frame
        // blocks and the 65,536-frame runs), out-of-order pushes, repeated
        // ends; then the same with a NaN duration and a NaN start, which
        // take the whole-thread sort.
        let mut rng = crate::pysem::test_rng(0x2545f4914f6cdd1d);
        let mut rnd = |m: u64| rng() % m;
        let rows: Vec<FrameRow> = (0..150_000)
            .map(|i| FrameRow {
                name: (i % 11) as u32,
                thread: 0,
                ts: (i / 700) as f64 + [0.0, 0.5, -0.25][rnd(3) as usize],
                dur: [1.0, 2.5, 0.0, 7.0][rnd(4) as usize],
                complete: true,
            })
            .collect();
        for with_nan in [false, true] {
            let mut rows = rows.clone();
            if with_nan {
                rows[77_777].dur = f64::NAN;
                rows[1_234].ts = f64::NAN;
                rows[99_999].ts = f64::NAN;
            }
            let mut store = FrameStore::default();
            for r in &rows {
                store.push(*r);
            }
            store.seal();
            assert_eq!(store.thread_has_nan(0), with_nan);
            let mut cursor = sweep_order(&store, 0);
            let mut got = Vec::new();
            while let Some(f) = cursor.peek() {
                got.push(f.row);
                cursor.advance();
            }
            // One stable sort of the trace-order rows.
            let mut want: Vec<u64> = (0..rows.len() as u64).collect();
            let r = |i: &u64| rows[*i as usize];
            let end = |i: &u64| r(i).ts + r(i).dur;
            want.sort_by(|a, b| fcmp(r(a).ts, r(b).ts).then_with(|| fcmp(end(b), end(a))));
            assert_eq!(got, want, "with NaN: {with_nan}");
        }
    }
}
