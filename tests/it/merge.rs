//! `batch --summaries DIR` and `merge`: the per-trace summaries of a batch,
//! written anywhere (one batch, or one job per trace), merge into the
//! report `batch` prints.

use crate::common;

use std::path::Path;

use serde_json::Value;

const RANKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");

fn json(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = common::run(&all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), v, stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The first of the summaries in `sums`, in path order.
fn first_summary(sums: &Path) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(sums).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.swap_remove(0)
}

/// The summaries of the 8-rank job, written by `batch` into `sums` below
/// `dir`.
fn summaries(dir: &Path) -> std::path::PathBuf {
    let sums = dir.join("sums");
    let (code, _, stderr) = json(&["batch", RANKS, "--summaries", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    sums
}

#[test]
fn merged_summaries_equal_the_batch_report() {
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    let (code, batch, stderr) = json(&["batch", RANKS, "--summaries", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(std::fs::read_dir(&sums).unwrap().count(), 8);
    let (code, merged, stderr) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(merged["stages"], batch["stages"]);
    assert_eq!(merged["files"], batch["files"]);
    assert!(batch["stages"][0]["ranks"].as_array().unwrap().len() == 8, "{batch}");
}

#[test]
fn one_job_per_trace_merges_the_same() {
    // As a job array would: each trace triaged by its own `batch` run.
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    for e in std::fs::read_dir(RANKS).unwrap() {
        let p = e.unwrap().path();
        let (code, _, stderr) = json(&["batch", s(&p), "--summaries", s(&sums)]);
        assert_eq!(code, Some(0), "{stderr}");
    }
    let (_, batch, _) = json(&["batch", RANKS]);
    let files: Vec<String> = std::fs::read_dir(&sums).unwrap().map(|e| s(&e.unwrap().path()).to_string()).collect();
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let (code, merged, stderr) = json(&args);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(merged["stages"], batch["stages"]);
}

#[test]
fn a_failed_trace_stays_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    for e in std::fs::read_dir(RANKS).unwrap().take(2) {
        let p = e.unwrap().path();
        std::fs::copy(&p, ranks.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(ranks.join("worker9.pt.trace.json"), "{\"traceEvents\": [ {\"ph\": \"X\"").unwrap();
    let sums = dir.path().join("sums");
    let (code, batch, _) = json(&["batch", s(&ranks), "--summaries", s(&sums)]);
    assert_eq!(code, Some(1));
    let (code, merged, stderr) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(merged["failures"], batch["failures"]);
    assert_eq!(merged["failed"], 1);
    assert!(stderr.contains("1 of 3 files failed"), "{stderr}");
}

#[test]
fn a_file_that_is_not_a_summary_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("x.summary.json");
    std::fs::write(&bad, "{\"kind\": \"something else\"}").unwrap();
    let out = common::run(&["-q", "merge", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("x.summary.json"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let out = common::run(&["-q", "merge", s(empty.path())]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(s(empty.path())), "names the directory: {err}");
    // Not JSON at all: the position is given once, as a byte offset like
    // every other input error's.
    let text = dir.path().join("notes.json");
    std::fs::write(&text, "hello").unwrap();
    let err = String::from_utf8_lossy(&common::run(&["-q", "merge", s(&text)]).stderr).into_owned();
    assert!(err.starts_with(&format!("torchtriage: {}: byte 0: not a torchtriage summary: ", s(&text))), "{err}");
    assert!(!err.contains("column"), "{err}");
    // A summary cut short: the offset is its end.
    std::fs::write(&text, r#"{"schema_version": 6, "kind": "torchtriage-rank-summary", "file": "ab"#).unwrap();
    let err = String::from_utf8_lossy(&common::run(&["-q", "merge", s(&text)]).stderr).into_owned();
    assert!(err.contains(": byte 69: not a torchtriage summary: EOF while parsing a string"), "{err}");
}

#[test]
fn the_merged_report_does_not_claim_a_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let sums = summaries(dir.path());
    for format in ["markdown", "table"] {
        let out = common::run(&["-q", "merge", s(&sums), "--format", format]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Files: 8 triaged, 0 failed (merged from summaries)"), "{format}: {text}");
        assert!(!text.contains("memory budget"), "{format}: {text}");
    }
    // JSON keeps its documented header: the first input, one job, no budget.
    let out = common::run(&["-q", "merge", s(&sums), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["dir"].as_str(), v["jobs"].as_u64(), v["memory_budget_bytes"].as_u64()),
        (Some(s(&sums)), Some(1), Some(0))
    );
    let out = common::run(&["-q", "batch", RANKS, "--format", "markdown"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("memory budget"));
}

#[test]
fn the_merged_report_names_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let sums = summaries(dir.path());
    let mut files: Vec<String> = std::fs::read_dir(&sums).unwrap().map(|e| s(&e.unwrap().path()).to_string()).collect();
    files.sort();
    for format in ["markdown", "table", "html"] {
        let mut args = vec!["-q", "merge", "--format", format];
        args.extend(files[..2].iter().map(String::as_str));
        let text = String::from_utf8_lossy(&common::run(&args).stdout).into_owned();
        // Two summary files, not a directory named after the first.
        assert!(!text.contains("Directory:"), "{format}: {text}");
        assert!(text.contains("Merged from:") && text.contains(files[1].as_str()), "{format}: {text}");
        let mut args = vec!["-q", "merge", "--format", format];
        args.extend(files.iter().map(String::as_str));
        let text = String::from_utf8_lossy(&common::run(&args).stdout).into_owned();
        assert!(text.contains("and 5 more"), "{format}: {text}");
    }
    let out = common::run(&["-q", "batch", RANKS, "--format", "markdown"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Directory: {RANKS}")));
}

#[test]
fn traces_of_jobs_of_different_sizes_are_warned_about() {
    // Two ranks of a 2-GPU job and one whose trace says 128: the batch and
    // the merge of its summaries warn that jobs are mixed.
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let text = std::fs::read_to_string(fixture).unwrap();
    let info = r#""distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2}"#;
    assert!(text.contains(info), "the fixture's distributedInfo changed");
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    for (rank, size) in [(0, 2), (1, 2), (2, 128)] {
        let own = format!(r#""distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {size}}}"#);
        std::fs::write(ranks.join(format!("rank{rank}.json")), text.replace(info, &own)).unwrap();
    }
    let want = "warning: the traces give different world sizes (2 in 2 files, 128 in 1 file): files of different jobs are compared as ranks of one";
    let sums = dir.path().join("sums");
    let out = common::run(&["batch", s(&ranks), "--summaries", s(&sums)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("torchtriage: {want}")));
    for args in [&["batch", s(&ranks)][..], &["merge", s(&sums)]] {
        let (code, v, stderr) = json(args);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(v["notes"].as_array().unwrap().iter().any(|n| n == want), "{args:?}: {}", v["notes"]);
    }
    // One job's ranks: no such warning.
    std::fs::remove_file(ranks.join("rank2.json")).unwrap();
    let (_, v, _) = json(&["batch", s(&ranks)]);
    assert_eq!(v["notes"], serde_json::json!([]));
}

/// A trace's own notes (here a pid filter that kept none of its kernels)
/// are in the batch report, in the summary, and in the merged report.
#[test]
fn the_files_notes_survive_the_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    let filter = ["--pid-substring", "no-such-process"];
    let (code, batch, _) = json(&[&["batch", RANKS, "--summaries", s(&sums)][..], &filter].concat());
    assert_eq!(code, Some(0));
    let notes = batch["notes"].as_array().unwrap();
    assert_eq!(notes.iter().filter(|n| n.as_str().unwrap().contains("matches no process")).count(), 8, "{notes:?}");
    let (code, merged, _) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(0));
    assert_eq!(merged["notes"], batch["notes"]);
    let md = common::run(&["-q", "batch", RANKS, filter[0], filter[1]]);
    assert_eq!(String::from_utf8_lossy(&md.stdout).matches("matches no process").count(), 8);
}

/// A job array that writes each task's summaries in a directory of its
/// own: `merge` of the parent finds them all, as `batch` finds traces.
#[test]
fn summaries_in_subdirectories_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    let (code, batch, stderr) = json(&["batch", RANKS, "--summaries", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    let nest = dir.path().join("nest");
    for (k, e) in std::fs::read_dir(&sums).unwrap().enumerate() {
        let task = nest.join(format!("task{}", k % 3)).join("out");
        std::fs::create_dir_all(&task).unwrap();
        let p = e.unwrap().path();
        std::fs::copy(&p, task.join(p.file_name().unwrap())).unwrap();
    }
    let (code, merged, stderr) = json(&["merge", s(&nest)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(merged["files"], 8);
    assert_eq!(merged["stages"], batch["stages"]);
    // Nothing below: the message says it looked below too.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    let out = common::run(&["merge", s(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no *.summary.json files found in ") && err.ends_with(" or below\n"), "{err}");
}

/// Two summaries of one trace that disagree (here made with and without a
/// process filter) are refused, whichever comes first; two that agree
/// count once.
#[test]
fn two_different_summaries_of_one_trace_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (all, filtered) = (dir.path().join("all"), dir.path().join("filtered"));
    assert_eq!(json(&["batch", RANKS, "--summaries", s(&all)]).0, Some(0));
    assert_eq!(json(&["batch", RANKS, "--pid-substring", "zzz", "--summaries", s(&filtered)]).0, Some(0));
    for args in [["merge", s(&all), s(&filtered)], ["merge", s(&filtered), s(&all)]] {
        let out = common::run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("summarize the same trace differently"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let (code, twice, stderr) = json(&["merge", s(&all), s(&all)]);
    assert_eq!((code, &twice["files"]), (Some(0), &Value::from(8)), "{stderr}");
}

/// A summary with neither a trace's facts nor its failure would drop its
/// rank from the merge unnoticed: it is refused, as is one with both.
#[test]
fn a_summary_without_facts_or_error_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sums = summaries(dir.path());
    let first = &first_summary(&sums);
    let mut v: Value = serde_json::from_slice(&std::fs::read(first).unwrap()).unwrap();
    let facts = v["facts"].take();
    std::fs::write(first, v.to_string()).unwrap();
    let out = common::run(&["-q", "merge", s(&sums)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("it holds neither `facts` nor an `error`"), "{err}");
    v["facts"] = facts;
    v["error"] = Value::from("boom");
    std::fs::write(first, v.to_string()).unwrap();
    let err = String::from_utf8_lossy(&common::run(&["-q", "merge", s(&sums)]).stderr).into_owned();
    assert!(err.contains("it holds both `facts` and an `error`"), "{err}");
}

/// A summary's `options` that are no object, and `-` for standard input,
/// are refused in the user's terms.
#[test]
fn odd_options_and_standard_input_are_refused_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let sums = summaries(dir.path());
    let first = first_summary(&sums);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&first).unwrap()).unwrap();
    v["options"] = Value::Array(Vec::new());
    std::fs::write(&first, v.to_string()).unwrap();
    let out = common::run(&["-q", "merge", s(&sums)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected an object of the options (framework, pid_substring, timeline_basis)"), "{err}");
    assert!(!err.contains("FactOptions"), "{err}");
    let out = common::run(&["-q", "merge", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "torchtriage: merge reads summary files and the directories that hold them, not standard input"
    );
}

/// A summary saved with a byte-order mark (an editor's save) is read as
/// traces with one are.
#[test]
fn a_summary_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let sums = summaries(dir.path());
    let (code, before, stderr) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    let first = first_summary(&sums);
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend(std::fs::read(&first).unwrap());
    std::fs::write(&first, text).unwrap();
    let (code, after, stderr) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(after["stages"], before["stages"]);
}

#[test]
fn the_report_replaces_neither_a_summary_nor_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    // Plain traces, which a report file could be named as.
    let traces = dir.path().join("job");
    std::fs::create_dir(&traces).unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    for rank in 0..2 {
        let doc = std::fs::read_to_string(fixture).unwrap().replacen('{', &format!("{{\"rank_tag\": {rank}, "), 1);
        std::fs::write(traces.join(format!("rank{rank}.pt.trace.json")), doc).unwrap();
    }
    let sums = dir.path().join("sums");
    let (code, _, stderr) = json(&["batch", s(&traces), "--summaries", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    let summary = first_summary(&sums);
    let trace = traces.join("rank0.pt.trace.json");
    for (target, what) in [(&summary, "a summary"), (&trace, "a trace")] {
        let before = std::fs::read(target).unwrap();
        let out = common::run(&["merge", "-q", s(&sums), "-o", s(target)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let why = format!("--output names {what} this report is made from, which it would replace");
        assert!(stderr.contains(&why), "{stderr}");
        assert_eq!(std::fs::read(target).unwrap(), before, "{}", target.display());
    }
}

/// A folder whose name is not UTF-8 (bytes a Latin-1 system wrote) still
/// gets its summaries written, and `merge` reads them back: a summary
/// names such a trace with its bad bytes replaced.
#[test]
fn summaries_of_a_trace_whose_name_is_not_utf8_are_written_and_merged() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join(std::ffi::OsStr::from_bytes(b"job\xfe"));
    std::fs::create_dir(&job).unwrap();
    let first = std::fs::read_dir(RANKS).unwrap().map(|e| e.unwrap().path()).min().unwrap();
    std::fs::copy(&first, job.join("rank0.json.gz")).unwrap();
    let sums = dir.path().join("sums");
    let bin = env!("CARGO_BIN_EXE_torchtriage");
    let out = std::process::Command::new(bin)
        .args(["-q", "batch"])
        .arg(&job)
        .args(["--summaries", s(&sums)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, merged, stderr) = json(&["merge", s(&sums)]);
    assert_eq!(code, Some(0), "{stderr}");
    let file = merged["stages"][0]["ranks"][0]["file"].as_str().unwrap();
    assert!(file.ends_with("job\u{fffd}/rank0.json.gz"), "{file}");
}
