//! The kernel → Python source map (`KernelSourceStats` per canonical name):
//! built from a per-name sample of the mapping bundle's kernels, each
//! attributed through its CPU op's scope chain, else the time-window
//! fallback, else the kernel module's map entry; then topped up from the
//! formal stage payload.
//!
//! The reference keeps a handful of counters per name, but only their
//! totals and most common keys are read afterwards. So the map is built one
//! name at a time (sampled names in first-seen order, then the names only
//! the payload has, in its order) with one set of reused counters, and each
//! name keeps its two totals and three winning keys (texts shared across
//! names): about a hundred bytes a name, whatever the evidence behind it.
//! (The reference's site-share counter is not read by anything and is not
//! kept.)

use std::sync::Arc;

use rustc_hash::{FxBuildHasher, FxHashSet as HashSet};

use indexmap::IndexMap;

use super::contexts::{
    choose_cpu_context, choose_launch_context, cpu_launch_contexts, launch_contexts, temporal_scope_lookup, FrameNames,
    ScopeChain,
};
use super::detect::short_name;
use super::scopes::{scope_chain_key, ScopeRanker};
use super::{OverlapKernel, StageBundle};
use crate::analysis::stage::Stage;
use crate::analysis::text::Masking;
use crate::analysis::types::{KernelEntry, StagePayload, Text, TextAddr, TextCache, UNRESOLVED};
use crate::columns::Trace;
use crate::pysem::{fcmp, most_common_key};
use crate::pysem::{is_py_space, normalize_text};

/// Python's `str.strip()`.
fn strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Whether a location, once stripped, names a place.
fn has_location(location: &str) -> bool {
    let location = strip(location);
    !location.is_empty() && location != UNRESOLVED
}

/// How many launches of one kernel name the source map samples.
pub const SAMPLE_LIMIT_PER_NAME: usize = 16;

/// What the rows read of one kernel name's attribution evidence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceStats {
    pub total_count: i64,
    pub mapped_count: i64,
    /// Most common key of each counter (first on ties), when not empty.
    pub(super) best_scope: Option<Text>,
    pub(super) best_chain: Option<Text>,
    pub(super) best_launch_op: Option<Text>,
}

impl SourceStats {
    pub fn mapping_ratio(&self) -> f64 {
        if self.total_count != 0 {
            self.mapped_count as f64 / self.total_count as f64
        } else {
            0.0
        }
    }

    pub fn best_scope(&self) -> Option<&str> {
        self.best_scope.as_deref()
    }

    pub fn best_chain(&self) -> Option<&str> {
        self.best_chain.as_deref()
    }

    pub fn best_launch_op(&self) -> Option<&str> {
        self.best_launch_op.as_deref()
    }
}

/// Canonical kernel name → its evidence, in the reference's insertion order.
pub type SourceMap = IndexMap<Text, SourceStats>;

/// A Python `Counter` (insertion-ordered), cleared between names. Its keys
/// come from one [`TextCache`], so a key's text is named by its address.
#[derive(Default)]
struct Counter(IndexMap<TextAddr, i64, FxBuildHasher>);

/// The texts of one build: one per string (so that counter keys compare by
/// address), and the stripped form of each entry text found once per text
/// (entries share a few location, op and stack texts). The table holds the
/// entry texts it was asked about, so their addresses are not reused.
#[derive(Default)]
struct Texts {
    cache: TextCache,
    stripped: rustc_hash::FxHashMap<usize, (Text, Option<Text>)>,
}

impl Texts {
    fn get(&mut self, s: &str) -> Text {
        self.cache.get(s)
    }

    /// The build's text of `strip(text)`; `None` when that is empty.
    fn stripped(&mut self, text: &Text) -> Option<Text> {
        let cache = &mut self.cache;
        let (_, found) = self.stripped.entry(text.as_ptr() as usize).or_insert_with(|| {
            let s = strip(text);
            (text.clone(), (!s.is_empty()).then(|| cache.get(s)))
        });
        found.clone()
    }
}

/// Whether a stripped location names a place.
fn is_place(location: &Option<Text>) -> bool {
    location.as_deref().is_some_and(|l| l != UNRESOLVED)
}

impl Counter {
    fn bump(&mut self, texts: &mut Texts, key: &str, by: i64) {
        self.bump_text(texts.get(key), by);
    }

