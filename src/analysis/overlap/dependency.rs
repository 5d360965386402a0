//! Same-stream neighbours of a kernel and how likely it is serially tied to
//! them: a tight gap plus a shared scope family, a shared launch op, or a
//! category pairing that usually means a data dependency.

use rustc_hash::FxHashMap as HashMap;

use super::detect::short_name;
use super::lookup::relaxed_lookup;
use super::source_map::{SourceMap, SourceStats};
use super::OverlapKernel;
use crate::pysem::is_py_space;
use crate::pysem::{fcmp, py_max, py_min};

/// Event idx → positions (in the event slice) of the previous and next
/// kernels on the same stream, ordered by (ts, end, idx).
pub type NeighborIndex = HashMap<usize, (Option<usize>, Option<usize>)>;

/// The neighbour index, holding entries only for the event idxs `wanted`
/// accepts (the rows only ask about their representative launches).
pub fn build_neighbor_index(events: &[OverlapKernel], wanted: impl Fn(usize) -> bool) -> NeighborIndex {
    // Positions as u32: 4 bytes per kernel of the stage.
    let mut by_stream: HashMap<&str, Vec<u32>> = HashMap::default();
    for (pos, e) in events.iter().enumerate() {
        by_stream.entry(&**e.stream).or_default().push(pos as u32);
    }
    let mut index = NeighborIndex::default();
    for mut positions in by_stream.into_values() {
        positions.sort_by(|&a, &b| {
            let (x, y) = (&events[a as usize], &events[b as usize]);
            fcmp(x.ts, y.ts).then_with(|| fcmp(x.end(), y.end())).then(x.idx().cmp(&y.idx()))
        });
        for (i, &pos) in positions.iter().enumerate() {
            let idx = events[pos as usize].idx();
            if !wanted(idx) {
                continue;
            }
            let prev = i.checked_sub(1).map(|j| positions[j] as usize);
            let next = positions.get(i + 1).map(|&n| n as usize);
            index.insert(idx, (prev, next));
        }
    }
    index
}

