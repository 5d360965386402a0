//! Per-kernel totals of the analysed events (`AggregateStats`), keyed by
//! (canonical name, category) in first-seen order, each with the launch
//! that carries the most time as its representative.

use std::sync::Arc;

use indexmap::IndexMap;

use super::OverlapKernel;
use crate::analysis::kernels::extract::KernelName;

#[derive(Clone, Debug, PartialEq)]
pub struct KernelAggregate {
    pub name: Arc<str>,
    pub category: &'static str,
    pub count: u64,
    pub total_us: f64,
    pub hidden_us: f64,
    pub exclusive_us: f64,
    pub hidden_by_compute_us: f64,
    pub overlap_with: IndexMap<Arc<str>, f64>,
    pub representative_idx: Option<usize>,
    pub representative_score: f64,
}

impl KernelAggregate {
    fn new(name: Arc<str>, category: &'static str) -> Self {
        KernelAggregate {
            name,
            category,
            count: 0,
            total_us: 0.0,
            hidden_us: 0.0,
            exclusive_us: 0.0,
            hidden_by_compute_us: 0.0,
            overlap_with: IndexMap::new(),
            representative_idx: None,
            representative_score: -1.0,
        }
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

pub type Aggregates = IndexMap<(Arc<str>, &'static str), KernelAggregate>;

/// Sums the sweep's results per (canonical name, category).
pub fn aggregate_events(events: &[OverlapKernel]) -> Aggregates {
    let mut out: Aggregates = IndexMap::new();
    // Kernels sharing a name record share one aggregate: look it up once
    // per record (by address), not once per kernel.
    let mut slots: rustc_hash::FxHashMap<*const KernelName, usize> = Default::default();
    for e in events {
        let slot = *slots.entry(Arc::as_ptr(&e.name)).or_insert_with(|| {
            let key: (Arc<str>, &'static str) = (Arc::from(e.canonical_name()), e.category());
            let entry = out.entry(key);
            let i = entry.index();
            entry.or_insert_with(|| KernelAggregate::new(Arc::from(e.canonical_name()), e.category()));
            i
        });
        let stats = &mut out[slot];
        stats.count += 1;
        stats.total_us += e.dur;
        stats.hidden_us += e.hidden_us;
        stats.exclusive_us += e.exclusive_us;
        stats.hidden_by_compute_us += e.hidden_by_compute_us;
        for (k, v) in e.overlap_with.iter() {
            // Counter.update: new keys keep the incoming order; float
            // addition commutes, so the sum is the reference's bit for bit.
            match stats.overlap_with.get_mut(k) {
                Some(cur) => *cur += v,
                None => {
                    stats.overlap_with.insert(Arc::from(k), v);
                }
            }
        }
        let score = e.hidden_us + e.exclusive_us;
        if score > stats.representative_score {
            stats.representative_score = score;
            stats.representative_idx = Some(e.idx());
        }
    }
    out
}
