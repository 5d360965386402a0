//! Per-kernel totals of the analysed events (`AggregateStats`), keyed by
//! (canonical name, category) in first-seen order, each with the launch
//! that carries the most time as its representative. Names are the events'
//! shared name records, never copied: a stage can have hundreds of
//! thousands of kernel names.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use indexmap::map::Entry;
use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use super::OverlapKernel;
use crate::analysis::kernels::extract::KernelName;

/// A name record compared by (canonical name, category): the aggregation key.
#[derive(Clone, Debug)]
pub struct AggregateKey(pub Arc<KernelName>);

impl PartialEq for AggregateKey {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0) || (self.0.canonical == o.0.canonical && self.0.category == o.0.category)
    }
}

impl Eq for AggregateKey {}

impl Hash for AggregateKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.canonical.hash(h);
        self.0.category.hash(h);
    }
}

/// A name record compared by canonical name alone: the key of the
/// overlapper counter.
#[derive(Clone, Debug)]
pub struct CanonicalKey(pub Arc<KernelName>);

impl PartialEq for CanonicalKey {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0) || self.0.canonical == o.0.canonical
    }
}

impl Eq for CanonicalKey {}

impl Hash for CanonicalKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.canonical.hash(h);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct KernelAggregate {
    /// The first event's name record (canonical name and category).
    pub name: Arc<KernelName>,
    pub count: u64,
    pub total_us: f64,
    pub hidden_us: f64,
    pub exclusive_us: f64,
    pub hidden_by_compute_us: f64,
    pub overlap_with: Overlappers,
    pub representative_idx: Option<usize>,
    pub representative_score: f64,
}

impl KernelAggregate {
    pub fn new(name: Arc<KernelName>) -> Self {
        KernelAggregate {
            name,
            count: 0,
            total_us: 0.0,
            hidden_us: 0.0,
            exclusive_us: 0.0,
            hidden_by_compute_us: 0.0,
            overlap_with: Overlappers::default(),
            representative_idx: None,
            representative_score: -1.0,
        }
    }

    pub fn name(&self) -> &str {
        &self.name.canonical
    }

    pub fn category(&self) -> &'static str {
        self.name.category
    }

    pub fn hidden_ratio(&self) -> f64 {
        if self.total_us != 0.0 {
            self.hidden_us / self.total_us
        } else {
            0.0
        }
    }

    pub fn exclusive_ratio(&self) -> f64 {
        if self.total_us != 0.0 {
            self.exclusive_us / self.total_us
        } else {
            0.0
        }
    }
}

/// Hidden time per dominant overlapper (by canonical name), first-seen
/// order (a Python `Counter`). Boxed: most kernels have none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlappers(Option<Box<IndexMap<CanonicalKey, f64, FxBuildHasher>>>);

impl Overlappers {
    /// `Counter.update` with one item: a new name keeps the incoming order;
    /// float addition commutes, so sums are the reference's bit for bit.
    fn add(&mut self, name: &Arc<KernelName>, v: f64) {
        match self.0.get_or_insert_with(Default::default).entry(CanonicalKey(name.clone())) {
            Entry::Occupied(mut sum) => *sum.get_mut() += v,
            Entry::Vacant(slot) => {
                slot.insert(v);
            }
        }
    }

    /// The overlapper with the most hidden time, first on ties.
    pub fn most_common(&self) -> Option<(&str, f64)> {
        let counter = self.0.as_deref()?;
        crate::pysem::most_common_key(counter).map(|k| (&*k.0.canonical, counter[k]))
    }
}

pub type Aggregates = IndexMap<AggregateKey, KernelAggregate, FxBuildHasher>;

/// Sums the sweep's results per (canonical name, category).
pub fn aggregate_events(events: &[OverlapKernel]) -> Aggregates {
    // Kernels sharing a name record share one aggregate: look it up once
    // per record (by address), not once per kernel.
    let mut slots: rustc_hash::FxHashMap<*const KernelName, usize> = Default::default();
    for e in events {
        slots.entry(Arc::as_ptr(&e.name)).or_insert(usize::MAX);
    }
    // At most one aggregate per record: room for all up front, rather than
    // doubling past what is needed.
    let mut out = Aggregates::with_capacity_and_hasher(slots.len(), FxBuildHasher);
    for e in events {
        let slot = slots.entry(Arc::as_ptr(&e.name)).or_default();
        if *slot == usize::MAX {
            let entry = out.entry(AggregateKey(e.name.clone()));
            *slot = entry.index();
            entry.or_insert_with(|| KernelAggregate::new(e.name.clone()));
        }
        let slot = *slot;
        let stats = &mut out[slot];
        stats.count += 1;
        stats.total_us += e.dur;
        stats.hidden_us += e.hidden_us;
        stats.exclusive_us += e.exclusive_us;
        stats.hidden_by_compute_us += e.hidden_by_compute_us;
        for (name, v) in e.overlap_with.entries() {
            stats.overlap_with.add(name, v);
        }
        let score = e.hidden_us + e.exclusive_us;
        if score > stats.representative_score {
            stats.representative_score = score;
            stats.representative_idx = Some(e.idx());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(canonical: &str, category: &'static str) -> Arc<KernelName> {
        Arc::new(KernelName { canonical: canonical.into(), category })
    }

    #[test]
    fn records_with_equal_names_share_an_aggregate() {
        let (a1, a2, a_mem, b) = (name("a", "other"), name("a", "other"), name("a", "memory"), name("b", "other"));
        let stream: super::super::StreamName = Arc::new(Box::from("7"));
        let mut events: Vec<OverlapKernel> = [&a1, &a2, &a_mem, &b, &a1]
            .iter()
            .enumerate()
            .map(|(i, n)| OverlapKernel::new(i, super::super::NO_ROW, (*n).clone(), stream.clone(), i as f64, 1.0))
            .collect();
        events[0].exclusive_us = 1.0;
        events[1].hidden_us = 3.0;
        events[1].overlap_with.add(&b, -0.0);
        events[4].overlap_with.add(&name("b", "memory"), 2.0);
        events[4].overlap_with.add(&a_mem, 1.0);
        let out = aggregate_events(&events);
        let keys: Vec<(&str, &str, u64)> = out.values().map(|s| (s.name(), s.category(), s.count)).collect();
        assert_eq!(keys, vec![("a", "other", 3), ("a", "memory", 1), ("b", "other", 1)]);
        let a = &out[0];
        assert_eq!((a.representative_idx, a.hidden_us, a.exclusive_us), (Some(1), 3.0, 1.0));
        // Overlappers are counted by canonical name, first-seen order.
        assert_eq!(a.overlap_with.most_common(), Some(("b", 2.0)));
        assert!(out[2].overlap_with.most_common().is_none());
        let mut zero = Overlappers::default();
        zero.add(&b, -0.0);
        assert!(zero.most_common().is_some_and(|(n, v)| n == "b" && v.is_sign_negative()));
    }
}
