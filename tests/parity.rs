//! Parity with the reference tool: runs `torchtriage triage TRACE
//! --compat reference` on every trace that has a golden (in `tests/data/golden/`
//! and in `../shared/golden/`) and compares the Kernel, Overlap and Fuse
//! sections (numbers equal at printed precision, ±1 in the last digit; the
//! fuse table's Rationale column aside), and the JSON kernel and overlap rows
//! with the golden JSON (1e-6 relative). One trial per golden; the trials
//! over `../shared` are reported ignored when it is missing, and fail under
//! `CI=true` (tests/common/mod.rs).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Corpus;
use libtest_mimic::{Failed, Trial};

const SECTIONS: [&str; 3] = ["Kernel Table", "Overlap Opportunity Table", "Fuse Opportunity Table"];

/// (golden .md path relative to golden/, trace path), in sorted order.
fn golden_cases(corpus: &Corpus) -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned());
            }
        }
    }
    let golden = corpus.golden_dir();
    let mut names = Vec::new();
    walk(&golden, &golden, &mut names);
    names.sort();
    names
        .into_iter()
        .map(|g| {
            let trace = corpus.trace_for_golden(g.trim_end_matches(".md"));
            (g, trace)
        })
        .collect()
}

/// Lines of each section, by section title.
fn sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if SECTIONS.contains(&line) {
            out.push((line.to_string(), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(line.to_string());
        }
    }
    for (_, lines) in &mut out {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
    }
    out
}

/// Splits a line into alternating text and number tokens.
fn tokens(line: &str) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = Vec::new();
    for ch in line.chars() {
        let numeric = ch.is_ascii_digit() || (ch == '.' && out.last().is_some_and(|(n, s)| *n && !s.contains('.')));
        match out.last_mut() {
            Some((n, s)) if *n == numeric => s.push(ch),
            _ => out.push((numeric, ch.to_string())),
        }
    }
    out
}

/// Equal, except numbers may differ by one unit in their last printed digit.
fn lines_match(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.len() != tb.len() {
        return false;
    }
    ta.iter().zip(&tb).all(|((na, sa), (nb, sb))| {
        if na != nb {
            return false;
        }
        if !na || sa == sb {
            return sa == sb;
        }
        let decimals = |s: &str| s.split_once('.').map_or(0, |(_, d)| d.len());
        if decimals(sa) != decimals(sb) {
            return false;
        }
        let (Ok(x), Ok(y)) = (sa.parse::<f64>(), sb.parse::<f64>()) else { return false };
        (x - y).abs() <= 10f64.powi(-(decimals(sa) as i32)) * 1.000001
    })
}

/// Drops the last cell of a table data row: the fuse table's Rationale,
/// which torchtriage words differently on purpose (docs/deviations.md).
fn without_last_cell(line: &str) -> String {
    if !line.starts_with("| ") || line.starts_with("| ---") || line.starts_with("| Pattern |") {
        return line.to_string();
    }
    match line.trim_end_matches(" |").rfind(" | ") {
        Some(i) => line[..i].to_string(),
        None => line.to_string(),
    }
}

fn section_matches(ours: &[(String, Vec<String>)], golden: &[(String, Vec<String>)], title: &str) -> bool {
    let find = |s: &[(String, Vec<String>)]| s.iter().find(|(t, _)| t == title).map(|(_, l)| l.clone());
    let prep = |lines: Vec<String>| -> Vec<String> {
        if title.starts_with("Fuse") {
            lines.iter().map(|l| without_last_cell(l)).collect()
        } else {
            lines
        }
    };
    match (find(ours).map(prep), find(golden).map(prep)) {
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| lines_match(x, y)),
        _ => false,
    }
}

