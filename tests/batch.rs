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

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Median as the batch summary takes it (even count: mean of the middle two).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The slow rank is the one computing the most, not the ones waiting the
/// longest in the collectives. On these traces ranks 1, 3 and 4 have the
/// most busy time and exposed communication (a rule on those alone marks
/// all three); rank 3 computes the most (+17% against the median), and
/// rank 4, whose exposed communication is over the bar while its compute is
/// not, waits. But rank 3 computes only 0.18 ms more than the median while
/// the ranks' exposed communication differs by 9.48 ms: its compute cannot
/// hold the others up that long, so no rank is named slow and rank 4 waits
/// on none. Compute is re-derived here from the per-file kernel tables.
fn compute_too_small_for_the_waits_names_no_slow_rank(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let jsonl = tmp.path().join("out.jsonl");
    let out = common::run(&["batch", "--format", "json", "--jsonl", jsonl.to_str().unwrap(), dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let summary = json_of(&out);
    let stage = &summary["stages"][0];
    let rows = stage["ranks"].as_array().unwrap();
    let lines = jsonl_of(&jsonl);
    for row in rows {
        let line = lines.iter().find(|l| l["file"] == row["file"]).expect("a JSON line per file");
        let compute: f64 = line["kernel_tables"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["category"] != "communication")
            .map(|k| f64_of(&k["total_us"]))
            .sum();
        assert!((f64_of(&row["compute_us"]) - compute).abs() < 1e-6, "{}: {compute}", row["file"]);
    }
    let field = |key: &str| -> Vec<f64> { rows.iter().map(|r| f64_of(&r[key])).collect() };
    let (compute, exposed, busy) = (field("compute_us"), field("exposed_comm_us"), field("busy_us"));
    assert_eq!(f64_of(&stage["median_compute_us"]), median(&compute));
    let bar = |values: &[f64]| median(values) * 1.1;
    let over = |values: &[f64]| -> Vec<usize> { (0..values.len()).filter(|&i| values[i] > bar(values)).collect() };
    assert_eq!(over(&busy), vec![1, 3, 4], "the busiest ranks");
    assert_eq!(over(&exposed), vec![1, 3, 4], "the ranks with the most exposed communication");

    let most = (0..compute.len()).max_by(|&a, &b| compute[a].total_cmp(&compute[b])).unwrap();
    assert_eq!(most, 3);
    assert!(compute[3] > bar(&compute), "{compute:?}");
    assert!(stage["slow_rank"].is_null(), "{stage}");
    let unexplained = &stage["unexplained_slow_rank"];
    assert_eq!(unexplained["rank"], 3);
    let spread = exposed.iter().copied().fold(f64::MIN, f64::max) - exposed.iter().copied().fold(f64::MAX, f64::min);
    assert!((f64_of(&unexplained["comm_spread_us"]) - spread).abs() < 1e-6);
    assert!((f64_of(&unexplained["excess_compute_us"]) - (compute[3] - median(&compute))).abs() < 1e-6);
    assert!(compute[3] - median(&compute) < 0.25 * spread, "{compute:?} {exposed:?}");
    // No slow rank: every rank whose exposed communication is over the bar
    // waits, the two that also compute over it (1 and 3) included.
    let roles: Vec<&str> = rows.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["", "waiting", "", "waiting", "waiting", "", "", ""]);
    assert!(compute[1] > bar(&compute), "{compute:?}");
    assert!(rows.iter().all(|r| r["waits_on"].is_null()));
    assert!(rows.iter().all(|r| r["straggler"].as_array().unwrap().is_empty()));

    let md = common::run(&["batch", "--quiet", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.contains("| Rank | File | Busy | Compute |"), "{text}");
    assert!(text.contains("\nNo slow rank: rank 3 computes the most, 0.18 ms above the median 1.08 ms, but the ranks' exposed communication differs by up to 9.48 ms: GPU compute does not explain the waits"), "{text}");
    assert!(text.contains("\nWaiting, with no slow rank among the traces: 1, 3, 4 "), "{text}");
    let row_of = |rank: u64| {
        let start = format!("| {rank} | worker{rank}_step_12.");
        text.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("rank {rank} row in:\n{text}"))
    };
    for rank in [1, 3, 4] {
        assert!(row_of(rank).ends_with(" | waiting |"), "{}", row_of(rank));
    }
    assert!(row_of(0).ends_with(" |  |"), "{}", row_of(0));
    // The HTML page says the same, with the legend.
    let html = common::run(&["batch", "--quiet", "--format", "html", dir.to_str().unwrap()]);
    let page = String::from_utf8_lossy(&html.stdout);
    assert!(page.contains("Waiting, with no slow rank among the traces: 1, 3, 4 "), "{page}");
    assert!(page.contains("waiting = exposed communication more than 10% above the median"), "{page}");
    // Every format says how its compute and overlap differ from the
    // timeline's figures of the same names.
    assert!(text.contains("memory copies included, unlike the timeline's Compute"), "{text}");
    assert!(page.contains("memory copies included, unlike the timeline&#39;s Compute"), "{page}");
    let table = common::run(&["batch", "--quiet", "--format", "table", dir.to_str().unwrap()]);
    // (The table wraps its legend: words are compared, not lines.)
    let words = String::from_utf8_lossy(&table.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("not the timeline's comm/compute overlap"), "{words}");
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
    // One bad file is one line, naming it after the count.
    let line = stderr.lines().find(|l| l.contains("files failed")).unwrap_or_default();
    assert!(line.starts_with("torchtriage: 1 of 4 files failed: "), "{stderr}");
    assert!(line.contains("worker9_step_12.1.pt.trace.json: byte "), "{stderr}");
    assert!(!stderr.contains("\n  "), "{stderr}");

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

fn its_own_outputs_beside_the_traces_are_not_traces(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let traces = copy_some(dir, tmp.path(), 2);
    let root = tmp.path().to_str().unwrap();
    let summaries = tmp.path().join("summaries");
    let first = common::run(&["batch", "-q", "--format", "json", "--summaries", summaries.to_str().unwrap(), root]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let stats = common::run(&["stats", "--json", traces[0].to_str().unwrap()]);
    std::fs::write(tmp.path().join("stats.json"), &stats.stdout).unwrap();
    // Run again over the same directory: the summaries (named after their
    // traces) and the stats report are passed over, not failed.
    let again = common::run(&["batch", "-q", "--format", "json", root]);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    let v = json_of(&again);
    assert_eq!(v["files"], 2);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["stages"], json_of(&first)["stages"]);
    // The summaries are listed as such, and named in no warning: a rank
    // file's summary (`rank0….summary.json`) carries its rank in its name
    // but is no missing rank.
    let reasons: Vec<&str> = v["skipped"].as_array().unwrap().iter().filter_map(|s| s["reason"].as_str()).collect();
    assert_eq!(reasons.iter().filter(|r| **r == "torchtriage summary").count(), 2, "{reasons:?}");
    let loud = common::run(&["batch", "--format", "json", root]);
    let err = String::from_utf8_lossy(&loud.stderr);
    assert!(!err.contains("summary.json"), "{err}");
}

/// `--jsonl -` is stdout, with the report written elsewhere; with the report
/// on stdout too it is a usage error, and no file named `-` appears.
fn jsonl_to_stdout_needs_the_report_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.json")).unwrap();
    std::fs::copy(fixture, tmp.path().join("rank1.json")).unwrap();
    let dir = tmp.path().to_str().unwrap();
    let out = common::run_in(tmp.path(), &["batch", "-q", "--jsonl", "-", dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty() && !tmp.path().join("-").exists());
    let report = tmp.path().join("report.md");
    let out = common::run_in(tmp.path(), &["batch", "-q", "--jsonl", "-", "-o", report.to_str().unwrap(), dir]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 2);
    assert!(std::fs::read_to_string(&report).unwrap().contains("rank0.json"));
    assert!(!tmp.path().join("-").exists());
    // A reader that stops reading the lines (`| head -c 10`): no error,
    // and the report still goes to its file.
    std::fs::remove_file(&report).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_torchtriage"))
        .args(["batch", "-q", "--jsonl", "-", "-o", report.to_str().unwrap(), dir])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&report).unwrap().contains("rank0.json"));
}

fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = common::run(&["batch", tmp.path().to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&empty.stderr);
    assert!(
        stderr.starts_with(&format!("torchtriage: {}: no trace files in this directory", tmp.path().display())),
        "{stderr}"
    );
    let missing = common::run(&["batch", tmp.path().join("nope").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    let bad = common::run(&["batch", "--straggler-pct", "-1", tmp.path().to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let jobs = common::run(&["batch", "--jobs", "0", tmp.path().to_str().unwrap()]);
    assert_eq!(jobs.status.code(), Some(2));
    // A file named on its own that is not a trace is called that, not an
    // empty directory.
    let notes = tmp.path().join("notes.json");
    std::fs::write(&notes, "{\"todo\": []}").unwrap();
    let file = common::run(&["batch", notes.to_str().unwrap()]);
    assert_eq!(file.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&file.stderr);
    assert!(stderr.contains("notes.json: not recognised as a trace") && stderr.lines().count() == 1, "{stderr}");
    // A trace named on its own is read whatever its name ends with, as
    // `triage` reads it.
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let plain = tmp.path().join("plainname");
    std::fs::copy(fixture, &plain).unwrap();
    let out = common::run(&["batch", "--format", "json", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["files"], 1);
    // A pipe is refused before it is read, by batch and by merge alike.
    let fifo = tmp.path().join("ranks.summary.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for cmd in ["batch", "merge"] {
        let out = common::run(&[cmd, fifo.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("ranks.summary.json: ") && stderr.contains("not a pipe or device"), "{cmd}: {stderr}");
    }
}

/// A rank's link whose target is gone is named among the skipped files;
/// links to other names and live links are not.
fn a_dangling_link_is_listed_as_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.pt.trace.json")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/rank1.pt.trace.json", tmp.path().join("rank1.pt.trace.json")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/notes", tmp.path().join("notes.txt")).unwrap();
    let out = common::run(&["batch", "--format", "json", tmp.path().to_str().unwrap()]);
    // The rank the link stood for is missing: the batch is incomplete.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = json_of(&out);
    assert_eq!(summary["files"], 1);
    let skipped = summary["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("rank1.pt.trace.json"));
    assert_eq!(skipped[0]["reason"], "dangling symbolic link");
    let incomplete = "warning: the batch is incomplete: 1 link named for a rank leads to no file";
    assert!(summary["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with(incomplete)));
    let quiet = common::run(&["batch", "-q", tmp.path().to_str().unwrap()]);
    assert_eq!(quiet.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&quiet.stderr).contains(incomplete), "{}", String::from_utf8_lossy(&quiet.stderr));
    // A link that leads back to itself is named as such.
    std::os::unix::fs::symlink("rank5.pt.trace.json", tmp.path().join("rank5.pt.trace.json")).unwrap();
    let out = common::run(&["batch", "--format", "json", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let summary = json_of(&out);
    let reasons: Vec<&str> =
        summary["skipped"].as_array().unwrap().iter().map(|s| s["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["dangling symbolic link", "symbolic link loop"]);
    let notes = summary["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("2 links named for a rank lead to no file")),
        "{notes:?}"
    );
    std::fs::remove_file(tmp.path().join("rank5.pt.trace.json")).unwrap();
    let text = common::run(&["batch", tmp.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("rank1.pt.trace.json: dangling symbolic link"));
    // A rank's link gone, or its file empty: the report lists them and
    // stderr says so (unless quiet); other JSON files are only listed.
    std::fs::write(tmp.path().join("rank2.json"), "").unwrap();
    std::fs::write(tmp.path().join("server_args.json"), "{}").unwrap();
    let out = common::run(&["batch", tmp.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank1.pt.trace.json: skipped, dangling symbolic link"), "{err}");
    assert!(err.contains("rank2.json: skipped, empty file"), "{err}");
    assert!(!err.contains("server_args.json"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("rank2.json: empty file"));
    let quiet = common::run(&["batch", "-q", tmp.path().to_str().unwrap()]);
    let quiet_err = String::from_utf8_lossy(&quiet.stderr);
    let incomplete = "warning: the batch is incomplete: 1 link named for a rank leads to no file, and 1 file named for a rank is empty; the ranks in them or named by them are not in it";
    assert_eq!(quiet_err.trim_end(), format!("torchtriage: {incomplete}"));
    // A file named as a trace is one by its name: empty, it is a failure.
    std::fs::write(tmp.path().join("rank3.pt.trace.json"), "").unwrap();
    let out = common::run(&["batch", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 of 2 files failed") && err.contains("rank3.pt.trace.json"), "{err}");
}

/// Links that lead nowhere, and empty files, whose names stand for no rank
/// (no rank number, no `.trace.json`, a merged trace) are listed but leave
/// the batch complete.
fn entries_named_for_no_rank_leave_the_batch_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    for rank in 0..2 {
        std::fs::copy(fixture, tmp.path().join(format!("rank{rank}.json"))).unwrap();
    }
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, tmp.path().join(name)).unwrap();
    link("loop2.json", "loop1.json");
    link("loop1.json", "loop2.json");
    link("/nonexistent/notes", "notes.json");
    link("/nonexistent/merged", "merged-all.json");
    std::fs::write(tmp.path().join("empty.json"), "").unwrap();
    let out = common::run(&["batch", "--format", "json", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_of(&out);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 5, "{report}");
    let notes = report["notes"].as_array().unwrap();
    assert!(!notes.iter().any(|n| n.as_str().unwrap().contains("incomplete")), "{notes:?}");
}

/// The bundled 8-rank DLRM traces (`tests/data`), sorted by path.
fn bundled_dlrm_traces() -> Vec<PathBuf> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let mut traces: Vec<_> = std::fs::read_dir(data).unwrap().map(|e| e.unwrap().path()).collect();
    traces.sort();
    traces
}

/// The traces' world size names ranks no file holds: a warning lists them
/// (a job profiled on some ranks only), without failing the batch.
fn ranks_of_the_job_that_no_file_holds_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = bundled_dlrm_traces();
    for (_, t) in traces.iter().enumerate().filter(|(i, _)| ![3, 5].contains(i)) {
        std::fs::copy(t, tmp.path().join(t.file_name().unwrap())).unwrap();
    }
    let note = "warning: the traces give a world size of 8, and no file triaged holds ranks 3 and 5";
    let out = common::run(&["batch", "--format", "json", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        json_of(&out)["notes"].as_array().unwrap().iter().any(|n| n == note),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(note));
    // From summaries the same.
    let sums = tmp.path().join("sums");
    let out = common::run(&[
        "batch",
        "-q",
        "--summaries",
        sums.to_str().unwrap(),
        "-o",
        "/dev/null",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = common::run(&["merge", "-q", "--format", "json", sums.to_str().unwrap()]);
    assert!(json_of(&out)["notes"].as_array().unwrap().iter().any(|n| n == note));
    // One rank missing of eight, then all there: the note names one, then none.
    std::fs::copy(&traces[5], tmp.path().join(traces[5].file_name().unwrap())).unwrap();
    let out = common::run(&["batch", "-q", "--format", "json", tmp.path().to_str().unwrap()]);
    let one = "warning: the traces give a world size of 8, and no file triaged holds rank 3";
    assert!(json_of(&out)["notes"].as_array().unwrap().iter().any(|n| n == one));
    std::fs::copy(&traces[3], tmp.path().join(traces[3].file_name().unwrap())).unwrap();
    let out = common::run(&["batch", "-q", "--format", "json", tmp.path().to_str().unwrap()]);
    assert_eq!(json_of(&out)["notes"], serde_json::json!([]));
    // One trace named on the command line: the other ranks were not asked for.
    let one = tmp.path().join(traces[3].file_name().unwrap());
    let out = common::run(&["batch", "-q", "--format", "json", one.to_str().unwrap()]);
    assert_eq!(json_of(&out)["notes"], serde_json::json!([]));
}

/// A copy of rank 0's trace saved as `rank2…`: its trace says rank 0, as
/// `rank0…` does, and the batch warns that one rank is compared as two (in
/// the report and on stderr, and from summaries too).
fn a_copy_of_one_ranks_trace_under_another_rank_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = bundled_dlrm_traces();
    for (name, t) in [("rank0", &traces[0]), ("rank1", &traces[1]), ("rank2", &traces[0])] {
        std::fs::copy(t, tmp.path().join(format!("{name}.pt.trace.json.gz"))).unwrap();
    }
    let dir = tmp.path().to_str().unwrap();
    let note = |text: &str| {
        text.contains(
            "rank2.pt.trace.json.gz: its name gives rank 2, but its trace's distributedInfo gives rank 0, as ",
        ) && text.contains("rank0.pt.trace.json.gz does: a copy of one rank's trace is compared as two ranks")
    };
    let out = common::run(&["batch", "--format", "json", dir]);
    assert_eq!(out.status.code(), Some(0));
    let notes = json_of(&out)["notes"].as_array().unwrap().clone();
    assert_eq!(notes.iter().filter(|n| note(n.as_str().unwrap())).count(), 1, "{notes:?}");
    assert!(note(&String::from_utf8_lossy(&out.stderr)));
    let sums = tmp.path().join("sums");
    let out = common::run(&["batch", "-q", "--summaries", sums.to_str().unwrap(), "-o", "/dev/null", dir]);
    assert_eq!(out.status.code(), Some(0));
    let out = common::run(&["merge", "-q", "--format", "json", sums.to_str().unwrap()]);
    assert!(json_of(&out)["notes"].as_array().unwrap().iter().any(|n| note(n.as_str().unwrap())));
    // Without the copy, no such warning.
    std::fs::remove_file(tmp.path().join("rank2.pt.trace.json.gz")).unwrap();
    let out = common::run(&["batch", "--format", "json", dir]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("a copy of one rank"));
}

/// A failed rank may be the slow one: every view of the rank table says
/// the ranks were compared among the files triaged only.
fn a_failed_file_qualifies_the_slow_rank_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = bundled_dlrm_traces();
    for t in &traces[..2] {
        std::fs::copy(t, tmp.path().join(t.file_name().unwrap())).unwrap();
    }
    let bytes = std::fs::read(&traces[2]).unwrap();
    std::fs::write(tmp.path().join("rank2.pt.trace.json.gz"), &bytes[..bytes.len() / 2]).unwrap();
    let line = "Compared among the 2 files triaged only: 1 file failed (named at the end of the report), and the slow rank may be among them";
    let html = tmp.path().join("report.html");
    for args in [&["-f", "markdown"][..], &["-f", "table"], &["-o", html.to_str().unwrap()]] {
        let out = common::run(&[&["batch", "-q"][..], args, &[tmp.path().to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let text = if args[0] == "-o" {
            std::fs::read_to_string(&html).unwrap()
        } else {
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        // The table wraps its text to the terminal's width.
        let words: Vec<&str> = text.split_whitespace().collect();
        assert!(words.join(" ").contains(line), "{args:?}: {text}");
    }
    // Without the failed file, no such line.
    std::fs::remove_file(tmp.path().join("rank2.pt.trace.json.gz")).unwrap();
    let out = common::run(&["batch", "-q", tmp.path().to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Compared among"));
}

/// Per-node folders of local rank names (`node0/rank0…`, `node1/rank0…`):
/// the traces' own ranks tell the files apart, and the tables use them.
fn local_rank_names_on_several_nodes_take_the_traces_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = bundled_dlrm_traces();
    for (i, t) in traces.iter().take(4).enumerate() {
        let node = tmp.path().join(format!("node{}", i / 2));
        std::fs::create_dir_all(&node).unwrap();
        std::fs::copy(t, node.join(format!("rank{}.pt.trace.json.gz", i % 2))).unwrap();
    }
    let report = batch_json(tmp.path().to_str().unwrap());
    let rows = report["stages"][0]["ranks"].as_array().unwrap();
    let ranks: Vec<(u64, &str)> =
        rows.iter().map(|r| (r["rank"].as_u64().unwrap(), r["rank_source"].as_str().unwrap())).collect();
    assert_eq!(
        ranks,
        [(0, "distributed-info"), (1, "distributed-info"), (2, "distributed-info"), (3, "distributed-info")]
    );
    let notes = report["notes"].as_array().unwrap();
    assert!(!notes.iter().any(|n| n.as_str().unwrap().contains("held by more than one file")), "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n == "warning: the traces give a world size of 8, and no file triaged holds ranks 4, 5, 6 and 7"),
        "{notes:?}"
    );
}

/// A rank link (`rank2.json` to a trace named otherwise) takes its rank
/// from the link's name.
fn a_linked_rank_takes_the_link_name() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.json")).unwrap();
    std::fs::copy(fixture, store.path().join("run-x.json")).unwrap();
    std::os::unix::fs::symlink(store.path().join("run-x.json"), tmp.path().join("rank2.json")).unwrap();
    let out = common::run(&["batch", "-q", "--format", "json", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let ranks: Vec<(u64, String)> = json_of(&out)["stages"][0]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rank"].as_u64().unwrap(), r["rank_source"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(ranks, vec![(0, "file-name".to_string()), (2, "file-name".to_string())]);
}

/// Two profiling cycles of one rank: the report compares them as two rows
/// and stderr warns that the rank is counted twice (not with `--quiet`).
fn a_rank_held_by_two_files_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    for name in ["worker0_step_12.pt.trace.json", "worker0_step_13.pt.trace.json", "worker1_step_12.pt.trace.json"] {
        std::fs::copy(fixture, tmp.path().join(name)).unwrap();
    }
    let dir = tmp.path().to_str().unwrap();
    let out = common::run(&["batch", "--format", "json", dir]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("more than one file")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].starts_with("torchtriage: warning: rank 0 in stages extend and decode held by "), "{stderr}");
    let report = json_of(&out);
    assert_eq!(report["stages"][0]["shared_ranks"], serde_json::json!([0]));
    // The JSON carries the same line, as a triage report's notes do; the
    // fixture's trace says rank 0, so `worker1…` is also a copy of it.
    let note = warnings[0].strip_prefix("torchtriage: ").unwrap();
    assert_eq!(report["notes"][0], serde_json::json!(note));
    let copy = report["notes"][1].as_str().unwrap();
    assert!(copy.contains(
        "worker1_step_12.pt.trace.json: its name gives rank 1, but its trace's distributedInfo gives rank 0"
    ));
    assert_eq!(report["notes"].as_array().unwrap().len(), 2);
    let out = common::run(&["batch", "-q", dir]);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The HTML page says it too.
    let out = common::run(&["batch", "-q", "--format", "html", dir]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("held by more than one file"));
}

/// A file triaged without a GPU kernel is counted but in no rank table:
/// the report says why, as does stderr, and so does a merge of summaries.
fn a_file_without_kernels_is_named_in_the_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.json")).unwrap();
    write_rank(tmp.path(), 1, &[]);
    let dir = tmp.path().to_str().unwrap();
    let out = common::run(&["batch", "--format", "json", dir]);
    assert_eq!(out.status.code(), Some(0));
    let empty = tmp.path().join("rank1.json").canonicalize().unwrap();
    let note = format!("warning: {}: no GPU kernels, so the file is in no stage's rank table", empty.display());
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), format!("torchtriage: {note}"));
    let report = json_of(&out);
    assert_eq!(report["files"], 2);
    assert_eq!(report["notes"], serde_json::json!([note]));
    let sums = tmp.path().join("sums");
    let out = common::run(&["batch", "-q", "--summaries", sums.to_str().unwrap(), "-o", "/dev/null", dir]);
    assert_eq!(out.status.code(), Some(0));
    let out = common::run(&["merge", "-q", "--format", "json", sums.to_str().unwrap()]);
    assert_eq!(json_of(&out)["notes"], serde_json::json!([note]));
}

/// A JSON array of records that are not events (a package list) is no
/// trace: it is listed as skipped, not triaged as a rank.
fn an_array_of_other_records_is_no_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.json")).unwrap();
    std::fs::write(tmp.path().join("vendors.json"), r#"[{"name": "lodash", "version": "4.17.21"}]"#).unwrap();
    let report = batch_json(tmp.path().to_str().unwrap());
    assert_eq!(report["files"], 1);
    let skipped = &report["skipped"][0];
    assert!(skipped["file"].as_str().unwrap().ends_with("vendors.json"), "{skipped}");
    assert_eq!(skipped["reason"], "not recognised as a trace");
}

/// Writes `rank{rank}.json` in `dir` holding `events`.
fn write_rank(dir: &Path, rank: u32, events: &[String]) {
    let text = format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"));
    std::fs::write(dir.join(format!("rank{rank}.json")), text).unwrap();
}

/// `batch --format json` of `dir`, which must succeed.
fn batch_json(dir: &str) -> Value {
    let out = common::run(&["batch", "-q", "--format", "json", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

/// A stage of the kernel tables that the overlap step leaves out (kernels
/// resolved to `all` beside a named stage): its busy, overlap and exposed
/// figures are unknown, shown as `-` and `null`, not as zeros.
fn a_stage_without_overlap_figures_shows_none() {
    let kernel = |ts: u64, corr: u64, name: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 10, "args": {{"stream": 7, "correlation": {corr}, "External id": {corr}}}}}"#
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    for (rank, work) in [(0, 10), (1, 14)] {
        // A decode step around the first kernels; the last one runs 100 ms
        // later, too far from any annotation to have a stage.
        let events = [
            r#"{"ph": "X", "cat": "user_annotation", "name": "decode_step", "pid": 1, "tid": 1, "ts": 0, "dur": 100}"#
                .to_string(),
            kernel(10, 1, "gemm_a"),
            kernel(30, 2, "ncclKernel_AllReduce"),
            kernel(100_000, 3, "gemm_b"),
            kernel(100_000 + work, 4, "gemm_b"),
        ];
        write_rank(tmp.path(), rank, &events);
    }
    let dir = tmp.path().to_str().unwrap();
    let report = batch_json(dir);
    let stages = report["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(names, ["decode", "all"]);
    let (decode, all) = (&stages[0], &stages[1]);
    assert!(decode["median_busy_us"].as_f64().unwrap() > 0.0, "{decode}");
    assert!(all["median_busy_us"].is_null() && all["median_exposed_comm_us"].is_null(), "{all}");
    for row in all["ranks"].as_array().unwrap() {
        for key in ["busy_us", "overlap_us", "overlap_pct", "exposed_comm_us", "exposed_comm_pct"] {
            assert!(row[key].is_null(), "{key}: {row}");
        }
        assert!(row["compute_us"].as_f64().unwrap() > 0.0, "{row}");
    }
    let md = String::from_utf8_lossy(&common::run(&["batch", "-q", "--format", "markdown", dir]).stdout).into_owned();
    assert!(md.contains("| 0 | rank0.json | - | 0.02 ms | - | - | - |"), "{md}");
    assert!(md.contains("Median busy -, median compute"), "{md}");
    let table = String::from_utf8_lossy(&common::run(&["batch", "-q", "--format", "table", dir]).stdout).into_owned();
    assert!(table.contains("Median busy -, median compute"), "{table}");
}

/// A batch counts as communication what the kernel table does: a kernel
/// whose name only holds the weak word `combine` (`_combined_routing_compute`,
/// a MoE routing kernel) is compute, and no rank waits on it.
fn exposed_communication_is_the_kernel_tables_communication() {
    let kernel = |ts: u64, dur: u64, corr: u64, name: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"stream": 7, "correlation": {corr}, "External id": {corr}}}}}"#
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    for (rank, routing) in [(0, 10), (1, 10), (2, 40)] {
        let events = [
            kernel(0, 10, 1, "gemm_a"),
            kernel(20, routing, 2, "_combined_routing_compute"),
            kernel(100, 10, 3, "ncclKernel_AllReduce"),
        ];
        write_rank(tmp.path(), rank, &events);
    }
    let dir = tmp.path().to_str().unwrap();
    let report = batch_json(dir);
    for row in report["stages"][0]["ranks"].as_array().unwrap() {
        // Only the all-reduce's 10 µs is exposed communication.
        assert_eq!(row["exposed_comm_us"].as_f64(), Some(10.0), "{row}");
        assert_eq!(row["top_exposed_comm"]["kernel"], "ncclKernel_AllReduce", "{row}");
        assert_ne!(row["role"], "waiting", "{row}");
    }
    // Every format says what the cross-rank kernel table's Min / Median /
    // Max are taken over.
    for format in ["markdown", "table", "html"] {
        let text = String::from_utf8_lossy(&common::run(&["batch", "-q", "--format", format, dir]).stdout).into_owned();
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("0 on a rank that does not run it"), "{format}: {text}");
    }
}

/// A failed file whose name holds a line break: the markdown list keeps it
/// on one line (escaped, as on stderr) and the JSON error does not repeat
/// the path.
fn a_control_character_in_a_failed_name_stays_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::copy(fixture, tmp.path().join("rank0.json")).unwrap();
    std::fs::write(tmp.path().join("bad\nname.pt.trace.json"), b"{\"traceEvents\": [ {\"ph\": \"X\"").unwrap();
    let out = common::run(&["batch", "-q", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let md = String::from_utf8_lossy(&out.stdout);
    let failed = md.split("Failed files").nth(1).expect("a failed-files list");
    let lines: Vec<&str> = failed.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{failed}");
    assert!(lines[0].contains("bad\\nname.pt.trace.json: byte 28: unexpected end"), "{failed}");
    let out = common::run(&["batch", "-q", "--format", "json", tmp.path().to_str().unwrap()]);
    let failure = &json_of(&out)["failures"][0];
    assert!(failure["error"].as_str().unwrap().starts_with("byte 28: "), "{failure}");
}

fn corpus_trials(corpus: &Corpus) -> Vec<Trial> {
    let (a, b, c) = (dlrm_dir(corpus), dlrm_dir(corpus), dlrm_dir(corpus));
    vec![
        Trial::test(
            corpus.name("batch", "param_dlrm_8rank/compute_too_small_for_the_waits_names_no_slow_rank"),
            move || {
                compute_too_small_for_the_waits_names_no_slow_rank(&c);
                Ok(())
            },
        ),
        Trial::test(corpus.name("batch", "param_dlrm_8rank/eight_ranks_match_triage_per_file"), move || {
            eight_ranks_match_triage_per_file(&a);
            Ok(())
        }),
        Trial::test(corpus.name("batch", "param_dlrm_8rank/its_own_outputs_beside_the_traces_are_not_traces"), {
            let d = dlrm_dir(corpus);
            move || {
                its_own_outputs_beside_the_traces_are_not_traces(&d);
                Ok(())
            }
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
    // Tests that need no corpus.
    let plain: [(&str, fn()); 15] = [
        ("an_array_of_other_records_is_no_rank", an_array_of_other_records_is_no_rank),
        ("a_file_without_kernels_is_named_in_the_notes", a_file_without_kernels_is_named_in_the_notes),
        (
            "exposed_communication_is_the_kernel_tables_communication",
            exposed_communication_is_the_kernel_tables_communication,
        ),
        ("usage_errors_exit_2", usage_errors_exit_2),
        ("a_dangling_link_is_listed_as_skipped", a_dangling_link_is_listed_as_skipped),
        ("a_linked_rank_takes_the_link_name", a_linked_rank_takes_the_link_name),
        ("entries_named_for_no_rank_leave_the_batch_complete", entries_named_for_no_rank_leave_the_batch_complete),
        ("ranks_of_the_job_that_no_file_holds_are_named", ranks_of_the_job_that_no_file_holds_are_named),
        (
            "local_rank_names_on_several_nodes_take_the_traces_ranks",
            local_rank_names_on_several_nodes_take_the_traces_ranks,
        ),
        ("a_rank_held_by_two_files_is_warned_of", a_rank_held_by_two_files_is_warned_of),
        ("a_failed_file_qualifies_the_slow_rank_verdict", a_failed_file_qualifies_the_slow_rank_verdict),
        (
            "a_copy_of_one_ranks_trace_under_another_rank_is_warned_of",
            a_copy_of_one_ranks_trace_under_another_rank_is_warned_of,
        ),
        ("a_stage_without_overlap_figures_shows_none", a_stage_without_overlap_figures_shows_none),
        ("jsonl_to_stdout_needs_the_report_elsewhere", jsonl_to_stdout_needs_the_report_elsewhere),
        (
            "a_control_character_in_a_failed_name_stays_on_one_line",
            a_control_character_in_a_failed_name_stays_on_one_line,
        ),
    ];
    let mut trials = common::plain_trials(plain);
    trials.extend(common::over_corpora("batch", corpus_trials));
    common::run_trials(trials);
}
