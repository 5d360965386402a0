//! Reading one thread's frames: the store-order iterator over its runs and
//! the batched cursor that analyses peek through, skipping blocks.

use std::cmp::Ordering;

use super::run::{BlockMark, Run, RunIter, BLOCK};
use super::Frame;
use crate::pysem::fcmp;

/// The frames of one thread in store order.
pub struct ThreadIter<'a> {
    runs: &'a [Run],
    current: Option<RunIter<'a>>,
    pending: std::slice::Iter<'a, Frame>,
}

impl<'a> ThreadIter<'a> {
    pub(super) fn new(runs: &'a [Run], pending: &'a [Frame]) -> Self {
        ThreadIter { runs, current: None, pending: pending.iter() }
    }

    pub(super) fn empty() -> Self {
        ThreadIter { runs: &[], current: None, pending: [].iter() }
    }

    /// The run being read, moving to the next one when it is exhausted;
    /// `None` once only pending rows (or nothing) are left.
    fn current_run(&mut self) -> Option<&mut RunIter<'a>> {
        while self.current.as_ref().is_none_or(|c| c.left == 0) {
            let (run, rest) = self.runs.split_first()?;
            self.runs = rest;
            self.current = Some(run.iter());
        }
        self.current.as_mut()
    }

    /// Appends the rest of the current block (or the pending rows) to
    /// `buf`. Returns whether anything was added (false once the thread is
    /// exhausted), and the block's mark when it was decoded from its start.
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
        match self.current_run() {
            Some(cur) => cur.next(),
            None => self.pending.next().copied(),
        }
    }
}

/// Batched reader of one thread's frames in store order: `peek` /
/// `advance` over a buffer refilled a [`BLOCK`] of frames at a time, so
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
    pub(super) fn new(iter: ThreadIter<'a>, on_refill: Option<fn(&mut [Frame])>, skippable: bool) -> Self {
        FrameCursor {
            iter,
            carry: None,
            buf: Vec::with_capacity(BLOCK + 16),
            pos: 0,
            on_refill,
            skippable,
            buf_mark: None,
        }
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
        if self.iter.next_block_start().is_none_or(same) {
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
