//! Event shapes: a profiler writes millions of events that differ only in
//! their values — the same keys in the same order, the same separators and
//! indentation, the same `ph` and `cat`. A shape is that literal text,
//! learned from an event the general parser read; the next events are
//! matched against it a word at a time, and only their values are scanned,
//! each by the scanner function the general parser would call for it. A
//! match therefore gives exactly the general parser's fields; anything else
//! (a different key, other whitespace, an empty `args`, a value that runs off
//! the window) makes the event fall back to the general parser.

use super::event::Slots;
use super::scan::{Loc, Scanner};
use crate::columns::interner::same_bytes;

/// Shapes kept per parser (one per kind of event a trace interleaves).
const MAX_SHAPES: usize = 8;
/// Values a shape may have.
const MAX_VALUES: usize = 64;
/// Literal bytes a shape may hold.
const MAX_TEXT: usize = 4096;
/// Events the shapes miss, once all slots are taken, before the next miss is
/// learned in place of the least used shape.
const RELEARN_AFTER: u32 = 16;

/// Where a scanned value goes, which also decides how it is scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Ext,
    Corr,
    Stream,
    CudaStream,
    ArgName,
    Skip,
}

/// The value positions the general parser saw in one event, for learning.
#[derive(Default)]
pub struct Recording {
    /// Recording this event.
    pub on: bool,
    /// Still usable: no escaped key, repeated field, or non-object `args`.
    pub ok: bool,
    values: Vec<(usize, usize, Target)>,
}

impl Recording {
    pub fn start(&mut self, on: bool) {
        self.on = on;
        self.ok = on;
        self.values.clear();
    }

    /// The value at `start..end` went to `target`.
    #[inline]
    pub fn value(&mut self, start: usize, end: usize, target: Target) {
        if self.values.len() < MAX_VALUES {
            self.values.push((start, end, target));
        } else {
            self.ok = false;
        }
    }
}

/// Where a `ph` or `cat` value lies inside a shape's literal text: the
/// literal (0 for the first) and the value's place in it.
#[derive(Clone, Copy)]
struct Fixed {
    lit: usize,
    off: usize,
    len: usize,
}

/// One value of a shape and the literal text after it.
struct Step {
    target: Target,
    lit: std::ops::Range<usize>,
}

struct Shape {
    /// The literals, one after the other.
    text: Vec<u8>,
    /// The literal before the first value (or the whole event).
    first: std::ops::Range<usize>,
    steps: Vec<Step>,
    ph: Option<Fixed>,
    cat: Option<Fixed>,
    args_object: bool,
    /// `ph` and `cat` are in the first literal, or absent.
    fixed_in_first: bool,
    hits: u32,
    /// The shape the event after the last one of this shape had: tried
    /// first, since a profiler writes its kinds of events in recurring
    /// sequences (a CPU op, its launch, the kernel).
    next: usize,
}

impl Shape {
    /// Reads the event at `s.pos` into `f` if it has this shape, which the
    /// caller has checked its first literal against; `s.pos` is then past
    /// its closing brace.
    #[inline]
    fn read(&self, s: &mut Scanner<'_>, bytes: &mut Vec<u8>, f: &mut Slots) -> Option<()> {
        let start = s.pos;
        s.pos = start + self.first.len();
        let (ph_at, cat_at) = if self.fixed_in_first {
            self.read_steps::<false>(s, bytes, f)?;
            (start, start)
        } else {
            self.read_steps::<true>(s, bytes, f)?
        };
        f.ph = fixed(self.ph, ph_at.max(start));
        f.cat = fixed(self.cat, cat_at.max(start));
        f.args_object = self.args_object;
        Some(())
    }

    /// The values and the literals after them; with `TRACK`, also where the
    /// literals holding `ph` and `cat` start (0 when in the first literal).
    #[inline(always)]
    fn read_steps<const TRACK: bool>(
        &self,
        s: &mut Scanner<'_>,
        bytes: &mut Vec<u8>,
        f: &mut Slots,
    ) -> Option<(usize, usize)> {
        let buf = s.buf;
        let ph_lit = self.ph.map_or(0, |x| x.lit);
        let cat_lit = self.cat.map_or(0, |x| x.lit);
        let (mut ph_at, mut cat_at) = (0, 0);
        for (k, step) in self.steps.iter().enumerate() {
            match step.target {
                Target::Skip => {
                    if !s.skip_short_scalar() {
                        s.skip_value().ok()?;
                    }
                }
                Target::Ts => f.ts_float = s.float_into(bytes, &mut f.ts).ok()?,
                Target::Dur => f.dur_float = s.float_into(bytes, &mut f.dur).ok()?,
                Target::Name => s.value_into(bytes, &mut f.name).ok()?,
                Target::Pid => s.value_into(bytes, &mut f.pid).ok()?,
                Target::Tid => s.value_into(bytes, &mut f.tid).ok()?,
                Target::Ext => s.value_into(bytes, &mut f.ext).ok()?,
                Target::Corr => s.value_into(bytes, &mut f.corr).ok()?,
                Target::Stream => s.value_into(bytes, &mut f.stream).ok()?,
                Target::CudaStream => s.value_into(bytes, &mut f.cuda_stream).ok()?,
                Target::ArgName => s.value_into(bytes, &mut f.arg_name).ok()?,
            }
            let at = s.pos;
            let lit = &self.text[step.lit.clone()];
            if !literal_at(buf, at, lit) {
                return None;
            }
            if TRACK {
                if k + 1 == ph_lit {
                    ph_at = at;
                }
                if k + 1 == cat_lit {
                    cat_at = at;
                }
            }
            s.pos = at + lit.len();
        }
        Some((ph_at, cat_at))
    }
}

