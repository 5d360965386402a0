//! Packed runs of frames: the varint and exact-time codes, one thread's
//! frames sorted by (start, row) with a mark every [`BLOCK`] frames, the
//! sequential decoder, and the merge of overlapping runs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::Frame;
use crate::columns::Sym;
use crate::pysem::fcmp;

/// Largest exact time code: beyond 2^53 an integer no longer converts to
/// f64 exactly.
const CODE_LIMIT: f64 = 9_007_199_254_740_992.0;

/// Whole nanoseconds of `t` (microseconds) when decoding them gives back
/// exactly `t`: true of every time written with at most three decimals
/// below 2^53 ns, which is how Kineto writes them.
#[inline]
pub(super) fn encode_time(t: f64) -> Option<i64> {
    let scaled = t * 1000.0;
    if !(scaled.abs() < CODE_LIMIT) {
        return None;
    }
    let n = round_to_int(scaled);
    (decode_time(n).to_bits() == t.to_bits()).then_some(n)
}

/// `x.round() as i64` for `|x| < 2^53`, without a call: `f64::round` is a
/// library call on CPUs without SSE4.1, which every frame's two times
/// paid. The truncation and the fraction it leaves are exact in that range.
#[inline(always)]
pub(super) fn round_to_int(x: f64) -> i64 {
    let whole = x as i64;
    let frac = x - whole as f64;
    whole + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)
}

#[inline]
pub(super) fn decode_time(n: i64) -> f64 {
    n as f64 / 1000.0
}

