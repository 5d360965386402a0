//! Parity of the fuse matcher with the reference, on dumps of its inputs
//! and outputs (one JSON file per trace, written by a harness kept outside
//! the repository). Set TORCHTRIAGE_FUSION_DUMPS to the dump directory; the
//! test is skipped when it is unset.
//!
//! Dump file: `{"trace", "calls": [{"total_us", "server_args", "framework",
//! "rows": [...], "opportunities": [...], "variants": [{"framework",
//! "server_args", "opportunities"}]}]}`. Every column but the rationale is
//! compared, plus the ranking fields.

use std::path::PathBuf;

use serde_json::Value;
use torchtriage::analysis::framework::Framework;
use torchtriage::analysis::fusion::{detect_fusion_opportunities, FusionOpportunity, KeywordMatch, Registry};
use torchtriage::analysis::types::{list_cell, Aggregate, KernelEntry, KernelRow, SiteEntry, Text};

fn s(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(x)) => x.clone(),
        _ => String::new(),
    }
}

fn opt_s(v: &Value, key: &str) -> Option<Text> {
    v.get(key).and_then(|x| x.as_str()).map(Into::into)
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn site(v: &Value) -> SiteEntry {
    SiteEntry {
        location: s(v, "location").into(),
        display_location: s(v, "display_location").into(),
        launches: v.get("launches").and_then(Value::as_u64).unwrap_or(0),
        total_us: f(v, "total_us"),
        share_pct_within_kernel: f(v, "share_pct_within_kernel"),
        top_cpu_op: opt_s(v, "top_cpu_op"),
        stack: opt_s(v, "stack"),
    }
}

fn kernel_row(v: &Value) -> KernelRow {
    let agg = &v["aggregate"];
    let entry = v.get("entry").filter(|e| e.is_object()).map(|e| KernelEntry {
        category: s(e, "category").into(),
        sites: e.get("sites").and_then(Value::as_array).map(|a| a.iter().map(site).collect()).unwrap_or_default(),
        best_location: s(e, "best_location").into(),
    });
    KernelRow {
        name: s(v, "name"),
        category: s(v, "category"),
        aggregate: Aggregate {
            total_us: f(agg, "total_us"),
            count: agg.get("count").and_then(Value::as_u64).unwrap_or(0),
            max_us: f(agg, "max_us"),
        },
        location: cell_list(&s(v, "location"), "unresolved"),
        cpu_op: cell_list(&s(v, "cpu_op"), "-"),
        entry,
    }
}

/// A reference cell (`<br>`-joined, or its empty marker) as a list.
fn cell_list(cell: &str, empty: &str) -> Vec<String> {
    if cell == empty {
        Vec::new()
    } else {
        cell.split("<br>").map(str::to_string).collect()
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// First difference between ours and the reference's list, if any.
fn compare(ours: &[FusionOpportunity], want: &[Value]) -> Option<String> {
    if ours.len() != want.len() {
        let names: Vec<&str> = ours.iter().map(|o| o.pattern.as_str()).collect();
        let wnames: Vec<String> = want.iter().map(|w| s(w, "pattern")).collect();
        return Some(format!("count {} vs {}: ours {:?} want {:?}", ours.len(), want.len(), names, wnames));
    }
    for (o, w) in ours.iter().zip(want) {
        let cols = [
            ("pattern", o.pattern.clone()),
            ("status", o.status.clone()),
            ("confidence", o.confidence.clone()),
            ("evidence", list_cell(&o.evidence, "-")),
            ("current_locations", list_cell(&o.current_locations, "-")),
            ("candidate_path", list_cell(&o.candidate_path, "-")),
        ];
        for (key, ours) in cols {
            if ours != s(w, key) {
                return Some(format!("{}: {key}: ours {:?} want {:?}", o.pattern, ours, s(w, key)));
            }
        }
        if !close(o.related_us, f(w, "related_us")) {
            return Some(format!("{}: related_us {} vs {}", o.pattern, o.related_us, f(w, "related_us")));
        }
        let covered: Vec<Vec<String>> =
            o.covered_rows().iter().map(|(a, b, c)| vec![a.clone(), b.clone(), c.clone()]).collect();
        let want_cov: Vec<Vec<String>> = serde_json::from_value(w["covered_row_keys"].clone()).unwrap_or_default();
        if covered != want_cov {
            return Some(format!("{}: covered rows differ ({} vs {})", o.pattern, covered.len(), want_cov.len()));
        }
        if o.pattern_span() as u64 != w["pattern_span"].as_u64().unwrap_or(0)
            || o.priority() != w["priority"].as_i64().unwrap_or(0)
            || o.has_direct_match() != w["has_active_match"].as_bool().unwrap_or(false)
        {
            return Some(format!("{}: ranking fields differ", o.pattern));
        }
    }
    None
}

#[test]
#[ignore = "needs TORCHTRIAGE_FUSION_DUMPS from an instrumented reference run"]
fn fuse_matches_reference_dumps() {
    let Some(dir) = std::env::var_os("TORCHTRIAGE_FUSION_DUMPS") else {
        eprintln!("TORCHTRIAGE_FUSION_DUMPS unset; skipping");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dump dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let registry = Registry::builtin();
    let (mut traces_ok, mut variants_ok, mut variants_all) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read dump");
        let dump: Value = serde_json::from_str(&text).expect("parse dump");
        let mut trace_ok = true;
        for (ci, call) in dump["calls"].as_array().cloned().unwrap_or_default().iter().enumerate() {
            let rows: Vec<KernelRow> =
                call["rows"].as_array().map(|a| a.iter().map(kernel_row).collect()).unwrap_or_default();
            let total = f(call, "total_us");
            let run = |args: &Value, fw: &Value| {
                let args = if args.is_null() { None } else { Some(args) };
                detect_fusion_opportunities(
                    &registry,
                    &rows,
                    total,
                    args,
                    fw.as_str().and_then(Framework::from_id),
                    KeywordMatch::Substring,
                )
            };
            let ours = run(&call["server_args"], &call["framework"]);
            let want = call["opportunities"].as_array().cloned().unwrap_or_default();
            if let Some(diff) = compare(&ours, &want) {
                trace_ok = false;
                failures.push(format!("{} call {ci}: {diff}", path.display()));
            }
            for v in call["variants"].as_array().cloned().unwrap_or_default() {
                variants_all += 1;
                let ours = run(&v["server_args"], &v["framework"]);
                let want = v["opportunities"].as_array().cloned().unwrap_or_default();
                match compare(&ours, &want) {
                    None => variants_ok += 1,
                    Some(diff) => failures.push(format!(
                        "{} call {ci} variant {} {}: {diff}",
                        path.display(),
                        v["framework"],
                        v["server_args"]
                    )),
                }
            }
        }
        if trace_ok {
            traces_ok += 1;
        }
    }
    for f in failures.iter().take(20) {
        eprintln!("MISMATCH {f}");
    }
    println!("fuse: {traces_ok} of {} match", files.len());
    println!("fuse variants (framework x server_args): {variants_ok} of {variants_all} match");
    assert!(failures.is_empty(), "{} mismatches", failures.len());
}
