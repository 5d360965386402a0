//! The Python frame store. Frames are most of a trace's events and every
//! reader walks them one thread at a time in start order, so they are kept
//! per thread, sorted by (start, trace order), in varint-packed runs: the
//! row delta, the name, the start as a delta of whole nanoseconds and the
//! duration in nanoseconds — about 8 bytes a frame instead of 20 for plain
//! columns plus 4 for a per-thread sort index. A time that does not decode
//! back to exactly the parsed value is kept verbatim in a side table.
//!
//! Frames arrive in trace order. Each thread's pending rows are sorted and
//! packed into a run every [`FLUSH_ROWS`] rows; runs from another builder
//! keep their symbol translation table instead of being re-packed. At
//! [`FrameStore::seal`] a thread whose runs overlap in time is merged into
//! fresh runs, so a sealed thread reads as one sorted sequence.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::{Sym, ThreadIdx};

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

/// Python's `<` for non-NaN floats (`-0.0 == 0.0`), total over NaNs: the
/// start order of the store.
#[inline]
fn fcmp(a: f64, b: f64) -> Ordering {
    if a == b {
        Ordering::Equal
    } else {
        a.total_cmp(&b)
    }
}

/// Pending rows of one thread packed into a run once there are this many.
const FLUSH_ROWS: usize = 1 << 16;
/// All threads' pending rows are packed once there are this many in total.
const FLUSH_TOTAL: usize = 1 << 20;
/// Largest exact time code: beyond 2^53 an integer no longer converts to
/// f64 exactly.
const CODE_LIMIT: f64 = 9_007_199_254_740_992.0;

/// Whole nanoseconds of `t` (microseconds) when decoding them gives back
/// exactly `t`: true of every time written with at most three decimals
/// below 2^53 ns, which is how Kineto writes them.
#[inline]
fn encode_time(t: f64) -> Option<i64> {
    let scaled = t * 1000.0;
    if !(scaled.abs() < CODE_LIMIT) {
        return None;
    }
    let n = scaled.round() as i64;
    (decode_time(n).to_bits() == t.to_bits()).then_some(n)
}

#[inline]
fn decode_time(n: i64) -> f64 {
    n as f64 / 1000.0
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

#[inline]
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one varint at `*pos`: one- and two-byte values (most of them)
/// without a loop. Runs are written by [`put`] only, so a varint never runs
/// past the end; a cut one would read as its prefix.
#[inline(always)]
fn get(bytes: &[u8], pos: &mut usize) -> u64 {
    let p = *pos;
    if let Some(&b0) = bytes.get(p) {
        if b0 < 0x80 {
            *pos = p + 1;
            return u64::from(b0);
        }
        if let Some(&b1) = bytes.get(p + 1) {
            if b1 < 0x80 {
                *pos = p + 2;
                return u64::from(b0 & 0x7f) | u64::from(b1) << 7;
            }
        }
    }
    get_long(bytes, pos)
}

#[cold]
fn get_long(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 || shift >= 63 {
            break;
        }
        shift += 7;
    }
    v
}

/// Frames of one thread sorted by (start, row), packed. Per frame:
/// zigzag row delta, `name << 2 | complete << 1 | verbatim`, then unless
/// verbatim the zigzag start delta and the duration, both in whole ns.
#[derive(Clone, Debug, Default)]
struct Run {
    bytes: Vec<u8>,
    /// (ts, dur) of the verbatim frames, in run order.
    verbatim: Vec<(f64, f64)>,
    len: usize,
    /// Rows are stored as deltas from this.
    row_base: u64,
    /// Translation of the names to the owning store's symbols, for runs
    /// packed by another builder.
    remap: Option<Arc<[Sym]>>,
    first_ts: f64,
    last_ts: f64,
    /// One mark per [`BLOCK`] frames: where decoding resumes and what the
    /// block spans, so readers can pass over blocks without decoding them.
    blocks: Vec<BlockMark>,
}

/// Frames per block of a run.
pub const BLOCK: usize = 512;

/// The decoder state at the start of a block, and the block's span.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockMark {
    pos: u32,
    verbatim: u32,
    row: u64,
    code: i64,
    /// Start of the first and of the last frame.
    pub first_ts: f64,
    pub last_ts: f64,
    /// Largest `ts + dur` (NaNs ignored).
    pub max_end: f64,
    /// Smallest duration (NaNs ignored).
    pub min_dur: f64,
}