    /// [`Counter::bump`] with the key's text from the same cache.
    fn bump_text(&mut self, key: Text, by: i64) {
        let v = self.0.entry(TextAddr(Some(key))).or_insert(0);
        *v = v.saturating_add(by);
    }

    /// The most common key, first on ties; `None` when that is empty.
    fn best(&self) -> Option<Text> {
        most_common_key(&self.0).and_then(|k| k.0.clone()).filter(|s| !s.is_empty())
    }
}

/// The evidence of the name being built.
#[derive(Default)]
struct Evidence {
    total_count: i64,
    mapped_count: i64,
    scopes: Counter,
    chains: Counter,
    launch_ops: Counter,
}

/// A site's launch count as a counter value (Python's ints are unbounded;
/// counts beyond i64 saturate).
fn launch_count(launches: u64) -> i64 {
    i64::try_from(launches).unwrap_or(i64::MAX)
}

impl Evidence {
    /// The stats kept for the name; the evidence is cleared for the next.
    fn take(&mut self) -> SourceStats {
        let stats = SourceStats {
            total_count: self.total_count,
            mapped_count: self.mapped_count,
            best_scope: self.scopes.best(),
            best_chain: self.chains.best(),
            best_launch_op: self.launch_ops.best(),
        };
        self.total_count = 0;
        self.mapped_count = 0;
        for counter in [&mut self.scopes, &mut self.chains, &mut self.launch_ops] {
            counter.0.clear();
        }
        stats
    }

    /// Credits a kernel-map entry to a launch the trace could not attribute.
    fn credit_kernel_entry(&mut self, texts: &mut Texts, entry: &KernelEntry) {
        let best_location = texts.stripped(&entry.best_location);
        let Some(best_location) = best_location.filter(|l| &**l != UNRESOLVED) else {
            return;
        };
        self.mapped_count += 1;
        self.scopes.bump_text(best_location, 1);
        for site in &entry.sites {
            let display = if !site.display_location.is_empty() { &site.display_location } else { &site.location };
            let display = texts.stripped(display);
            let launches = launch_count(site.launches);
            if is_place(&display) && launches > 0 {
                self.scopes.bump_text(display.unwrap_or_default(), launches);
            }
            if let Some(op) = site.top_cpu_op.as_deref().filter(|s| !s.is_empty()) {
                self.launch_ops.bump(texts, op, launches.max(1));
            }
        }
    }

    /// Adds a formal stage payload entry's sites, weighted by launches.
    /// False (and nothing added) when the entry has no sites and no
    /// location: such names are not put in the map.
    fn add_payload_entry(&mut self, texts: &mut Texts, entry: &KernelEntry) -> bool {
        if entry.sites.is_empty() {
            let best_location = texts.stripped(&entry.best_location);
            if !is_place(&best_location) {
                return false;
            }
            self.total_count += 1;
            self.mapped_count += 1;
            self.scopes.bump_text(best_location.unwrap_or_default(), 1);
            return true;
        }
        for site in &entry.sites {
            let location = if !site.location.is_empty() { &site.location } else { &entry.best_location };
            let location = texts.stripped(location);
            let launches = launch_count(site.launches).max(1);
            self.total_count = self.total_count.saturating_add(launches);
            if is_place(&location) {
                self.mapped_count = self.mapped_count.saturating_add(launches);
                self.scopes.bump_text(location.unwrap_or_default(), launches);
            }
            if let Some(op) = site.top_cpu_op.as_ref().and_then(|op| texts.stripped(op)) {
                self.launch_ops.bump_text(op, launches);
            }
            if let Some(stack) = site.stack.as_ref().and_then(|stack| texts.stripped(stack)) {
                self.chains.bump_text(stack, launches);
            }
        }
        true
    }
}

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

/// The sampled launches grouped by canonical name, by sorting (one index
/// per launch) rather than hashing every name.
struct Groups {
    /// Positions in the sample, sorted by (name, position).
    by_name: Vec<u32>,
    /// Each name's (start, length) in `by_name`, names in first-seen order;
    /// a name's positions are in sampled order.
    groups: Vec<(usize, usize)>,
}

