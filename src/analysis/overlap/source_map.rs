//! The kernel → Python source map (`KernelSourceStats` per canonical name):
//! built from a per-name sample of the mapping bundle's kernels, each
//! attributed through its CPU op's scope chain, else the time-window
//! fallback, else the kernel module's map entry; then topped up from the
//! formal stage payload.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use indexmap::IndexMap;

use super::contexts::{
    choose_cpu_context, choose_launch_context, cpu_launch_contexts, launch_contexts, temporal_scope_lookup, FrameNames,
    ScopeChain,
};
use super::detect::short_name;
use super::scopes::{scope_chain_key, ScopeRanker};
use super::{OverlapKernel, StageBundle};
use crate::analysis::stage::Stage;
use crate::analysis::types::{KernelEntry, StagePayload};
use crate::pysem::{fcmp, most_common_key};
use crate::pysem::{is_py_space, normalize_text};

/// Python's `str.strip()`.
fn strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// How many launches of one kernel name the source map samples.
pub const SAMPLE_LIMIT_PER_NAME: usize = 16;

pub type Counter = IndexMap<String, i64>;

/// Attribution evidence for one kernel name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceStats {
    pub name: String,
    pub total_count: i64,
    pub mapped_count: i64,
    pub scope_counter: Counter,
    pub chain_counter: Counter,
    pub launch_op_counter: Counter,
    pub site_share_counter: Counter,
}

fn bump(counter: &mut Counter, key: &str, by: i64) {
    match counter.get_mut(key) {
        Some(v) => *v = v.saturating_add(by),
        None => {
            counter.insert(key.to_string(), by);
        }
    }
}

/// A site's launch count as a counter value (Python's ints are unbounded;
/// counts beyond i64 saturate).
fn launch_count(launches: u64) -> i64 {
    i64::try_from(launches).unwrap_or(i64::MAX)
}

fn best(counter: &Counter) -> Option<&str> {
    most_common_key(counter).map(String::as_str).filter(|s| !s.is_empty())
}

impl SourceStats {
    fn new(name: &str) -> Self {
        SourceStats { name: name.to_string(), ..Default::default() }
    }

    pub fn mapping_ratio(&self) -> f64 {
        if self.total_count != 0 {
            self.mapped_count as f64 / self.total_count as f64
        } else {
            0.0
        }
    }

    pub fn best_scope(&self) -> Option<&str> {
        best(&self.scope_counter)
    }

    pub fn best_chain(&self) -> Option<&str> {
        best(&self.chain_counter)
    }

    pub fn best_launch_op(&self) -> Option<&str> {
        best(&self.launch_op_counter)
    }
}

pub type SourceMap = IndexMap<String, SourceStats>;

/// At most `limit` launches per canonical name, evenly spread over each
/// name's launches (names in sorted order), then ordered by (ts, idx).
pub fn sample_events(events: &[OverlapKernel], limit: usize) -> Vec<&OverlapKernel> {
    let mut sampled = crate::pysem::sample_per_name(events, |e: &OverlapKernel| e.canonical_name(), limit);
    if limit == 0 {
        return sampled;
    }
    sampled.sort_by(|a, b| fcmp(a.ts, b.ts).then(a.idx().cmp(&b.idx())));
    sampled
}

/// `short_name(normalize_text(name), 100)`.
fn canonicalize_cpu_op_name(name: &str) -> String {
    short_name(&normalize_text(name), 100)
}

/// Credits a kernel-map entry to a launch the trace could not attribute.
fn credit_kernel_entry(stats: &mut SourceStats, entry: &KernelEntry) {
    let best_location = strip(&entry.best_location);
    if best_location.is_empty() || best_location == "unresolved" {
        return;
    }
    stats.mapped_count += 1;
    bump(&mut stats.scope_counter, best_location, 1);
    bump(&mut stats.site_share_counter, best_location, 1);
    for site in &entry.sites {
        let display = if !site.display_location.is_empty() { &site.display_location } else { &site.location };
        let display = strip(display);
        let launches = launch_count(site.launches);
        if !display.is_empty() && display != "unresolved" {
            bump(&mut stats.site_share_counter, display, launches.max(1));
            if launches > 0 {
                bump(&mut stats.scope_counter, display, launches);
            }
        }
        if let Some(op) = site.top_cpu_op.as_deref().filter(|s| !s.is_empty()) {
            bump(&mut stats.launch_op_counter, op, launches.max(1));
        }
    }
}

