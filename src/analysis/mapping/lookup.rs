//! Finding a kernel's entry in a kernel map when the mapping trace's names
//! differ from the formal trace's: exact name, then prefix / substring,
//! then a long common prefix for templated kernels, then hand-written alias
//! families. Also the row summary (location and CPU op cells) of an entry.

use std::sync::Arc;

use crate::analysis::sites::locations::{is_preferred_source_location, source_location_priority};
use crate::analysis::stage::Stage;
pub use crate::analysis::text::normalize_match_text;
use crate::analysis::text::{alias_score, alias_token_groups, best_long_prefix_key, best_substring_key};
use crate::analysis::types::{list_cell, KernelEntry, SiteEntry, StagePayload, Text, TextAddr, TextCache, TextList};

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
    let groups = alias_token_groups(kernel_name);
    if groups.is_empty() {
        return None;
    }
    let mut best: Option<(&str, i64)> = None;
    for (key, entry) in kernels {
        let mut score = alias_score(&groups, &entry_lookup_text(key, entry));
        if score <= 0 {
            continue;
        }
        score += source_location_priority(&entry.best_location)
            .max(source_location_priority(&list_cell(&best_site_summary(Some(entry)).0, "unresolved")))
            as i64;
        score += (entry_total_us(entry) / 10.0).floor() as i64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((key, score));
        }
    }
    best.filter(|(k, _)| !k.is_empty()).and_then(|(k, _)| kernels.get(k))
}

/// A kernel map: per-stage payloads plus one over all stages (the same
/// payload as the only stage's when there is one stage).
#[derive(Clone, Debug, Default)]
pub struct KernelMap {
    pub stages: indexmap::IndexMap<Stage, Arc<StagePayload>>,
    pub global: Arc<StagePayload>,
}

impl KernelMap {
    /// The reference's `lookup_kernel_map_entry`: the stage and its aliases,
    /// then the global payload. A payload already asked is not asked again:
    /// it would miss again.
    pub fn lookup(&self, stage: Stage, kernel_name: &str) -> Option<&KernelEntry> {
        let mut asked: Vec<&Arc<StagePayload>> = Vec::with_capacity(3);
        let payloads = stage_aliases(stage).into_iter().filter_map(|s| self.stages.get(&s)).chain([&self.global]);
        for payload in payloads {
            if asked.iter().any(|p| Arc::ptr_eq(p, payload)) {
                continue;
            }
            if let Some(e) = relaxed_lookup(payload, kernel_name) {
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
            return (vec![entry.best_location.clone()], Vec::new());
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
        (locations, cpu_ops)
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
    fn summary_without_entry() {
        assert_eq!(best_site_summary(None), (Vec::<String>::new(), Vec::<String>::new()));
    }
}
