//! String interner: every name, category, pid and tid string seen by ingest is
//! stored once and referred to by a 32-bit [`Sym`].

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Strings are kept up to this many bytes ([`Interner::intern`]).
pub const MAX_STRING_BYTES: usize = 64 << 10;

/// `s` as the string table keeps it: whole up to [`MAX_STRING_BYTES`], else
/// cut (at a character boundary) and marked with how many bytes were left
/// out, within that length.
pub fn kept(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= MAX_STRING_BYTES {
        return std::borrow::Cow::Borrowed(s);
    }
    // Room for the marker, so the kept string fits the limit.
    let mut cut = MAX_STRING_BYTES - 64;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…[{} more bytes]", &s[..cut], s.len() - cut))
}

/// An interned string id. Only meaningful with the [`Interner`] that made it.
pub type Sym = u32;

/// Append-only string table. Lookups by string are hashed; lookups by id are
/// a slice index. The strings' bytes lie one after another in one buffer,
/// and the table holds ids only: a string costs its bytes and 14 to 20
/// more, not the hundred an allocation of its own and two table slots
/// cost, which matters to a trace of a million distinct names (a step
/// annotation per step, a name per thread).
#[derive(Default, Debug, Clone)]
pub struct Interner {
    text: String,
    /// Where each string ends in `text`; it starts where the one before
    /// ends.
    ends: Vec<usize>,
    /// The ids, hashed by their strings.
    table: HashTable<Sym>,
    /// Direct-mapped memo of recent lookups, by [`memo_slot`]: a trace
    /// repeats a few hundred names millions of times, and a hit costs one
    /// compare instead of hashing the whole string and probing the table.
    memo: Vec<Sym>,
}

/// Entries of [`Interner::memo`].
const MEMO_SLOTS: usize = 1024;

/// The memo slot of `s`: from its length and four of its words — the
/// first, the last, the one before the last and the middle one. Profiler
/// names often differ only in a line number just before a short function
/// name (`llama.py(343): forward`, `llama.py(229): forward`): with the two
/// ends alone such names share a slot and, alternating, evict each other
/// at every lookup. Names alike in all four words share a slot, and the
/// compare tells them apart.
#[inline(always)]
fn memo_slot(s: &[u8]) -> usize {
    let n = s.len();
    let word = |at: usize| s.get(at..at + 8).and_then(|c| c.first_chunk::<8>()).map_or(0, |c| u64::from_le_bytes(*c));
    let key = if n >= 8 {
        word(0)
            ^ word(n - 8).rotate_left(29)
            ^ n.checked_sub(16).map_or(0, word).rotate_left(13)
            ^ word(n / 2 - 4).rotate_left(47)
    } else {
        s.iter().fold(0u64, |k, &c| (k << 8) | u64::from(c))
    } ^ n as u64;
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_SLOTS.trailing_zeros())) as usize
}

/// Whether two byte strings are equal, compared a word at a time in line:
/// the names and field texts ingest compares are short, and a call into the
/// C library's `memcmp` costs more than comparing them.
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    let w = |s: &[u8], i: usize| s.get(i..i + 8).and_then(|c| c.first_chunk::<8>()).map(|c| u64::from_le_bytes(*c));
    let mut i = 0;
    while i + 8 < n {
        if w(a, i) != w(b, i) {
            return false;
        }
        i += 8;
    }
    // The last word, overlapping the one before when `n` is not a multiple
    // of eight.
    w(a, n - 8) == w(b, n - 8)
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives back the room kept for more strings and the memo of recent
    /// lookups (rebuilt if more are interned): a trace of many distinct
    /// names would otherwise keep up to twice their text once ingest ends.
    pub fn shrink_to_fit(&mut self) {
        let Interner { text, ends, table, memo } = self;
        text.shrink_to_fit();
        ends.shrink_to_fit();
        table.shrink_to_fit(|&id| FxBuildHasher.hash_one(&text[span_of(ends, id)]));
        *memo = Vec::new();
    }

    /// Returns the id of `s`, adding it if it is new.
    ///
    /// A string longer than [`MAX_STRING_BYTES`] is stored cut to that
    /// length (at a character boundary) and marked with how many bytes were
    /// left out: no real name comes near it, and every analysis copies
    /// names, so one 100 MB name would otherwise cost gigabytes.
    pub fn intern(&mut self, s: &str) -> Sym {
        if s.len() > MAX_STRING_BYTES {
            return self.intern(&kept(s));
        }
        if self.memo.is_empty() {
            self.memo = vec![Sym::MAX; MEMO_SLOTS];
        }
        let slot = memo_slot(s.as_bytes());
        if let Some(known) = self.get_str(self.memo[slot]) {
            if same_bytes(known.as_bytes(), s.as_bytes()) {
                return self.memo[slot];
            }
        }
        let hash = FxBuildHasher.hash_one(s);
        let Interner { text, ends, table, .. } = self;
        let span = |id: Sym| span_of(ends, id);
        let id = match table.find(hash, |&id| same_bytes(text[span(id)].as_bytes(), s.as_bytes())) {
            Some(&id) => id,
            None => {
                let id = ends.len() as Sym;
                text.push_str(s);
                ends.push(text.len());
                table.insert_unique(hash, id, |&id| FxBuildHasher.hash_one(&text[span_of(ends, id)]));
                id
            }
        };
        self.memo[slot] = id;
        id
    }

    /// The string behind `id`, if this interner made it.
    #[inline]
    fn get_str(&self, id: Sym) -> Option<&str> {
        ((id as usize) < self.ends.len()).then(|| &self.text[span_of(&self.ends, id)])
    }

    /// The id of `s` if it has been interned.
    pub fn get(&self, s: &str) -> Option<Sym> {
        let hash = FxBuildHasher.hash_one(s);
        self.table.find(hash, |&id| self.resolve(id) == s).copied()
    }

    /// The string behind `id`. Panics only on an id from another interner.
    pub fn resolve(&self, id: Sym) -> &str {
        &self.text[span_of(&self.ends, id)]
    }

    /// Every string, in the order first interned.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len() as Sym).map(|id| self.resolve(id))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Approximate heap bytes held (string bytes plus table overhead).
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.table.capacity() * (std::mem::size_of::<Sym>() + 1)
            + self.memo.len() * std::mem::size_of::<Sym>()
    }

    /// Interns every string of `other` here and returns the id translation
    /// table (`other` id → id in `self`).
    pub fn absorb(&mut self, other: &Interner) -> Vec<Sym> {
        other.iter().map(|s| self.intern(s)).collect()
    }
}