#[inline(always)]
fn fixed(at: Option<Fixed>, base: usize) -> Loc {
    match at {
        None => Loc::Missing,
        Some(Fixed { off, len, .. }) => Loc::Ascii(base + off, base + off + len),
    }
}

/// True when `buf` holds `lit` at `at`.
#[inline(always)]
fn literal_at(buf: &[u8], at: usize, lit: &[u8]) -> bool {
    match buf.get(at..at + lit.len()) {
        Some(have) => same_bytes(have, lit),
        None => false,
    }
}

/// The shapes one parser has learned.
#[derive(Default)]
pub struct Shapes {
    list: Vec<Shape>,
    /// Events missed since the last one learned.
    misses: u32,
    /// The shape of the last event a shape read.
    last: usize,
}

impl Shapes {
    /// Reads the event at `s.pos` into `f` through a shape it matches. On
    /// `false`, `s.pos` and `bytes` are as they were and `f` is to be reset.
    #[inline]
    pub fn read(&mut self, s: &mut Scanner<'_>, bytes: &mut Vec<u8>, f: &mut Slots) -> bool {
        let n = self.list.len();
        if n == 0 {
            self.misses = self.misses.saturating_add(1);
            return false;
        }
        // The shape that followed the last one's shape first, then the
        // others in order.
        let guess = self.list.get(self.last).map_or(0, |l| l.next).min(n - 1);
        let start = s.pos;
        let kept = bytes.len();
        for i in std::iter::once(guess).chain((0..n).filter(|&i| i != guess)) {
            let shape = &mut self.list[i];
            if !literal_at(s.buf, start, &shape.text[shape.first.clone()]) {
                continue;
            }
            if shape.read(s, bytes, f).is_some() {
                shape.hits = shape.hits.saturating_add(1);
                if let Some(last) = self.list.get_mut(self.last) {
                    last.next = i;
                }
                self.last = i;
                return true;
            }
            s.pos = start;
            bytes.truncate(kept);
            *f = Slots::default();
        }
        self.misses = self.misses.saturating_add(1);
        false
    }

    /// Shapes learned.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether the next event the general parser reads should be recorded.
    #[inline]
    pub fn wants(&self) -> bool {
        self.list.len() < MAX_SHAPES || self.misses >= RELEARN_AFTER
    }

    /// Learns the shape of the event `buf[start..end]` the general parser
    /// read into `f`, with the value positions in `rec`.
    pub fn learn(&mut self, buf: &[u8], start: usize, end: usize, rec: &Recording, f: &Slots) {
        if !rec.ok {
            return;
        }
        let mut text = Vec::new();
        // Each literal's range in `text` and its start in `buf`.
        let mut lits: Vec<(std::ops::Range<usize>, usize)> = Vec::with_capacity(rec.values.len() + 1);
        let mut at = start;
        for &(vs, ve, _) in &rec.values {
            if vs < at || ve < vs || ve > end {
                return;
            }
            lits.push((text.len()..text.len() + (vs - at), at));
            text.extend_from_slice(&buf[at..vs]);
            at = ve;
        }
        lits.push((text.len()..text.len() + (end - at), at));
        text.extend_from_slice(&buf[at..end]);
        if text.len() > MAX_TEXT {
            return;
        }
        let place = |loc: Loc| -> Result<Option<Fixed>, ()> {
            match loc {
                Loc::Missing => Ok(None),
                Loc::Ascii(a, b) => {
                    let lit = lits.iter().rposition(|l| l.1 <= a).ok_or(())?;
                    let (range, from) = &lits[lit];
                    if b > from + range.len() {
                        return Err(());
                    }
                    Ok(Some(Fixed { lit, off: a - from, len: b - a }))
                }
                _ => Err(()),
            }
        };
        let (Ok(ph), Ok(cat)) = (place(f.ph), place(f.cat)) else { return };
        let mut ranges = lits.into_iter().map(|l| l.0);
        let Some(first) = ranges.next() else { return };
        let steps = rec.values.iter().zip(ranges).map(|(v, lit)| Step { target: v.2, lit }).collect();
        let fixed_in_first = ph.is_none_or(|x| x.lit == 0) && cat.is_none_or(|x| x.lit == 0);
        let shape = Shape { text, first, steps, ph, cat, args_object: f.args_object, fixed_in_first, hits: 0, next: 0 };
        self.misses = 0;
        if self.list.len() < MAX_SHAPES {
            self.list.push(shape);
        } else if let Some(i) = (0..self.list.len()).min_by_key(|&i| self.list[i].hits) {
            // Older counts fade, so a shape that stopped matching is replaced
            // before long.
            for s in &mut self.list {
                s.hits /= 2;
            }
            self.list[i] = shape;
        }
    }
}
