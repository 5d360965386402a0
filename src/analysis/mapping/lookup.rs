//! Finding a kernel's entry in a kernel map when the mapping trace's names
//! differ from the formal trace's: exact name, then prefix / substring,
//! then a long common prefix for templated kernels, then hand-written alias
//! families. [`relaxed_lookup`] is the definition (each pass reads every
//! name); a kernel map's payloads answer the same through indexes built on
//! their first miss ([`MapPayload`]), since a formal trace can miss on every
//! one of hundreds of thousands of names. Also the row summary (location
//! and CPU op cells) of an entry.

use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use super::key_index::{LongPrefixIndex, SubstringIndex};
use crate::analysis::sites::locations::{is_preferred_source_location, source_location_priority};
use crate::analysis::stage::Stage;
pub use crate::analysis::text::normalize_match_text;
use crate::analysis::text::{
    alias_group_mask, alias_groups_of, alias_score, alias_token_groups, best_long_prefix_key, best_substring_key,
};
use crate::analysis::types::{
    list_cell, KernelEntry, SiteEntry, StagePayload, Text, TextAddr, TextCache, TextList, UNRESOLVED,
};

use super::payload::site_display_location;

/// Stages tried, in order, when looking a stage up: the stage, then `all`.
pub fn stage_aliases(stage: Stage) -> Vec<Stage> {
    if stage == Stage::All {
        vec![Stage::All]
    } else {
        vec![stage, Stage::All]
    }
}

/// The reference's `relaxed_kernel_entry_lookup`.
pub fn relaxed_lookup<'a>(kernels: &'a StagePayload, kernel_name: &str) -> Option<&'a KernelEntry> {
    if let Some(e) = kernels.get(kernel_name) {
        return Some(e);
    }
    let get = |key: Option<&str>| key.filter(|k| !k.is_empty()).and_then(|k| kernels.get(k));
    if let Some(e) = get(best_substring_key(kernels.keys().map(|k| &**k), kernel_name)) {
        return Some(e);
    }
    let compact = normalize_match_text(kernel_name);
    if compact.len() >= 96 {
        if let Some(e) = get(best_long_prefix_key(kernels.keys().map(|k| &**k), &compact)) {
            return Some(e);
        }
    }
    alias_lookup(kernels, kernel_name)
}

fn entry_lookup_text(kernel_name: &str, entry: &KernelEntry) -> String {
    let mut parts: Vec<&str> = vec![kernel_name, &entry.best_location];
    for site in entry.sites.iter().take(4) {
        parts.push(&site.location);
        parts.push(&site.display_location);
        parts.push(site.top_cpu_op.as_deref().unwrap_or(""));
        parts.push(site.stack.as_deref().unwrap_or(""));
    }
    normalize_match_text(&parts.join(" "))
}

fn entry_total_us(entry: &KernelEntry) -> f64 {
    entry.sites.iter().fold(0.0, |acc, s| acc + s.total_us)
}

/// The reference's `alias_kernel_entry_lookup`.
pub fn alias_lookup<'a>(kernels: &'a StagePayload, kernel_name: &str) -> Option<&'a KernelEntry> {
    alias_best(kernels, &alias_token_groups(kernel_name)).and_then(|i| kernels.get_index(i)).map(|(_, e)| e)
}

/// Position of the entry [`alias_lookup`] picks for names with `groups`.
fn alias_best(kernels: &StagePayload, groups: &[&[&str]]) -> Option<usize> {
    if groups.is_empty() {
        return None;
    }
    let mut best: Option<(usize, &str, i64)> = None;
    for (i, (key, entry)) in kernels.iter().enumerate() {
        let mut score = alias_score(groups, &entry_lookup_text(key, entry));
        if score <= 0 {
            continue;
        }
        score += source_location_priority(&entry.best_location)
            .max(source_location_priority(&list_cell(&best_site_summary(Some(entry)).0, UNRESOLVED)))
            as i64;
        score += (entry_total_us(entry) / 10.0).floor() as i64;
        if best.is_none_or(|(_, _, b)| score > b) {
            best = Some((i, key, score));
        }
    }
    best.filter(|(_, k, _)| !k.is_empty()).map(|(i, _, _)| i)
}

