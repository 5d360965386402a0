//! `--format csv --output DIR`: every table read back with a CSV reader
//! equals the JSON report's rows.

use crate::common;

use std::path::Path;

use serde_json::Value;

const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
);
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

fn json_of(args: &[&str]) -> Value {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = common::run(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn csv_of(dir: &Path, args: &[&str]) {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    let d = dir.to_str().unwrap();
    all.extend_from_slice(&["--format", "csv", "-o", d]);
    let out = common::run(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "the report went to the directory, not stdout");
}

/// The rows of a CSV file as (header → cell) maps.
fn read(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::ReaderBuilder::new().from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            assert_eq!(rec.len(), headers.len(), "{rec:?}");
            headers.iter().cloned().zip(rec.iter().map(String::from)).collect()
        })
        .collect()
}

/// A JSON value equals its cell: numbers to the last bit, text exactly,
/// lists one entry per line, null empty.
fn same(v: &Value, cell: &str, what: &str) {
    match v {
        Value::Null => assert_eq!(cell, "", "{what}"),
        Value::Bool(b) => assert_eq!(cell, b.to_string(), "{what}"),
        Value::Number(n) => assert_eq!(cell.parse::<f64>().unwrap(), n.as_f64().unwrap(), "{what}"),
        Value::String(s) => assert_eq!(cell, s, "{what}"),
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            let got: Vec<&str> = if cell.is_empty() { vec![] } else { cell.split('\n').collect() };
            assert_eq!(got.len(), items.len(), "{what}");
            for (g, want) in got.iter().zip(items) {
                same(want, g, what);
            }
        }
        other => assert_eq!(serde_json::from_str::<Value>(cell).unwrap(), *other, "{what}"),
    }
}

/// Every key of each JSON row (flattened one level for objects) matches
/// the CSV row at the same position.
fn same_rows(json_rows: &[&Value], csv_rows: &[std::collections::HashMap<String, String>], file: &str) {
    assert_eq!(json_rows.len(), csv_rows.len(), "{file}: row count");
    assert!(!json_rows.is_empty(), "{file}: no rows to compare");
    for (i, (j, c)) in json_rows.iter().zip(csv_rows).enumerate() {
        for (k, v) in j.as_object().unwrap() {
            match v {
                Value::Object(inner) => {
                    for (k2, v2) in inner {
                        if !v2.is_object() {
                            same(v2, &c[&format!("{k}.{k2}")], &format!("{file} row {i} {k}.{k2}"));
                        }
                    }
                }
                _ if c.contains_key(k) => same(v, &c[k], &format!("{file} row {i} {k}")),
                _ => {}
            }
        }
    }
}

#[test]
fn triage_tables_read_back_equal_the_json_rows() {
    for trace in [BUNDLED, FIXTURE] {
        let dir = tempfile::tempdir().unwrap();
        csv_of(dir.path(), &["triage", trace]);
        let v = json_of(&["triage", trace]);
        let kernel_rows: Vec<&Value> =
            v["kernel_tables"].as_array().unwrap().iter().flat_map(|t| t["rows"].as_array().unwrap()).collect();
        let kernels = read(&dir.path().join("kernels.csv"));
        same_rows(&kernel_rows, &kernels, "kernels.csv");
        // The parent's stage is on every row.
        let stages: Vec<&Value> = v["kernel_tables"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["rows"].as_array().unwrap().iter().map(move |_| &t["stage"]))
            .collect();
        for (s, row) in stages.iter().zip(&kernels) {
            same(s, &row["stage"], "kernels.csv stage");
        }
        let overlap: Vec<&Value> = v["overlap"].as_array().unwrap().iter().collect();
        same_rows(&overlap, &read(&dir.path().join("overlap.csv")), "overlap.csv");
        // The whole trace first, as the stage `trace`, then each stage's GPUs.
        let tl = &v["timeline"];
        let gpus: Vec<&Value> = std::iter::once(&tl["trace"])
            .chain(tl["stages"].as_array().unwrap().iter().flat_map(|s| s["gpus"].as_array().unwrap()))
            .collect();
        let timeline = read(&dir.path().join("timeline.csv"));
        same_rows(&gpus, &timeline, "timeline.csv");
        assert_eq!(timeline[0]["stage"], "trace");
        let stage_rows = read(&dir.path().join("stages.csv"));
        assert_eq!(stage_rows.len(), 1 + tl["stages"].as_array().unwrap().len());
        assert_eq!(stage_rows[0]["stage"], "trace");
        same(&tl["launch"]["kernels"], &stage_rows[0]["launch.kernels"], "stages.csv trace launch");
        same(&tl["verdict"]["kind"], &stage_rows[0]["verdict.kind"], "stages.csv trace verdict");
        let fuse: Vec<&Value> = v["fuse"].as_array().unwrap().iter().collect();
        if !fuse.is_empty() {
            same_rows(&fuse, &read(&dir.path().join("fuse.csv")), "fuse.csv");
        }
    }
}

