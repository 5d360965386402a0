//! Ranking: which aggregated kernels become rows (exposed "headroom"
//! kernels first, then mostly-hidden elementwise / memory work), their
//! priority P1–P5, recommendation and suggestion text.

use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;

use super::aggregate::{Aggregates, KernelAggregate};
use super::dependency::{build_neighbor_index, classify_dependency_signal, dependency_risk_label, NeighborIndex};
use super::detect::short_name;
use super::lookup::relaxed_lookup;
use super::source_map::SourceMap;
use super::{ActionRow, OverlapKernel};
use crate::analysis::kernels::{kernel_category, KernelRule};
use crate::analysis::timeline::Union;
use crate::pysem::{fcmp, py_max};

/// What a row's share of the stage's busy time counts for its kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShareBasis {
    /// The time any launch of the kernel runs, so a share is at most 100 %.
    #[default]
    Running,
    /// The launches' durations summed, as the reference tool counts them:
    /// above 100 % when launches of one kernel run side by side on several
    /// streams.
    Summed,
}

/// What an exposed kernel's row advises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Advice {
    /// By what the kernel is: compute (the work the others overlap with)
    /// is deferred to the kernel table, since neither fusion nor overlap
    /// cuts it; an exposed copy is to be overlapped, not fused.
    #[default]
    ByCategory,
    /// The reference tool's: fusion for every exposed kernel that is not
    /// communication.
    Reference,
}

/// How the action rows are counted, advised and cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowOptions {
    pub share: ShareBasis,
    pub advice: Advice,
    /// Rows kept, all of them when 0.
    pub table_limit: usize,
}

fn category_weight(category: &str) -> f64 {
    match category {
        "communication" => 1.3,
        "memory" => 1.15,
        "elementwise" => 1.0,
        "compute" => 0.35,
        "other" => 0.8,
        _ => 1.0,
    }
}

/// Up to five kernels with at least 5 µs and 45% exclusive time, by
/// weighted exclusive time; compute kernels only after all others.
pub fn top_overlap_opportunities(aggregates: &Aggregates) -> Vec<&KernelAggregate> {
    let candidates = aggregates.values().filter(|s| s.total_us >= 5.0 && s.exclusive_ratio() >= 0.45);
    let (mut primary, mut fallback): (Vec<&KernelAggregate>, Vec<&KernelAggregate>) =
        candidates.partition(|s| s.category() != "compute");
    let key = |s: &KernelAggregate| s.exclusive_us * category_weight(s.category());
    primary.sort_by(|a, b| fcmp(key(b), key(a)));
    fallback.sort_by(|a, b| fcmp(key(b), key(a)));
    primary.extend(fallback);
    primary.truncate(5);
    primary
}

/// Up to five elementwise / memory kernels with at least 5 µs and 65%
/// hidden time, by hidden time boosted by the share hidden under compute.
pub fn top_hidden_low_roi(aggregates: &Aggregates) -> Vec<&KernelAggregate> {
    let mut candidates: Vec<&KernelAggregate> = aggregates
        .values()
        .filter(|s| matches!(s.category(), "elementwise" | "memory") && s.total_us >= 5.0 && s.hidden_ratio() >= 0.65)
        .collect();
    let key = |s: &KernelAggregate| s.hidden_us * (1.0 + s.hidden_by_compute_us / py_max(s.hidden_us, 1.0));
    candidates.sort_by(|a, b| fcmp(key(b), key(a)).then_with(|| fcmp(b.hidden_ratio(), a.hidden_ratio())));
    candidates.truncate(5);
    candidates
}

/// `name (x.y us)` for the largest overlappers, or `n/a`.
fn format_overlap_counter(stats: &KernelAggregate) -> String {
    match stats.overlap_with.most_common() {
        None => "n/a".to_string(),
        Some((name, us)) => format!("{} ({:.1} us)", short_name(name, 48), us),
    }
}

/// The reference's priority and recommendation of a row, as `advice`
/// words them: under [`Advice::ByCategory`] an exposed GEMM or attention
/// kernel is deferred (P3) to the kernel table, and an exposed copy is to
/// be overlapped rather than fused.
fn advise(
    advice: Advice,
    verdict: &str,
    stats: &KernelAggregate,
    reference: (&'static str, &'static str),
) -> (&'static str, &'static str) {
    let (priority, recommendation) = reference;
    if advice == Advice::Reference || verdict != "headroom" || priority == "P5" {
        return reference;
    }
    match stats.category() {
        "compute" if is_matrix_work(stats.name()) => ("P3", "defer"),
        "memory" if recommendation == "try fusion" => (priority, "try overlap"),
        _ => reference,
    }
}