impl Groups {
    fn new(sampled: &[&OverlapKernel]) -> Groups {
        let name = |i: u32| sampled[i as usize].canonical_name();
        let mut by_name: Vec<u32> = (0..sampled.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| name(a).cmp(name(b)).then(a.cmp(&b)));
        let mut groups = Vec::new();
        let mut start = 0;
        for run in by_name.chunk_by(|&a, &b| name(a) == name(b)) {
            groups.push((start, run.len()));
            start += run.len();
        }
        // A name is first seen at its smallest position.
        groups.sort_unstable_by_key(|&(start, _)| by_name[start]);
        Groups { by_name, groups }
    }

    /// Each name's positions, names in first-seen order.
    fn iter(&self) -> impl Iterator<Item = &[u32]> {
        self.groups.iter().map(|&(start, len)| &self.by_name[start..start + len])
    }
}

/// Builds the source map from the mapping bundle's kernels, then tops it up
/// from `payload` (the formal stage payload): its sites, weighted by
/// launches, are added to the names already there and names it alone has
/// are appended. `lookup` is asked (stage, canonical name) for the kernel
/// module's map entry. It reads the kernels' names, times and ids only,
/// none of what the sweep fills in.
pub fn build_kernel_source_map(
    mapping: &StageBundle,
    lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
    stage: Stage,
    payload: Option<&StagePayload>,
) -> SourceMap {
    let sampled = sample_events(&mapping.events, SAMPLE_LIMIT_PER_NAME);
    source_map_of(mapping.trace, mapping.masking, sampled, lookup, stage, payload)
}

/// The kernels a source map reads (at most `SAMPLE_LIMIT_PER_NAME` of
/// each name, in time order), copied out of a bundle so that the map can
/// be built while the sweep fills in the bundle's own kernels.
pub struct SourceSample<'t> {
    trace: &'t Trace,
    masking: Masking,
    kernels: Vec<OverlapKernel>,
}

/// What [`SourceSample::of_at_most`] gives: the sample to build the map
/// from later, or the map itself when the sample was too large to copy.
pub enum SampledSource<'t> {
    Copied(SourceSample<'t>),
    Built(SourceMap),
}

impl<'t> SourceSample<'t> {
    /// The sample of `mapping`, copied out, when it holds at most `most`
    /// kernels. A larger one (a bundle of many distinct names, whose copy
    /// would cost about as much memory as the bundle) is not copied: the
    /// source map is built from it at once, as [`build_kernel_source_map`]
    /// would, with the same `lookup`, `stage` and `payload`.
    pub fn of_at_most(
        mapping: &StageBundle<'t>,
        most: usize,
        lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
        stage: Stage,
        payload: Option<&StagePayload>,
    ) -> SampledSource<'t> {
        let sampled = sample_events(&mapping.events, SAMPLE_LIMIT_PER_NAME);
        if sampled.len() > most {
            return SampledSource::Built(source_map_of(
                mapping.trace,
                mapping.masking,
                sampled,
                lookup,
                stage,
                payload,
            ));
        }
        let kernels = sampled.into_iter().cloned().collect();
        SampledSource::Copied(SourceSample { trace: mapping.trace, masking: mapping.masking, kernels })
    }

    /// [`build_kernel_source_map`] of the bundle the sample was taken from.
    pub fn source_map(
        &self,
        lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
        stage: Stage,
        payload: Option<&StagePayload>,
    ) -> SourceMap {
        source_map_of(self.trace, self.masking, self.kernels.iter().collect(), lookup, stage, payload)
    }
}