/// Builds the source map from the mapping bundle's kernels. `lookup` is
/// asked (stage, canonical name) for the kernel module's map entry.
pub fn build_kernel_source_map(
    mapping: &StageBundle,
    lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
    stage: Stage,
) -> SourceMap {
    let trace = mapping.trace;
    let sampled = sample_events(&mapping.events, SAMPLE_LIMIT_PER_NAME);
    let targets: HashSet<i64> = sampled.iter().filter_map(|e| e.external_id(trace)).collect();
    let mut names = FrameNames::new(mapping.masking);
    let mut ranker = ScopeRanker::default();
    // An empty target set means "no filter", as in the reference.
    let contexts = cpu_launch_contexts(trace, (!targets.is_empty()).then_some(&targets), &mut names);
    let launches = launch_contexts(trace);
    let has_context = |ext: Option<i64>| ext.and_then(|x| contexts.get(&x)).is_some_and(|v| !v.is_empty());
    let fallback_queries: Vec<(usize, f64)> =
        sampled.iter().filter(|e| !has_context(e.external_id(trace))).map(|e| (e.idx(), e.ts)).collect();
    let temporal = temporal_scope_lookup(trace, &fallback_queries, &mut names);

    let mut map = SourceMap::new();
    let mut entries: HashMap<&str, Option<KernelEntry>> = HashMap::default();
    for e in sampled {
        let stats = map.entry(e.canonical_name().to_string()).or_insert_with(|| SourceStats::new(e.canonical_name()));
        stats.total_count += 1;
        let correlation = e.correlation(trace);
        let mut external_id = e.external_id(trace);
        if external_id.is_none() {
            external_id = correlation.and_then(|c| trace.corr_to_ext.get(&c).copied());
        }
        let cpu = external_id.and_then(|x| contexts.get(&x)).and_then(|v| choose_cpu_context(v, e.ts));

        let mut launch_op: Option<String> = None;
        let mut chain: Option<ScopeChain> = None;
        if let Some(cpu) = cpu {
            launch_op = Some(canonicalize_cpu_op_name(trace.s(cpu.cpu_op_name)));
            chain = Some(cpu.scope_chain.clone());
        } else {
            let launch = correlation.and_then(|c| launches.get(&c)).and_then(|v| choose_launch_context(v, e.ts));
            if let Some(launch) = launch {
                let found = temporal_scope_lookup(trace, &[(e.idx(), launch.ts)], &mut names).remove(&e.idx());
                if found.as_ref().is_some_and(|c| !c.is_empty()) {
                    launch_op = Some(canonicalize_cpu_op_name(trace.s(launch.launch_name)));
                    chain = found;
                }
            }
            if chain.as_ref().is_none_or(|c| c.is_empty()) {
                chain = temporal.get(&e.idx()).cloned();
            }
            if chain.as_ref().is_some_and(|c| !c.is_empty()) {
                launch_op = Some("time-window fallback".to_string());
            }
        }

        let chain = chain.filter(|c| !c.is_empty());
        let Some(chain) = chain else {
            let entry = entries.entry(e.canonical_name()).or_insert_with(|| lookup(stage, e.canonical_name()));
            if let Some(entry) = entry {
                credit_kernel_entry(stats, entry);
            }
            continue;
        };
        stats.mapped_count += 1;
        if let Some(scope) = ranker.best(&chain).filter(|s| !s.is_empty()) {
            bump(&mut stats.scope_counter, scope, 1);
            bump(&mut stats.site_share_counter, scope, 1);
        }
        if let Some(key) = scope_chain_key(&chain).filter(|s| !s.is_empty()) {
            bump(&mut stats.chain_counter, &key, 1);
        }
        if let Some(op) = launch_op.filter(|s| !s.is_empty()) {
            bump(&mut stats.launch_op_counter, &op, 1);
        }
    }
    map
}