/// Where string `id` lies in the text.
#[inline(always)]
fn span_of(ends: &[usize], id: Sym) -> std::ops::Range<usize> {
    let id = id as usize;
    let start = if id == 0 { 0 } else { ends[id - 1] };
    start..ends[id]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_byte_equality() {
        let texts = ["", "X", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq"];
        for a in texts {
            for b in texts {
                assert_eq!(same_bytes(a.as_bytes(), b.as_bytes()), a == b, "{a:?} {b:?}");
            }
            // One byte changed anywhere, at every length.
            for i in 0..a.len() {
                let mut c = a.as_bytes().to_vec();
                c[i] ^= 1;
                assert!(!same_bytes(a.as_bytes(), &c), "{a:?} at {i}");
            }
        }
    }

    #[test]
    fn interns_once_and_resolves() {
        let mut i = Interner::new();
        let a = i.intern("aten::mm");
        let b = i.intern("kernel");
        assert_eq!(i.intern("aten::mm"), a);
        assert_ne!(a, b);
        assert_eq!(i.resolve(b), "kernel");
        assert_eq!(i.get("nope"), None);
    }

    #[test]
    fn names_that_share_a_memo_slot_keep_their_own_ids() {
        // Same length, alike in every word the slot is made of (bytes
        // 0..8, 17..25 and 27..43 of 43): the same slot.
        let a = "torch/nn/AAAAmodules/module.py(1739): _call";
        let b = "torch/nn/BBBBmodules/module.py(1739): _call";
        assert_eq!(memo_slot(a.as_bytes()), memo_slot(b.as_bytes()));
        let mut i = Interner::new();
        let (ia, ib) = (i.intern(a), i.intern(b));
        assert_ne!(ia, ib);
        for _ in 0..3 {
            assert_eq!((i.intern(a), i.intern(b), i.intern(a)), (ia, ib, ia));
        }
        assert_eq!((i.resolve(ia), i.resolve(ib)), (a, b));
        // Short strings too.
        let (x, y) = (i.intern("ab"), i.intern("ba"));
        assert_eq!((i.intern("ab"), i.intern("ba"), i.len()), (x, y, 4));
    }

    #[test]
    fn names_that_differ_in_a_line_number_have_their_own_memo_slots() {
        // The frames of one file's functions alternate in a trace: sharing
        // a slot, each lookup would evict the other.
        let a = "vllm/model_executor/models/llama.py(343): forward";
        let b = "vllm/model_executor/models/llama.py(229): forward";
        assert_ne!(memo_slot(a.as_bytes()), memo_slot(b.as_bytes()));
        let c = "torch/nn/modules/module.py(1750): _call_impl";
        let d = "torch/nn/modules/module.py(1751): _call_impl";
        assert_ne!(memo_slot(c.as_bytes()), memo_slot(d.as_bytes()));
    }

    #[test]
    fn absorb_translates_ids() {
        let mut a = Interner::new();
        a.intern("x");
        let mut b = Interner::new();
        let y = b.intern("y");
        let x = b.intern("x");
        let map = a.absorb(&b);
        assert_eq!(a.resolve(map[y as usize]), "y");
        assert_eq!(map[x as usize], 0);
    }

    #[test]
    fn overlong_strings_are_cut_and_marked() {
        let mut i = Interner::new();
        let long = "é".repeat(MAX_STRING_BYTES);
        let id = i.intern(&long);
        let kept = i.resolve(id);
        assert!(kept.len() <= MAX_STRING_BYTES, "{}", kept.len());
        assert!(kept.ends_with(&format!("…[{} more bytes]", 2 * MAX_STRING_BYTES - (MAX_STRING_BYTES - 64))));
        assert_eq!(i.intern(&long), id);
        assert_eq!(i.intern("short"), id + 1);
    }
}
