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

    if let Some(s) = pick(map, best_substring_key(map.keys().map(String::as_str), kernel_name)) {
        return Some(s);
    }
    let compact = normalize_match_text(kernel_name);
    if compact.len() >= 96 {
        if let Some(s) = pick(map, best_long_prefix_key(map.keys().map(String::as_str), &compact)) {
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

    fn map_of(keys: &[&str]) -> SourceMap {
        keys.iter().map(|k| (k.to_string(), SourceStats { name: k.to_string(), ..Default::default() })).collect()
    }

    #[test]
    fn exact_then_prefix_then_substring() {
        let m = map_of(&["void gemm_kernel", "gemm", "elementwise_add"]);
        assert_eq!(relaxed_lookup(&m, "gemm").map(|s| s.name.as_str()), Some("gemm"));
        assert_eq!(relaxed_lookup(&m, "void gemm_kernel_v2").map(|s| s.name.as_str()), Some("void gemm_kernel"));
        assert_eq!(relaxed_lookup(&m, "ELEMENTWISE").map(|s| s.name.as_str()), Some("elementwise_add"));
        assert!(relaxed_lookup(&m, "softmax").is_none());
    }

    #[test]
    fn alias_groups_find_memset_launchers() {
        let mut m = map_of(&["other", "Memset (Device)"]);
        m.get_mut("other").unwrap().launch_op_counter.insert("memset thing".into(), 1);
        // "memset (device)" is not a prefix of "memset32" etc.; the alias
        // group matches both candidates and the first best wins.
        let found = relaxed_lookup(&m, "memset32_aligned1D");
        assert_eq!(found.map(|s| s.name.as_str()), Some("other"));
        assert_eq!(normalize_match_text(" A-b_C 9 "), "abc9");
    }
}