/// A kernel the kernel table names a GEMM or attention kernel: the work
/// itself, which a faster kernel cuts, not fusion or overlap (a Triton
/// kernel the overlap table also calls compute may be pointwise work).
fn is_matrix_work(name: &str) -> bool {
    matches!(kernel_category(name, KernelRule::Default), "gemm" | "attention")
}

fn headroom_suggestion(stats: &KernelAggregate, advice: Advice) -> String {
    match (advice, stats.category()) {
        (Advice::ByCategory, "compute") if is_matrix_work(stats.name()) => {
            return "Compute is the work the other kernels overlap with: a faster kernel cuts it (see the kernel table), and communication and copies can hide under it.".to_string();
        }
        (Advice::ByCategory, "memory") => {
            return "This copy is still exposed. Check whether it can run on another stream under compute (a host copy needs pinned memory for that) or be avoided.".to_string();
        }
        _ => {}
    }
    match stats.category() {
        "communication" => "Communication is still exposed. Check overlap with nearby compute.",
        "elementwise" | "memory" => "This work is still exposed. Check fusion or nearby compute coverage.",
        _ => "This work is still exposed. Check stream placement and immediate dependencies.",
    }
    .to_string()
}

fn hidden_suggestion(stats: &KernelAggregate) -> String {
    let overlap = format_overlap_counter(stats);
    if overlap != "n/a" {
        format!("Mostly hidden under {overlap}. Revisit only if schedule or fusion changes.")
    } else {
        "Mostly hidden already. Revisit only if schedule or fusion changes.".to_string()
    }
}

/// Priority and recommendation of a row.
pub fn priority_and_recommendation(
    verdict: &str,
    category: &str,
    dependency_signal: &str,
    stats: &KernelAggregate,
    share_pct: f64,
) -> (&'static str, &'static str) {
    let dep = dependency_risk_label(dependency_signal);
    if share_pct < 1.0 {
        return ("P5", "skip");
    }
    if verdict == "headroom" {
        if dep == "low" {
            return ("P1", if category == "communication" { "try overlap" } else { "try fusion" });
        }
        return ("P2", "check deps");
    }
    if verdict == "low-roi-hidden" {
        return ("P4", "skip");
    }
    if stats.exclusive_ratio() >= 0.85 && dep == "low" {
        return ("P3", "defer");
    }
    if stats.hidden_ratio() >= 0.7 {
        return ("P5", "skip");
    }
    match dep {
        "high" => ("P4", "check deps"),
        "unclear" => ("P4", "inspect"),
        _ => ("P4", "defer"),
    }
}

struct RowContext<'a> {
    map: &'a SourceMap,
    events: &'a [OverlapKernel],
    neighbors: NeighborIndex,
    total_busy_us: f64,
    advice: Advice,
    /// Each candidate's running time ([`ShareBasis::Running`]), in the
    /// order of `candidates`.
    running: Option<(Vec<&'a KernelAggregate>, Vec<Option<f64>>)>,
}

impl RowContext<'_> {
    /// The time `stats` counts towards its share.
    fn share_time(&self, stats: &KernelAggregate) -> f64 {
        let Some((candidates, running)) = &self.running else { return stats.total_us };
        let i = candidates.iter().position(|c| std::ptr::eq(*c, stats));
        i.and_then(|i| running[i]).unwrap_or(stats.total_us)
    }
}

/// The time any launch of each candidate runs (the union of its launches'
/// intervals), in one pass over the events; `None` where no two launches
/// overlap, so that the summed time stands as it was added up. Launches are
/// held as 4-byte event indexes.
fn running_times(candidates: &[&KernelAggregate], events: &[OverlapKernel]) -> Vec<Option<f64>> {
    let mut launches: Vec<Vec<u32>> = vec![Vec::new(); candidates.len()];
    for (i, e) in events.iter().enumerate() {
        let found = candidates.iter().position(|c| {
            Arc::ptr_eq(&c.name, &e.name)
                || (c.name.canonical == e.name.canonical && c.name.category == e.name.category)
        });
        if let (Some(c), Ok(i)) = (found, u32::try_from(i)) {
            launches[c].push(i);
        }
    }
    launches
        .into_iter()
        .map(|mut order| {
            order.sort_unstable_by(|&a, &b| events[a as usize].ts.total_cmp(&events[b as usize].ts));
            union_length(order.iter().map(|&i| (events[i as usize].ts, events[i as usize].end())))
        })
        .collect()
}

