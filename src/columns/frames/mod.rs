//! The Python frame store. Frames are most of a trace's events and every
//! reader walks them one thread at a time in start order, so they are kept
//! per thread, sorted by (start, trace order), in varint-packed runs: the
//! row delta, the name, the start as a delta of whole nanoseconds and the
//! duration in nanoseconds — 6.9 bytes a frame on the 1 GB synthetic trace,
//! where plain columns took 20 plus 4 for a per-thread sort index. A time
//! that does not decode back to exactly the parsed value is kept verbatim
//! in a side table. `run` packs and decodes, `cursor` reads.
//!
//! Frames arrive in trace order. Each thread's pending rows are sorted and
//! packed into a run every `FLUSH_ROWS` rows, all but the `HOLD_ROWS` that
//! start last, which wait for the next run (a frame written late, as a
//! step's own frame is, still lands among the frames it encloses); runs
//! from another builder keep their symbol translation table instead of
//! being re-packed. At [`FrameStore::seal`] each group of a thread's runs
//! that overlap in time is merged into fresh runs, so a sealed thread reads
//! as one sorted sequence.

mod cursor;
mod run;

use std::cmp::Ordering;
use std::sync::Arc;

pub use cursor::{FrameCursor, ThreadIter};
use run::{merge_runs_between, pack_front, pack_in_runs, slice_starts, Run};
pub use run::{BlockMark, BLOCK};

use super::{Sym, ThreadIdx};
use crate::pysem::fcmp;

/// A frame as pushed by the builder: `ph: "X"`, `cat == "python_function"`.
/// (The frames' `Python id` / `Python parent id` are not kept: no analysis
/// reads them.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameRow {
    pub name: Sym,
    pub thread: ThreadIdx,
    pub ts: f64,
    pub dur: f64,
    /// ts and dur present and dur > 0.
    pub complete: bool,
}

/// A frame as read back from the store.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub name: Sym,
    pub ts: f64,
    pub dur: f64,
    pub complete: bool,
    /// Position among all frames of the trace, in trace order.
    pub row: u64,
}

impl Frame {
    #[inline]
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// Pending rows of one thread packed into a run, all but [`HOLD_ROWS`],
/// once there are this many (512 KiB of rows).
const FLUSH_ROWS: usize = 1 << 14;
/// All threads' pending rows are packed once there are this many in total
/// (8 MiB of rows).
const FLUSH_TOTAL: usize = 1 << 18;
/// Rows with the latest starts that a busy thread's flush leaves pending,
/// so that a frame written up to this many rows after frames that start
/// later than it (an enclosing step's frame, written when the step ends)
/// still lands in the run that holds them, and the thread's runs follow
/// one another in time instead of having to be merged.
const HOLD_ROWS: usize = FLUSH_ROWS / 4;
/// Threads that may keep their emptied row buffer after a flush, so that
/// the buffers a store keeps stay within [`FLUSH_TOTAL`] rows however many
/// threads a trace has.
const KEPT_BUFFERS: usize = FLUSH_TOTAL / FLUSH_ROWS;
/// Frames per run in [`FrameStore::packed_bytes`].
const STATS_RUN_ROWS: usize = 1 << 16;

/// Frames of one thread: packed runs plus rows not packed yet.
#[derive(Clone, Debug, Default)]
struct ThreadFrames {
    runs: Vec<Run>,
    pending: Vec<Frame>,
    /// Some frame's start or end is NaN (readers that need Python's sort
    /// order then fall back to it).
    has_nan: bool,
    /// Sealed: the runs read as one sequence sorted by (start, row).
    sealed: bool,
    /// Counted among the store's [`KEPT_BUFFERS`].
    kept_buffer: bool,
}

impl ThreadFrames {
    /// Packs every pending row.
    fn flush(&mut self) {
        self.flush_keeping(0, &mut Vec::new());
    }

    /// Packs the pending rows but the `hold` that start last, which stay
    /// pending (in start order, ahead of the rows still to come).
    fn flush_keeping(&mut self, hold: usize, scratch: &mut Vec<Frame>) {
        if self.pending.len() <= hold {
            return;
        }
        // Pending rows are in trace order, or held rows (each sorted after
        // every row packed beside it) and then rows in trace order: a
        // stable sort by start leaves equal starts in (start, row) order.
        // Packing empties the buffer but keeps its capacity for the
        // thread's next rows: a fresh buffer would be mapped and faulted in
        // again at every flush.
        sort_by_start(&mut self.pending, scratch);
        let packed = self.pending.len() - hold;
        self.runs.push(pack_front(&mut self.pending, packed));
        self.sealed = false;
    }