/// Adds the formal stage payload's sites (weighted by launches) to the map.
pub fn merge_stage_payload(map: &mut SourceMap, payload: Option<&StagePayload>) {
    let Some(payload) = payload else { return };
    for (name, entry) in payload {
        let best_location = strip(&entry.best_location);
        if entry.sites.is_empty() && (best_location.is_empty() || best_location == "unresolved") {
            continue;
        }
        let stats = map.entry(name.to_string()).or_insert_with(|| SourceStats::new(name));
        if entry.sites.is_empty() {
            stats.total_count += 1;
            stats.mapped_count += 1;
            bump(&mut stats.scope_counter, best_location, 1);
            bump(&mut stats.site_share_counter, best_location, 1);
            continue;
        }
        for site in &entry.sites {
            let location = if !site.location.is_empty() { &*site.location } else { &*entry.best_location };
            let location = strip(location);
            let launches = launch_count(site.launches).max(1);
            stats.total_count = stats.total_count.saturating_add(launches);
            if !location.is_empty() && location != "unresolved" {
                stats.mapped_count = stats.mapped_count.saturating_add(launches);
                bump(&mut stats.scope_counter, location, launches);
                bump(&mut stats.site_share_counter, location, launches);
            }
            let op = strip(site.top_cpu_op.as_deref().unwrap_or(""));
            if !op.is_empty() {
                bump(&mut stats.launch_op_counter, op, launches);
            }
            let stack = strip(site.stack.as_deref().unwrap_or(""));
            if !stack.is_empty() {
                bump(&mut stats.chain_counter, stack, launches);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::types::SiteEntry;
    use crate::pysem::py_round;
    use std::sync::Arc;

    fn ev(idx: usize, name: &str, ts: f64) -> OverlapKernel {
        let name =
            Arc::new(crate::analysis::kernels::extract::KernelName { canonical: name.into(), category: "other" });
        OverlapKernel::new(idx, super::super::NO_ROW, name, Arc::new(Box::from("7")), ts, 1.0)
    }

    #[test]
    fn sampling_spreads_evenly_with_bankers_rounding() {
        let events: Vec<OverlapKernel> = (0..20).map(|i| ev(i, "k", i as f64)).collect();
        let picked: Vec<usize> = sample_events(&events, 16).iter().map(|e| e.idx()).collect();
        // round(i * 19 / 15): 2.5 → 2 and 7.6 → 8 etc.
        let expect: Vec<usize> = (0..16).map(|i| py_round((i * 19) as f64 / 15.0) as usize).collect();
        assert_eq!(picked, expect);
        assert_eq!(picked.len(), 16);
    }

    #[test]
    fn payload_merge_weights_by_launches() {
        let mut payload = StagePayload::new();
        payload.insert(
            "k".into(),
            KernelEntry {
                category: "other".into(),
                best_location: "a.py:1 f".into(),
                sites: vec![
                    SiteEntry {
                        location: "a.py:1 f".into(),
                        launches: 3,
                        top_cpu_op: Some("aten::mm".into()),
                        stack: Some("x -> a.py:1 f".into()),
                        ..Default::default()
                    },
                    SiteEntry { location: "unresolved".into(), launches: 0, ..Default::default() },
                ],
            },
        );
        payload.insert("empty".into(), KernelEntry { best_location: "unresolved".into(), ..Default::default() });
        let mut map = SourceMap::new();
        merge_stage_payload(&mut map, Some(&payload));
        let s = &map["k"];
        assert_eq!((s.total_count, s.mapped_count), (4, 3));
        assert_eq!(s.best_scope(), Some("a.py:1 f"));
        assert_eq!(s.best_launch_op(), Some("aten::mm"));
        assert_eq!(s.best_chain(), Some("x -> a.py:1 f"));
        assert!(!map.contains_key("empty"));
    }
}