/// Under an HTA basis, `notes.csv` says what the basis leaves out of the
/// timeline, as the headline does: `timeline.csv`'s `basis` column alone
/// does not.
#[test]
fn an_hta_basis_says_in_the_notes_what_it_leaves_out() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/hta/trace_filter/sampled_rank-0.json.gz");
    let dir = tempfile::tempdir().unwrap();
    csv_of(dir.path(), &["triage", trace, "--timeline-basis", "hta"]);
    let v = json_of(&["triage", trace, "--timeline-basis", "hta"]);
    let dropped = v["timeline"]["step_filter"]["kernels_dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{}", v["timeline"]);
    let notes: Vec<String> = read(&dir.path().join("notes.csv")).into_iter().map(|r| r["note"].clone()).collect();
    let want = format!("{dropped} GPU events from the last ProfilerStep's start on left out");
    assert!(notes.iter().any(|n| n.starts_with("timeline basis hta") && n.contains(&want)), "{notes:?}");
    // The default basis adds no note.
    let dir = tempfile::tempdir().unwrap();
    csv_of(dir.path(), &["triage", trace]);
    let notes = read(&dir.path().join("notes.csv"));
    assert!(notes.iter().all(|r| !r["note"].contains("timeline basis")), "{notes:?}");
}

#[test]
fn batch_ranks_read_back_equal_the_json_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let out = dir.path().join("out");
    csv_of(&out, &["batch", ranks]);
    let v = json_of(&["batch", ranks]);
    let rows: Vec<&Value> =
        v["stages"].as_array().unwrap().iter().flat_map(|s| s["ranks"].as_array().unwrap()).collect();
    assert_eq!(rows.len(), 8);
    same_rows(&rows, &read(&out.join("ranks.csv")), "ranks.csv");
    let kernels: Vec<&Value> =
        v["stages"].as_array().unwrap().iter().flat_map(|s| s["kernels"].as_array().unwrap()).collect();
    same_rows(&kernels, &read(&out.join("kernels.csv")), "kernels.csv");
    let stages = read(&out.join("stages.csv"));
    for (s, row) in v["stages"].as_array().unwrap().iter().zip(&stages) {
        for key in ["stage", "median_busy_us", "median_compute_us", "median_exposed_comm_us", "slow_rank"] {
            same(&s[key], &row[key], &format!("stages.csv {key}"));
        }
    }
    assert_eq!(stages.len(), v["stages"].as_array().unwrap().len());
}