impl Run {
    /// Packs frames already sorted by (start, row).
    fn pack(frames: impl ExactSizeIterator<Item = Frame>, row_base: u64) -> Run {
        let mut run = Run { len: frames.len(), row_base, ..Default::default() };
        run.bytes.reserve(run.len * 8);
        let (mut prev_row, mut prev_code) = (row_base, 0i64);
        for (i, f) in frames.enumerate() {
            if i == 0 {
                run.first_ts = f.ts;
            }
            if i % BLOCK == 0 {
                run.blocks.push(BlockMark {
                    pos: run.bytes.len() as u32,
                    verbatim: run.verbatim.len() as u32,
                    row: prev_row,
                    code: prev_code,
                    first_ts: f.ts,
                    last_ts: f.ts,
                    max_end: f64::NEG_INFINITY,
                    min_dur: f64::INFINITY,
                });
            }
            if let Some(b) = run.blocks.last_mut() {
                b.last_ts = f.ts;
                b.max_end = b.max_end.max(f.end());
                b.min_dur = b.min_dur.min(f.dur);
            }
            run.last_ts = f.ts;
            put(&mut run.bytes, zigzag(f.row.wrapping_sub(prev_row) as i64));
            prev_row = f.row;
            let head = u64::from(f.name) << 2 | u64::from(f.complete) << 1;
            match (encode_time(f.ts), encode_time(f.dur)) {
                (Some(ts), Some(dur)) if dur >= 0 => {
                    put(&mut run.bytes, head);
                    put(&mut run.bytes, zigzag(ts.wrapping_sub(prev_code)));
                    put(&mut run.bytes, dur as u64);
                    prev_code = ts;
                }
                _ => {
                    put(&mut run.bytes, head | 1);
                    run.verbatim.push((f.ts, f.dur));
                }
            }
        }
        run.bytes.shrink_to_fit();
        run.verbatim.shrink_to_fit();
        run.blocks.shrink_to_fit();
        run
    }

    fn iter(&self) -> RunIter<'_> {
        RunIter { run: self, pos: 0, verbatim: 0, left: self.len, row: self.row_base, code: 0 }
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.verbatim.capacity() * 16 + self.blocks.capacity() * std::mem::size_of::<BlockMark>()
    }
}

/// Sequential decoder of one run.
struct RunIter<'a> {
    run: &'a Run,
    pos: usize,
    verbatim: usize,
    left: usize,
    row: u64,
    code: i64,
}

impl RunIter<'_> {
    /// Decodes the next frame; `self.left` must be positive.
    #[inline(always)]
    fn decode(&mut self) -> Frame {
        self.left -= 1;
        let b = &self.run.bytes;
        self.row = self.row.wrapping_add(unzigzag(get(b, &mut self.pos)) as u64);
        let head = get(b, &mut self.pos);
        let raw_name = (head >> 2) as u32;
        let name = match &self.run.remap {
            Some(m) => m.get(raw_name as usize).copied().unwrap_or(raw_name),
            None => raw_name,
        };
        let (ts, dur) = if head & 1 == 1 {
            let v = self.run.verbatim.get(self.verbatim).copied().unwrap_or((f64::NAN, f64::NAN));
            self.verbatim += 1;
            v
        } else {
            self.code = self.code.wrapping_add(unzigzag(get(b, &mut self.pos)));
            (decode_time(self.code), decode_time(get(b, &mut self.pos) as i64))
        };
        Frame { name, ts, dur, complete: head & 2 == 2, row: self.row }
    }

    /// Frames decoded so far.
    fn consumed(&self) -> usize {
        self.run.len - self.left
    }

    /// The mark of the next block when the decoder stands at its start.
    fn block_ahead(&self) -> Option<&BlockMark> {
        let done = self.consumed();
        (self.left > 0 && done % BLOCK == 0).then(|| self.run.blocks.get(done / BLOCK)).flatten()
    }

    /// Passes over the block ahead without decoding it (the decoder must
    /// stand at its start).
    fn skip_block(&mut self) {
        let next = self.consumed() / BLOCK + 1;
        match self.run.blocks.get(next) {
            Some(m) => {
                self.pos = m.pos as usize;
                self.verbatim = m.verbatim as usize;
                self.row = m.row;
                self.code = m.code;
                self.left = self.run.len - next * BLOCK;
            }
            None => self.left = 0,
        }
    }

    /// Decodes to the end of the current block.
    fn fill_block(&mut self, buf: &mut Vec<Frame>) {
        let end = (self.consumed() / BLOCK + 1) * BLOCK;
        while self.left > 0 && self.consumed() < end {
            let f = self.decode();
            buf.push(f);
        }
    }

}

