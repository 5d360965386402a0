//! Stage payloads: per canonical kernel name, its launch sites ranked by
//! source quality then GPU time, each with its share of the kernel's time,
//! top CPU op and most common stack. Thousands of kernels share a handful
//! of (location, stack) pairs, so each pair's display location and rank are
//! worked out once per payload.

use indexmap::IndexMap;
use rustc_hash::FxHashMap;

use crate::analysis::sites::locations::{
    extract_preferred_stack_location, is_low_signal_source_location, is_preferred_source_location, py_strip,
    source_location_priority,
};
use crate::analysis::sites::{KernelSites, MappingSiteAggregate, SiteStats};
use crate::analysis::types::{KernelEntry, SiteEntry, StagePayload, Text, TextCache};
use crate::pysem::{fcmp, most_common_key};

/// `100 * part / whole`, 0 when `whole` is 0.
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole != 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// Python's `round(x, ndigits)` (correctly rounded, ties to even on the
/// exact binary value).
pub fn py_round_digits(x: f64, digits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{:.*}", digits, x).parse().unwrap_or(x)
}

/// Where a site is shown: its own location when that is framework code and
/// informative, else the best frame of its stack, else its location.
pub fn site_display_location(site: &SiteEntry) -> String {
    let location = if site.location.is_empty() { "unresolved" } else { &*site.location };
    let location = py_strip(location);
    if is_preferred_source_location(location) && !is_low_signal_source_location(location) {
        return location.to_string();
    }
    extract_preferred_stack_location(site.stack.as_deref()).unwrap_or_else(|| location.to_string())
}

/// Texts of one payload and the per-pair results computed once each.
#[derive(Default)]
struct SiteViews {
    texts: TextCache,
    /// [`extract_preferred_stack_location`] of each stack.
    preferred: FxHashMap<Option<Text>, Option<Text>>,
    /// Display location and its priority per (location, stack).
    display: FxHashMap<(Text, Option<Text>), (Text, i32)>,
}

impl SiteViews {
    fn preferred(&mut self, stack: &Option<Text>) -> Option<Text> {
        if let Some(p) = self.preferred.get(stack) {
            return p.clone();
        }
        let p = extract_preferred_stack_location(stack.as_deref()).map(|d| self.texts.get(&d));
        self.preferred.insert(stack.clone(), p.clone());
        p
    }

    fn display(&mut self, site: &SiteEntry) -> (Text, i32) {
        let key = (site.location.clone(), site.stack.clone());
        if let Some(v) = self.display.get(&key) {
            return v.clone();
        }
        let shown = self.texts.get(&site_display_location(site));
        let v = (shown.clone(), source_location_priority(&shown));
        self.display.insert(key, v.clone());
        v
    }
}

/// Best location by (priority, GPU time, launches), first on ties.
fn choose_best_location(locations: &KernelSites) -> Option<&Text> {
    let mut best: Option<(&Text, (i32, f64, u64))> = None;
    for (loc, agg) in locations {
        let key = (source_location_priority(loc), agg.total_us, agg.count);
        if best.as_ref().is_none_or(|(_, b)| key.partial_cmp(b) == Some(std::cmp::Ordering::Greater)) {
            best = Some((loc, key));
        }
    }
    best.map(|(l, _)| l)
}

/// One kernel's entry from its per-location totals.
fn kernel_entry(locations: &KernelSites, category: Text, views: &mut SiteViews) -> KernelEntry {
    let total: f64 = locations.iter().fold(0.0, |acc, (_, a)| acc + a.total_us);
    let mut ordered: Vec<&(Text, MappingSiteAggregate)> = locations.iter().collect();
    ordered.sort_by(|a, b| fcmp(b.1.total_us, a.1.total_us));
    let mut sites: Vec<SiteEntry> = ordered
        .into_iter()
        .map(|(location, agg)| {
            let stack = most_common_key(agg.stacks.iter().map(|(k, v)| (k, v))).cloned();
            let display_location = views.preferred(&stack).unwrap_or_else(|| location.clone());
            SiteEntry {
                location: location.clone(),
                display_location,
                launches: agg.count,
                total_us: py_round_digits(agg.total_us, 3),
                share_pct_within_kernel: py_round_digits(pct(agg.total_us, total), 3),
                top_cpu_op: most_common_key(agg.cpu_ops.iter().map(|(k, v)| (k, v))).cloned(),
                stack,
            }
        })
        .collect();
    let mut keyed: Vec<((i32, f64, u64), SiteEntry)> =
        sites.drain(..).map(|s| ((views.display(&s).1, s.total_us, s.launches), s)).collect();
    keyed.sort_by(|(a, _), (b, _)| b.0.cmp(&a.0).then(fcmp(b.1, a.1)).then(b.2.cmp(&a.2)));
    let mut sites: Vec<SiteEntry> = keyed.into_iter().map(|(_, s)| s).collect();
    sites.shrink_to_fit();
    let best_location = match sites.first() {
        Some(s) => views.display(s).0,
        None => choose_best_location(locations).cloned().unwrap_or_else(|| views.texts.get("unresolved")),
    };
    KernelEntry { category, sites, best_location }
}

/// The reference's `build_stage_payload`: kernels sorted by name. The site
/// stats are consumed as the entries are made, so the two are not both
/// held in full.
pub fn build_stage_payload(mut site_stats: SiteStats, categories: &IndexMap<&str, &'static str>) -> StagePayload {
    site_stats.sort_unstable_keys();
    let mut views = SiteViews::default();
    let mut payload = StagePayload::with_capacity(site_stats.len());
    for (name, locations) in site_stats {
        let category = views.texts.get(categories.get(&*name).copied().unwrap_or("other"));
        let entry = kernel_entry(&locations, category, &mut views);
        payload.insert(name, entry);
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_python() {
        assert_eq!(py_round_digits(2.0005, 3), 2.001);
        assert_eq!(py_round_digits(0.0625, 3), 0.062);
        assert_eq!(py_round_digits(1.23456, 3), 1.235);
        assert_eq!(py_round_digits(33.33333333, 3), 33.333);
    }

    #[test]
    fn payload_ranks_framework_sites_first() {
        let locs: KernelSites = vec![
            ("torch/a.py:1 f".into(), MappingSiteAggregate { total_us: 90.0, count: 9, ..Default::default() }),
            ("vllm/b.py:2 g".into(), MappingSiteAggregate { total_us: 10.0, count: 1, ..Default::default() }),
        ];
        let mut stats = SiteStats::new();
        stats.insert("k".into(), locs);
        let payload = build_stage_payload(stats, &IndexMap::new());
        let e = &payload["k"];
        assert_eq!(&*e.category, "other");
        assert_eq!(&*e.best_location, "vllm/b.py:2 g");
        assert_eq!(e.sites[1].share_pct_within_kernel, 90.0);
    }
}