fn triage(trace: &Path, json: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_torchtriage"));
    cmd.arg("-q").arg("triage").arg(trace).args(["--compat", "reference"]);
    if json {
        cmd.args(["--format", "json"]);
    }
    let out = cmd.output().expect("run torchtriage");
    assert!(
        out.status.success(),
        "torchtriage failed on {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
}

/// A JSON list as the reference's table cell: items joined with `<br>`, or
/// `none` for an empty list.
fn reference_cell(list: &serde_json::Value, none: &str) -> serde_json::Value {
    let items: Vec<&str> = list.as_array().map(|a| a.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
    serde_json::Value::String(if items.is_empty() { none.to_string() } else { items.join("<br>") })
}

/// Compares `kernel_tables[].rows` of our JSON with the golden JSON.
fn json_rows_match(ours: &serde_json::Value, golden: &serde_json::Value) -> Result<(), String> {
    if ours["schema_version"] != 8 {
        return Err(format!("schema_version {}, want 8", ours["schema_version"]));
    }
    let empty = Vec::new();
    let ot = ours["kernel_tables"].as_array().unwrap_or(&empty);
    let gt = golden["kernel_tables"].as_array().unwrap_or(&empty);
    if ot.len() != gt.len() {
        return Err(format!("{} kernel tables, golden has {}", ot.len(), gt.len()));
    }
    for (o, g) in ot.iter().zip(gt) {
        if o["stage"] != g["stage"] {
            return Err(format!("stage {} vs {}", o["stage"], g["stage"]));
        }
        let orows = o["rows"].as_array().unwrap_or(&empty);
        let grows = g["rows"].as_array().unwrap_or(&empty);
        if orows.len() != grows.len() {
            return Err(format!("stage {}: {} rows, golden has {}", g["stage"], orows.len(), grows.len()));
        }
        for (i, (a, b)) in orows.iter().zip(grows).enumerate() {
            for key in ["kernel", "category", "launches"] {
                if a[key] != b[key] {
                    return Err(format!("stage {} row {i} {key}: {} vs {}", g["stage"], a[key], b[key]));
                }
            }
            // An unresolved location is an empty list (the schema); the
            // tables word it.
            if a["location"] == serde_json::json!(["unresolved"]) {
                return Err(format!("stage {} row {i}: location [\"unresolved\"], want []", g["stage"]));
            }
            // The reference prints lists as one `<br>`-joined cell.
            for (key, none) in [("location", "unresolved"), ("cpu_op", "-")] {
                if reference_cell(&a[key], none) != b[key] {
                    return Err(format!("stage {} row {i} {key}: {} vs {}", g["stage"], a[key], b[key]));
                }
            }
            for key in ["total_us", "max_us"] {
                let (x, y) = (a[key].as_f64().unwrap_or(f64::NAN), b[key].as_f64().unwrap_or(f64::NAN));
                if !close(x, y) {
                    return Err(format!("stage {} row {i} {key}: {x} vs {y}", g["stage"]));
                }
            }
        }
    }
    overlap_rows_match(ours, golden)
}

/// Compares our overlap rows and stage totals with the golden `overlap[]`
/// bundles and `overlap_stats[]` (strings exact, numbers to 1e-6 relative).
fn overlap_rows_match(ours: &serde_json::Value, golden: &serde_json::Value) -> Result<(), String> {
    let empty = Vec::new();
    let our_rows = ours["overlap"].as_array().unwrap_or(&empty);
    let mut compared = 0;
    for bundle in golden["overlap"].as_array().unwrap_or(&empty) {
        let label = bundle["bundle"].as_str().unwrap_or("");
        let stage = label.strip_prefix("formal-").unwrap_or(label);
        let mine: Vec<&serde_json::Value> = our_rows.iter().filter(|r| r["stage"] == stage).collect();
        let theirs = bundle["rows"].as_array().unwrap_or(&empty);
        if mine.len() != theirs.len() {
            return Err(format!("overlap {label}: {} rows, golden has {}", mine.len(), theirs.len()));
        }
        for (i, (a, b)) in mine.iter().zip(theirs).enumerate() {
            for (key, gv) in b.as_object().into_iter().flatten() {
                let av = &a[key.as_str()];
                let same = match (av.as_f64(), gv.as_f64()) {
                    (Some(x), Some(y)) => close(x, y),
                    _ => av == gv,
                };
                if !same {
                    return Err(format!("overlap {label} row {i} {key}: {av} vs {gv}"));
                }
            }
            compared += 1;
        }
    }
    let our_stats = ours["overlap_stats"].as_array().unwrap_or(&empty);
    for g in golden["overlap_stats"].as_array().unwrap_or(&empty) {
        let Some(o) = our_stats.iter().find(|o| o["bundle"] == g["bundle"]) else {
            return Err(format!("overlap_stats {} missing", g["bundle"]));
        };
        for key in ["total_busy_us", "total_overlap_us", "max_concurrent_streams"] {
            let (x, y) = (o[key].as_f64().unwrap_or(f64::NAN), g[key].as_f64().unwrap_or(f64::NAN));
            if !close(x, y) {
                return Err(format!("overlap_stats {} {key}: {x} vs {y}", g["bundle"]));
            }
        }
    }
    let _ = compared;
    Ok(())
}

/// Where a section differs from the golden, for the failure message.
fn first_difference(ours: &[(String, Vec<String>)], golden: &[(String, Vec<String>)], title: &str) -> String {
    let find = |s: &[(String, Vec<String>)]| s.iter().find(|(t, _)| t == title).map(|(_, l)| l.clone());
    match (find(ours), find(golden)) {
        (None, _) => "missing from our output".to_string(),
        (_, None) => "missing from the golden".to_string(),
        (Some(a), Some(b)) => {
            let fuse = title.starts_with("Fuse");
            let prep = |l: &String| if fuse { without_last_cell(l) } else { l.clone() };
            match a.iter().zip(&b).position(|(x, y)| !lines_match(&prep(x), &prep(y))) {
                Some(i) => format!("line {}:\n    ours:   {}\n    golden: {}", i + 1, a[i], b[i]),
                None => format!("{} lines, golden has {}", a.len(), b.len()),
            }
        }
    }
}

/// One golden: the three sections of the markdown report (Rationale
/// aside) and the JSON kernel and overlap rows must all match.
fn check_case(golden_dir: &Path, golden: &str, trace: &Path) -> Result<(), Failed> {
    let md_path = golden_dir.join(golden);
    let golden_md = std::fs::read_to_string(&md_path).map_err(|e| format!("read {}: {e}", md_path.display()))?;
    let ours = sections(&triage(trace, false));
    let gold = sections(&golden_md);
    let mut problems: Vec<String> = SECTIONS
        .iter()
        .filter(|t| !section_matches(&ours, &gold, t))
        .map(|t| format!("{t} differs: {}", first_difference(&ours, &gold, t)))
        .collect();
    let gjson_path = golden_dir.join(golden.replace(".md", ".json"));
    let json_result = match std::fs::read_to_string(&gjson_path) {
        Ok(text) => {
            let gj: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let oj: serde_json::Value = serde_json::from_str(&triage(trace, true)).unwrap_or_default();
            json_rows_match(&oj, &gj)
        }
        Err(_) => Err("golden JSON missing".to_string()),
    };
    if let Err(e) = json_result {
        problems.push(format!("JSON kernel / overlap rows differ: {e}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", trace.display(), problems.join("\n")).into())
    }
}

/// One trial per golden of each corpus.
fn parity_trials(corpus: &Corpus) -> Vec<Trial> {
    let cases = golden_cases(corpus);
    if cases.is_empty() {
        let message = format!("no goldens under {}", corpus.golden_dir().display());
        return vec![common::failing(corpus.name("parity", "*"), message)];
    }
    cases
        .into_iter()
        .map(|(golden, trace)| {
            let golden_dir = corpus.golden_dir();
            let name = corpus.name("parity", golden.trim_end_matches(".md"));
            Trial::test(name, move || check_case(&golden_dir, &golden, &trace))
        })
        .collect()
}

fn number_tolerance() {
    assert!(lines_match("| a | 1.23 ms | 4.5% |", "| a | 1.24 ms | 4.5% |"));
    assert!(!lines_match("| a | 1.23 ms |", "| a | 1.25 ms |"));
    assert!(!lines_match("| a | 1.2 ms |", "| a | 1.20 ms |"));
    assert!(lines_match("x 10.0 y", "x 9.9 y"));
}

fn main() {
    let mut trials = vec![Trial::test("number_tolerance", || {
        number_tolerance();
        Ok(())
    })];
    trials.extend(common::over_corpora("parity", parity_trials));
    common::run_trials(trials);
}
