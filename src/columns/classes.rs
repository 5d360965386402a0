//! Shared row fields: the fields that repeat from row to row (a kernel's
//! category, thread and stream; an operator's name and thread) are kept once
//! per distinct combination, a class, and each row holds a 4-byte index
//! into the table of classes. A trace has few classes; one whose every row
//! differs has as many classes as rows, which costs more per row but stays
//! linear.

use std::hash::Hash;

use rustc_hash::FxHashMap;

/// A column of classes, one 4-byte code a row.
#[derive(Clone, Debug)]
pub struct ClassColumn<C> {
    codes: Vec<u32>,
    classes: Vec<C>,
    /// `classes` by value while rows are pushed; dropped by
    /// [`shrink_to_fit`](Self::shrink_to_fit) and rebuilt if rows come after.
    index: FxHashMap<C, u32>,
}

impl<C> Default for ClassColumn<C> {
    fn default() -> Self {
        ClassColumn { codes: Vec::new(), classes: Vec::new(), index: FxHashMap::default() }
    }
}

impl<C: Copy + Eq + Hash> ClassColumn<C> {
    fn code(&mut self, class: C) -> u32 {
        if self.index.len() != self.classes.len() {
            self.index = self.classes.iter().zip(0..).map(|(c, i)| (*c, i)).collect();
        }
        let next = self.classes.len() as u32;
        let code = *self.index.entry(class).or_insert(next);
        if code == next {
            self.classes.push(class);
        }
        code
    }

    pub fn push(&mut self, class: C) {
        let code = self.code(class);
        self.codes.push(code);
    }

    /// Row `i`'s class. Panics when `i` is out of range, as indexing does.
    #[inline]
    pub fn get(&self, i: usize) -> &C {
        &self.classes[self.codes[i] as usize]
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Distinct classes held.
    pub fn classes(&self) -> usize {
        self.classes.len()
    }

    /// Heap bytes held (capacity, not length; the index approximately).
    pub fn heap_bytes(&self) -> usize {
        self.codes.capacity() * 4
            + self.classes.capacity() * std::mem::size_of::<C>()
            + self.index.capacity() * (std::mem::size_of::<(C, u32)>() + 1)
    }

    pub fn shrink_to_fit(&mut self) {
        self.codes.shrink_to_fit();
        self.classes.shrink_to_fit();
        self.index = FxHashMap::default();
    }

    /// Appends `other`'s rows, passing each of its classes through `map`.
    pub fn append_with(&mut self, other: ClassColumn<C>, map: impl Fn(C) -> C) {
        let codes: Vec<u32> = other.classes.iter().map(|&c| self.code(map(c))).collect();
        super::reserve_rows(&mut self.codes, other.codes.len());
        self.codes.extend(other.codes.iter().map(|&c| codes[c as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_as_pushed_and_share_their_classes() {
        let rows: Vec<(u32, i32)> = (0..100).map(|i| (i % 3, -(i as i32 % 2))).collect();
        let mut c = ClassColumn::default();
        rows.iter().for_each(|&r| c.push(r));
        assert_eq!((0..100).map(|i| *c.get(i)).collect::<Vec<_>>(), rows);
        assert_eq!(c.classes(), 6);
        // Pushing after a shrink rebuilds the index: no duplicate classes.
        c.shrink_to_fit();
        c.push(rows[1]);
        assert_eq!((c.classes(), *c.get(100)), (6, rows[1]));
    }

    #[test]
    fn appending_maps_and_merges_classes() {
        let mut a = ClassColumn::default();
        a.push(1u32);
        a.push(2);
        let mut b = ClassColumn::default();
        for v in [5u32, 1, 5, 7] {
            b.push(v);
        }
        // b's 5 is a's 2, its 1 is a's 1, its 7 is new (70).
        a.append_with(b, |v| match v {
            5 => 2,
            7 => 70,
            v => v,
        });
        assert_eq!((0..a.len()).map(|i| *a.get(i)).collect::<Vec<_>>(), vec![1, 2, 2, 1, 2, 70]);
        assert_eq!(a.classes(), 3);
    }
}