impl Iterator for RunIter<'_> {
    type Item = Frame;

    #[inline]
    fn next(&mut self) -> Option<Frame> {
        (self.left > 0).then(|| self.decode())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

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
}

impl ThreadFrames {
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        // Pending rows are in trace order: a stable sort by start leaves
        // equal starts in row order.
        pending.sort_by(|a, b| fcmp(a.ts, b.ts));
        let base = pending.iter().map(|f| f.row).min().unwrap_or(0);
        self.runs.push(Run::pack(pending.into_iter(), base));
        self.sealed = false;
    }

    /// Packs what is pending and, if runs overlap in time, merges them into
    /// fresh runs of at most [`FLUSH_ROWS`] frames each.
    fn seal(&mut self) {
        self.flush();
        self.runs.sort_by_key(|r| r.row_base);
        let ordered = self.runs.windows(2).all(|w| fcmp(w[0].last_ts, w[1].first_ts) != Ordering::Greater);
        if !ordered {
            let runs = std::mem::take(&mut self.runs);
            let mut merged = Vec::new();
            let mut block: Vec<Frame> = Vec::with_capacity(FLUSH_ROWS);
            for f in merge_runs(&runs) {
                block.push(f);
                if block.len() == FLUSH_ROWS {
                    merged.push(pack_block(&mut block));
                }
            }
            if !block.is_empty() {
                merged.push(pack_block(&mut block));
            }
            self.runs = merged;
        }
        self.runs.shrink_to_fit();
        self.sealed = true;
    }

    fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum::<usize>() + self.pending.len()
    }
}

fn pack_block(block: &mut Vec<Frame>) -> Run {
    let base = block.iter().map(|f| f.row).min().unwrap_or(0);
    let run = Run::pack(block.drain(..), base);
    run
}

/// The frames of several sorted runs in (start, row) order.
fn merge_runs(runs: &[Run]) -> impl Iterator<Item = Frame> + '_ {
    struct Head(Frame, usize);
    impl PartialEq for Head {
        fn eq(&self, o: &Self) -> bool {
            self.cmp(o) == Ordering::Equal
        }
    }
    impl Eq for Head {}
    impl PartialOrd for Head {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Head {
        // Reversed: BinaryHeap pops the greatest.
        fn cmp(&self, o: &Self) -> Ordering {
            fcmp(o.0.ts, self.0.ts).then(o.0.row.cmp(&self.0.row))
        }
    }
    let mut iters: Vec<RunIter<'_>> = runs.iter().map(Run::iter).collect();
    let mut heap: BinaryHeap<Head> =
        iters.iter_mut().enumerate().filter_map(|(i, it)| it.next().map(|f| Head(f, i))).collect();
    std::iter::from_fn(move || {
        let Head(f, i) = heap.pop()?;
        if let Some(next) = iters[i].next() {
            heap.push(Head(next, i));
        }
        Some(f)
    })
}

fn set_bits(words: &[u64]) -> impl Iterator<Item = Sym> + '_ {
    words.iter().enumerate().flat_map(|(w, &bits)| {
        (0..64).filter(move |b| bits >> b & 1 == 1).map(move |b| (w * 64 + b) as Sym)
    })
}

/// The frames of one thread in store order (see [`FrameStore::thread`]).
pub struct ThreadIter<'a> {
    runs: &'a [Run],
    current: Option<RunIter<'a>>,
    pending: std::slice::Iter<'a, Frame>,
}

impl<'a> ThreadIter<'a> {
    fn empty() -> Self {
        ThreadIter { runs: &[], current: None, pending: [].iter() }
    }

