//! Stage payloads: per canonical kernel name, its launch sites ranked by
//! source quality then GPU time, each with its share of the kernel's time,
//! top CPU op and most common stack. Thousands of kernels share a handful
//! of (location, stack) pairs, so each pair's display location and rank are
//! worked out once per payload.

use crate::analysis::kernels::NameCategories;
use rustc_hash::FxHashMap;

use crate::analysis::sites::locations::{
    extract_preferred_stack_location, is_low_signal_source_location, is_preferred_source_location, py_strip,
    source_location_priority,
};
use crate::analysis::sites::{KernelSites, MappingSiteAggregate, SiteStats};
use crate::analysis::types::{KernelEntry, SiteEntry, StagePayload, Text, TextAddr, TextCache, UNRESOLVED};
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
    // When x · 10^digits comes out a whole number n, x lies within rounding
    // error of n / 10^digits, far from any tie: that decimal is the answer,
    // and the double nearest to it is the correctly rounded quotient.
    if digits <= 15 {
        let scale = 10f64.powi(digits as i32);
        let n = x * scale;
        if n == n.trunc() && n.abs() < 9e15 {
            return n / scale;
        }
    }
    format!("{:.*}", digits, x).parse().unwrap_or(x)
}

/// Where a site is shown: its own location when that is framework code and
/// informative, else the best frame of its stack, else its location.
pub fn site_display_location(site: &SiteEntry) -> String {
    let location = if site.location.is_empty() { UNRESOLVED } else { &*site.location };
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
    preferred: FxHashMap<TextAddr, Option<Text>>,
    /// Display location and its priority per (location, stack).
    display: FxHashMap<(TextAddr, TextAddr), (Text, i32)>,
}

impl SiteViews {
    fn preferred(&mut self, stack: &Option<Text>) -> Option<Text> {
        let key = TextAddr(stack.clone());
        if let Some(p) = self.preferred.get(&key) {
            return p.clone();
        }
        let p = extract_preferred_stack_location(stack.as_deref()).map(|d| self.texts.get(&d));
        self.preferred.insert(key, p.clone());
        p
    }

    fn display(&mut self, site: &SiteEntry) -> (Text, i32) {
        let key = (TextAddr(Some(site.location.clone())), TextAddr(site.stack.clone()));
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
    let mut site = |location: &Text, agg: &MappingSiteAggregate| {
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
    };
    // Most kernels have one site: nothing to order.
    if let [(location, agg)] = locations.as_slice() {
        let only = site(location, agg);
        let best_location = views.display(&only).0;
        return KernelEntry { category, sites: vec![only], best_location };
    }
    let mut ordered: Vec<&(Text, MappingSiteAggregate)> = locations.iter().collect();
    ordered.sort_by(|a, b| fcmp(b.1.total_us, a.1.total_us));
    let mut sites: Vec<SiteEntry> = ordered.into_iter().map(|(location, agg)| site(location, agg)).collect();
    let mut keyed: Vec<((i32, f64, u64), SiteEntry)> =
        sites.drain(..).map(|s| ((views.display(&s).1, s.total_us, s.launches), s)).collect();
    keyed.sort_by(|(a, _), (b, _)| b.0.cmp(&a.0).then(fcmp(b.1, a.1)).then(b.2.cmp(&a.2)));
    let mut sites: Vec<SiteEntry> = keyed.into_iter().map(|(_, s)| s).collect();
    sites.shrink_to_fit();
    let best_location = match sites.first() {
        Some(s) => views.display(s).0,
        None => choose_best_location(locations).cloned().unwrap_or_else(|| views.texts.get(UNRESOLVED)),
    };
    KernelEntry { category, sites, best_location }
}

/// The reference's `build_stage_payload`: kernels sorted by name. The site
/// stats are consumed as the entries are made, so the two are not both
/// held in full.
pub fn build_stage_payload(mut site_stats: SiteStats, categories: &NameCategories) -> StagePayload {
    site_stats.sort_unstable_keys();
    let mut views = SiteViews::default();
    let mut payload = StagePayload::with_capacity_and_hasher(site_stats.len(), Default::default());
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
        assert!(py_round_digits(-0.0, 3).is_sign_negative());
    }