/// A kernel map payload with the indexes of its relaxed lookup, each built
/// when first needed.
#[derive(Debug, Default)]
pub struct MapPayload {
    pub payload: StagePayload,
    substring: OnceLock<SubstringIndex>,
    long_prefix: OnceLock<LongPrefixIndex>,
    /// The alias pass's pick per [`alias_group_mask`] (it reads nothing
    /// else of the name).
    alias: Mutex<FxHashMap<u8, Option<usize>>>,
}

impl MapPayload {
    pub fn new(payload: StagePayload) -> Self {
        MapPayload { payload, ..Default::default() }
    }

    /// [`relaxed_lookup`] of this payload.
    pub fn relaxed_lookup(&self, kernel_name: &str) -> Option<&KernelEntry> {
        let kernels = &self.payload;
        if let Some(e) = kernels.get(kernel_name) {
            return Some(e);
        }
        // A pass's pick, unless it is the empty name.
        let entry = |i: usize| kernels.get_index(i).filter(|(k, _)| !k.is_empty()).map(|(_, e)| e);
        let keys = || kernels.keys().map(|k| &**k);
        let substring = self.substring.get_or_init(|| SubstringIndex::new(keys()));
        if let Some(e) = substring.best(kernel_name).and_then(entry) {
            return Some(e);
        }
        let compact = normalize_match_text(kernel_name);
        if compact.len() >= 96 {
            let long_prefix = self.long_prefix.get_or_init(|| LongPrefixIndex::new(keys()));
            if let Some(e) = long_prefix.best(&compact).and_then(entry) {
                return Some(e);
            }
        }
        let mask = alias_group_mask(kernel_name);
        if mask == 0 {
            return None;
        }
        let mut memo = self.alias.lock().unwrap_or_else(|e| e.into_inner());
        let pick = *memo.entry(mask).or_insert_with(|| alias_best(kernels, &alias_groups_of(mask)));
        pick.and_then(|i| kernels.get_index(i)).map(|(_, e)| e)
    }
}

/// A kernel map: per-stage payloads plus one over all stages (the same
/// payload as the only stage's when there is one stage).
#[derive(Clone, Debug, Default)]
pub struct KernelMap {
    pub stages: indexmap::IndexMap<Stage, Arc<MapPayload>>,
    pub global: Arc<MapPayload>,
}

impl KernelMap {
    /// The reference's `lookup_kernel_map_entry`: the stage and its aliases,
    /// then the global payload. A payload already asked is not asked again:
    /// it would miss again.
    pub fn lookup(&self, stage: Stage, kernel_name: &str) -> Option<&KernelEntry> {
        let mut asked: Vec<&Arc<MapPayload>> = Vec::with_capacity(3);
        let payloads = stage_aliases(stage).into_iter().filter_map(|s| self.stages.get(&s)).chain([&self.global]);
        for payload in payloads {
            if asked.iter().any(|p| Arc::ptr_eq(p, payload)) {
                continue;
            }
            if let Some(e) = payload.relaxed_lookup(kernel_name) {
                return Some(e);
            }
            asked.push(payload);
        }
        None
    }
}

/// The (location, CPU op) cells of a kernel row: up to two sites, framework
/// sites preferred, with their share of the kernel when there are several.
pub fn best_site_summary(entry: Option<&KernelEntry>) -> (Vec<String>, Vec<String>) {
    let (locations, cpu_ops) = SiteCells::default().summary_items(entry);
    let owned = |texts: Vec<Text>| texts.iter().map(|t| t.to_string()).collect();
    (owned(locations), owned(cpu_ops))
}

/// Makes [`best_site_summary`] cells for many rows with shared texts: each
/// (location, stack) pair's display location is worked out once, equal
/// cells are one text and equal lists one list.
#[derive(Default)]
pub struct SiteCells {
    texts: TextCache,
    shown: rustc_hash::FxHashMap<(TextAddr, TextAddr), (Text, bool)>,
    lists: rustc_hash::FxHashSet<TextList>,
}

