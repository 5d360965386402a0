//! Integer id columns (External id, correlation) at 4 bytes a row: the
//! profiler numbers its ops and launches from small counters, so almost
//! every id fits in 32 bits. The rare id that does not (a negative one, one
//! of 2^32 or more) is kept exactly in a side list of `(row, id)` pairs,
//! which a lookup finds by binary search, so no id is ever changed.

use std::marker::PhantomData;

/// The code of a missing id.
const MISSING: u32 = u32::MAX;
/// The code of an id kept in the side list.
const WIDE: u32 = u32::MAX - 1;

/// A value an [`IdColumn`] holds: `i64` (always present) or `Option<i64>`.
pub trait IdValue: Copy {
    fn to_opt(self) -> Option<i64>;
    fn from_opt(v: Option<i64>) -> Self;
}

impl IdValue for Option<i64> {
    #[inline]
    fn to_opt(self) -> Option<i64> {
        self
    }
    #[inline]
    fn from_opt(v: Option<i64>) -> Self {
        v
    }
}

impl IdValue for i64 {
    #[inline]
    fn to_opt(self) -> Option<i64> {
        Some(self)
    }
    #[inline]
    fn from_opt(v: Option<i64>) -> Self {
        // Only present values are pushed into an `i64` column.
        v.unwrap_or_default()
    }
}

/// A column of ids, one 4-byte code a row.
#[derive(Clone, Debug)]
pub struct IdColumn<T> {
    codes: Vec<u32>,
    /// Rows whose id does not fit a code, in row order.
    wide: Vec<(usize, i64)>,
    _value: PhantomData<T>,
}

impl<T> Default for IdColumn<T> {
    fn default() -> Self {
        IdColumn { codes: Vec::new(), wide: Vec::new(), _value: PhantomData }
    }
}

impl<T: IdValue> IdColumn<T> {
    pub fn push(&mut self, v: T) {
        let code = match v.to_opt() {
            None => MISSING,
            Some(id) => match u32::try_from(id) {
                Ok(c) if c < WIDE => c,
                _ => {
                    self.wide.push((self.codes.len(), id));
                    WIDE
                }
            },
        };
        self.codes.push(code);
    }

    /// The id of row `i`. Panics when `i` is out of range, as indexing does.
    #[inline]
    pub fn get(&self, i: usize) -> T {
        T::from_opt(match self.codes[i] {
            MISSING => None,
            WIDE => self.wide.binary_search_by_key(&i, |p| p.0).ok().map(|j| self.wide[j].1),
            c => Some(i64::from(c)),
        })
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Heap bytes held (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.codes.capacity() * std::mem::size_of::<u32>() + self.wide.capacity() * std::mem::size_of::<(usize, i64)>()
    }

    pub fn shrink_to_fit(&mut self) {
        self.codes.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    /// Appends `other`'s rows after this column's.
    pub fn append(&mut self, other: IdColumn<T>) {
        let base = self.codes.len();
        super::reserve_rows(&mut self.codes, other.codes.len());
        self.codes.extend_from_slice(&other.codes);
        drop(other.codes);
        self.wide.extend(other.wide.into_iter().map(|(row, id)| (row + base, id)));
    }
}

impl<T: IdValue> FromIterator<T> for IdColumn<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut c = IdColumn::default();
        for v in iter {
            c.push(v);
        }
        c
    }
}

impl<T: IdValue + PartialEq> PartialEq for IdColumn<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_comes_back_exactly() {
        let ids = [
            Some(0),
            None,
            Some(7),
            Some(-1),
            Some(i64::MIN),
            Some(i64::MAX),
            Some(i64::from(u32::MAX)),
            Some(i64::from(u32::MAX - 1)),
            Some(i64::from(u32::MAX - 2)),
            Some(1 << 40),
            None,
            Some(3),
        ];
        let col: IdColumn<Option<i64>> = ids.iter().copied().collect();
        assert_eq!(col.iter().collect::<Vec<_>>(), ids);
        // Only the ids that do not fit a code go to the side list.
        assert_eq!(col.wide.len(), 6);
    }

    #[test]
    fn appended_columns_keep_their_wide_ids() {
        let mut a: IdColumn<i64> = [1, -5, 2].into_iter().collect();
        let b: IdColumn<i64> = [1 << 33, 4, -6].into_iter().collect();
        a.append(b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, -5, 2, 1 << 33, 4, -6]);
    }

    #[test]
    fn a_row_costs_four_bytes() {
        let col: IdColumn<Option<i64>> = (0..1000).map(Some).collect();
        assert!(col.heap_bytes() < 1000 * 5, "{}", col.heap_bytes());
    }
}