/// The time covered by `spans` (start, end), given in order of start, or
/// `None` when no two of them overlap (touching is not overlapping); empty
/// or reversed spans add nothing.
pub(super) fn union_length(spans: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let mut union = Union::default();
    let mut reach = f64::NEG_INFINITY;
    let mut overlapped = false;
    for (start, end) in spans.filter(|(start, end)| end > start) {
        overlapped |= start < reach;
        reach = reach.max(end);
        union.push(start, end);
    }
    overlapped.then(|| union.total())
}

fn make_row(stats: &KernelAggregate, verdict: &str, suggestion: String, cx: &RowContext) -> ActionRow {
    let source = relaxed_lookup(cx.map, stats.name());
    let share_pct = if cx.total_busy_us > 0.0 { cx.share_time(stats) / cx.total_busy_us * 100.0 } else { 0.0 };
    let mut signal = "adjacency unclear".to_string();
    let mut prev_neighbor = "none".to_string();
    let mut next_neighbor = "none".to_string();
    if let Some(rep) = stats.representative_idx {
        if let Some(current) = cx.events.iter().find(|e| e.idx() == rep) {
            let (prev, next) = cx.neighbors.get(&rep).copied().unwrap_or((None, None));
            let prev = prev.and_then(|p| cx.events.get(p));
            let next = next.and_then(|n| cx.events.get(n));
            (signal, prev_neighbor, next_neighbor) = classify_dependency_signal(current, source, prev, next, cx.map);
        }
    }
    let (priority, recommendation) = advise(
        cx.advice,
        verdict,
        stats,
        priority_and_recommendation(verdict, stats.category(), &signal, stats, share_pct),
    );
    ActionRow {
        priority: priority.to_string(),
        verdict: verdict.to_string(),
        kernel: stats.name().to_string(),
        category: stats.category().to_string(),
        total_us: stats.total_us,
        share_pct,
        exclusive_ratio: stats.exclusive_ratio(),
        hidden_ratio: stats.hidden_ratio(),
        python_scope: source.and_then(|s| s.best_scope()).unwrap_or("unmapped").to_string(),
        launch_op: source.and_then(|s| s.best_launch_op()).unwrap_or("n/a").to_string(),
        mapping_ratio: source.map_or(0.0, |s| s.mapping_ratio()),
        dependency_signal: signal,
        prev_neighbor,
        next_neighbor,
        recommendation: recommendation.to_string(),
        suggestion,
        representative_idx: stats.representative_idx.unwrap_or_default(),
    }
}

