//! Kernel attribution inputs: which events are GPU kernels, their canonical
//! names and categories, and per-name totals.

pub mod extract;
pub mod family;
mod keywords;
pub mod names;

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

pub use extract::{
    extract_trace_data, group_kernels_by_stage, kernel_stage, CpuOpEvent, KernelEvent, KernelName, LaunchEvent,
    TraceData,
};
pub use names::{kernel_category, kernel_table_category, kernel_table_name, short_name, KernelRule};

use crate::analysis::types::Aggregate;
use crate::columns::Trace;

/// Totals per canonical name (borrowed from the kernels' name records).
pub type NameTotals<'a> = IndexMap<&'a str, Aggregate, FxBuildHasher>;

/// Category per canonical name.
pub type NameCategories<'a> = IndexMap<&'a str, &'static str, FxBuildHasher>;

/// Totals per canonical name, in first-seen order.
pub fn aggregate_by_name<'a>(trace: &Trace, kernels: impl IntoIterator<Item = &'a KernelEvent>) -> NameTotals<'a> {
    let mut out = NameTotals::default();
    for k in kernels {
        let dur = k.dur(trace);
        let item = out.entry(k.canonical()).or_default();
        item.total_us += dur;
        item.count += 1;
        item.max_us = item.max_us.max(dur);
    }
    out
}

/// Canonical name → category, last kernel with that name winning, in
/// first-seen order (a Python dict comprehension).
pub fn categories_by_name<'a>(kernels: impl IntoIterator<Item = &'a KernelEvent>) -> NameCategories<'a> {
    let mut out = NameCategories::default();
    for k in kernels {
        out.insert(k.canonical(), k.category());
    }
    out
}

/// Left-to-right float sum, as Python's `sum()`.
pub fn total_dur<'a>(trace: &Trace, kernels: impl IntoIterator<Item = &'a KernelEvent>) -> f64 {
    kernels.into_iter().fold(0.0, |acc, k| acc + k.dur(trace))
}
