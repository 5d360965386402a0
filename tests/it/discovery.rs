//! Discovery and input forms: every trace file is parsed at most once per
//! run (`TT_TIMING` announces each parse as `timing: parse <path>`), zstd
//! files are found in directories like gzip ones, and `-` reads a trace
//! from standard input for `triage`, as does a path that names a pipe; the
//! stage traces of a folder of runs come from one run.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

fn run_timed(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_torchtriage")).args(args).env("TT_TIMING", "1").output().expect("run torchtriage")
}

/// How often each path was parsed, from the `timing: parse` lines.
fn parses(out: &Output) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        if let Some(rest) = line.strip_prefix("timing: parse ") {
            let path = rest.split(" ms rss").next().unwrap_or(rest);
            let path = path.rsplit_once(' ').map_or(path, |(p, _)| p);
            *counts.entry(path.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// A directory holding the fixture as `rank0` and `rank1`, written by `write`.
fn rank_dir(suffix: &str, write: impl Fn(&Path, &[u8])) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(FIXTURE).unwrap();
    let paths: Vec<PathBuf> = (0..2).map(|r| dir.path().join(format!("rank{r}{suffix}"))).collect();
    for p in &paths {
        write(p, &text);
    }
    (dir, paths)
}

fn plain(p: &Path, text: &[u8]) {
    std::fs::write(p, text).unwrap();
}

fn zst(p: &Path, text: &[u8]) {
    std::fs::write(p, zstd::encode_all(text, 3).unwrap()).unwrap();
}

fn assert_each_parsed_once(out: &Output, expected: &[&Path]) {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let counts = parses(out);
    for p in expected {
        let key = p.canonicalize().unwrap().display().to_string();
        assert_eq!(counts.get(&key), Some(&1), "{key} parsed {:?} times; all: {counts:?}", counts.get(&key));
    }
    assert!(counts.values().all(|&n| n == 1), "a file parsed twice: {counts:?}");
    assert_eq!(counts.len(), expected.len(), "parsed: {counts:?}");
}

#[test]
fn triage_of_a_directory_parses_the_chosen_rank_once() {
    let (dir, paths) = rank_dir(".json", plain);
    let out = run_timed(&["-q", "triage", dir.path().to_str().unwrap()]);
    assert_each_parsed_once(&out, &[&paths[0]]);
}

/// The command a note suggests for the other ranks can be copied as it is:
/// a folder whose name a shell would split is quoted.
#[test]
fn the_batch_a_note_suggests_quotes_a_folder_a_shell_would_split() {
    let (dir, _) = rank_dir(".json", plain);
    let spaced = dir.path().join("sp ace");
    std::fs::create_dir(&spaced).unwrap();
    for r in 0..2 {
        std::fs::rename(dir.path().join(format!("rank{r}.json")), spaced.join(format!("rank{r}.json"))).unwrap();
    }
    let out = common::run(&["triage", spaced.to_str().unwrap()]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!("(`torchtriage batch '{}'` reads every trace)", spaced.display());
    assert!(stderr.contains(&want), "{stderr}");
}

#[test]
fn batch_parses_each_rank_once() {
    let (dir, paths) = rank_dir(".json", plain);
    let out = run_timed(&["-q", "batch", dir.path().to_str().unwrap()]);
    assert_each_parsed_once(&out, &[&paths[0], &paths[1]]);
}

#[test]
fn zstd_directories_work_for_triage_and_batch() {
    let (dir, paths) = rank_dir(".json.zst", zst);
    let out = run_timed(&["-q", "triage", dir.path().to_str().unwrap()]);
    assert_each_parsed_once(&out, &[&paths[0]]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Kernel Table") && text.contains("rank0.json.zst"), "{text}");

    let out = run_timed(&["-q", "batch", "--format", "json", dir.path().to_str().unwrap()]);
    assert_each_parsed_once(&out, &[&paths[0], &paths[1]]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], 2, "{v}");
    assert_eq!(v["skipped"], serde_json::json!([]), "{v}");

    // A bare `.zst` name is found too.
    let bare = dir.path().join("rank2.zst");
    zst(&bare, &std::fs::read(FIXTURE).unwrap());
    let out = run_timed(&["-q", "batch", "--format", "json", dir.path().to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], 3, "{v}");
}

#[test]
fn triage_reads_standard_input() {
    let text = std::fs::read(FIXTURE).unwrap();
    let from_file = common::run(&["-q", "triage", FIXTURE]);
    assert!(from_file.status.success());
    for input in [text.clone(), zstd::encode_all(&text[..], 3).unwrap()] {
        let out = common::run_stdin(&["-q", "triage", "-"], &input);
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        let tables = |o: &Output| {
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            s[s.find("Kernel Table").unwrap()..].to_string()
        };
        assert_eq!(tables(&out), tables(&from_file));
    }
    let out = common::run_stdin(&["-q", "triage", "-", "--format", "json"], &text);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["formal_traces"], serde_json::json!(["-"]));
    let bad = common::run_stdin(&["-q", "triage", "-"], b"{\"traceEvents\": [");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("torchtriage: -: "));
    // A batch reads files: `-` is refused as standard input, not as a
    // missing file.
    let out = common::run_stdin(&["-q", "batch", "-"], &text);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not standard input"), "{out:?}");
}