/// Splits `path(line): func` (any whitespace after the colon) into path
/// and function; other scopes are all path.
fn parse_scope_signature(scope: &str) -> (&str, &str) {
    if scope.is_empty() || scope == "unmapped" || scope == "n/a" {
        return ("", "");
    }
    for (i, _) in scope.match_indices('(') {
        if i == 0 || scope[..i].contains('\n') {
            continue;
        }
        let rest = &scope[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let Some(after) = rest[digits..].strip_prefix("):") else {
            continue;
        };
        if let Some(func) = match_ws_then_func(after) {
            return (&scope[..i], func);
        }
    }
    (scope, "")
}

/// `\s*(.+)$` with Python's backtracking: the greedy whitespace run gives
/// back characters until a non-empty, newline-free function remains
/// (a single trailing newline is allowed by `$`).
fn match_ws_then_func(text: &str) -> Option<&str> {
    let mut starts = vec![0];
    for (i, c) in text.char_indices() {
        if !is_py_space(c) {
            break;
        }
        starts.push(i + c.len_utf8());
    }
    starts.iter().rev().find_map(|&k| {
        let rest = &text[k..];
        let func = rest.strip_suffix('\n').unwrap_or(rest);
        (!func.is_empty() && !func.contains('\n')).then_some(func)
    })
}

/// Same file, or same function name in different files.
fn same_scope_family(left: &str, right: &str) -> bool {
    let (lp, lf) = parse_scope_signature(left);
    let (rp, rf) = parse_scope_signature(right);
    if lp.is_empty() || rp.is_empty() {
        return false;
    }
    lp == rp || (!lf.is_empty() && !rf.is_empty() && lf == rf)
}

fn dependency_like(current: &OverlapKernel, neighbor: Option<&OverlapKernel>) -> bool {
    let Some(n) = neighbor else { return false };
    match current.category() {
        "communication" => matches!(n.category(), "compute" | "elementwise" | "memory" | "other"),
        "elementwise" | "memory" => matches!(n.category(), "compute" | "communication" | "elementwise" | "memory"),
        _ => false,
    }
}

fn scope_of(s: Option<&SourceStats>) -> &str {
    s.and_then(|s| s.best_scope()).unwrap_or("unmapped")
}

fn launch_of(s: Option<&SourceStats>) -> &str {
    s.and_then(|s| s.best_launch_op()).unwrap_or("n/a")
}

/// `name @ scope (gap x us)` for a neighbour, or `none`.
fn describe_neighbor(neighbor: Option<&OverlapKernel>, gap: Option<f64>, map: &SourceMap) -> String {
    let Some(n) = neighbor else {
        return "none".to_string();
    };
    let scope = scope_of(relaxed_lookup(map, n.canonical_name()));
    let gap_text = match gap {
        Some(g) => format!("{:.1} us", py_max(g, 0.0)),
        None => "n/a".to_string(),
    };
    format!("{} @ {} (gap {gap_text})", short_name(n.canonical_name(), 28), short_name(scope, 28))
}

/// The dependency signal of a kernel and descriptions of its neighbours.
pub fn classify_dependency_signal(
    current: &OverlapKernel,
    source: Option<&SourceStats>,
    prev: Option<&OverlapKernel>,
    next: Option<&OverlapKernel>,
    map: &SourceMap,
) -> (String, String, String) {
    let current_scope = scope_of(source);
    let current_launch = launch_of(source);
    let prev_source = prev.and_then(|p| relaxed_lookup(map, p.canonical_name()));
    let next_source = next.and_then(|n| relaxed_lookup(map, n.canonical_name()));
    let (prev_scope, next_scope) = (scope_of(prev_source), scope_of(next_source));
    let (prev_launch, next_launch) = (launch_of(prev_source), launch_of(next_source));
    let prev_gap = prev.map(|p| py_max(current.ts - p.end(), 0.0));
    let next_gap = next.map(|n| py_max(n.ts - current.end(), 0.0));

    let tight = py_max(2.0, py_min(20.0, current.dur * 0.15));
    let prev_tight = prev_gap.is_some_and(|g| g <= tight);
    let next_tight = next_gap.is_some_and(|g| g <= tight);
    let risk = |scope: &str, launch: &str, neighbor: Option<&OverlapKernel>| {
        same_scope_family(current_scope, scope)
            || (current_launch != "n/a" && current_launch == launch)
            || dependency_like(current, neighbor)
    };
    let prev_risk = prev_tight && risk(prev_scope, prev_launch, prev);
    let next_risk = next_tight && risk(next_scope, next_launch, next);
    let prev_unclear = prev_tight && !prev_risk && (current_scope == "unmapped" || prev_scope == "unmapped");
    let next_unclear = next_tight && !next_risk && (current_scope == "unmapped" || next_scope == "unmapped");

    let signal = match (prev_risk, next_risk) {
        (true, true) => "both-side serial risk",
        (true, false) => "prev-side serial risk",
        (false, true) => "next-side serial risk",
        _ if prev_unclear || next_unclear => "adjacency unclear",
        _ => "serial risk low",
    };
    (signal.to_string(), describe_neighbor(prev, prev_gap, map), describe_neighbor(next, next_gap, map))
}

/// `low` / `high` / `unclear` for a dependency signal.
pub fn dependency_risk_label(signal: &str) -> &str {
    match signal {
        "serial risk low" => "low",
        "prev-side serial risk" | "next-side serial risk" | "both-side serial risk" => "high",
        "adjacency unclear" => "unclear",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_signatures() {
        assert_eq!(parse_scope_signature("a/b.py(12): f"), ("a/b.py", "f"));
        assert_eq!(parse_scope_signature("a/b.py(12):f"), ("a/b.py", "f"));
        assert_eq!(parse_scope_signature("a/b.py(12):  "), ("a/b.py", " "));
        assert_eq!(parse_scope_signature("a/b.py:12 f"), ("a/b.py:12 f", ""));
        assert_eq!(parse_scope_signature("unmapped"), ("", ""));
        assert!(same_scope_family("x.py(1): f", "y.py(2): f"));
        assert!(same_scope_family("x.py(1): f", "x.py(9): g"));
        assert!(!same_scope_family("x.py(1): f", "unmapped"));
    }

    #[test]
    fn risk_labels() {
        assert_eq!(dependency_risk_label("prev-side serial risk"), "high");
        assert_eq!(dependency_risk_label("adjacency unclear"), "unclear");
        assert_eq!(dependency_risk_label("weird"), "weird");
    }
}