impl SiteCells {
    /// Display location of a site and whether it is framework code.
    fn shown(&mut self, site: &SiteEntry) -> (Text, bool) {
        let key = (TextAddr(Some(site.location.clone())), TextAddr(site.stack.clone()));
        if let Some(v) = self.shown.get(&key) {
            return v.clone();
        }
        let text = self.texts.get(&site_display_location(site));
        let v = (text.clone(), is_preferred_source_location(&text));
        self.shown.insert(key, v.clone());
        v
    }

    /// One shared text for `s`.
    pub fn text(&mut self, s: &str) -> Text {
        self.texts.get(s)
    }

    fn list(&mut self, items: Vec<Text>) -> TextList {
        if let Some(list) = self.lists.get(items.as_slice()) {
            return list.clone();
        }
        let list: TextList = items.into();
        self.lists.insert(list.clone());
        list
    }

    /// [`best_site_summary`] of `entry`, as shared lists.
    pub fn summary(&mut self, entry: Option<&KernelEntry>) -> (TextList, TextList) {
        let (locations, cpu_ops) = self.summary_items(entry);
        (self.list(locations), self.list(cpu_ops))
    }

    fn summary_items(&mut self, entry: Option<&KernelEntry>) -> (Vec<Text>, Vec<Text>) {
        let Some(entry) = entry else {
            return (Vec::new(), Vec::new());
        };
        if entry.sites.is_empty() {
            return (resolved(vec![entry.best_location.clone()]), Vec::new());
        }
        let shown: Vec<(&SiteEntry, Text, bool)> = entry
            .sites
            .iter()
            .map(|s| {
                let (text, preferred) = self.shown(s);
                (s, text, preferred)
            })
            .collect();
        let any_preferred = shown.iter().any(|(_, _, preferred)| *preferred);
        let candidates: Vec<&(&SiteEntry, Text, bool)> =
            shown.iter().filter(|(_, _, preferred)| *preferred || !any_preferred).collect();
        let mut locations = Vec::new();
        let mut cpu_ops = Vec::new();
        for (site, location, _) in candidates.iter().take(2) {
            if candidates.len() > 1 {
                locations
                    .push(self.texts.get(&format!("{} (site share {:.0}%)", location, site.share_pct_within_kernel)));
            } else {
                locations.push(location.clone());
            }
            if let Some(op) = site.top_cpu_op.as_ref().filter(|o| !o.is_empty()) {
                cpu_ops.push(op.clone());
            }
        }
        (resolved(locations), cpu_ops)
    }
}

