//! Which of the category keywords a lowercased kernel name holds, found in
//! one pass over the name (Aho-Corasick over every keyword at once) rather
//! than one substring search per keyword: a trace of many distinct kernel
//! names classifies each of them, several times over.

use aho_corasick::AhoCorasick;

/// A set of keywords: bit `i` stands for the `i`-th keyword of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hits(u128);

impl Hits {
    /// Whether any keyword of `set` is among these.
    #[inline]
    pub fn any(self, set: Hits) -> bool {
        self.0 & set.0 != 0
    }
}

/// Every keyword the table searches for, and the automaton that finds them.
pub struct Keywords {
    words: Vec<&'static str>,
    finder: AhoCorasick,
}

impl Keywords {
    /// The table of `lists`' keywords (each kept once). `None` when they
    /// are more than a [`Hits`] holds, or the automaton cannot be built.
    pub fn new(lists: &[&[&'static str]]) -> Option<Self> {
        let mut words: Vec<&'static str> = Vec::new();
        for word in lists.iter().flat_map(|l| l.iter()) {
            if !words.contains(word) {
                words.push(word);
            }
        }
        if words.len() > 128 {
            return None;
        }
        let finder = AhoCorasick::new(&words).ok()?;
        Some(Keywords { words, finder })
    }

    /// The keywords `text` holds, overlapping ones included.
    pub fn hits(&self, text: &str) -> Hits {
        let mut bits = 0u128;
        for m in self.finder.find_overlapping_iter(text) {
            bits |= 1 << m.pattern().as_usize();
        }
        Hits(bits)
    }

    /// The set of `list`'s keywords; a word not in the table is left out.
    pub fn set(&self, list: &[&str]) -> Hits {
        let bits =
            list.iter().filter_map(|k| self.words.iter().position(|w| w == k)).fold(0u128, |bits, i| bits | 1 << i);
        Hits(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_keyword_including_overlapping_ones() {
        let k = Keywords::new(&[&["gemm", "fbgemm", "mm"], &["norm", "_norm_"]]).unwrap();
        let h = k.hits("fbgemm_rms_norm_kernel");
        for word in ["gemm", "fbgemm", "mm", "norm", "_norm_"] {
            assert!(h.any(k.set(&[word])), "{word}");
        }
        assert!(!k.hits("softmax").any(k.set(&["gemm", "fbgemm", "mm", "norm", "_norm_"])));
        assert!(!h.any(k.set(&["absent"])));
    }

    #[test]
    fn refuses_more_keywords_than_a_set_holds() {
        let many: Vec<&'static str> = (0..129).map(|i| &*format!("k{i}").leak()).collect();
        assert!(Keywords::new(&[&many]).is_none());
        assert!(Keywords::new(&[&many[..128]]).is_some());
    }
}