#[test]
fn batch_skipped_files_are_in_their_own_csv() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    let one = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
    );
    std::fs::copy(one, ranks.join("worker0.pt.trace.json.gz")).unwrap();
    std::fs::write(ranks.join("other.json"), "{\"not\": \"a trace\"}").unwrap();
    let out = dir.path().join("out");
    csv_of(&out, &["batch", ranks.to_str().unwrap()]);
    let v = json_of(&["batch", ranks.to_str().unwrap()]);
    let skipped: Vec<&Value> = v["skipped"].as_array().unwrap().iter().collect();
    assert_eq!(skipped.len(), 1, "{v}");
    same_rows(&skipped, &read(&out.join("skipped.csv")), "skipped.csv");
}

#[test]
fn diff_tables_read_back_equal_the_json_rows() {
    let dir = tempfile::tempdir().unwrap();
    csv_of(dir.path(), &["diff", BUNDLED, FIXTURE]);
    let v = json_of(&["diff", BUNDLED, FIXTURE]);
    let stages = v["stages"].as_array().unwrap();
    let kernels: Vec<&Value> = stages.iter().flat_map(|s| s["kernels"].as_array().unwrap()).collect();
    same_rows(&kernels, &read(&dir.path().join("kernels.csv")), "kernels.csv");
    let cats: Vec<&Value> = stages.iter().flat_map(|s| s["categories"].as_array().unwrap()).collect();
    same_rows(&cats, &read(&dir.path().join("categories.csv")), "categories.csv");
    let timeline = read(&dir.path().join("timeline.csv"));
    assert_eq!(timeline.len(), stages.len());
    for (s, row) in stages.iter().zip(&timeline) {
        for side in ["base", "new", "delta"] {
            for (k, val) in s["timeline"][side].as_object().unwrap() {
                same(val, &row[&format!("timeline.{side}.{k}")], &format!("timeline.csv {side}.{k}"));
            }
        }
    }
}

/// Each file's header row.
fn headers(dir: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), text.lines().next().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn every_file_has_the_same_columns_whatever_its_rows() {
    let cpu_only = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    );
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    let one = std::fs::read_dir(ranks).unwrap().map(|e| e.unwrap().path()).min().unwrap();
    std::fs::copy(&one, broken.join("worker0_step_1.pt.trace.json")).unwrap();
    let bytes = std::fs::read(&one).unwrap();
    std::fs::write(broken.join("worker1_step_1.pt.trace.json"), &bytes[..bytes.len() / 2]).unwrap();
    // Pairs of runs whose tables differ: rows or none (the fuse table, the
    // failures, a diff with no stage in common), nested objects present or
    // null (per-unit figures, the gate).
    let runs: [(&[&str], &[&str]); 4] = [
        (&["triage", FIXTURE], &["triage", cpu_only]),
        (&["batch", ranks], &["batch", broken.to_str().unwrap()]),
        (&["diff", BUNDLED, FIXTURE, "--gate", "5"], &["diff", cpu_only, FIXTURE]),
        (&["diff", FIXTURE, FIXTURE], &["diff", BUNDLED, FIXTURE, "--gate", "1000"]),
    ];
    for (k, (a, b)) in runs.iter().enumerate() {
        let (da, db) = (tmp.path().join(format!("a{k}")), tmp.path().join(format!("b{k}")));
        for (args, dir) in [(a, &da), (b, &db)] {
            let mut all = vec!["-q"];
            all.extend_from_slice(args);
            all.extend_from_slice(&["--format", "csv", "-o", dir.to_str().unwrap()]);
            let out = common::run(&all);
            assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let (ha, hb) = (headers(&da), headers(&db));
        assert_eq!(ha, hb, "{a:?} against {b:?}");
        for (file, header) in &ha {
            assert!(!header.is_empty(), "{file} of {a:?} has no header");
        }
    }
}