/// A kernel's locations, empty when its one location is the reference's
/// `unresolved` placeholder: the report model keeps "no location" as an
/// empty list and each renderer words it (tables print `unresolved`). A
/// placeholder among several sites stays, with its share.
fn resolved(locations: Vec<Text>) -> Vec<Text> {
    match locations.as_slice() {
        [only] if &**only == UNRESOLVED => Vec::new(),
        _ => locations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(names: &[&str]) -> StagePayload {
        names
            .iter()
            .map(|n| ((*n).into(), KernelEntry { category: "other".into(), sites: vec![], best_location: (*n).into() }))
            .collect()
    }

    #[test]
    fn relaxed_prefers_longest_prefix() {
        let p = payload(&["gemm_a", "gemm_abc", "xgemm_abcdx"]);
        assert_eq!(relaxed_lookup(&p, "gemm_abcd").map(|e| &*e.best_location), Some("gemm_abc"));
        assert_eq!(relaxed_lookup(&p, "zzz").map(|e| &*e.best_location), None);
        assert_eq!(relaxed_lookup(&p, "GEMM_A").map(|e| &*e.best_location), Some("gemm_a"));
    }

    #[test]
    fn memset_alias() {
        let p = payload(&["Memset (Device)"]);
        assert_eq!(relaxed_lookup(&p, "Memset").map(|e| &*e.best_location), Some("Memset (Device)"));
        assert!(alias_lookup(&p, "memsetx").is_some());
    }

    #[test]
    fn indexed_lookup_agrees_with_the_definition() {
        let pieces = [
            "Memset",
            " (Device)",
            "memset32",
            "flash_attn_fwd_combine",
            "kernel_mha",
            "gemm",
            "_abc",
            "X",
            "void cutlass::device_kernel<flash::FlashAttnFwdSm90<",
            "cute::tuple<cute::C<128>>",
            "",
        ];
        let mut rng = crate::pysem::test_rng(0x5eed_u64);
        let mut next = move || rng() as usize;
        let mut text = |parts: usize| (0..parts).map(|_| pieces[next() % pieces.len()]).collect::<String>();
        for round in 0..150 {
            let mut kernels = StagePayload::default();
            for i in 0..(round % 25) {
                let entry = KernelEntry {
                    category: "other".into(),
                    sites: vec![],
                    best_location: [format!("vllm/a.py:{i} f"), text(2), "unresolved".into()][i % 3].as_str().into(),
                };
                kernels.insert(text(1 + i % 4).into(), entry);
            }
            let indexed = MapPayload::new(kernels.clone());
            for _ in 0..30 {
                let name = text(1 + round % 5);
                let at = |p: &StagePayload, e: &KernelEntry| p.values().position(|v| std::ptr::eq(v, e));
                let want = relaxed_lookup(&kernels, &name).and_then(|e| at(&kernels, e));
                let got = indexed.relaxed_lookup(&name).and_then(|e| at(&indexed.payload, e));
                assert_eq!(got, want, "{name:?}");
            }
        }
    }

    /// The cells as the reference makes them.
    fn direct_summary(entry: &KernelEntry) -> (Vec<String>, Vec<String>) {
        if entry.sites.is_empty() {
            let best = entry.best_location.to_string();
            return (if best == "unresolved" { Vec::new() } else { vec![best] }, Vec::new());
        }
        let preferred: Vec<_> =
            entry.sites.iter().filter(|s| is_preferred_source_location(&site_display_location(s))).collect();
        let candidates: Vec<_> = if preferred.is_empty() { entry.sites.iter().collect() } else { preferred };
        let mut locations = Vec::new();
        let mut cpu_ops = Vec::new();
        for site in candidates.iter().take(2) {
            let location = site_display_location(site);
            if candidates.len() > 1 {
                locations.push(format!("{} (site share {:.0}%)", location, site.share_pct_within_kernel));
            } else {
                locations.push(location);
            }
            if let Some(op) = site.top_cpu_op.as_deref().filter(|o| !o.is_empty()) {
                cpu_ops.push(op.to_string());
            }
        }
        if locations == ["unresolved"] {
            locations.clear();
        }
        (locations, cpu_ops)
    }

    #[test]
    fn shared_cells_match_the_direct_summary() {
        let locations = [
            "vllm/a.py:1 f",
            "torch/x.py:2 g",
            "",
            "python/sglang/s.py:3 h",
            "vllm/parameter.py:1 __call__",
            "unresolved",
        ];
        let stacks = [None, Some("a -> vllm/b.py:2 h"), Some("q -> r")];
        let mut rng = crate::pysem::test_rng(0x77_u64);
        let mut next = move || rng() as usize;
        let mut texts = TextCache::default();
        let mut cells = SiteCells::default();
        for _ in 0..500 {
            let sites: Vec<SiteEntry> = (0..next() % 4)
                .map(|_| SiteEntry {
                    location: texts.get(locations[next() % locations.len()]),
                    stack: stacks[next() % stacks.len()].map(|s| texts.get(s)),
                    share_pct_within_kernel: (next() % 1000) as f64 / 10.0,
                    top_cpu_op: [None, Some(texts.get("aten::mm")), Some(texts.get(""))][next() % 3].clone(),
                    ..Default::default()
                })
                .collect();
            let best = ["x.py:9 z", "unresolved"][next() % 2];
            let entry = KernelEntry { category: "other".into(), sites, best_location: texts.get(best) };
            let (l, c) = cells.summary(Some(&entry));
            let owned = |t: &[Text]| t.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            assert_eq!((owned(&l), owned(&c)), direct_summary(&entry));
        }
    }

    #[test]
    fn summary_without_entry() {
        assert_eq!(best_site_summary(None), (Vec::<String>::new(), Vec::<String>::new()));
    }
}
