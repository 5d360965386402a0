//! `torchtriage batch`, driven through the binary: per-rank numbers equal
//! `triage` on each file alone, failures are listed without stopping the
//! batch, and usage errors exit 2. The 8-rank directory is read from
//! `tests/data` (gzip-compressed copies) and from `../shared` (plain JSON);
//! the trials over `../shared` are reported ignored when it is missing, and
//! fail under `CI=true` (tests/common/mod.rs).

mod common;

use std::path::{Path, PathBuf};

use common::Corpus;
use libtest_mimic::Trial;
use serde_json::Value;

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn jsonl_of(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read jsonl");
    text.lines().map(|l| serde_json::from_str(l).expect("jsonl line is JSON")).collect()
}

/// The 8-rank DLRM directory of a corpus.
fn dlrm_dir(corpus: &Corpus) -> PathBuf {
    corpus.traces_dir().join("param_dlrm_8rank")
}

fn eight_ranks_match_triage_per_file(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let jsonl = tmp.path().join("out.jsonl");
    let out = common::run(&[
        "batch",
        "--format",
        "json",
        "--jobs",
        "3",
        "--jsonl",
        jsonl.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "no progress or warnings on a non-terminal stderr");
    let summary = json_of(&out);
    let stages = summary["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1);
    let rows = stages[0]["ranks"].as_array().unwrap();
    let ranks: Vec<u64> = rows.iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, (0..8).collect::<Vec<u64>>());

    let lines = jsonl_of(&jsonl);
    assert_eq!(lines.len(), 8);
    for row in rows {
        let file = row["file"].as_str().unwrap();
        let triage = common::run(&["triage", "--format", "json", file]);
        assert_eq!(triage.status.code(), Some(0));
        let alone = json_of(&triage);
        // Busy time and overlap: the triage run's overlap statistics.
        let stats = &alone["overlap_stats"][0];
        assert_eq!(row["busy_us"], stats["total_busy_us"], "{file}");
        assert_eq!(row["overlap_us"], stats["total_overlap_us"], "{file}");
        // Leading kernel: the top row of the triage kernel table.
        let top = &alone["kernel_tables"][0]["rows"][0];
        assert_eq!(row["leading_kernel"]["kernel"], top["kernel"], "{file}");
        assert_eq!(row["leading_kernel"]["total_us"], top["total_us"], "{file}");
        // The JSON line carries the whole triage JSON of the file.
        let line = lines.iter().find(|l| l["file"] == row["file"]).expect("a JSON line per file");
        for (key, value) in alone.as_object().unwrap() {
            assert_eq!(&line[key], value, "{file}: key {key}");
        }
        assert_eq!(line["rank"], row["rank"]);
        assert_eq!(line["rank_source"], "file-name");
        let exposed = row["exposed_comm_us"].as_f64().unwrap();
        assert!(exposed > 0.0 && exposed <= row["busy_us"].as_f64().unwrap(), "{file}");
    }
    // Cross-rank kernel table: every leading kernel appears, with min <= median <= max.
    let kernels = stages[0]["kernels"].as_array().unwrap();
    for row in rows {
        assert!(kernels.iter().any(|k| k["kernel"] == row["leading_kernel"]["kernel"]));
    }
    for k in kernels {
        let (lo, mid, hi) =
            (k["min_us"].as_f64().unwrap(), k["median_us"].as_f64().unwrap(), k["max_us"].as_f64().unwrap());
        assert!(lo <= mid && mid <= hi);
    }

    // Markdown: one table row per rank.
    let md = common::run(&["batch", "--quiet", dir.to_str().unwrap()]);
    assert_eq!(md.status.code(), Some(0));
    let text = String::from_utf8_lossy(&md.stdout);
    for r in 0..8 {
        assert!(text.contains(&format!("\n| {r} | worker{r}_step_12.")), "rank {r} row in:\n{text}");
    }
}

fn copy_some(dir: &Path, into: &Path, n: usize) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .take(n)
        .map(|f| {
            let to = into.join(f.file_name().unwrap());
            std::fs::copy(&f, &to).unwrap();
            to
        })
        .collect()
}

fn a_truncated_file_is_listed_and_the_rest_reported(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let good = copy_some(dir, tmp.path(), 3);
    let bytes = std::fs::read(&good[0]).unwrap();
    let bad = tmp.path().join("worker9_step_12.1.pt.trace.json");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(tmp.path().join("notes.json"), b"{\"hello\": 1}").unwrap();
    let jsonl = tmp.path().join("out.jsonl.txt");

    let out =
        common::run(&["batch", "--format", "json", "--jsonl", jsonl.to_str().unwrap(), tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let summary = json_of(&out);
    assert_eq!(summary["files"], 4);
    assert_eq!(summary["failed"], 1);
    let ranks: Vec<u64> =
        summary["stages"][0]["ranks"].as_array().unwrap().iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, vec![0, 1, 2]);
    let failure = &summary["failures"][0];
    assert!(failure["file"].as_str().unwrap().ends_with("worker9_step_12.1.pt.trace.json"));
    assert!(!failure["error"].as_str().unwrap().is_empty());
    let skipped = summary["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("notes.json"));
    assert_eq!(skipped[0]["reason"], "not recognised as a trace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 4 files failed"), "{stderr}");
    assert!(stderr.contains("worker9_step_12.1.pt.trace.json"), "{stderr}");

    let lines = jsonl_of(&jsonl);
    assert_eq!(lines.len(), 4);
    let bad_line = lines.iter().find(|l| l.get("error").is_some()).expect("an error line");
    assert!(bad_line["file"].as_str().unwrap().ends_with("worker9_step_12.1.pt.trace.json"));
    assert_eq!(lines.iter().filter(|l| l.get("kernel_tables").is_some()).count(), 3);

    // A budget below one file's footprint runs the files one at a time:
    // same results.
    let one_at_a_time = common::run(&[
        "batch",
        "--format",
        "json",
        "--jobs",
        "4",
        "--mem-budget-mb",
        "1",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(one_at_a_time.status.code(), Some(1));
    assert_eq!(json_of(&one_at_a_time)["stages"], summary["stages"]);

    // Markdown lists it too.
    let md = common::run(&["batch", "-q", tmp.path().to_str().unwrap()]);
    assert_eq!(md.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&md.stdout).contains("Failed files"));
}

fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = common::run(&["batch", tmp.path().to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("No trace files"));
    let missing = common::run(&["batch", tmp.path().join("nope").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    let bad = common::run(&["batch", "--straggler-pct", "-1", tmp.path().to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let jobs = common::run(&["batch", "--jobs", "0", tmp.path().to_str().unwrap()]);
    assert_eq!(jobs.status.code(), Some(2));
}

fn corpus_trials(corpus: &Corpus) -> Vec<Trial> {
    let (a, b) = (dlrm_dir(corpus), dlrm_dir(corpus));
    vec![
        Trial::test(corpus.name("batch", "param_dlrm_8rank/eight_ranks_match_triage_per_file"), move || {
            eight_ranks_match_triage_per_file(&a);
            Ok(())
        }),
        Trial::test(
            corpus.name("batch", "param_dlrm_8rank/a_truncated_file_is_listed_and_the_rest_reported"),
            move || {
                a_truncated_file_is_listed_and_the_rest_reported(&b);
                Ok(())
            },
        ),
    ]
}

fn main() {
    let mut trials = vec![Trial::test("usage_errors_exit_2", || {
        usage_errors_exit_2();
        Ok(())
    })];
    trials.extend(common::over_corpora("batch", corpus_trials));
    common::run_trials(trials);
}