#[test]
fn csv_without_a_directory_is_a_usage_error() {
    let out = common::run(&["-q", "triage", FIXTURE, "--format", "csv"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--output DIR"), "{err}");
}

/// A directory that held another command's CSV report: the files this
/// report does not write are named on stderr as left over (not with
/// `--quiet`), and a second run of the same command names none.
#[test]
fn files_left_from_another_report_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    csv_of(dir.path(), &["triage", BUNDLED]);
    let out = common::run(&["batch", ranks, "--format", "csv", "-o", d]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    let warning = err.lines().find(|l| l.contains("left from an earlier report")).unwrap_or_else(|| panic!("{err}"));
    for name in ["fuse.csv", "idle.csv", "overlap.csv", "timeline.csv"] {
        assert!(warning.contains(name), "{warning}");
    }
    // The files both write, and the batch's own, are not named.
    for name in ["kernels.csv", "stages.csv", "ranks.csv"] {
        assert!(!warning.contains(name), "{warning}");
    }
    // They stay named until removed; a report written again over its own
    // files names none.
    let again = common::run(&["batch", ranks, "--format", "csv", "-o", d]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("earlier report"));
    let fresh = tempfile::tempdir().unwrap();
    let f = fresh.path().to_str().unwrap();
    for _ in 0..2 {
        let out = common::run(&["batch", ranks, "--format", "csv", "-o", f]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("earlier report"));
    }
    let quiet = common::run(&["-q", "triage", BUNDLED, "--format", "csv", "-o", d]);
    assert!(quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));
}

/// A batch's notes (here each file's: a pid filter that kept none of its
/// kernels) are in `notes.csv`, one a row, as in the JSON.
#[test]
fn batch_notes_are_in_their_own_csv() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let args = ["batch", ranks, "--pid-substring", "no-such-process"];
    csv_of(dir.path(), &args);
    let v = json_of(&args);
    let notes = read(&dir.path().join("notes.csv"));
    let want: Vec<&str> = v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert_eq!(want.len(), 8, "{v}");
    let got: Vec<&str> = notes.iter().map(|row| row["note"].as_str()).collect();
    assert_eq!(got, want);
}

/// The gate's overall result is in `gate.csv`, and its lines (as stderr has
/// them) in `notes.csv`: a gate that could not be evaluated is told apart
/// from one that passed, and from no gate at all.
#[test]
fn diff_csv_records_the_gate() {
    let cpu_only = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    );
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], Option<i32>, &str, &str); 3] = [
        (&["diff", FIXTURE, cpu_only, "--gate", "5"], Some(1), "", "no stage is present on both sides"),
        (&["diff", FIXTURE, FIXTURE, "--gate", "5"], Some(0), "false", ""),
        (&["diff", FIXTURE, FIXTURE], Some(0), "", ""),
    ];
    for (k, (args, code, tripped, not_evaluated)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(k.to_string());
        // Not quiet: stderr carries every note as well as the gate's lines.
        let mut all = args.to_vec();
        all.extend_from_slice(&["--format", "csv", "-o", dir.to_str().unwrap()]);
        let out = common::run(&all);
        assert_eq!(out.status.code(), code, "{args:?}");
        let gate = read(&dir.join("gate.csv"));
        let notes: Vec<String> = read(&dir.join("notes.csv")).into_iter().map(|r| r["note"].clone()).collect();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let gate_lines: Vec<String> =
            stderr.lines().filter_map(|l| l.strip_prefix("torchtriage: ")).map(String::from).collect();
        assert_eq!(notes, gate_lines, "{args:?}");
        if args.contains(&"--gate") {
            assert_eq!(gate.len(), 1, "{args:?}");
            assert_eq!((gate[0]["threshold_pct"].as_str(), gate[0]["basis"].as_str()), ("5.0", "auto"));
            assert_eq!(gate[0]["tripped"], tripped, "{args:?}");
            assert!(gate[0]["not_evaluated"].starts_with(not_evaluated), "{args:?}");
            if !not_evaluated.is_empty() {
                let last = notes.last().unwrap();
                assert!(last.starts_with("gate: not evaluated: no stage is present"), "{notes:?}");
            }
        } else {
            assert!(gate.is_empty(), "{gate:?}");
        }
    }
}
