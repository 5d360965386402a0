//! Small helpers that give Rust the ordering and min/max semantics the
//! reference gets from Python: float comparison that never panics a sort,
//! first-wins `max`/`min`, and Python's two-argument `max(a, b)`.

use std::cmp::Ordering;

pub use crate::pysem::fcmp;

/// Python's `max(a, b)`: `a` unless `b > a`.
pub fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// Python's `min(a, b)`: `a` unless `b < a`.
pub fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// Index of the first maximal element by `cmp` (Python's `max(..., key=)`).
pub fn first_max_by<T>(items: &[T], mut cmp: impl FnMut(&T, &T) -> Ordering) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, item) in items.iter().enumerate() {
        match best {
            None => best = Some(i),
            Some(b) => {
                if cmp(item, &items[b]) == Ordering::Greater {
                    best = Some(i);
                }
            }
        }
    }
    best
}

/// Python's `Counter.most_common(1)[0][0]`: the first key holding the
/// largest count, in insertion order.
pub fn most_common_key<K, V: PartialOrd + Copy>(counter: &indexmap::IndexMap<K, V>) -> Option<&K> {
    let mut best: Option<(&K, V)> = None;
    for (k, &v) in counter {
        match best {
            None => best = Some((k, v)),
            Some((_, bv)) if v > bv => best = Some((k, v)),
            _ => {}
        }
    }
    best.map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    #[test]
    fn first_max_keeps_first_of_equals() {
        assert_eq!(first_max_by(&[3, 1, 3, 2], |a, b| a.cmp(b)), Some(0));
        assert_eq!(first_max_by::<i32>(&[], |a, b| a.cmp(b)), None);
    }

    #[test]
    fn most_common_ties_go_to_first_inserted() {
        let mut c: IndexMap<&str, i64> = IndexMap::new();
        c.insert("b", 2);
        c.insert("a", 2);
        c.insert("c", 1);
        assert_eq!(most_common_key(&c), Some(&"b"));
    }

    #[test]
    fn python_two_argument_max_keeps_negative_zero() {
        assert!(py_max(-0.0, 0.0).is_sign_negative());
        assert_eq!(py_min(20.0, 3.0), 3.0);
        assert_eq!(fcmp(-0.0, 0.0), Ordering::Equal);
        assert_eq!(fcmp(1.0, f64::NAN), Ordering::Less);
    }
}
