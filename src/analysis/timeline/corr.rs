//! Values keyed by correlation id, built from rows in preference order.
//!
//! Profilers number correlations densely, so the table is usually a direct
//! array over the id range: built in one pass, read with one index. Ids
//! spread too thinly for that (a hand-made or merged trace) fall back to
//! sorted pairs read by binary search. Both give the same answers. The
//! direct array keeps a presence bit per slot rather than an `Option` tag,
//! so a slot costs the value's size (4 bytes for a row index) plus a bit.

/// Ids spanning more than this many slots per value (plus a floor) are
/// kept as sorted pairs instead of a direct array.
const DENSE_SLOTS_PER_VALUE: usize = 4;
const DENSE_FLOOR: usize = 4096;

/// Correlation id → value.
pub(crate) enum CorrTable<T> {
    Dense { base: i64, present: Vec<u64>, values: Vec<T> },
    Sparse(Vec<(i64, T)>),
}

impl<T: Copy + Default> CorrTable<T> {
    /// The table of `rows`, given in preference order: a value met for an
    /// id already present is folded into it with `merge(old, new)`.
    pub(crate) fn build<I>(rows: impl Fn() -> I, merge: impl Fn(&mut T, T)) -> CorrTable<T>
    where
        I: Iterator<Item = (i64, T)>,
    {
        let (mut lo, mut hi, mut n) = (i64::MAX, i64::MIN, 0usize);
        for (c, _) in rows() {
            lo = lo.min(c);
            hi = hi.max(c);
            n += 1;
        }
        if n == 0 {
            return CorrTable::Sparse(Vec::new());
        }
        let span = (hi as i128 - lo as i128) as u128 + 1;
        let limit = n.saturating_mul(DENSE_SLOTS_PER_VALUE).saturating_add(DENSE_FLOOR);
        if span <= limit as u128 {
            let span = span as usize;
            let mut present = vec![0u64; span.div_ceil(64)];
            let mut values = vec![T::default(); span];
            for (c, v) in rows() {
                let i = (c - lo) as usize;
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                if present[word] & bit != 0 {
                    merge(&mut values[i], v);
                } else {
                    present[word] |= bit;
                    values[i] = v;
                }
            }
            return CorrTable::Dense { base: lo, present, values };
        }
        let mut all: Vec<(i64, T)> = rows().collect();
        // Stable: equal ids keep their preference order.
        all.sort_by_key(|e| e.0);
        // Folded in place: a second array would double the table's peak.
        all.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                merge(&mut kept.1, later.1);
            }
            same
        });
        all.shrink_to_fit();
        CorrTable::Sparse(all)
    }

    /// The value of `corr`.
    #[inline]
    pub(crate) fn get(&self, corr: i64) -> Option<T> {
        match self {
            CorrTable::Dense { base, present, values } => {
                let i = usize::try_from(corr.checked_sub(*base)?).ok()?;
                let v = values.get(i)?;
                (present[i / 64] & (1 << (i % 64)) != 0).then_some(*v)
            }
            CorrTable::Sparse(pairs) => {
                let i = pairs.partition_point(|e| e.0 < corr);
                pairs.get(i).filter(|e| e.0 == corr).map(|e| e.1)
            }
        }
    }

    /// How many ids have a value.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            CorrTable::Dense { present, .. } => present.iter().map(|w| w.count_ones() as usize).sum(),
            CorrTable::Sparse(pairs) => pairs.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(rows: &[(i64, u32)]) -> (CorrTable<u32>, CorrTable<u32>) {
        let last = |old: &mut u32, new: u32| *old = new;
        let dense = CorrTable::build(|| rows.iter().copied(), last);
        // The same rows, spread far apart, take the sorted fallback.
        let far: Vec<(i64, u32)> = rows.iter().map(|&(c, v)| (c * 1_000_000, v)).collect();
        let sparse = CorrTable::build(|| far.iter().copied(), last);
        (dense, sparse)
    }

    #[test]
    fn dense_and_sparse_agree_and_later_rows_win() {
        let rows = [(5, 1), (3, 2), (5, 3), (-2, 4), (3, 5), (9, 6)];
        let (dense, sparse) = both(&rows);
        assert!(matches!(dense, CorrTable::Dense { .. }));
        assert!(matches!(sparse, CorrTable::Sparse(_)));
        for c in -4..12 {
            let want = rows.iter().rev().find(|r| r.0 == c).map(|r| r.1);
            assert_eq!(dense.get(c), want, "dense {c}");
            assert_eq!(sparse.get(c * 1_000_000), want, "sparse {c}");
        }
        assert_eq!(dense.len(), 4);
        assert_eq!(sparse.len(), 4);
    }

    #[test]
    fn merge_sees_rows_in_preference_order() {
        let rows = [(1, 10), (1, 7), (1, 12), (2, 3)];
        let min = |old: &mut u32, new: u32| *old = (*old).min(new);
        let t = CorrTable::build(|| rows.iter().copied(), min);
        assert_eq!(t.get(1), Some(7));
        let mut order = Vec::new();
        let rec = std::cell::RefCell::new(&mut order);
        let _ = CorrTable::build(|| rows.iter().copied(), |old: &mut u32, new| rec.borrow_mut().push((*old, new)));
        assert_eq!(order, vec![(10, 7), (10, 12)]);
    }

    #[test]
    fn extreme_ids_do_not_overflow() {
        let rows = [(i64::MIN, 1u32), (i64::MAX, 2), (0, 3)];
        let t = CorrTable::build(|| rows.iter().copied(), |o: &mut u32, n| *o = n);
        assert!(matches!(t, CorrTable::Sparse(_)));
        assert_eq!(t.get(i64::MIN), Some(1));
        assert_eq!(t.get(i64::MAX), Some(2));
        assert_eq!(t.get(0), Some(3));
        assert_eq!(t.get(1), None);
        let empty = CorrTable::build(std::iter::empty::<(i64, u32)>, |o: &mut u32, n| *o = n);
        assert_eq!(empty.get(0), None);
    }
}