/// The source map of `sampled`, the mapping kernels in time order.
fn source_map_of(
    trace: &Trace,
    masking: Masking,
    sampled: Vec<&OverlapKernel>,
    lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
    stage: Stage,
    payload: Option<&StagePayload>,
) -> SourceMap {
    let targets: HashSet<i64> = sampled.iter().filter_map(|e| e.external_id(trace)).collect();
    let mut names = FrameNames::new(masking);
    let mut ranker = ScopeRanker::default();
    // An empty target set means "no filter", as in the reference.
    let contexts = cpu_launch_contexts(trace, (!targets.is_empty()).then_some(&targets), &mut names);
    drop(targets);
    let launches = launch_contexts(trace);
    let has_context = |ext: Option<i64>| ext.and_then(|x| contexts.get(&x)).is_some_and(|v| !v.is_empty());
    let fallback_queries: Vec<(usize, f64)> =
        sampled.iter().filter(|e| !has_context(e.external_id(trace))).map(|e| (e.idx(), e.ts)).collect();
    let temporal = temporal_scope_lookup(trace, &fallback_queries, &mut names);
    drop(fallback_queries);

    let mut texts = Texts::default();
    let mut evidence = Evidence::default();
    // Launches share chains and CPU ops: each chain's best scope and key,
    // and each op's canonical name, are worked out once. (A chain is named
    // by its address; the table holds it, so the address is not reused.)
    let mut chain_views: rustc_hash::FxHashMap<usize, (ScopeChain, Option<Text>, Option<Text>)> = Default::default();
    let mut op_names: rustc_hash::FxHashMap<crate::columns::Sym, Text> = Default::default();
    let fallback_op = texts.get("time-window fallback");
    let groups = Groups::new(&sampled);
    // Each sampled name's payload entry, and which payload entries those
    // are: the others are the names only the payload has.
    let in_payload: Vec<Option<usize>> =
        groups.iter().map(|g| payload.and_then(|p| p.get_index_of(sampled[g[0] as usize].canonical_name()))).collect();
    let mut sampled_entry = vec![false; payload.map_or(0, |p| p.len())];
    for &i in in_payload.iter().flatten() {
        sampled_entry[i] = true;
    }
    let payload_only = payload.into_iter().flatten().enumerate().filter(|(i, (_, entry))| {
        !sampled_entry[*i] && (!entry.sites.is_empty() || has_location(&entry.best_location))
    });
    // Room for every name up front (a map of hundreds of thousands would
    // otherwise double past the need).
    let mut map = SourceMap::with_capacity(groups.groups.len() + payload_only.count());
    for (group, payload_index) in groups.iter().zip(&in_payload) {
        let name = sampled[group[0] as usize].canonical_name();
        // The kernel map entry, asked for at most once per name.
        let mut entry: Option<Option<KernelEntry>> = None;
        for e in group.iter().map(|&i| sampled[i as usize]) {
            evidence.total_count += 1;
            let correlation = e.correlation(trace);
            // Its own External id, else the one its correlation maps to.
            let external_id = e.external_id(trace);
            let cpu = external_id.and_then(|x| contexts.get(&x)).and_then(|v| choose_cpu_context(v, e.ts));

            let mut op_name =
                |sym| op_names.entry(sym).or_insert_with(|| texts.get(&canonicalize_cpu_op_name(trace.s(sym)))).clone();
            let mut launch_op: Option<Text> = None;
            let mut chain: Option<ScopeChain> = None;
            if let Some(cpu) = cpu {
                launch_op = Some(op_name(cpu.cpu_op_name));
                chain = Some(cpu.scope_chain.clone());
            } else {
                let launch = correlation.and_then(|c| launches.get(&c)).and_then(|v| choose_launch_context(v, e.ts));
                if let Some(launch) = launch {
                    let found = temporal_scope_lookup(trace, &[(e.idx(), launch.ts)], &mut names).remove(&e.idx());
                    if found.as_ref().is_some_and(|c| !c.is_empty()) {
                        launch_op = Some(op_name(launch.launch_name));
                        chain = found;
                    }
                }
                if chain.as_ref().is_none_or(|c| c.is_empty()) {
                    chain = temporal.get(&e.idx()).cloned();
                }
                if chain.as_ref().is_some_and(|c| !c.is_empty()) {
                    launch_op = Some(fallback_op.clone());
                }
            }

            let chain = chain.filter(|c| !c.is_empty());
            let Some(chain) = chain else {
                if let Some(entry) = entry.get_or_insert_with(|| lookup(stage, name)) {
                    evidence.credit_kernel_entry(&mut texts, entry);
                }
                continue;
            };
            evidence.mapped_count += 1;
            let addr = Arc::as_ptr(&chain) as *const () as usize;
            let (_, scope, key) = chain_views.entry(addr).or_insert_with(|| {
                let scope = ranker.best(&chain).filter(|s| !s.is_empty()).map(|s| texts.get(s));
                let key = scope_chain_key(&chain).filter(|s| !s.is_empty()).map(|k| texts.get(&k));
                (chain.clone(), scope, key)
            });
            if let Some(scope) = scope {
                evidence.scopes.bump_text(scope.clone(), 1);
            }
            if let Some(key) = key {
                evidence.chains.bump_text(key.clone(), 1);
            }
            if let Some(op) = launch_op.filter(|s| !s.is_empty()) {
                evidence.launch_ops.bump_text(op, 1);
            }
        }
        if let Some((_, payload_entry)) = payload.zip(*payload_index).and_then(|(p, i)| p.get_index(i)) {
            evidence.add_payload_entry(&mut texts, payload_entry);
        }
        // The key is the name record's own text.
        let key = sampled[group[0] as usize].name.canonical.clone();
        map.insert(key, evidence.take());
    }
    for (i, (name, entry)) in payload.into_iter().flatten().enumerate() {
        if !sampled_entry[i] && evidence.add_payload_entry(&mut texts, entry) {
            map.insert(name.clone(), evidence.take());
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::types::SiteEntry;
    use crate::columns::Trace;
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
    fn names_are_grouped_in_first_seen_order() {
        let events: Vec<OverlapKernel> =
            ["b", "a", "b", "c", "a"].iter().enumerate().map(|(i, n)| ev(i, n, i as f64)).collect();
        let sampled: Vec<&OverlapKernel> = events.iter().collect();
        let groups = Groups::new(&sampled);
        let grouped: Vec<usize> = groups.iter().flatten().map(|&i| sampled[i as usize].idx()).collect();
        assert_eq!(grouped, vec![0, 2, 1, 4, 3]);
    }

    fn site(location: &str, launches: u64, op: Option<&str>, stack: Option<&str>) -> SiteEntry {
        SiteEntry {
            location: location.into(),
            launches,
            top_cpu_op: op.map(Into::into),
            stack: stack.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn payload_merge_weights_by_launches() {
        let mut payload = StagePayload::default();
        payload.insert(
            "k".into(),
            KernelEntry {
                category: "other".into(),
                best_location: "a.py:1 f".into(),
                sites: vec![
                    site("a.py:1 f", 3, Some("aten::mm"), Some("x -> a.py:1 f")),
                    site("unresolved", 0, None, None),
                ],
            },
        );
        payload.insert("empty".into(), KernelEntry { best_location: "unresolved".into(), ..Default::default() });
        payload.insert("bare".into(), KernelEntry { best_location: " b.py:2 g ".into(), ..Default::default() });
        let trace = Trace::default();
        let bundle = StageBundle {
            label: "f".into(),
            trace: &trace,
            events: Vec::new(),
            pid: None,
            masking: Default::default(),
        };
        let map = build_kernel_source_map(&bundle, &|_, _| None, Stage::All, Some(&payload));
        let s = &map["k"];
        assert_eq!((s.total_count, s.mapped_count), (4, 3));
        assert_eq!(s.best_scope(), Some("a.py:1 f"));
        assert_eq!(s.best_launch_op(), Some("aten::mm"));
        assert_eq!(s.best_chain(), Some("x -> a.py:1 f"));
        assert!(!map.contains_key("empty"));
        let b = &map["bare"];
        assert_eq!((b.total_count, b.mapped_count, b.best_scope(), b.best_chain()), (1, 1, Some("b.py:2 g"), None));
        // A name only the payload has is keyed by the payload's own text.
        assert!(Arc::ptr_eq(map.get_key_value("k").unwrap().0, payload.get_key_value("k").unwrap().0));
    }

    #[test]
    fn counters_keep_the_first_most_common_key() {
        let mut texts = Texts::default();
        let mut e = Evidence::default();
        for (key, by) in [("a", 1), ("b", 2), ("a", 1), ("", 5)] {
            e.scopes.bump(&mut texts, key, by);
        }
        e.chains.bump(&mut texts, "", 1);
        let s = e.take();
        assert_eq!((s.best_scope(), s.best_chain(), s.best_launch_op()), (None, None, None));
        e.scopes.bump(&mut texts, "b", 1);
        e.scopes.bump(&mut texts, "a", i64::MAX);
        e.scopes.bump(&mut texts, "a", 1);
        e.scopes.bump(&mut texts, "b", i64::MAX);
        // Both saturate at i64::MAX: the first inserted wins the tie.
        assert_eq!(e.take().best_scope(), Some("b"));
    }
}