    /// The run being read, moving to the next one when it is exhausted;
    /// `None` once only pending rows (or nothing) are left.
    fn current_run(&mut self) -> Option<&mut RunIter<'a>> {
        while self.current.as_ref().map_or(true, |c| c.left == 0) {
            let (run, rest) = self.runs.split_first()?;
            self.runs = rest;
            self.current = Some(run.iter());
        }
        self.current.as_mut()
    }

    /// Appends the rest of the current block (or the pending rows) to
    /// `buf`; false when the thread is exhausted.
    /// Returns whether anything was added, and the mark of the block
    /// when a whole one was decoded from its start.
    fn fill_block(&mut self, buf: &mut Vec<Frame>) -> (bool, Option<BlockMark>) {
        match self.current_run() {
            Some(cur) => {
                let mark = cur.block_ahead().copied();
                cur.fill_block(buf);
                (true, mark)
            }
            None => {
                let before = buf.len();
                buf.extend(self.pending.by_ref().copied());
                (buf.len() > before, None)
            }
        }
    }

    /// The start of the next frame when it begins a block (known without
    /// decoding it), `None` when it does not or the thread is exhausted.
    fn next_block_start(&mut self) -> Option<f64> {
        self.current_run().and_then(|c| c.block_ahead()).map(|b| b.first_ts)
    }

    /// Passes over whole blocks ahead while `skip` says so; stops at the
    /// first block it keeps or when not at a block start.
    fn skip_blocks(&mut self, skip: &dyn Fn(&BlockMark) -> bool) {
        while let Some(cur) = self.current_run() {
            match cur.block_ahead() {
                Some(b) if skip(b) => cur.skip_block(),
                _ => return,
            }
        }
    }
}

impl Iterator for ThreadIter<'_> {
    type Item = Frame;

    #[inline]
    fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = self.current.as_mut().and_then(Iterator::next) {
                return Some(f);
            }
            match self.runs.split_first() {
                Some((run, rest)) => {
                    self.runs = rest;
                    self.current = Some(run.iter());
                }
                None => return self.pending.next().copied(),
            }
        }
    }
}

/// Batched reader of one thread's frames in store order: `peek` /
/// `advance` over a buffer refilled [`CURSOR_BATCH`] frames at a time, so
/// the frames are read in place instead of being handed through layers of
/// iterator adapters. A refill never splits a run of equal starts, and
/// `on_refill` (if given) may reorder each refilled batch within such runs.
/// Sparse readers pass over whole blocks with [`FrameCursor::peek_skipping`].
pub struct FrameCursor<'a> {
    iter: ThreadIter<'a>,
    carry: Option<Frame>,
    buf: Vec<Frame>,
    pos: usize,
    on_refill: Option<fn(&mut [Frame])>,
    /// Blocks may be skipped (not for a thread with NaN times, whose block
    /// spans ignore the NaNs).
    skippable: bool,
    /// The mark of the buffered block when the buffer holds exactly one.
    buf_mark: Option<BlockMark>,
}

impl<'a> FrameCursor<'a> {
    fn new(iter: ThreadIter<'a>, on_refill: Option<fn(&mut [Frame])>, skippable: bool) -> Self {
        FrameCursor { iter, carry: None, buf: Vec::with_capacity(BLOCK + 16), pos: 0, on_refill, skippable, buf_mark: None }
    }

    /// A cursor over frames already in memory, in the given order.
    pub fn from_vec(frames: Vec<Frame>) -> Self {
        FrameCursor {
            iter: ThreadIter::empty(),
            carry: None,
            buf: frames,
            pos: 0,
            on_refill: None,
            skippable: false,
            buf_mark: None,
        }
    }

    #[inline]
    pub fn peek(&mut self) -> Option<&Frame> {
        if self.pos == self.buf.len() {
            self.refill();
        }
        self.buf.get(self.pos)
    }

    #[inline]
    pub fn advance(&mut self) {
        self.pos += 1;
    }

    #[cold]
    fn refill(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.buf_mark = None;
        let carried = self.carry.is_some();
        self.buf.extend(self.carry.take());
        // Decode to a block end (so the next refill may skip blocks), and
        // past it only while the next frame starts where the last did.
        let (filled, mark) = self.iter.fill_block(&mut self.buf);
        if !filled {
            return;
        }
        let Some(last) = self.buf.last().map(|f| f.ts) else { return };
        let same = |t: f64| fcmp(t, last) == Ordering::Equal;
        if self.iter.next_block_start().map_or(true, same) {
            for f in self.iter.by_ref() {
                if !same(f.ts) {
                    self.carry = Some(f);
                    break;
                }
                self.buf.push(f);
            }
        } else if !carried {
            // The buffer is exactly one block.
            self.buf_mark = mark;
        }
        if let Some(hook) = self.on_refill {
            hook(&mut self.buf);
        }
    }