/// Headroom rows (P5 ones dropped), then low-ROI hidden rows for kernels
/// not already listed; cut to `table_limit` when it is positive.
pub fn build_action_rows(
    aggregates: &Aggregates,
    map: &SourceMap,
    events: &[OverlapKernel],
    total_busy_us: f64,
    opts: RowOptions,
) -> Vec<ActionRow> {
    let headroom = top_overlap_opportunities(aggregates);
    let hidden = top_hidden_low_roi(aggregates);
    // Only the candidates' representative launches are asked about.
    let representatives: HashSet<usize> = headroom.iter().chain(&hidden).filter_map(|a| a.representative_idx).collect();
    let neighbors = build_neighbor_index(events, |idx| representatives.contains(&idx));
    let running = (opts.share == ShareBasis::Running).then(|| {
        let candidates: Vec<&KernelAggregate> = headroom.iter().chain(&hidden).copied().collect();
        let times = running_times(&candidates, events);
        (candidates, times)
    });
    let cx = RowContext { map, events, neighbors, total_busy_us, advice: opts.advice, running };
    let mut rows = Vec::new();
    let mut seen: HashSet<&str> = HashSet::default();
    for stats in headroom {
        let row = make_row(stats, "headroom", headroom_suggestion(stats, opts.advice), &cx);
        if row.priority == "P5" {
            continue;
        }
        rows.push(row);
        seen.insert(stats.name());
    }
    for stats in hidden {
        if seen.contains(stats.name()) {
            continue;
        }
        rows.push(make_row(stats, "low-roi-hidden", hidden_suggestion(stats), &cx));
        seen.insert(stats.name());
    }
    if opts.table_limit > 0 {
        rows.truncate(opts.table_limit);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::kernels::extract::KernelName;
    use crate::analysis::overlap::aggregate::AggregateKey;
    use std::sync::Arc;

    fn agg(name: &str, category: &'static str, total: f64, excl: f64, hidden: f64) -> KernelAggregate {
        let name = Arc::new(KernelName { canonical: name.into(), category });
        KernelAggregate {
            count: 1,
            total_us: total,
            hidden_us: hidden,
            exclusive_us: excl,
            representative_idx: Some(0),
            representative_score: total,
            ..KernelAggregate::new(name)
        }
    }

    #[test]
    fn priorities() {
        let s = agg("k", "memory", 10.0, 10.0, 0.0);
        assert_eq!(priority_and_recommendation("headroom", "memory", "serial risk low", &s, 5.0), ("P1", "try fusion"));
        assert_eq!(
            priority_and_recommendation("headroom", "communication", "serial risk low", &s, 5.0),
            ("P1", "try overlap")
        );
        assert_eq!(
            priority_and_recommendation("headroom", "memory", "adjacency unclear", &s, 5.0),
            ("P2", "check deps")
        );
        assert_eq!(priority_and_recommendation("low-roi-hidden", "memory", "x", &s, 5.0), ("P4", "skip"));
        assert_eq!(priority_and_recommendation("headroom", "memory", "x", &s, 0.5), ("P5", "skip"));
        assert_eq!(priority_and_recommendation("other", "memory", "serial risk low", &s, 5.0), ("P3", "defer"));
    }

    #[test]
    fn advice_by_category_defers_matrix_work_and_overlaps_copies() {
        let by = |name: &str, category: &'static str, verdict: &str, reference| {
            let s = agg(name, category, 10.0, 10.0, 0.0);
            (advise(Advice::ByCategory, verdict, &s, reference), advise(Advice::Reference, verdict, &s, reference))
        };
        let fuse = ("P1", "try fusion");
        assert_eq!(by("ampere_sgemm_128x64_nn", "compute", "headroom", fuse), (("P3", "defer"), fuse));
        assert_eq!(by("flash_fwd_splitkv_kernel", "compute", "headroom", ("P2", "check deps")).0, ("P3", "defer"));
        // Pointwise Triton work the overlap table also calls compute keeps
        // the reference's advice.
        assert_eq!(by("triton_poi_fused_mul_silu_2", "compute", "headroom", fuse).0, fuse);
        assert_eq!(by("Memcpy HtoD (Pageable -> Device)", "memory", "headroom", fuse), (("P1", "try overlap"), fuse));
        assert_eq!(by("Memcpy DtoD", "memory", "headroom", ("P2", "check deps")).0, ("P2", "check deps"));
        assert_eq!(by("ampere_sgemm_128x64_nn", "compute", "headroom", ("P5", "skip")).0, ("P5", "skip"));
        assert_eq!(by("Memcpy DtoD", "memory", "low-roi-hidden", ("P4", "skip")).0, ("P4", "skip"));
        let gemm = agg("ampere_sgemm_128x64_nn", "compute", 10.0, 10.0, 0.0);
        assert!(headroom_suggestion(&gemm, Advice::ByCategory).starts_with("Compute is the work"));
        assert!(headroom_suggestion(&gemm, Advice::Reference).starts_with("This work is still exposed"));
    }

    #[test]
    fn compute_candidates_come_last() {
        let mut a = Aggregates::default();
        for s in [
            agg("gemm", "compute", 100.0, 100.0, 0.0),
            agg("copy", "memory", 10.0, 10.0, 0.0),
            agg("tiny", "memory", 4.0, 4.0, 0.0),
            agg("hidden", "memory", 10.0, 1.0, 9.0),
        ] {
            a.insert(AggregateKey(s.name.clone()), s);
        }
        let names: Vec<&str> = top_overlap_opportunities(&a).iter().map(|s| s.name()).collect();
        assert_eq!(names, vec!["copy", "gemm"]);
        let hidden: Vec<&str> = top_hidden_low_roi(&a).iter().map(|s| s.name()).collect();
        assert_eq!(hidden, vec!["hidden"]);
    }
}
