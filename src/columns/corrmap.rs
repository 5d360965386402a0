//! correlation → External id, as a sorted vector of pairs rather than a hash
//! map: 16 bytes an entry, no rehash spikes. Pairs are appended in trace
//! order and compacted (stable sort, keep the last of each correlation) as
//! the vector grows, which preserves the reference's last-write-wins.

/// The map. Build with [`CorrMap::push`], then [`CorrMap::compact`] before
/// reading.
#[derive(Clone, Debug, Default)]
pub struct CorrMap {
    pairs: Vec<(i64, i64)>,
    /// Length of the sorted, unique prefix.
    sorted: usize,
    #[cfg(test)]
    compactions: usize,
}

impl CorrMap {
    /// Records `correlation → external_id` (a later push wins).
    pub fn push(&mut self, correlation: i64, external_id: i64) {
        self.pairs.push((correlation, external_id));
        self.maybe_compact();
    }

    /// Compacts once the unsorted tail is half the sorted prefix, so the
    /// sorting work stays O(n log n) over any sequence of pushes and appends.
    fn maybe_compact(&mut self) {
        if self.pairs.len() >= 1024 && self.pairs.len() >= self.sorted + self.sorted / 2 {
            self.compact();
        }
    }

    /// Sorts by correlation, keeping the last value pushed for each.
    pub fn compact(&mut self) {
        if self.sorted == self.pairs.len() {
            return;
        }
        #[cfg(test)]
        {
            self.compactions += 1;
        }
        // Stable: among equal keys, older entries stay first.
        self.pairs.sort_by_key(|p| p.0);
        let mut out = 0usize;
        for i in 0..self.pairs.len() {
            if out > 0 && self.pairs[out - 1].0 == self.pairs[i].0 {
                self.pairs[out - 1] = self.pairs[i];
            } else {
                self.pairs[out] = self.pairs[i];
                out += 1;
            }
        }
        self.pairs.truncate(out);
        self.sorted = out;
    }

    /// Appends everything `other` recorded, as if pushed after this map's.
    /// Like `push`, it leaves the map to be compacted before reading: a
    /// stream merges one small map per batch into a large one, and sorting
    /// the whole map each time made a 20 GB gzip trace take twice as long
    /// as the plain file.
    pub fn append(&mut self, other: CorrMap) {
        self.pairs.extend(other.pairs);
        self.maybe_compact();
    }

    /// The External id of `correlation`. Only meaningful after `compact`.
    pub fn get(&self, correlation: &i64) -> Option<&i64> {
        let sorted = &self.pairs[..self.sorted];
        sorted.binary_search_by_key(correlation, |p| p.0).ok().map(|i| &sorted[i].1)
    }

    /// Keeps only the correlations in `wanted` (sorted, unique). Call after
    /// `compact`.
    pub fn retain_keys(&mut self, wanted: &[i64]) {
        debug_assert_eq!(self.sorted, self.pairs.len());
        let mut w = 0;
        self.pairs.retain(|&(c, _)| {
            w += wanted[w..].partition_point(|&x| x < c);
            wanted.get(w) == Some(&c)
        });
        self.sorted = self.pairs.len();
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&i64, &i64)> {
        self.pairs.iter().map(|(a, b)| (a, b))
    }

    pub fn heap_bytes(&self) -> usize {
        self.pairs.capacity() * 16
    }

    pub fn shrink_to_fit(&mut self) {
        self.pairs.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retaining_keeps_exactly_the_wanted_correlations() {
        let mut m = CorrMap::default();
        for c in [5, 1, 9, 3, 7, 1] {
            m.push(c, c * 10);
        }
        m.push(3, 31);
        m.compact();
        m.retain_keys(&[0, 1, 3, 8, 9, 12]);
        assert_eq!(m.iter().map(|(a, b)| (*a, *b)).collect::<Vec<_>>(), vec![(1, 10), (3, 31), (9, 90)]);
        assert_eq!((m.get(&1), m.get(&5), m.get(&3)), (Some(&10), None, Some(&31)));
        m.retain_keys(&[]);
        assert!(m.is_empty());
    }

    #[test]
    fn appending_many_small_maps_sorts_rarely() {
        let mut m = CorrMap::default();
        for i in 0..20_000 {
            let mut batch = CorrMap::default();
            batch.push(i % 5000, i);
            m.append(batch);
        }
        m.compact();
        assert!(m.compactions < 40, "{} compactions", m.compactions);
        assert_eq!(m.get(&7), Some(&15_007));
        assert_eq!(m.len(), 5000);
    }

    #[test]
    fn last_push_wins_across_compactions() {
        let mut m = CorrMap::default();
        for i in 0..5000 {
            m.push(i % 700, i);
        }
        m.push(3, -1);
        let mut other = CorrMap::default();
        other.push(5, -5);
        m.append(other);
        m.compact();
        assert_eq!(m.get(&3), Some(&-1));
        assert_eq!(m.get(&5), Some(&-5));
        assert_eq!(m.get(&6), Some(&4906));
        assert_eq!(m.get(&700), None);
        assert_eq!(m.len(), 700);
    }
}
