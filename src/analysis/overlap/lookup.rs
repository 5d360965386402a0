//! Finding a kernel's source-map entry when its name is not an exact key:
//! prefix / substring matches, then long-name common-prefix matches, then
//! alias token groups for kernels known to be launched under other names.

use super::scopes::source_scope_priority;
use super::source_map::{SourceMap, SourceStats};
pub use crate::analysis::text::normalize_match_text;
use crate::analysis::text::{alias_score, alias_token_groups, best_long_prefix_key, best_substring_key};

fn lookup_text(key: &str, stats: &SourceStats) -> String {
    let parts =
        [key, stats.best_scope().unwrap_or(""), stats.best_chain().unwrap_or(""), stats.best_launch_op().unwrap_or("")];
    normalize_match_text(&parts.join(" "))
}

/// The best-scoring key (first on ties); an empty key counts as no match.
fn pick<'m>(map: &'m SourceMap, best: Option<&'m str>) -> Option<&'m SourceStats> {
    best.filter(|k| !k.is_empty()).and_then(|k| map.get(k))
}

/// The reference's relaxed source-map lookup.
pub fn relaxed_lookup<'m>(map: &'m SourceMap, kernel_name: &str) -> Option<&'m SourceStats> {
    if let Some(s) = map.get(kernel_name) {
        return Some(s);
    }

    if let Some(s) = pick(map, best_substring_key(map.keys().map(|k| &**k), kernel_name)) {
        return Some(s);
    }
    let compact = normalize_match_text(kernel_name);
    if compact.len() >= 96 {
        if let Some(s) = pick(map, best_long_prefix_key(map.keys().map(|k| &**k), &compact)) {
            return Some(s);
        }
    }

    let groups = alias_token_groups(kernel_name);
    if groups.is_empty() {
        return None;
    }
    let mut best: Option<&str> = None;
    let mut best_score: i64 = -1;
    for (key, stats) in map {
        let mut score = alias_score(&groups, &lookup_text(key, stats));
        if score <= 0 {
            continue;
        }
        score += source_scope_priority(stats.best_scope());
        score += (stats.mapping_ratio() * 100.0) as i64;
        if score > best_score {
            best = Some(key);
            best_score = score;
        }
    }
    pick(map, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map of `keys`, each key's stats marked by its position.
    fn map_of(keys: &[&str]) -> SourceMap {
        keys.iter()
            .enumerate()
            .map(|(i, k)| ((*k).into(), SourceStats { total_count: i as i64, ..Default::default() }))
            .collect()
    }

    fn found(m: &SourceMap, name: &str) -> Option<&'static str> {
        relaxed_lookup(m, name).map(|s| {
            ["void gemm_kernel", "gemm", "elementwise_add", "other", "Memset (Device)"][s.total_count as usize]
        })
    }

    #[test]
    fn exact_then_prefix_then_substring() {
        let m = map_of(&["void gemm_kernel", "gemm", "elementwise_add"]);
        assert_eq!(found(&m, "gemm"), Some("gemm"));
        assert_eq!(found(&m, "void gemm_kernel_v2"), Some("void gemm_kernel"));
        assert_eq!(found(&m, "ELEMENTWISE"), Some("elementwise_add"));
        assert!(relaxed_lookup(&m, "softmax").is_none());
    }

    #[test]
    fn alias_groups_find_memset_launchers() {
        let mut m: SourceMap = map_of(&["a", "b", "c", "other", "Memset (Device)"]).into_iter().skip(3).collect();
        m.get_mut("other").unwrap().best_launch_op = Some("memset thing".into());
        // "memset (device)" is not a prefix of "memset32" etc.; the alias
        // group matches both candidates and the first best wins.
        assert_eq!(found(&m, "memset32_aligned1D"), Some("other"));
        assert_eq!(normalize_match_text(" A-b_C 9 "), "abc9");
    }
}