#[inline]
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub(super) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Appends each value as a little-endian base-128 varint (seven bits a
/// byte, the high bit set on all but the last), up to four values at once.
#[inline]
pub(super) fn put_all<const N: usize>(out: &mut Vec<u8>, values: [u64; N]) {
    // A varint takes at most ten bytes.
    const { assert!(N <= 4) };
    let mut buf = [0u8; 40];
    let mut n = 0;
    for mut v in values {
        while v >= 0x80 {
            buf[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        buf[n] = v as u8;
        n += 1;
    }
    out.extend_from_slice(&buf[..n]);
}

/// Reads one varint at `*pos`: one- and two-byte values (most of them)
/// without a loop. Runs are written by [`put_all`] only, so a varint never runs
/// past the end; a cut one would read as its prefix.
#[inline(always)]
pub(super) fn get(bytes: &[u8], pos: &mut usize) -> u64 {
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
pub(super) struct Run {
    pub(super) bytes: Vec<u8>,
    /// (ts, dur) of the verbatim frames, in run order.
    pub(super) verbatim: Vec<(f64, f64)>,
    pub(super) len: usize,
    /// Rows are stored as deltas from this.
    pub(super) row_base: u64,
    /// Translation of the names to the owning store's symbols, for runs
    /// packed by another builder.
    pub(super) remap: Option<Arc<[Sym]>>,
    /// One mark per [`BLOCK`] frames: where decoding resumes and what the
    /// block spans, so readers can pass over blocks without decoding them.
    pub(super) blocks: Vec<BlockMark>,
}

/// Frames per block of a run.
pub const BLOCK: usize = 512;

/// The decoder state at the start of a block, and the block's span.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockMark {
    pos: u32,
    verbatim: u32,
    /// The row before the block's first, as an offset from the run's
    /// `row_base` (which moves when the run is appended to another store).
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
    pub(super) fn pack(frames: impl ExactSizeIterator<Item = Frame>, row_base: u64) -> Run {
        let mut run = Run { len: frames.len(), row_base, ..Default::default() };
        run.bytes.reserve(run.len * 8);
        let (mut prev_row, mut prev_code) = (row_base, 0i64);
        for (i, f) in frames.enumerate() {
            if i % BLOCK == 0 {
                run.blocks.push(BlockMark {
                    pos: run.bytes.len() as u32,
                    verbatim: run.verbatim.len() as u32,
                    row: prev_row.wrapping_sub(row_base),
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
            let row = zigzag(f.row.wrapping_sub(prev_row) as i64);
            prev_row = f.row;
            let head = u64::from(f.name) << 2 | u64::from(f.complete) << 1;
            match (encode_time(f.ts), encode_time(f.dur)) {
                (Some(ts), Some(dur)) if dur >= 0 => {
                    put_all(&mut run.bytes, [row, head, zigzag(ts.wrapping_sub(prev_code)), dur as u64]);
                    prev_code = ts;
                }
                _ => {
                    put_all(&mut run.bytes, [row, head | 1]);
                    run.verbatim.push((f.ts, f.dur));
                }
            }
        }
        run.bytes.shrink_to_fit();
        run.verbatim.shrink_to_fit();
        run.blocks.shrink_to_fit();
        run
    }

    /// Start of the first frame (runs are never empty).
    pub(super) fn first_ts(&self) -> f64 {
        self.blocks.first().map_or(f64::NAN, |b| b.first_ts)
    }

    /// Start of the last frame.
    pub(super) fn last_ts(&self) -> f64 {
        self.blocks.last().map_or(f64::NAN, |b| b.last_ts)
    }

    pub(super) fn iter(&self) -> RunIter<'_> {
        RunIter { run: self, pos: 0, verbatim: 0, left: self.len, row: self.row_base, code: 0 }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.verbatim.capacity() * 16
            + self.blocks.capacity() * std::mem::size_of::<BlockMark>()
    }
}

/// Sequential decoder of one run.
pub(super) struct RunIter<'a> {
    run: &'a Run,
    pos: usize,
    verbatim: usize,
    pub(super) left: usize,
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
    pub(super) fn block_ahead(&self) -> Option<&BlockMark> {
        let done = self.consumed();
        (self.left > 0 && done % BLOCK == 0).then(|| self.run.blocks.get(done / BLOCK)).flatten()
    }

    /// Passes over the block ahead without decoding it (the decoder must
    /// stand at its start).
    pub(super) fn skip_block(&mut self) {
        let next = self.consumed() / BLOCK + 1;
        match self.run.blocks.get(next) {
            Some(m) => {
                self.pos = m.pos as usize;
                self.verbatim = m.verbatim as usize;
                self.row = self.run.row_base.wrapping_add(m.row);
                self.code = m.code;
                self.left = self.run.len - next * BLOCK;
            }
            None => self.left = 0,
        }
    }

    /// Decodes to the end of the current block.
    pub(super) fn fill_block(&mut self, buf: &mut Vec<Frame>) {
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

/// Packs `frames` (sorted by (start, row)) into runs of at most `rows`
/// frames each, handing each run to `each` as soon as it is packed: only
/// one run's frames are held unpacked at a time.
pub(super) fn pack_in_runs(frames: impl Iterator<Item = Frame>, rows: usize, mut each: impl FnMut(Run)) {
    let mut block: Vec<Frame> = Vec::new();
    for f in frames {
        block.push(f);
        if block.len() == rows {
            each(pack_front(&mut block, rows));
        }
    }
    if !block.is_empty() {
        let n = block.len();
        each(pack_front(&mut block, n));
    }
}

/// Packs and removes the first `n` frames of `block` (sorted by (start,
/// row)); the rest move to its front.
pub(super) fn pack_front(block: &mut Vec<Frame>, n: usize) -> Run {
    let n = n.min(block.len());
    let base = block[..n].iter().map(|f| f.row).min().unwrap_or(0);
    Run::pack(block.drain(..n), base)
}

/// Where a merge of `runs` may be cut into `pieces` independent slices of
/// start times: starts of blocks at even steps through all the runs'
/// blocks, ascending in [`fcmp`]'s order (NaN last). Fewer when the runs
/// have few blocks.
pub(super) fn slice_starts(runs: &[Run], pieces: usize) -> Vec<f64> {
    let mut starts: Vec<f64> = runs.iter().flat_map(|r| r.blocks.iter().map(|b| b.first_ts)).collect();
    starts.sort_unstable_by(|a, b| fcmp(*a, *b));
    let pieces = pieces.min(starts.len() / 4).max(1);
    let mut cuts: Vec<f64> = (1..pieces).map(|k| starts[starts.len() * k / pieces]).collect();
    cuts.dedup_by(|a, b| fcmp(*a, *b) == Ordering::Equal);
    cuts
}

/// The frames of several sorted runs whose start is at or after `from` and
/// before `to` (in [`fcmp`]'s order; `None` for no bound), in (start, row)
/// order. Blocks that end before `from` are passed over undecoded.
pub(super) fn merge_runs_between(runs: &[Run], from: Option<f64>, to: Option<f64>) -> impl Iterator<Item = Frame> + '_ {
    let before_end = move |f: &Frame| to.is_none_or(|t| fcmp(f.ts, t) == Ordering::Less);
    let mut iters: Vec<RunIter<'_>> = runs.iter().map(Run::iter).collect();
    let heads: Vec<Option<Frame>> = iters
        .iter_mut()
        .map(|it| {
            if let Some(from) = from {
                while it.block_ahead().is_some_and(|m| fcmp(m.last_ts, from) == Ordering::Less) {
                    it.skip_block();
                }
            }
            it.find(|f| from.is_none_or(|from| fcmp(f.ts, from) != Ordering::Less)).filter(before_end)
        })
        .collect();
    merge_heads(iters, heads, before_end)
}

/// Merges runs' iterators, given the first frame each contributes, while
/// `keep` accepts the frames that follow.
fn merge_heads<'a>(
    mut iters: Vec<RunIter<'a>>,
    heads: Vec<Option<Frame>>,
    keep: impl Fn(&Frame) -> bool + 'a,
) -> impl Iterator<Item = Frame> + 'a {
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
    // A run joins the heap only when its first frame is next: runs that
    // overlap little (frames written late by a step or two) keep the heap
    // a few runs deep however many there are. Sorted so that the run
    // starting first is last.
    let mut waiting: Vec<Head> =
        heads.into_iter().enumerate().filter_map(|(i, head)| head.map(|f| Head(f, i))).collect();
    waiting.sort_unstable();
    let mut heap: BinaryHeap<Head> = BinaryHeap::new();
    std::iter::from_fn(move || {
        while let Some(w) = waiting.last() {
            if heap.peek().is_some_and(|top| w < top) {
                break;
            }
            heap.extend(waiting.pop());
        }
        let Head(f, i) = heap.pop()?;
        if let Some(next) = iters[i].next().filter(&keep) {
            heap.push(Head(next, i));
        }
        Some(f)
    })
}
