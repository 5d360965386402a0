//! Cell text of a fuse opportunity: the evidence kernels with their share,
//! and the current launch locations of the related rows, each de-duplicated
//! and capped the way the reference's table shows them.

use super::FuseRow;
use crate::analysis::types::{location_cell, UNRESOLVED};
use crate::pysem::{is_py_space, normalize_text};

use crate::analysis::mapping::site_display_location;

/// Most evidence kernels listed in one cell.
const EVIDENCE_LIMIT: usize = 3;
/// Most locations listed per row and per cell.
const LOCATION_LIMIT: usize = 4;
/// Evidence kernels below this share (percent) are not listed.
const EVIDENCE_MIN_SHARE: f64 = 1.0;

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole != 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// The first `limit` distinct non-blank values, stripped, in order.
pub fn ordered_unique<I, S>(values: I, limit: usize) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out: Vec<String> = Vec::new();
    for value in values {
        if out.len() >= limit {
            break;
        }
        let item = value.as_ref().trim_matches(is_py_space);
        if item.is_empty() || out.iter().any(|seen| seen == item) {
            continue;
        }
        out.push(item.to_string());
    }
    out
}

/// Up to four places a row's kernel is launched from: its mapping sites'
/// display locations, else the `<br>`-separated fragments of its location.
pub fn kernel_row_locations<R: FuseRow>(row: &R) -> Vec<String> {
    let mut values: Vec<String> = row
        .entry()
        .iter()
        .flat_map(|e| e.sites.iter())
        .filter(|s| !s.location.is_empty())
        .map(site_display_location)
        .collect();
    let cell = location_cell(row.location());
    if values.is_empty() && !cell.is_empty() && cell != UNRESOLVED {
        values = cell.split("<br>").map(|f| f.trim_matches(is_py_space).to_string()).collect();
    }
    ordered_unique(values, LOCATION_LIMIT)
}

/// `path:line func` → `func @ path:line`; anything else is returned
/// normalised but otherwise unchanged.
pub fn fusion_display_location(location: &str) -> String {
    let text = normalize_text(location);
    match split_path_line_func(&text) {
        Some((path, line, func)) => format!("{func} @ {path}:{line}"),
        None => text.into_owned(),
    }
}

/// Splits at the first `:` (after at least one char) that is followed by
/// digits, whitespace and a non-empty function part.
fn split_path_line_func(text: &str) -> Option<(&str, &str, &str)> {
    if text.contains('\n') {
        return None; // cannot happen after normalize_text; keeps `.` semantics simple
    }
    for (i, _) in text.match_indices(':') {
        if i == 0 {
            continue;
        }
        let after = &text[i + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let rest = &after[digits..];
        let func = rest.trim_start_matches(is_py_space);
        let spaces = &rest[..rest.len() - func.len()];
        if spaces.is_empty() {
            continue;
        }
        if !func.is_empty() {
            return Some((&text[..i], &after[..digits], func));
        }
        // Only whitespace follows: the last whitespace char can serve as func.
        let mut chars = spaces.char_indices();
        if let (Some(_), Some((last, _))) = (chars.next(), chars.next_back()) {
            return Some((&text[..i], &after[..digits], &spaces[last..]));
        }
    }
    None
}

/// Distinct display locations, at most four.
pub fn summarize_locations<I, S>(values: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    ordered_unique(values.into_iter().map(|v| fusion_display_location(v.as_ref())), LOCATION_LIMIT)
}

/// `name (share%)` of the first rows with at least 1% of the stage's GPU
/// time, at most three.
pub fn summarize_evidence<R: FuseRow>(rows: &[&R], total_us: f64) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for row in rows {
        let share = pct(row.total_us(), total_us);
        if share < EVIDENCE_MIN_SHARE {
            continue;
        }
        items.push(format!("{} ({:.1}%)", row.name(), share));
        if items.len() >= EVIDENCE_LIMIT {
            break;
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::types::{Aggregate, KernelEntry, KernelRow, SiteEntry};

    #[test]
    fn display_location_moves_func_first() {
        assert_eq!(fusion_display_location("vllm/a.py:12 forward"), "forward @ vllm/a.py:12");
        assert_eq!(fusion_display_location("C:/x/a.py:7  run  it"), "run it @ C:/x/a.py:7");
        assert_eq!(fusion_display_location("unresolved"), "unresolved");
        assert_eq!(fusion_display_location("a.py:x 12"), "a.py:x 12");
    }

    #[test]
    fn ordered_unique_strips_dedups_and_caps() {
        let got = ordered_unique([" a", "a", "", "b ", "c", "d", "e"], 4);
        assert_eq!(got, vec!["a", "b", "c", "d"]);
    }

    #[test]
    fn row_locations_prefer_sites_then_location_fragments() {
        let mut row = KernelRow { location: vec!["x.py:1 f".into(), " y.py:2 g".into()], ..Default::default() };
        assert_eq!(kernel_row_locations(&row), vec!["x.py:1 f", "y.py:2 g"]);
        row.entry = Some(KernelEntry {
            sites: vec![
                SiteEntry { location: "vllm/a.py:3 h".into(), ..Default::default() },
                SiteEntry { location: "".into(), ..Default::default() },
            ],
            ..Default::default()
        });
        assert_eq!(kernel_row_locations(&row), vec!["vllm/a.py:3 h"]);
        row.entry = None;
        row.location = Vec::new();
        assert!(kernel_row_locations(&row).is_empty());
    }

    #[test]
    fn evidence_skips_small_rows_and_caps_at_three() {
        let mk = |name: &str, us: f64| KernelRow {
            name: name.into(),
            aggregate: Aggregate { total_us: us, count: 1, max_us: us },
            ..Default::default()
        };
        let rows = [mk("a", 50.0), mk("tiny", 0.5), mk("b", 20.0), mk("c", 10.0), mk("d", 10.0)];
        let refs: Vec<&KernelRow> = rows.iter().collect();
        assert_eq!(summarize_evidence(&refs, 100.0), vec!["a (50.0%)", "b (20.0%)", "c (10.0%)"]);
        assert!(summarize_evidence(&refs[1..2], 100.0).is_empty());
        assert!(summarize_locations(Vec::<String>::new()).is_empty());
    }
}
