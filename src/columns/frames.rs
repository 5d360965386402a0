//! Python frame columns. Frames are most of a trace's events, so they are
//! stored tighter than the other categories: a duration as whole
//! nanoseconds in 32 bits whenever that gives back exactly the parsed
//! value (else an exact side entry), and completeness as one bit.

use super::{Sym, ThreadIdx};

/// `ph: "X"`, `cat == "python_function"` frames, all threads. (The frames'
/// `Python id` / `Python parent id` are not kept: no analysis reads them.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameRow {
    pub name: Sym,
    pub thread: ThreadIdx,
    pub ts: f64,
    pub dur: f64,
    /// ts and dur present and dur > 0.
    pub complete: bool,
}

/// Marks a duration kept in [`FrameColumns::dur_exact`].
const ESCAPE: u32 = u32::MAX;

/// The 32-bit nanosecond code of `dur`, if decoding it (`n / 1000.0`, one
/// correctly rounded division) gives back exactly `dur`. That holds for
/// every duration written with at most three decimals below 4.29 s, which
/// is how Kineto writes them.
fn encode(dur: f64) -> Option<u32> {
    if !(dur >= 0.0) || (dur == 0.0 && dur.is_sign_negative()) {
        return None;
    }
    let scaled = dur * 1000.0;
    if !(scaled < ESCAPE as f64) {
        return None;
    }
    let n = scaled.round() as u32;
    (decode(n) == dur).then_some(n)
}

#[inline]
fn decode(n: u32) -> f64 {
    n as f64 / 1000.0
}

/// Frame columns in trace order; read them with the accessors.
#[derive(Clone, Debug, Default)]
pub struct FrameColumns {
    pub name: Vec<Sym>,
    pub thread: Vec<ThreadIdx>,
    pub ts: Vec<f64>,
    dur_ns: Vec<u32>,
    /// (row, duration) of the rows whose duration has no exact code, rows
    /// increasing.
    dur_exact: Vec<(usize, f64)>,
    complete: Vec<u64>,
}

impl FrameColumns {
    pub fn push(&mut self, row: FrameRow) {
        let i = self.ts.len();
        self.name.push(row.name);
        self.thread.push(row.thread);
        self.ts.push(row.ts);
        match encode(row.dur) {
            Some(n) => self.dur_ns.push(n),
            None => {
                self.dur_ns.push(ESCAPE);
                self.dur_exact.push((i, row.dur));
            }
        }
        self.push_complete(i, row.complete);
    }

    fn push_complete(&mut self, i: usize, complete: bool) {
        if i % 64 == 0 {
            self.complete.push(0);
        }
        if complete {
            if let Some(w) = self.complete.last_mut() {
                *w |= 1 << (i % 64);
            }
        }
    }

    #[inline]
    pub fn dur(&self, i: usize) -> f64 {
        match self.dur_ns[i] {
            ESCAPE => self.dur_exact.binary_search_by_key(&i, |e| e.0).map_or(f64::NAN, |k| self.dur_exact[k].1),
            n => decode(n),
        }
    }

    #[inline]
    pub fn complete(&self, i: usize) -> bool {
        self.complete[i / 64] >> (i % 64) & 1 == 1
    }

    #[inline]
    pub fn get(&self, i: usize) -> FrameRow {
        FrameRow { name: self.name[i], thread: self.thread[i], ts: self.ts[i], dur: self.dur(i), complete: self.complete(i) }
    }

    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = FrameRow> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Heap bytes held (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.name.capacity() * 4
            + self.thread.capacity() * 4
            + self.ts.capacity() * 8
            + self.dur_ns.capacity() * 4
            + self.dur_exact.capacity() * std::mem::size_of::<(usize, f64)>()
            + self.complete.capacity() * 8
    }

    pub fn shrink_to_fit(&mut self) {
        self.name.shrink_to_fit();
        self.thread.shrink_to_fit();
        self.ts.shrink_to_fit();
        self.dur_ns.shrink_to_fit();
        self.dur_exact.shrink_to_fit();
        self.complete.shrink_to_fit();
    }

    /// Appends `other` (consumed column by column to bound the peak),
    /// translating its symbols and thread indexes.
    pub fn append_mapped(&mut self, other: FrameColumns, sym: &[Sym], thread: &[ThreadIdx]) {
        let base = self.len();
        let n = other.len();
        let FrameColumns { name, thread: threads, ts, dur_ns, dur_exact, complete } = other;
        self.name.reserve_exact(n);
        self.name.extend(name.into_iter().map(|s| sym[s as usize]));
        self.thread.reserve_exact(n);
        self.thread.extend(threads.into_iter().map(|t| thread[t as usize]));
        self.ts.reserve_exact(n);
        self.ts.extend(ts);
        self.dur_ns.reserve_exact(n);
        self.dur_ns.extend(dur_ns);
        self.dur_exact.extend(dur_exact.into_iter().map(|(r, d)| (r + base, d)));
        self.complete.reserve_exact(n / 64 + 1);
        for i in 0..n {
            self.push_complete(base + i, complete[i / 64] >> (i % 64) & 1 == 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_exactly() {
        for text in ["0", "1", "0.001", "12.345", "999.999", "4294967.294", "1e-3", "0.5"] {
            let d: f64 = text.parse().unwrap();
            let n = encode(d).unwrap_or_else(|| panic!("{text} has a code"));
            assert_eq!(decode(n).to_bits(), d.to_bits(), "{text}");
        }
        for d in [-1.0, -0.0, f64::NAN, f64::INFINITY, 0.0001, 1.23456, 4294967.295, 1e12] {
            assert_eq!(encode(d), None, "{d}");
        }
    }

    #[test]
    fn columns_keep_every_value_and_flag() {
        let rows: Vec<FrameRow> = (0..200)
            .map(|i| FrameRow {
                name: i % 7,
                thread: i % 3,
                ts: i as f64 * 1.5,
                dur: [0.0, 2.5, -1.0, 1.23456, f64::NAN, 1e12][i as usize % 6],
                complete: i % 5 == 0,
            })
            .collect();
        let mut a = FrameColumns::default();
        let mut b = FrameColumns::default();
        for (i, r) in rows.iter().enumerate() {
            if i < 77 { a.push(*r) } else { b.push(*r) }
        }
        a.append_mapped(b, &(0..7).collect::<Vec<_>>(), &[0, 1, 2]);
        assert_eq!(a.len(), rows.len());
        for (i, r) in rows.iter().enumerate() {
            let got = a.get(i);
            assert_eq!((got.name, got.thread, got.ts, got.complete), (r.name, r.thread, r.ts, r.complete));
            assert_eq!(got.dur.to_bits(), r.dur.to_bits(), "row {i}");
        }
    }
}