    #[test]
    fn rounding_shortcut_agrees_with_decimal_formatting() {
        let slow = |x: f64, d: usize| -> f64 { format!("{:.*}", d, x).parse().unwrap() };
        let mut next = crate::pysem::test_rng(0x2545_f491_4f6c_dd1d_u64);
        for i in 0..200_000u64 {
            // Whole and short decimals (the shortcut's cases), sums of
            // them, and arbitrary doubles.
            let r = next();
            let x = match i % 4 {
                0 => (r % 10_000_000) as f64 / [1.0, 10.0, 100.0, 1000.0][(r >> 40) as usize % 4],
                1 => (r % 1000) as f64 * 0.001 + (r >> 20) as f64 % 97.0,
                2 => f64::from_bits(r) % 1e9,
                _ => (r as f64 / u64::MAX as f64) * 100.0,
            };
            let x = if r & 1 == 1 { -x } else { x };
            if !x.is_finite() {
                continue;
            }
            for d in [0, 1, 3, 6] {
                assert_eq!(py_round_digits(x, d).to_bits(), slow(x, d).to_bits(), "{x} to {d}");
            }
        }
    }

    /// The entry as the reference makes it, every display location and
    /// rank computed afresh.
    fn direct_entry(locations: &KernelSites, category: &str) -> KernelEntry {
        let total: f64 = locations.iter().fold(0.0, |acc, (_, a)| acc + a.total_us);
        let mut ordered: Vec<&(Text, MappingSiteAggregate)> = locations.iter().collect();
        ordered.sort_by(|a, b| fcmp(b.1.total_us, a.1.total_us));
        let mut sites: Vec<SiteEntry> = ordered
            .into_iter()
            .map(|(location, agg)| {
                let stack = most_common_key(agg.stacks.iter().map(|(k, v)| (k, v))).cloned();
                SiteEntry {
                    location: location.clone(),
                    display_location: extract_preferred_stack_location(stack.as_deref())
                        .map_or_else(|| location.clone(), |d| d.as_str().into()),
                    launches: agg.count,
                    total_us: py_round_digits(agg.total_us, 3),
                    share_pct_within_kernel: py_round_digits(pct(agg.total_us, total), 3),
                    top_cpu_op: most_common_key(agg.cpu_ops.iter().map(|(k, v)| (k, v))).cloned(),
                    stack,
                }
            })
            .collect();
        let key = |s: &SiteEntry| (source_location_priority(&site_display_location(s)), s.total_us, s.launches);
        sites.sort_by(|a, b| {
            let (a, b) = (key(a), key(b));
            b.0.cmp(&a.0).then(fcmp(b.1, a.1)).then(b.2.cmp(&a.2))
        });
        let best_location = match sites.first() {
            Some(s) => site_display_location(s).as_str().into(),
            None => choose_best_location(locations).cloned().unwrap_or_else(|| "unresolved".into()),
        };
        KernelEntry { category: category.into(), sites, best_location }
    }

    #[test]
    fn memoized_entries_match_the_direct_definition() {
        let locations = ["vllm/a.py:1 f", "torch/nn/modules/module.py:1 _call_impl", "unresolved", "x.py:3 g"];
        let stacks = ["a -> vllm/b.py:2 h", "vllm/model_executor/parameter.py:9 w -> torch/x.py:1 y", "q"];
        let mut rng = crate::pysem::test_rng(0xabcd_u64);
        let mut next = move || rng() as usize;
        let mut texts = TextCache::default();
        let mut stats = SiteStats::default();
        for k in 0..300 {
            let sites: KernelSites = (0..1 + next() % 3)
                .map(|_| {
                    let mut agg = MappingSiteAggregate {
                        total_us: (next() % 50) as f64 / 4.0,
                        count: 1 + (next() % 5) as u64,
                        ..Default::default()
                    };
                    for _ in 0..next() % 3 {
                        agg.stacks.push((texts.get(stacks[next() % stacks.len()]), (next() % 4) as u64));
                        agg.cpu_ops.push((texts.get("aten::mm"), 1));
                    }
                    (texts.get(locations[next() % locations.len()]), agg)
                })
                .collect();
            stats.insert(format!("k{k:03}").as_str().into(), sites);
        }
        let want: Vec<(Text, KernelEntry)> = stats.iter().map(|(n, s)| (n.clone(), direct_entry(s, "other"))).collect();
        let got = build_stage_payload(stats, &NameCategories::default());
        assert_eq!(got.into_iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn payload_ranks_framework_sites_first() {
        let locs: KernelSites = vec![
            ("torch/a.py:1 f".into(), MappingSiteAggregate { total_us: 90.0, count: 9, ..Default::default() }),
            ("vllm/b.py:2 g".into(), MappingSiteAggregate { total_us: 10.0, count: 1, ..Default::default() }),
        ];
        let mut stats = SiteStats::default();
        stats.insert("k".into(), locs);
        let payload = build_stage_payload(stats, &NameCategories::default());
        let e = &payload["k"];
        assert_eq!(&*e.category, "other");
        assert_eq!(&*e.best_location, "vllm/b.py:2 g");
        assert_eq!(e.sites[1].share_pct_within_kernel, 90.0);
    }
}