/// A named pipe with `bytes` written into it by a thread once a reader
/// opens it. A reader that never comes leaves the thread waiting ten
/// seconds at most, so a run that does not read the pipe fails rather
/// than hangs.
#[cfg(unix)]
fn fifo_with(dir: &tempfile::TempDir, name: &str, bytes: Vec<u8>) -> (PathBuf, std::thread::JoinHandle<()>) {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let path = dir.path().join(name);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other precondition.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let p = path.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // Opening for writing without blocking fails until a reader is there.
        let mut f = loop {
            match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&p) {
                Ok(f) => break f,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                Err(_) => return,
            }
        };
        // SAFETY: `f` is an open descriptor; this clears O_NONBLOCK on it.
        unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, 0) };
        // The reader may stop early (an error): a broken pipe is fine.
        let _ = f.write_all(&bytes);
    });
    (path, writer)
}

#[cfg(unix)]
#[test]
fn a_path_that_names_a_pipe_is_read_once_as_a_stream() {
    let text = std::fs::read(FIXTURE).unwrap();
    let tables = |o: &Output| {
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        s.find("Kernel Table").map(|i| s[i..].to_string()).unwrap_or_default()
    };
    let from_file = common::run(&["-q", "triage", FIXTURE]);
    assert!(from_file.status.success());
    let dir = tempfile::tempdir().unwrap();
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    for (i, input) in [text.clone(), gz, zstd::encode_all(&text[..], 3).unwrap()].into_iter().enumerate() {
        let (fifo, writer) = fifo_with(&dir, &format!("triage{i}"), input.clone());
        let out = common::run(&["-q", "triage", fifo.to_str().unwrap()]);
        writer.join().unwrap();
        assert!(out.status.success(), "triage on a pipe: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(tables(&out), tables(&from_file));
        // `stats` reads the pipe from its first byte too (the bytes that
        // tell gzip and zstd from JSON are not lost).
        let (fifo, writer) = fifo_with(&dir, &format!("stats{i}"), input);
        let out = common::run(&["-q", "stats", "--json", fifo.to_str().unwrap()]);
        writer.join().unwrap();
        assert!(out.status.success(), "stats on a pipe: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["events"].as_u64().unwrap() > 0, "{v}");
    }
    // `/dev/stdin` when standard input is a pipe.
    let out = common::run_stdin(&["-q", "triage", "/dev/stdin"], &text);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tables(&out), tables(&from_file));
}

/// The traces a `triage` of `dir` analysed, relative to `dir`.
fn analysed(dir: &Path) -> Vec<String> {
    let out = common::run(&["-q", "triage", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = dir.canonicalize().unwrap();
    let mut traces: Vec<String> = report["formal_traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| Path::new(t.as_str().unwrap()).strip_prefix(&root).unwrap().to_string_lossy().into_owned())
        .collect();
    traces.sort();
    traces
}

#[test]
fn the_stages_of_a_folder_of_runs_come_from_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let put = |rel: &str| {
        let p = tmp.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(FIXTURE, &p).unwrap();
        // Distinct modification times, in the order written.
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // An older run with both stages, stage folders of a newer one with only
    // its prefill, and an unrelated job: the newer run alone.
    put("run_a/x-extend.json");
    put("run_a/x-decode.json");
    put("job/worker0.json");
    put("run_b/prefill/y.json");
    assert_eq!(analysed(tmp.path()), ["run_b/prefill/y.json"]);
    // Its decode folder joins it.
    put("run_b/decode/z.json");
    assert_eq!(analysed(tmp.path()), ["run_b/decode/z.json", "run_b/prefill/y.json"]);
}

/// `store/` for traces and `links/` for links to them, in `dir`.
fn store_and_links(dir: &tempfile::TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let (store, links) = (dir.path().join("store"), dir.path().join("links"));
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&links).unwrap();
    (store, links)
}

/// A directory of links named by rank, to traces named by another rank
/// (`rank0.json` → `worker7.json`): `triage` analyses the link named rank 0,
/// the trace `batch` calls rank 0.
#[test]
fn ranks_are_read_from_the_names_links_give_them() {
    let dir = tempfile::tempdir().unwrap();
    let (store, links) = store_and_links(&dir);
    for (link, target) in [(0, 7), (1, 0)] {
        let t = store.join(format!("worker{target}.pt.trace.json"));
        std::fs::copy(FIXTURE, &t).unwrap();
        std::os::unix::fs::symlink(&t, links.join(format!("rank{link}.json"))).unwrap();
    }
    let out = common::run(&["-q", "triage", "--format", "json", links.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let traces = report["formal_traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1);
    assert!(traces[0].as_str().unwrap().ends_with("worker7.pt.trace.json"), "{traces:?}");
    // The note says which rank was read by the name that gave it the rank.
    let notes = report["notes"].to_string();
    assert!(notes.contains("analysed rank 0 only (rank0.json)"), "{notes}");
    let batch = common::run(&["-q", "batch", "--format", "json", links.to_str().unwrap()]);
    let summary: serde_json::Value = serde_json::from_slice(&batch.stdout).unwrap();
    let rank0 = summary["stages"][0]["ranks"].as_array().unwrap().iter().find(|r| r["rank"] == 0).unwrap();
    assert!(rank0["file"].as_str().unwrap().ends_with("worker7.pt.trace.json"), "{rank0}");
}

#[test]
fn a_damaged_compressed_rank_fails_instead_of_vanishing() {
    // Three good ranks and a fourth that is a gzip cut short, or a gzip
    // header followed by garbage: batch counts it among the failures with
    // the decoder's reason, and triage of a folder holding only it names it.
    let text = std::fs::read(FIXTURE).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    let gz = gz.finish().unwrap();
    let cut = gz[..gz.len() / 2].to_vec();
    let garbage = [&gz[..10], b"not a deflate stream at all".as_slice()].concat();
    for (damaged, reason) in [(cut, "incomplete deflate stream"), (garbage, "corrupt deflate stream")] {
        let dir = tempfile::tempdir().unwrap();
        for r in 0..3 {
            std::fs::write(dir.path().join(format!("rank{r}.json")), &text).unwrap();
        }
        std::fs::write(dir.path().join("rank3.json.gz"), &damaged).unwrap();
        let out = common::run(&["batch", "--format", "json", dir.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let failures = summary["failures"].to_string();
        assert!(failures.contains("rank3.json.gz") && failures.contains(reason), "{summary}");
        assert_eq!(summary["skipped"], serde_json::json!([]), "{summary}");
        let alone = tempfile::tempdir().unwrap();
        std::fs::write(alone.path().join("rank3.json.gz"), &damaged).unwrap();
        let out = common::run(&["triage", alone.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("rank3.json.gz: byte ") && err.contains(reason), "{err}");
    }
}

#[test]
fn messages_name_a_linked_rank_by_its_link() {
    // rank0.json in the folder given is a link to a truncated trace kept
    // elsewhere: the error names the link, as the user finds it.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(FIXTURE).unwrap();
    std::fs::write(dir.path().join("kept-elsewhere.json"), &text[..5000]).unwrap();
    std::fs::create_dir(dir.path().join("job")).unwrap();
    std::os::unix::fs::symlink("../kept-elsewhere.json", dir.path().join("job/rank0.json")).unwrap();
    let out = common::run_in(dir.path(), &["triage", "job"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("torchtriage: job/rank0.json: byte 5000: "), "{err}");
}

/// `batch --format json DIR`, which must succeed: the first stage's ranks,
/// the skipped files and stderr.
fn batch_ranks(dir: &std::path::Path) -> (Vec<u64>, Vec<serde_json::Value>, String) {
    let out = common::run(&["batch", "--format", "json", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks = summary["stages"][0]["ranks"].as_array().unwrap().iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    (ranks, summary["skipped"].as_array().unwrap().clone(), stderr)
}

/// Two links to one trace (`rank2.json` and `rank10.json`): the batch reads
/// it once, as rank 2 (the lower rank, though `rank10` sorts first), and
/// names the other link as skipped, with a warning, since the rank it names
/// is missing.
#[test]
fn a_second_link_to_one_trace_is_named_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (store, links) = store_and_links(&dir);
    let (a, b) = (store.join("a.pt.trace.json"), store.join("b.pt.trace.json"));
    std::fs::copy(FIXTURE, &a).unwrap();
    std::fs::copy(FIXTURE, &b).unwrap();
    for (name, target) in [("rank0.json", &a), ("rank2.json", &b), ("rank10.json", &b)] {
        std::os::unix::fs::symlink(target, links.join(name)).unwrap();
    }
    let (ranks, skipped, stderr) = batch_ranks(&links);
    assert_eq!(ranks, [0, 2]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("links/rank10.json"), "{skipped:?}");
    assert_eq!(skipped[0]["reason"], "the same trace as another name in the batch");
    assert!(
        stderr.contains("rank10.json: skipped, the same trace as another name in the batch (its name gives rank 10)"),
        "{stderr}"
    );
}

/// A hard link is a second name of one trace too: the batch reads it once,
/// as the lower rank, and names the other as skipped rather than reporting
/// one rank's figures twice.
#[test]
fn a_hard_link_to_a_trace_is_a_second_name_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::copy(FIXTURE, job.join("rank0.json")).unwrap();
    std::fs::copy(FIXTURE, job.join("rank1.json")).unwrap();
    std::fs::hard_link(job.join("rank1.json"), job.join("rank5.json")).unwrap();
    let (ranks, skipped, _) = batch_ranks(&job);
    assert_eq!(ranks, [0, 1]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("job/rank5.json"), "{skipped:?}");
    assert_eq!(skipped[0]["reason"], "the same trace as another name in the batch");
}

/// A link is judged by its own name: `rank3.json` leading to a trace in a
/// file named without `.json` is rank 3's trace, not a file passed over.
#[test]
fn a_link_named_as_a_trace_is_read_whatever_its_target_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::copy(FIXTURE, dir.path().join("blob")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("blob"), job.join("rank3.json")).unwrap();
    let (ranks, skipped, _) = batch_ranks(&job);
    assert_eq!(ranks, [3]);
    assert_eq!(skipped, Vec::<serde_json::Value>::new());
    let out = common::run(&["triage", "-q", "--format", "json", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `batch` of one empty file says it is empty, as `triage` does.
#[test]
fn batch_of_an_empty_file_says_it_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("rank0.json");
    std::fs::write(&empty, b"").unwrap();
    for command in ["batch", "triage"] {
        let out = common::run(&[command, empty.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.ends_with("rank0.json: byte 0: empty input: expected a JSON object or array\n"),
            "{command}: {err}"
        );
    }
}

#[test]
fn files_of_one_name_in_different_folders_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["node0", "node1"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::copy(FIXTURE, dir.path().join(sub).join("rank0.json")).unwrap();
    }
    // Rank 1's own trace says so (a copy of rank 0's would be warned of,
    // naming its path).
    let rank1 = std::fs::read_to_string(FIXTURE).unwrap().replacen("\"rank\": 0,", "\"rank\": 1,", 1);
    std::fs::write(dir.path().join("node1/rank1.json"), rank1).unwrap();
    let d = dir.path().to_str().unwrap();
    for format in ["markdown", "table", "html"] {
        let out = common::run(&["-q", "batch", "--format", format, d]);
        assert_eq!(out.status.code(), Some(0), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        for label in ["node0/rank0.json", "node1/rank0.json"] {
            assert!(text.contains(label), "{format}: {label}\n{text}");
        }
        assert!(!text.contains("node1/rank1.json"), "{format}: a name of its own needs no folder\n{text}");
    }
    let md = String::from_utf8_lossy(&common::run(&["-q", "batch", d]).stdout).into_owned();
    assert!(md.contains("| 0 | node0/rank0.json |") && md.contains("| 1 | rank1.json |"), "{md}");
}

/// A trace whose first key is one the profiler does not write and whose
/// `traceEvents` comes after more than the bytes discovery sniffs.
fn trace_after_long_metadata() -> Vec<u8> {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let rest = text.trim_start().strip_prefix('{').unwrap();
    format!("{{\"job_notes\": {{\"text\": \"{}\"}},{rest}", "x".repeat(100_000)).into_bytes()
}

#[test]
fn a_rank_whose_metadata_runs_long_is_still_a_rank() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, dir.path().join("rank0.json")).unwrap();
    let long = trace_after_long_metadata();
    std::fs::write(dir.path().join("rank1.json"), &long).unwrap();
    zst(&dir.path().join("rank2.json.zst"), &long);
    // Not named for a rank: discovery does not read such a file to its end.
    std::fs::write(dir.path().join("notes.json"), &long).unwrap();
    // Named for a rank, but its top-level keys hold no traceEvents.
    let meta = format!("{{\"job_notes\": \"{}\", \"x\": {{\"traceEvents\": []}}}}", "y".repeat(100_000));
    std::fs::write(dir.path().join("rank3.json"), meta).unwrap();
    let out = common::run(&["batch", "--format", "json", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks: Vec<u64> =
        v["stages"][0]["ranks"].as_array().unwrap().iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [0, 1, 2], "{v}");
    let skipped: Vec<&str> = v["skipped"].as_array().unwrap().iter().map(|s| s["file"].as_str().unwrap()).collect();
    assert!(skipped.len() == 2 && skipped[0].ends_with("notes.json") && skipped[1].ends_with("rank3.json"), "{v}");
    assert!(err.contains("rank3.json: skipped, not recognised as a trace (its name gives rank 3)"), "{err}");
}

#[test]
fn a_budget_that_holds_one_file_is_reported_as_one_at_a_time() {
    let (dir, _) = rank_dir(".json", plain);
    let d = dir.path().to_str().unwrap();
    let run = |args: &[&str]| String::from_utf8_lossy(&common::run(args).stdout).into_owned();
    let md = run(&["-q", "batch", "--jobs", "2", "--mem-budget-mb", "1", d]);
    assert!(md.contains("(jobs 2, memory budget 1 MiB, at most 1 at once)"), "{md}");
    let v: serde_json::Value =
        serde_json::from_str(&run(&["-q", "batch", "-f", "json", "--jobs", "2", "--mem-budget-mb", "1", d])).unwrap();
    assert_eq!(v["jobs"], 1, "{v}");
    // A budget that holds both files: both workers can run.
    let md = run(&["-q", "batch", "--jobs", "2", "--mem-budget-mb", "4096", d]);
    assert!(md.contains("(jobs 2, memory budget 4.0 GiB)"), "{md}");
    let v: serde_json::Value =
        serde_json::from_str(&run(&["-q", "batch", "-f", "json", "--jobs", "2", "--mem-budget-mb", "4096", d]))
            .unwrap();
    assert_eq!(v["jobs"], 2, "{v}");
}