    /// Packs what is pending and merges each group of runs that overlap
    /// in time into fresh runs of at most [`FLUSH_ROWS`] frames each.
    /// Runs are in the order they were packed and appended: a run's rows
    /// that start at the same time as rows of a later run come first in
    /// the trace too.
    fn seal(&mut self) {
        self.flush();
        self.pending = Vec::new();
        self.kept_buffer = false;
        let groups = overlapping_groups(&self.runs);
        if groups.len() < self.runs.len() {
            let mut runs = std::mem::take(&mut self.runs).into_iter();
            let pieces = rayon::current_num_threads() * 2;
            for group in groups {
                let many: Vec<Run> = runs.by_ref().take(group.len()).collect();
                match many.len() {
                    1 => self.runs.extend(many),
                    _ => self.runs.extend(merge_in_slices(&many, pieces)),
                }
            }
        }
        self.runs.shrink_to_fit();
        self.sealed = true;
    }

    fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum::<usize>() + self.pending.len()
    }
}

/// Sorts `rows` by start as a stable sort would. A busy thread's rows are
/// nearly in order (a profiler writes a thread's frames mostly by start; an
/// enclosing frame written when it ends is the exception): the rows that
/// come before the last row kept in order are moved aside through
/// `scratch`, which the caller keeps, sorted and merged back, instead of
/// sorting everything through a buffer mapped and faulted in at each flush.
/// Rows too far out of order for that are sorted.
fn sort_by_start(rows: &mut [Frame], scratch: &mut Vec<Frame>) {
    let in_order = |a: &Frame, b: &Frame| fcmp(a.ts, b.ts) != Ordering::Greater;
    if rows.windows(2).all(|w| in_order(&w[0], &w[1])) {
        return;
    }
    // Rows in order stay, moved up over the rows set aside; each row set
    // aside starts before a row kept before it, so a kept row that starts
    // at the same time came first in the trace.
    let most_aside = rows.len() / 8;
    scratch.clear();
    let mut kept = 0;
    for i in 0..rows.len() {
        if kept > 0 && !in_order(&rows[kept - 1], &rows[i]) {
            if scratch.len() == most_aside {
                // The rows set aside go back after the kept ones: among
                // rows that start at the same time that is still trace
                // order, so the sort's result is the same.
                rows[kept..i].copy_from_slice(scratch);
                rows.sort_by(|a, b| fcmp(a.ts, b.ts));
                return;
            }
            scratch.push(rows[i]);
        } else {
            rows[kept] = rows[i];
            kept += 1;
        }
    }
    scratch.sort_by(|a, b| fcmp(a.ts, b.ts));
    // Merge from the back: on equal starts the kept row goes first.
    let (mut a, mut b) = (kept, scratch.len());
    for k in (0..rows.len()).rev() {
        if b == 0 {
            break;
        }
        if a > 0 && !in_order(&rows[a - 1], &scratch[b - 1]) {
            rows[k] = rows[a - 1];
            a -= 1;
        } else {
            rows[k] = scratch[b - 1];
            b -= 1;
        }
    }
}

/// The runs, in order, cut into groups that follow one another in time:
/// a run starts a new group when it starts at or after the end of every
/// run before it (in [`fcmp`]'s order).
fn overlapping_groups(runs: &[Run]) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut latest: Option<f64> = None;
    for (i, run) in runs.iter().enumerate() {
        match (groups.last_mut(), latest) {
            (Some(g), Some(t)) if fcmp(t, run.first_ts()) == Ordering::Greater => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
        let last = run.last_ts();
        if latest.is_none_or(|t| fcmp(last, t) == Ordering::Greater) {
            latest = Some(last);
        }
    }
    groups
}

/// Merges sorted runs into fresh runs of at most [`FLUSH_ROWS`] frames, in
/// (start, row) order: cut into up to `pieces` slices of start times that
/// are merged side by side and then follow one another.
fn merge_in_slices(runs: &[Run], pieces: usize) -> Vec<Run> {
    use rayon::prelude::*;
    let cuts = slice_starts(runs, pieces);
    let bounds: Vec<(Option<f64>, Option<f64>)> =
        (0..=cuts.len()).map(|k| (k.checked_sub(1).map(|j| cuts[j]), cuts.get(k).copied())).collect();
    let parts: Vec<Vec<Run>> = bounds
        .into_par_iter()
        .map(|(from, to)| {
            let mut merged = Vec::new();
            pack_in_runs(merge_runs_between(runs, from, to), FLUSH_ROWS, |run| merged.push(run));
            merged
        })
        .collect();
    parts.into_iter().flatten().collect()
}

fn set_bits(words: &[u64]) -> impl Iterator<Item = Sym> + '_ {
    words
        .iter()
        .enumerate()
        .flat_map(|(w, &bits)| (0..64).filter(move |b| bits >> b & 1 == 1).map(move |b| (w * 64 + b) as Sym))
}