    /// [`FrameCursor::peek`] for a sparse reader: before decoding a block
    /// it passes over every whole block for which `skip` holds — a test
    /// that all of the block's frames would be read and dropped. An unread
    /// buffered block (the reader peeked one frame past its probe) counts
    /// as ahead.
    #[inline]
    pub fn peek_skipping(&mut self, skip: impl Fn(&BlockMark) -> bool) -> Option<&Frame> {
        if self.skippable && self.carry.is_none() {
            if self.pos == 0 && !self.buf.is_empty() && self.buf_mark.as_ref().is_some_and(&skip) {
                self.pos = self.buf.len();
            }
            if self.pos == self.buf.len() {
                self.iter.skip_blocks(&skip);
            }
        }
        self.peek()
    }
}

/// Python frames of a trace, per thread.
#[derive(Clone, Debug, Default)]
pub struct FrameStore {
    threads: Vec<ThreadFrames>,
    len: usize,
    pending: usize,
    /// Bit per symbol: some frame has that name.
    names: Vec<u64>,
}

impl FrameStore {
    pub fn push(&mut self, row: FrameRow) {
        let t = row.thread as usize;
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, ThreadFrames::default);
        }
        let w = row.name as usize / 64;
        if self.names.len() <= w {
            self.names.resize(w + 1, 0);
        }
        self.names[w] |= 1 << (row.name % 64);
        let frame = Frame { name: row.name, ts: row.ts, dur: row.dur, complete: row.complete, row: self.len as u64 };
        let th = &mut self.threads[t];
        th.has_nan |= frame.ts.is_nan() || frame.end().is_nan();
        th.pending.push(frame);
        th.sealed = false;
        self.len += 1;
        self.pending += 1;
        if th.pending.len() >= FLUSH_ROWS {
            self.pending -= th.pending.len();
            th.flush();
        } else if self.pending >= FLUSH_TOTAL {
            self.flush_all();
        }
    }

    fn flush_all(&mut self) {
        for th in &mut self.threads {
            th.flush();
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
    }

    /// Packs everything pending and merges overlapping runs, threads in
    /// parallel. Readers need a sealed store ([`FrameStore::thread`] seals
    /// nothing and reads pending rows last otherwise).
    pub fn seal(&mut self) {
        use rayon::prelude::*;
        self.threads.par_iter_mut().for_each(ThreadFrames::seal);
        self.threads.shrink_to_fit();
        self.pending = 0;
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
            let to = sym.get(s as usize).copied().unwrap_or(s) as usize;
            if self.names.len() <= to / 64 {
                self.names.resize(to / 64 + 1, 0);
            }
            self.names[to / 64] |= 1 << (to % 64);
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
                                let c: Arc<[Sym]> = m.iter().map(|&s| sym.get(s as usize).copied().unwrap_or(s)).collect();
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
                ThreadIter { runs: &t.runs, current: None, pending: t.pending.iter() }
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
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_exactly_or_go_verbatim() {
        for text in ["0", "1", "0.001", "12.345", "999.999", "1718000000000.123", "-5.5", "1e-3", "0.5"] {
            let t: f64 = text.parse().unwrap();
            let n = encode_time(t).unwrap_or_else(|| panic!("{text} has a code"));
            assert_eq!(decode_time(n).to_bits(), t.to_bits(), "{text}");
        }
        for t in [-0.0, f64::NAN, f64::INFINITY, 0.0001, 1.23456, 1e300, 1718000000000000.5] {
            assert_eq!(encode_time(t), None, "{t}");
        }
        for v in [0i64, 1, -1, i64::MAX, i64::MIN, 300, -300] {
            assert_eq!(unzigzag(zigzag(v)), v);
            let mut b = Vec::new();
            put(&mut b, zigzag(v));
            assert_eq!(unzigzag(get(&b, &mut 0)), v);
        }
    }

    fn row(i: u32) -> FrameRow {
        // Out-of-order starts, equal starts, odd values, three threads.
        let ts = [5.0, 1.5, 1.5, -0.0, 0.0, 1e300, f64::NAN, 3.25, 1.23456, 2.0][i as usize % 10] + (i / 10) as f64;
        let dur = [0.0, 2.5, -1.0, 1.23456, f64::NAN, 1e12, 0.001][i as usize % 7];
        FrameRow { name: i % 7, thread: i % 3, ts, dur, complete: i % 5 == 0 }
    }

    fn same(a: &FrameRow, b: &FrameRow) -> bool {
        (a.name, a.thread, a.complete, a.ts.to_bits(), a.dur.to_bits())
            == (b.name, b.thread, b.complete, b.ts.to_bits(), b.dur.to_bits())
    }

    #[test]
    fn store_keeps_every_value_and_reads_threads_in_start_order() {
        let rows: Vec<FrameRow> = (0..300_000).map(row).collect();
        // Split across two builders: the second's names and threads are
        // translated on append.
        let mut a = FrameStore::default();
        let mut b = FrameStore::default();
        let sym: Vec<Sym> = (0..7).map(|s| (s + 3) % 7).collect();
        let unsym: Vec<Sym> = (0..7).map(|s| (s + 4) % 7).collect();
        let thread: Vec<ThreadIdx> = vec![2, 0, 1];
        let unthread: Vec<ThreadIdx> = vec![1, 2, 0];
        for (i, r) in rows.iter().enumerate() {
            if i < 123_457 {
                a.push(*r);
            } else {
                b.push(FrameRow { name: unsym[r.name as usize], thread: unthread[r.thread as usize], ..*r });
            }
        }
        a.append_mapped(b, &sym, &thread);
        a.seal();
        assert_eq!(a.len(), rows.len());
        let back = a.in_trace_order();
        assert_eq!(back.len(), rows.len());
        for (i, (got, want)) in back.iter().zip(&rows).enumerate() {
            assert!(same(got, want), "row {i}: {got:?} vs {want:?}");
        }
        for t in 0..3 {
            let mut want: Vec<(usize, FrameRow)> = rows.iter().copied().enumerate().filter(|r| r.1.thread == t).collect();
            want.sort_by(|x, y| fcmp(x.1.ts, y.1.ts).then(x.0.cmp(&y.0)));
            let got: Vec<Frame> = a.thread(t).collect();
            assert_eq!(got.len(), want.len());
            for (g, (r, w)) in got.iter().zip(&want) {
                assert_eq!(g.row, *r as u64);
                assert!(same(&FrameRow { name: g.name, thread: t, ts: g.ts, dur: g.dur, complete: g.complete }, w));
            }
            assert!(a.thread_has_nan(t));
        }
    }

    #[test]
    fn skipped_blocks_are_exactly_the_ones_the_test_accepts() {
        // Short frames with one long frame every 2,000: a sparse reader
        // that drops frames ending before its probe may skip most blocks.
        let mut s = FrameStore::default();
        for i in 0..50_000u32 {
            let dur = if i % 2_000 == 0 { 900.0 } else { 0.5 };
            s.push(FrameRow { name: i % 9, thread: 0, ts: f64::from(i), dur, complete: true });
        }
        s.seal();
        let all: Vec<Frame> = s.thread(0).collect();
        let mut cursor = s.cursor(0);
        let mut seen = Vec::new();
        for probe in (0..50_000).step_by(7_919).map(f64::from) {
            let skip = |b: &BlockMark| b.last_ts <= probe && b.max_end < probe;
            while let Some(&f) = cursor.peek_skipping(skip).filter(|f| f.ts <= probe) {
                seen.push(f);
                cursor.advance();
            }
        }
        while let Some(&f) = cursor.peek() {
            seen.push(f);
            cursor.advance();
        }
        assert!(seen.len() < all.len() / 2, "{} of {} read", seen.len(), all.len());
        // Read frames come in store order, and every frame not read would
        // have been dropped: it ends before the probe that would read it.
        let rows: Vec<u64> = seen.iter().map(|f| f.row).collect();
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        let probes: Vec<f64> = (0..50_000).step_by(7_919).map(f64::from).collect();
        let mut read = rows.iter().peekable();
        for f in &all {
            if read.next_if(|&&r| r == f.row).is_some() {
                continue;
            }
            let reader = probes.iter().find(|&&p| f.ts <= p).expect("frames past the last probe are all read");
            assert!(f.end() < *reader, "frame {} skipped but alive at {reader}", f.row);
        }
        assert!(read.next().is_none());
    }

    #[test]
    fn sorted_input_packs_small() {
        let mut s = FrameStore::default();
        for i in 0..100_000u32 {
            let ts = 1_700_000_000.0 + f64::from(i) * 1.5;
            s.push(FrameRow { name: i % 50, thread: 0, ts, dur: 1.25, complete: true });
        }
        s.seal();
        assert!(s.heap_bytes() < 100_000 * 8, "{} bytes", s.heap_bytes());
        assert!(!s.thread_has_nan(0));
        assert_eq!(s.thread(0).map(|f| f.row).collect::<Vec<_>>(), (0..100_000).collect::<Vec<u64>>());
    }
}
