//! Indexes over a kernel-map payload's names for the relaxed lookup's
//! first two passes, so that a formal trace whose kernel names the mapping
//! trace lacks does not scan every name once per kernel (with hundreds of
//! thousands of names on each side, hours). Each gives exactly the answer
//! of the linear pass it replaces, the first key with the best score in key
//! order ([`best_substring_key`], [`best_long_prefix_key`]); the tests
//! compare them on random-ish names.
//!
//! [`SubstringIndex`] keeps the distinct lower-case names sorted, each with
//! the nearest shorter name that is a prefix of it, and a suffix array of
//! their characters. For a name `q` the linear pass scores a key by how it
//! relates to `q`; in decreasing order of what each relation can score:
//! the key extends `q` (score: `q`'s length; found as a range of the sorted
//! names), `q` extends the key (the key's length: the longest such is on
//! the prefix chain of the name sorted just before `q`), the key contains
//! `q` elsewhere (half `q`'s length: a range of the suffix array), or `q`
//! contains the key elsewhere (half the key's length: prefix chains of the
//! names sorted before each suffix of `q`). The first-placed key of a range
//! comes from per-block minima. A query costs about `|q|` binary searches
//! over the names, whatever their number.
//!
//! [`LongPrefixIndex`] keeps the distinct compacted names of 96 characters
//! or more sorted with the common-prefix length of neighbours, and walks
//! outward from where `q` would sit, longest common prefix first, stopping
//! at the first length with a qualifying name. It reads only the names
//! that share at least 64 characters with `q`.
//!
//! [`best_substring_key`]: crate::analysis::text::best_substring_key
//! [`best_long_prefix_key`]: crate::analysis::text::best_long_prefix_key

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::analysis::text::{long_prefix_score, normalize_match_text};

/// No such name.
const NONE: u32 = u32::MAX;
/// Ends every name in the index's text: never a byte of UTF-8.
const SEP: u8 = 0xFF;
/// Names (or suffixes) per block of the range-minimum tables.
const BLOCK: usize = 64;

/// Length of the common prefix of two byte strings.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Characters in a UTF-8 byte string (bytes that start one).
fn chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// Distinct names in sorted order, concatenated (each followed by [`SEP`]),
/// each with the position of the first key having it.
#[derive(Debug)]
struct SortedNames {
    text: Vec<u8>,
    /// Where each name starts in `text`, and the end of `text`.
    starts: Vec<u32>,
    /// Key position of the first key with each name.
    pos: Vec<u32>,
    /// Minimum of `pos` over each block of names.
    pos_blocks: Vec<u32>,
}

impl SortedNames {
    fn new(mut names: Vec<(Vec<u8>, u32)>) -> SortedNames {
        names.sort_unstable();
        names.dedup_by(|b, a| a.0 == b.0);
        let mut text = Vec::with_capacity(names.iter().map(|(n, _)| n.len() + 1).sum());
        let mut starts = Vec::with_capacity(names.len() + 1);
        let mut pos = Vec::with_capacity(names.len());
        for (name, p) in names {
            starts.push(text.len() as u32);
            text.extend_from_slice(&name);
            text.push(SEP);
            pos.push(p);
        }
        starts.push(text.len() as u32);
        let pos_blocks = pos.chunks(BLOCK).map(|c| c.iter().copied().min().unwrap_or(NONE)).collect();
        SortedNames { text, starts, pos, pos_blocks }
    }

    fn len(&self) -> usize {
        self.pos.len()
    }

    fn name(&self, i: usize) -> &[u8] {
        &self.text[self.starts[i] as usize..self.starts[i + 1] as usize - 1]
    }