/// Python frames of a trace, per thread.
#[derive(Clone, Debug, Default)]
pub struct FrameStore {
    threads: Vec<ThreadFrames>,
    len: usize,
    pending: usize,
    /// Threads keeping an emptied row buffer (at most [`KEPT_BUFFERS`]).
    kept: usize,
    /// Bit per symbol: some frame has that name.
    names: Vec<u64>,
    /// The busy threads' flushes merge through this buffer.
    scratch: Vec<Frame>,
}

impl FrameStore {
    pub fn push(&mut self, row: FrameRow) {
        let t = row.thread as usize;
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, ThreadFrames::default);
        }
        self.mark_name(row.name);
        let frame = Frame { name: row.name, ts: row.ts, dur: row.dur, complete: row.complete, row: self.len as u64 };
        let th = &mut self.threads[t];
        th.has_nan |= frame.ts.is_nan() || frame.end().is_nan();
        th.pending.push(frame);
        th.sealed = false;
        self.len += 1;
        self.pending += 1;
        if th.pending.len() >= FLUSH_ROWS {
            // A busy thread keeps its buffer, and the rows it holds back,
            // for its next rows (a fresh buffer would be faulted in again
            // at every flush), as long as few threads do.
            if !th.kept_buffer && self.kept < KEPT_BUFFERS {
                th.kept_buffer = true;
                self.kept += 1;
            }
            let before = th.pending.len();
            if th.kept_buffer {
                th.flush_keeping(HOLD_ROWS, &mut self.scratch);
            } else {
                th.flush();
                th.pending = Vec::new();
            }
            self.pending -= before - th.pending.len();
        } else if self.pending >= FLUSH_TOTAL {
            self.flush_all();
        }
    }

    fn mark_name(&mut self, name: Sym) {
        let w = name as usize / 64;
        if self.names.len() <= w {
            self.names.resize(w + 1, 0);
        }
        self.names[w] |= 1 << (name % 64);
    }

    pub(crate) fn flush_all(&mut self) {
        // Many threads each with a few rows: their buffers are let go, so
        // what the store holds unpacked stays bounded by the busy threads.
        for th in &mut self.threads {
            th.flush();
            if !th.kept_buffer {
                th.pending = Vec::new();
            }
        }
        self.pending = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes held (capacity, not length; a shared symbol table is
    /// counted once per run that uses it).
    pub fn heap_bytes(&self) -> usize {
        self.threads
            .iter()
            .map(|t| {
                t.runs.iter().map(Run::heap_bytes).sum::<usize>()
                    + t.runs.capacity() * std::mem::size_of::<Run>()
                    + t.pending.capacity() * std::mem::size_of::<Frame>()
            })
            .sum::<usize>()
            + self.threads.capacity() * std::mem::size_of::<ThreadFrames>()
            + self.names.capacity() * 8
            + self.scratch.capacity() * std::mem::size_of::<Frame>()
    }

    /// Bytes the frames take packed in runs of `STATS_RUN_ROWS` frames per
    /// thread, in (start, row) order: what [`FrameStore::heap_bytes`] is
    /// give or take the run boundaries, which depend on how the input was
    /// split between threads. The same for every split, so `stats` shows
    /// the same number on every machine. Packs one run at a time.
    pub fn packed_bytes(&self) -> usize {
        let mut total = self.threads.len() * std::mem::size_of::<ThreadFrames>() + self.names.len() * 8;
        for t in self.threads() {
            pack_in_runs(self.thread(t), STATS_RUN_ROWS, |run| total += run.heap_bytes() + std::mem::size_of::<Run>());
        }
        total
    }

    /// Packs everything pending and merges overlapping runs, threads in
    /// parallel. Readers need a sealed store ([`FrameStore::thread`] seals
    /// nothing and reads pending rows last otherwise).
    pub fn seal(&mut self) {
        use rayon::prelude::*;
        self.threads.par_iter_mut().for_each(ThreadFrames::seal);
        self.threads.shrink_to_fit();
        self.pending = 0;
        self.kept = 0;
        self.scratch = Vec::new();
    }

    /// Appends `other` (all its rows after ours), translating its symbols
    /// and thread indexes. Its runs are moved, not re-packed: each keeps a
    /// table translating its names.
    pub fn append_mapped(&mut self, other: FrameStore, sym: &[Sym], thread: &[ThreadIdx]) {
        self.flush_all();
        let base = self.len as u64;
        let own: Arc<[Sym]> = Arc::from(sym);
        // Runs already translated once share their composed table.
        let mut composed: Vec<(*const Sym, Arc<[Sym]>)> = Vec::new();
        let FrameStore { threads, len, names, .. } = other;
        for s in set_bits(&names) {
            self.mark_name(sym.get(s as usize).copied().unwrap_or(s));
        }
        for (t, mut th) in threads.into_iter().enumerate() {
            th.flush();
            if th.runs.is_empty() {
                continue;
            }
            let Some(&to) = thread.get(t) else { continue };
            let to = to as usize;
            if self.threads.len() <= to {
                self.threads.resize_with(to + 1, ThreadFrames::default);
            }
            let dest = &mut self.threads[to];
            dest.has_nan |= th.has_nan;
            dest.sealed = false;
            for mut run in th.runs {
                run.row_base += base;
                run.remap = Some(match run.remap.take() {
                    None => own.clone(),
                    Some(m) => {
                        let key = m.as_ptr();
                        match composed.iter().find(|c| c.0 == key) {
                            Some(c) => c.1.clone(),
                            None => {
                                let c: Arc<[Sym]> =
                                    m.iter().map(|&s| sym.get(s as usize).copied().unwrap_or(s)).collect();
                                composed.push((key, c.clone()));
                                c
                            }
                        }
                    }
                });
                dest.runs.push(run);
            }
        }
        self.len += len;
    }

    /// The distinct frame names, ascending.
    pub fn names(&self) -> impl Iterator<Item = Sym> + '_ {
        set_bits(&self.names)
    }

    /// Threads holding frames, ascending.
    pub fn threads(&self) -> impl Iterator<Item = ThreadIdx> + '_ {
        self.threads.iter().enumerate().filter(|(_, t)| t.len() > 0).map(|(i, _)| i as ThreadIdx)
    }

    /// Number of frames of one thread.
    pub fn thread_len(&self, thread: ThreadIdx) -> usize {
        self.threads.get(thread as usize).map_or(0, ThreadFrames::len)
    }

    /// True when a frame of the thread starts or ends at NaN.
    pub fn thread_has_nan(&self, thread: ThreadIdx) -> bool {
        self.threads.get(thread as usize).is_some_and(|t| t.has_nan)
    }

    /// The frames of one thread sorted by (start, row), starts compared as
    /// Python does for non-NaN values and NaNs ordered by bit pattern.
    /// Requires a sealed store.
    pub fn thread(&self, thread: ThreadIdx) -> ThreadIter<'_> {
        match self.threads.get(thread as usize) {
            Some(t) => {
                debug_assert!(t.sealed || t.runs.len() + t.pending.len() == 0, "read before seal");
                ThreadIter::new(&t.runs, &t.pending)
            }
            None => ThreadIter::empty(),
        }
    }

    /// A batched reader of one thread's frames (see [`FrameCursor`]).
    pub fn cursor(&self, thread: ThreadIdx) -> FrameCursor<'_> {
        FrameCursor::new(self.thread(thread), None, !self.thread_has_nan(thread))
    }

    /// [`FrameStore::cursor`] with a hook that may reorder each refilled
    /// batch within its runs of equal starts.
    pub fn cursor_with(&self, thread: ThreadIdx, on_refill: fn(&mut [Frame])) -> FrameCursor<'_> {
        FrameCursor::new(self.thread(thread), Some(on_refill), !self.thread_has_nan(thread))
    }

    /// Every frame with its thread, thread by thread.
    pub fn iter(&self) -> impl Iterator<Item = (ThreadIdx, Frame)> + '_ {
        self.threads().flat_map(move |t| self.thread(t).map(move |f| (t, f)))
    }

    /// The frames that pass `keep`, with their threads, in no given order:
    /// each packed run is decoded on its own, runs in parallel, so this is
    /// the cheap way to pick a few frames out of millions.
    pub fn par_filter(&self, keep: impl Fn(&Frame) -> bool + Sync) -> Vec<(ThreadIdx, Frame)> {
        use rayon::prelude::*;
        let runs: Vec<(ThreadIdx, &Run)> = self
            .threads
            .iter()
            .enumerate()
            .flat_map(|(t, frames)| frames.runs.iter().map(move |r| (t as ThreadIdx, r)))
            .collect();
        let mut out: Vec<(ThreadIdx, Frame)> =
            runs.par_iter().flat_map_iter(|&(t, run)| run.iter().filter(|f| keep(f)).map(move |f| (t, f))).collect();
        for (t, frames) in self.threads.iter().enumerate() {
            out.extend(frames.pending.iter().filter(|f| keep(f)).map(|f| (t as ThreadIdx, *f)));
        }
        out
    }

    /// All frames in trace order (materialized: for tests and checks).
    pub fn in_trace_order(&self) -> Vec<FrameRow> {
        let mut all: Vec<(u64, FrameRow)> = self
            .iter()
            .map(|(thread, f)| (f.row, FrameRow { name: f.name, thread, ts: f.ts, dur: f.dur, complete: f.complete }))
            .collect();
        all.sort_by_key(|p| p.0);
        all.into_iter().map(|p| p.1).collect()
    }
}

#[cfg(test)]
mod tests;