    /// The first name not below `s`.
    fn lower_bound(&self, s: &[u8]) -> usize {
        let mut lo = 0;
        let mut hi = self.len();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.name(mid) < s {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first name above `s`.
    fn upper_bound(&self, s: &[u8]) -> usize {
        let mut lo = 0;
        let mut hi = self.len();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.name(mid) <= s {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The smallest key position among names `lo..hi`.
    fn min_pos(&self, lo: usize, hi: usize) -> u32 {
        range_min(&self.pos_blocks, lo, hi, |i| self.pos[i])
    }
}

/// Minimum of `value(i)` over `lo..hi`, whole blocks read from `blocks`.
fn range_min(blocks: &[u32], lo: usize, hi: usize, value: impl Fn(usize) -> u32) -> u32 {
    let mut best = NONE;
    let mut i = lo;
    while i < hi {
        if i % BLOCK == 0 && i + BLOCK <= hi {
            best = best.min(blocks[i / BLOCK]);
            i += BLOCK;
        } else {
            best = best.min(value(i));
            i += 1;
        }
    }
    best
}

/// Index of the relaxed lookup's substring pass over one payload's keys.
#[derive(Debug)]
pub struct SubstringIndex {
    names: SortedNames,
    /// Per sorted name: the nearest shorter name that is a prefix of it.
    parent: Vec<u32>,
    /// Offsets in the names' text of every suffix that starts a character,
    /// sorted (each compared up to its name's end).
    suffixes: Vec<u32>,
    /// Minimum key position (of the suffix's name) over each block.
    suffix_blocks: Vec<u32>,
    keys: usize,
}

impl SubstringIndex {
    /// Indexes `keys`, in key order.
    pub fn new<'k>(keys: impl IntoIterator<Item = &'k str>) -> SubstringIndex {
        let mut first: FxHashMap<String, u32> = FxHashMap::default();
        let mut count = 0;
        for (i, key) in keys.into_iter().enumerate() {
            first.entry(key.to_lowercase()).or_insert(i as u32);
            count += 1;
        }
        let names = SortedNames::new(first.into_iter().map(|(n, p)| (n.into_bytes(), p)).collect());
        // In sorted order every name's prefixes come before it: a stack of
        // the chain of prefixes of the name before gives each its parent.
        let mut parent = vec![NONE; names.len()];
        let mut chain: Vec<u32> = Vec::new();
        for (i, slot) in parent.iter_mut().enumerate() {
            let name = names.name(i);
            while chain.last().is_some_and(|&p| !name.starts_with(names.name(p as usize))) {
                chain.pop();
            }
            *slot = chain.last().copied().unwrap_or(NONE);
            chain.push(i as u32);
        }
        let text = &names.text;
        // (suffix start, its name's end), sorted by the bytes between.
        let mut spans: Vec<(u32, u32)> = Vec::with_capacity(text.len());
        for i in 0..names.len() {
            let (start, end) = (names.starts[i], names.starts[i + 1] - 1);
            spans.extend((start..end).filter(|&p| text[p as usize] & 0xC0 != 0x80).map(|p| (p, end)));
        }
        spans.par_sort_unstable_by(|a, b| text[a.0 as usize..a.1 as usize].cmp(&text[b.0 as usize..b.1 as usize]));
        let suffixes: Vec<u32> = spans.into_iter().map(|(p, _)| p).collect();
        let name_of = |p: u32| names.starts.partition_point(|&s| s <= p) - 1;
        let suffix_blocks =
            suffixes.chunks(BLOCK).map(|c| c.iter().map(|&p| names.pos[name_of(p)]).min().unwrap_or(NONE)).collect();
        SubstringIndex { names, parent, suffixes, suffix_blocks, keys: count }
    }

    /// The name at or above `g` in the prefix chain of `g` that is a prefix
    /// of `s`: the longest name that is a prefix of `s`, when `g` is the
    /// last name not above `s` (every name between a prefix of `s` and `s`
    /// extends that prefix).
    fn longest_prefix_of(&self, g: usize, s: &[u8]) -> Option<usize> {
        let shared = common_prefix(self.names.name(g), s);
        let mut a = g as u32;
        while a != NONE && self.names.name(a as usize).len() > shared {
            a = self.parent[a as usize];
        }
        (a != NONE).then_some(a as usize)
    }

    /// The smallest key position among names containing `q` (at any
    /// offset).
    fn first_containing(&self, q: &[u8]) -> Option<u32> {
        let text = &self.names.text;
        let head = |p: u32| {
            let rest = &text[p as usize..];
            let end = memchr::memchr(SEP, rest).unwrap_or(rest.len());
            &rest[..end.min(q.len())]
        };
        let lo = self.suffixes.partition_point(|&p| head(p) < q);
        let hi = self.suffixes.partition_point(|&p| head(p) <= q);
        let name_of = |p: u32| self.names.starts.partition_point(|&s| s <= p) - 1;
        let min = range_min(&self.suffix_blocks, lo, hi, |i| self.names.pos[name_of(self.suffixes[i])]);
        (min != NONE).then_some(min)
    }

    /// The position of the key [`best_substring_key`] picks for `name`.
    ///
    /// [`best_substring_key`]: crate::analysis::text::best_substring_key
    pub fn best(&self, name: &str) -> Option<usize> {
        if self.keys == 0 {
            return None;
        }
        let q = name.to_lowercase();
        let q = q.as_bytes();
        if q.is_empty() {
            // Every key scores 0: the first wins.
            return Some(0);
        }
        let names = &self.names;
        let q_chars = chars(q);
        // Keys extending `q` score its length, which nothing else reaches.
        let lo = names.lower_bound(q);
        let hi = lo + (lo..names.len()).take_while(|&i| names.name(i).starts_with(q)).count();
        if lo < hi {
            return Some(names.min_pos(lo, hi) as usize);
        }
        let mut best: Option<(usize, u32)> = None;
        let could = |best: &Option<(usize, u32)>, score: usize| best.is_none_or(|(b, _)| score >= b);
        let consider = |best: &mut Option<(usize, u32)>, score: usize, pos: u32| {
            if best.is_none_or(|(b, p)| score > b || (score == b && pos < p)) {
                *best = Some((score, pos));
            }
        };
        // Keys `q` extends score their length; the longest is the best.
        if lo > 0 {
            if let Some(a) = self.longest_prefix_of(lo - 1, q) {
                consider(&mut best, chars(names.name(a)), names.pos[a]);
            }
        }
        // Keys containing `q` (not at their start) score half its length.
        if could(&best, q_chars / 2) {
            if let Some(p) = self.first_containing(q) {
                consider(&mut best, q_chars / 2, p);
            }
        }
        // Keys inside `q` (not at its start) score half their length.
        let mut rest_chars = q_chars;
        for i in 1..q.len() {
            if q[i] & 0xC0 == 0x80 {
                continue;
            }
            // Keys starting here have at most this many characters.
            rest_chars -= 1;
            if !could(&best, rest_chars / 2) {
                break;
            }
            // The names that are prefixes of the rest of `q`, longest first.
            let s = &q[i..];
            let g = names.upper_bound(s);
            let mut a = if g > 0 { self.longest_prefix_of(g - 1, s) } else { None };
            while let Some(k) = a {
                let key = names.name(k);
                let score = chars(key) / 2;
                if !could(&best, score) {
                    break;
                }
                // One that is also a prefix of `q` was scored as one.
                if !q.starts_with(key) {
                    consider(&mut best, score, names.pos[k]);
                }
                a = (self.parent[k] != NONE).then_some(self.parent[k] as usize);
            }
        }
        best.map(|(_, p)| p as usize)
    }
}

/// Index of the relaxed lookup's long-prefix pass over one payload's keys.
#[derive(Debug)]
pub struct LongPrefixIndex {
    names: SortedNames,
    /// Common prefix of each sorted name with the one before it.
    shared: Vec<u32>,
}

/// Shortest compacted name the long-prefix pass considers.
const LONG_NAME: usize = 96;

impl LongPrefixIndex {
    /// Indexes `keys`, in key order.
    pub fn new<'k>(keys: impl IntoIterator<Item = &'k str>) -> LongPrefixIndex {
        let compact: Vec<(Vec<u8>, u32)> = keys
            .into_iter()
            .enumerate()
            .map(|(i, key)| (normalize_match_text(key).into_bytes(), i as u32))
            .filter(|(c, _)| c.len() >= LONG_NAME)
            .collect();
        let names = SortedNames::new(compact);
        let shared = (0..names.len())
            .map(|i| if i == 0 { 0 } else { common_prefix(names.name(i - 1), names.name(i)) as u32 })
            .collect();
        LongPrefixIndex { names, shared }
    }

    /// The position of the key [`best_long_prefix_key`] picks for `compact`
    /// (a name in match form).
    ///
    /// [`best_long_prefix_key`]: crate::analysis::text::best_long_prefix_key
    pub fn best(&self, compact: &str) -> Option<usize> {
        let names = &self.names;
        let q = compact.as_bytes();
        let at = names.lower_bound(q);
        // Names below `at` and from `at` up, each side's next common
        // prefix with `q` (which only shrinks going outward).
        let (mut left, mut right) = (at, at);
        let shared_with = |i: usize| common_prefix(names.name(i), q);
        let mut left_shared = if left > 0 { shared_with(left - 1) } else { 0 };
        let mut right_shared = if right < names.len() { shared_with(right) } else { 0 };
        loop {
            let level = match (left > 0, right < names.len()) {
                (false, false) => return None,
                (true, false) => left_shared,
                (false, true) => right_shared,
                (true, true) => left_shared.max(right_shared),
            };
            // A common prefix under 64 never qualifies.
            if level < 64 {
                return None;
            }
            // Every name sharing exactly `level` characters scores the
            // same (the FlashAttention bonus goes with a prefix of 64):
            // the first-placed qualifying one wins, if any qualifies.
            let mut found = NONE;
            let mut take = |i: usize| {
                if long_prefix_score(compact, std::str::from_utf8(names.name(i)).unwrap_or("")).is_some() {
                    found = found.min(names.pos[i]);
                }
            };
            while left > 0 && left_shared == level {
                take(left - 1);
                left -= 1;
                if left > 0 {
                    left_shared = left_shared.min(self.shared[left] as usize);
                }
            }
            while right < names.len() && right_shared == level {
                take(right);
                right += 1;
                if right < names.len() {
                    right_shared = right_shared.min(self.shared[right] as usize);
                }
            }
            if found != NONE {
                return Some(found as usize);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::text::{best_long_prefix_key, best_substring_key};

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 as usize
        }

        fn text(&mut self, pieces: &[&str], max: usize) -> String {
            (0..self.next() % (max + 1)).map(|_| pieces[self.next() % pieces.len()]).collect()
        }
    }

    fn position(keys: &[String], key: Option<&str>) -> Option<usize> {
        // The first key equal to the one picked (the picked one is the first
        // with the best score, and equal keys score alike).
        key.and_then(|k| keys.iter().position(|x| x == k))
    }

    #[test]
    fn substring_index_agrees_with_the_linear_pass() {
        let pieces = ["a", "b", "ab", "ba", "K", "k", "\u{212a}", "\u{e9}", "\u{c9}", "_", "x"];
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        for round in 0..400 {
            let keys: Vec<String> = (0..1 + rng.next() % 30).map(|_| rng.text(&pieces, 5)).collect();
            let index = SubstringIndex::new(keys.iter().map(String::as_str));
            for _ in 0..40 {
                let name =
                    if rng.next() % 3 == 0 { keys[rng.next() % keys.len()].clone() } else { rng.text(&pieces, 7) };
                let want = position(&keys, best_substring_key(keys.iter().map(String::as_str), &name));
                assert_eq!(index.best(&name), want, "round {round}: {name:?} in {keys:?}");
            }
        }
        assert_eq!(SubstringIndex::new([]).best("x"), None);
        assert_eq!(SubstringIndex::new(["b", "a"]).best(""), Some(0));
    }

    #[test]
    fn substring_index_on_kernel_like_names() {
        let mut rng = Rng(42);
        let keys: Vec<String> = (0..2000)
            .map(|i| match i % 4 {
                0 => format!("void kern_{:04}<float, 128>", rng.next() % 5000),
                1 => format!("kern_{:04}", rng.next() % 5000),
                2 => format!("Memset (Device) {}", rng.next() % 50),
                _ => format!("void at::native::elementwise_kernel<{}>", rng.next() % 300),
            })
            .collect();
        let index = SubstringIndex::new(keys.iter().map(String::as_str));
        for i in 0..600 {
            let name = match i % 5 {
                0 => format!("void kern_{:04}<float, 128, 2>", rng.next() % 5000),
                1 => format!("kern_{:03}", rng.next() % 500),
                2 => format!("x void kern_{:04}<float", rng.next() % 5000),
                3 => "memset".to_string(),
                _ => format!("elementwise_kernel<{}>", rng.next() % 400),
            };
            let want = position(&keys, best_substring_key(keys.iter().map(String::as_str), &name));
            assert_eq!(index.best(&name), want, "{name:?}");
        }
    }

    #[test]
    fn long_prefix_index_agrees_with_the_linear_pass() {
        let flash = "voidcutlassdevicekernelflash";
        let mut rng = Rng(7);
        for round in 0..300 {
            let stem: String = (0..40 + rng.next() % 60).map(|_| ["a", "b", "c"][rng.next() % 3]).collect();
            let make = |rng: &mut Rng| {
                let head = if rng.next() % 2 == 0 { flash } else { "" };
                let cut = rng.next() % (stem.len() + 1);
                let tail: String = (0..rng.next() % 200).map(|_| ["a", "b", "-", "c "][rng.next() % 4]).collect();
                format!("{head}{}{tail}", &stem[..cut])
            };
            let keys: Vec<String> = (0..1 + rng.next() % 40).map(|_| make(&mut rng)).collect();
            let index = LongPrefixIndex::new(keys.iter().map(String::as_str));
            for _ in 0..20 {
                let compact = normalize_match_text(&make(&mut rng));
                if compact.len() < LONG_NAME {
                    continue;
                }
                let want = position(&keys, best_long_prefix_key(keys.iter().map(String::as_str), &compact));
                assert_eq!(index.best(&compact), want, "round {round}: {compact:?}");
            }
        }
    }
}
