//! `--output FILE`: the same report as stdout, written whole or not at all.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
const RANKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = common::run(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn a_file_holds_what_stdout_would() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name) in [("markdown", "r.md"), ("json", "r.json")] {
        let p = dir.path().join(name);
        let printed = stdout_of(&["-q", "triage", FIXTURE, "--format", format]);
        let none = stdout_of(&["-q", "triage", FIXTURE, "--format", format, "-o", p.to_str().unwrap()]);
        assert!(none.is_empty());
        assert_eq!(std::fs::read(&p).unwrap(), printed, "{format}");
        // The extension alone picks the format.
        let q = dir.path().join(format!("by-ext-{name}"));
        stdout_of(&["-q", "triage", FIXTURE, "--output", q.to_str().unwrap()]);
        assert_eq!(std::fs::read(&q).unwrap(), printed, "{format} from the extension");
        // `-f` is `--format`.
        assert_eq!(stdout_of(&["-q", "triage", FIXTURE, "-f", format]), printed, "-f {format}");
    }
    let d = dir.path().join("d.json");
    let printed = stdout_of(&["-q", "diff", FIXTURE, FIXTURE, "--format", "json"]);
    stdout_of(&["-q", "diff", FIXTURE, FIXTURE, "-o", d.to_str().unwrap()]);
    assert_eq!(std::fs::read(&d).unwrap(), printed);
}

#[test]
fn stats_writes_to_a_file_as_the_other_commands_do() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    let printed = stdout_of(&["-q", "stats", FIXTURE, "--format", "json"]);
    assert_eq!(stdout_of(&["-q", "stats", FIXTURE, "-f", "json"]), printed, "-f is --format");
    assert!(stdout_of(&["-q", "stats", FIXTURE, "-f", "json", "-o", p.to_str().unwrap()]).is_empty());
    assert_eq!(std::fs::read(&p).unwrap(), printed);
    assert_eq!(stdout_of(&["-q", "stats", FIXTURE, "-f", "json", "-o", "-"]), printed, "-o - is stdout");
    // Without --format, the file's name picks it: `.json` JSON, others text.
    let named = dir.path().join("named.json");
    stdout_of(&["-q", "stats", FIXTURE, "-o", named.to_str().unwrap()]);
    assert_eq!(std::fs::read(&named).unwrap(), printed, "-o x.json writes JSON");
    let text = stdout_of(&["-q", "stats", FIXTURE]);
    let txt = dir.path().join("s.txt");
    stdout_of(&["-q", "stats", FIXTURE, "-o", txt.to_str().unwrap()]);
    assert_eq!(std::fs::read(&txt).unwrap(), text);
    stdout_of(&["-q", "stats", FIXTURE, "-f", "text", "-o", named.to_str().unwrap()]);
    assert_eq!(std::fs::read(&named).unwrap(), text, "--format wins over the name");
    // Refused before the trace is read: the trace itself, a folder that
    // does not exist, a compressed name, a format stats does not write.
    let trace = dir.path().join("t.json");
    std::fs::copy(FIXTURE, &trace).unwrap();
    let missing = dir.path().join("no/such/s.txt");
    let gz = dir.path().join("s.json.gz");
    for (target, why) in [
        (&trace, "--output names a trace this report is made from"),
        (&missing, "no/such/s.txt: --output: the directory to write the report in, "),
        (&gz, "--output: the report is written uncompressed"),
        (&dir.path().join("s.html"), "--output: stats writes text or JSON, not .html"),
    ] {
        let out = common::run(&["-q", "stats", trace.to_str().unwrap(), "-o", target.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{err}");
    }
    assert_eq!(std::fs::read(&trace).unwrap(), std::fs::read(FIXTURE).unwrap());
}

#[test]
fn a_failed_run_leaves_the_old_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.md");
    std::fs::write(&p, "old report").unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\": [ {\"ph\": \"X\"").unwrap();
    let out = common::run(&["-q", "triage", bad.to_str().unwrap(), "-o", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "old report");
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn output_to_a_directory_needs_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(&["-q", "triage", FIXTURE, "--format", "markdown", "-o", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_report_with_nowhere_to_go_is_refused_before_the_trace_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    // The trace is cut short: had it been read first, its error would show.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\": [ {\"ph\": \"X\"").unwrap();
    for (format, target) in [("markdown", missing.join("r.md")), ("csv", bad.join("tables"))] {
        let out =
            common::run(&["-q", "triage", bad.to_str().unwrap(), "--format", format, "-o", target.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--output") && !err.contains("byte"), "{format}: {err}");
    }
}

#[test]
fn a_dash_is_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let printed = stdout_of(&["-q", "triage", FIXTURE, "--format", "json"]);
    let out = common::run_in(dir.path(), &["-q", "triage", FIXTURE, "--format", "json", "-o", "-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, printed);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file named '-'");
    let out = common::run(&["-q", "triage", FIXTURE, "--format", "csv", "-o", "-"]);
    assert_eq!(out.status.code(), Some(2), "CSV needs a directory");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("report.md");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("latest.md");
    std::os::unix::fs::symlink("report.md", &link).unwrap();
    let printed = stdout_of(&["-q", "triage", FIXTURE, "--format", "markdown"]);
    stdout_of(&["-q", "triage", FIXTURE, "--format", "markdown", "-o", link.to_str().unwrap()]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert_eq!(std::fs::read(&target).unwrap(), printed);
    // A link to a file not yet there creates that file.
    let fresh = dir.path().join("fresh.md");
    std::os::unix::fs::symlink("sub-report.md", &fresh).unwrap();
    stdout_of(&["-q", "triage", FIXTURE, "--format", "markdown", "-o", fresh.to_str().unwrap()]);
    assert_eq!(std::fs::read(dir.path().join("sub-report.md")).unwrap(), printed);
    assert!(std::fs::symlink_metadata(&fresh).unwrap().file_type().is_symlink());
}

#[cfg(unix)]
#[test]
fn a_pipe_is_written_in_place() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("report.pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other precondition.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let p = fifo.clone();
    // The reader blocks in open until a writer opens the same pipe.
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::fs::File::open(&p).and_then(|mut f| f.read_to_end(&mut text)).map(|_| text)
    });
    let out = common::run(&["-q", "triage", FIXTURE, "--format", "markdown", "-o", fifo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the pipe was replaced by a file");
    let printed = stdout_of(&["-q", "triage", FIXTURE, "--format", "markdown"]);
    assert_eq!(reader.join().unwrap().unwrap(), printed);
}

/// `/proc` exists but takes no new files, even for root: the report's
/// file is refused before the trace (cut short here) is read.
#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\": [ {\"ph\": \"X\"").unwrap();
    for format in ["html", "csv"] {
        let out =
            common::run(&["-q", "triage", bad.to_str().unwrap(), "--format", format, "-o", "/proc/torchtriage-report"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("/proc/torchtriage-report: --output: cannot write here: "), "{format}: {err}");
    }
}

/// Runs the binary, its stdout appended to `file`.
#[cfg(unix)]
fn run_appending_to(file: &std::path::Path, args: &[&str]) -> std::process::ExitStatus {
    let out = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_torchtriage")).args(args).stdout(out).status().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn dev_stdout_is_the_open_stdout_not_the_file_behind_it() {
    let printed = stdout_of(&["-q", "triage", FIXTURE, "--format", "json"]);
    // Into a pipe (the test's capture), as stdout itself.
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        assert_eq!(stdout_of(&["-q", "triage", FIXTURE, "--format", "json", "-o", name]), printed, "{name}");
    }
    // Into a file opened to append (`>> log`): after what it held, which
    // stays.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    std::fs::write(&log, "HEADER\n").unwrap();
    assert!(run_appending_to(&log, &["-q", "triage", FIXTURE, "--format", "json", "-o", "/dev/stdout"]).success());
    assert!(run_appending_to(&log, &["-q", "batch", RANKS, "--jsonl", "/dev/stdout", "-o", "/dev/null"]).success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("HEADER\n{"), "{}", &text[..40]);
    assert_eq!(&text[7..7 + printed.len()], String::from_utf8_lossy(&printed));
    assert!(text[7 + printed.len()..].starts_with("{\"file\":"), "the JSON lines follow the report");
}

#[test]
fn a_report_is_never_written_over_a_trace_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::copy(FIXTURE, &trace).unwrap();
    let ranks = dir.path().join("ranks");
    copy_dir(std::path::Path::new(RANKS), &ranks);
    // A rank's trace stored plain (a compressed name is refused as a
    // report's name anyway), by its name without `.gz`.
    let unzip = |name: &str| {
        let gz = ranks.join(format!("{name}.gz"));
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()), &mut plain)
            .unwrap();
        std::fs::write(ranks.join(name), plain).unwrap();
        std::fs::remove_file(&gz).unwrap();
        ranks.join(name)
    };
    // Rank 0, the trace `triage` reads of a directory of ranks, and rank 1,
    // which `triage` and `diff` of the directory do not read, and must not
    // write over either.
    let rank = unzip("worker0_step_12.1694128201545.pt.trace.json");
    let rank1 = unzip("worker1_step_12.1694128201556.pt.trace.json");
    // A trace discovery passes over (no rank in its name, and its
    // `traceEvents` behind more metadata than discovery sniffs).
    let hidden = ranks.join("notes.json");
    let body = std::fs::read_to_string(FIXTURE).unwrap();
    let body = body.trim_start().strip_prefix('{').unwrap();
    std::fs::write(&hidden, format!("{{\"job\": \"{}\",{body}", "x".repeat(100_000))).unwrap();
    let t = trace.to_str().unwrap();
    let r = rank.to_str().unwrap();
    let r1 = rank1.to_str().unwrap();
    let h = hidden.to_str().unwrap();
    let link = dir.path().join("latest.json");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let read = || {
        let all = [&trace, &rank, &rank1, &hidden];
        all.map(|p| std::fs::read(p).unwrap())
    };
    let before = read();
    let ranks_dir = ranks.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["triage", t, "-o", t],
        vec!["triage", t, "-o", link.to_str().unwrap()],
        vec!["triage", "--mapping", t, "--formal", FIXTURE, "-o", t],
        vec!["diff", FIXTURE, t, "--format", "json", "-o", t],
        // A trace found in a directory given as the input.
        vec!["triage", ranks_dir, "-o", r],
        vec!["diff", ranks_dir, FIXTURE, "-o", r],
        vec!["batch", ranks_dir, "-o", r],
        vec!["batch", ranks_dir, "--jsonl", r],
        // One the run does not read, below the input directory.
        vec!["triage", ranks_dir, "-o", r1],
        vec!["diff", ranks_dir, ranks_dir, "-o", r1],
        vec!["diff", FIXTURE, ranks_dir, "--format", "json", "-o", r1],
        vec!["batch", ranks_dir, "-o", r1],
        vec!["triage", ranks_dir, "-o", h],
        vec!["diff", FIXTURE, ranks_dir, "-o", h],
        vec!["batch", ranks_dir, "-o", h],
    ];
    for args in cases {
        let out = common::run(&[&["-q"][..], &args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("would replace"), "{args:?}: {err}");
        assert_eq!(read(), before, "{args:?}");
    }
    // A report named as a trace would be read as one by the next run.
    let named = ranks.join("out.trace.json");
    let out = common::run(&["-q", "triage", ranks_dir, "-o", named.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--output has a trace's name (.trace.json) in the input directory"));
    assert!(!named.exists());
    // A report of its own in the input directory is written, and written
    // over by the next run.
    let report = ranks.join("report.json");
    for _ in 0..2 {
        let out = common::run(&["-q", "triage", ranks_dir, "-o", report.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // A summary `merge` reads is not its report either.
    let sums = dir.path().join("sums");
    assert!(common::run(&["-q", "batch", ranks_dir, "--summaries", sums.to_str().unwrap(), "-o", "/dev/null"])
        .status
        .success());
    let summary = std::fs::read_dir(&sums).unwrap().next().unwrap().unwrap().path();
    let s = summary.to_str().unwrap();
    let out = common::run(&["-q", "merge", s, "-o", s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(std::fs::read_to_string(&summary).unwrap().contains("\"kind\""));
}

#[test]
fn batch_side_outputs_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = RANKS;
    let x = dir.path().join("x.jsonl");
    let x = x.to_str().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let sums = dir.path().join("sums");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--jsonl", x, "-o", x], "--jsonl and --output name the same file"),
        (vec!["--summaries", sums.to_str().unwrap(), "-o", sums.to_str().unwrap()], "--summaries and --output"),
        (vec!["--summaries", file.to_str().unwrap()], "--summaries: this is not a directory"),
        #[cfg(target_os = "linux")]
        (vec!["--summaries", "/proc/torchtriage-sums"], "--summaries: cannot write here"),
        #[cfg(target_os = "linux")]
        (vec!["-o", "/proc/torchtriage.md"], "--output: cannot write here"),
        #[cfg(target_os = "linux")]
        (vec!["--jsonl", "/proc/torchtriage.jsonl"], "--jsonl: cannot write here"),
    ];
    for (args, want) in cases {
        let out = common::run(&[&["-q", "batch", ranks][..], &args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!sums.exists() && !std::path::Path::new(x).exists(), "nothing written");
}

#[cfg(target_os = "linux")]
#[test]
fn a_side_output_that_fills_up_is_named_by_its_option() {
    // `/dev/full` opens, so the check before the run passes, and every
    // write to it fails.
    let out = common::run(&["-q", "batch", RANKS, "--jsonl", "/dev/full", "-o", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        "torchtriage: /dev/full: --jsonl: cannot write the lines: No space left on device (os error 28)"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// What stderr warns of is in every report format too, so a report kept
/// in a file (or read after `--quiet`) says the run left data out: here a
/// kernel whose `ts` is not a number, and the ranks of a directory the
/// single-trace report did not read.
#[test]
fn every_format_carries_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace: serde_json::Value = serde_json::from_slice(&std::fs::read(FIXTURE).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array_mut().unwrap();
    let mut bad = events.iter().find(|e| e["cat"] == "kernel").unwrap().clone();
    bad["ts"] = "soon".into();
    events.push(bad);
    let skip = dir.path().join("skip.json");
    std::fs::write(&skip, serde_json::to_vec(&trace).unwrap()).unwrap();
    for (input, want) in [(skip.to_str().unwrap(), "1 event skipped"), (RANKS, "other traces left out")] {
        for format in ["markdown", "table", "json", "html"] {
            let text = String::from_utf8(stdout_of(&["-q", "triage", input, "--format", format])).unwrap();
            assert!(text.contains(want), "{format} on {input}: no note saying {want:?}");
        }
        let csv = dir.path().join("csv");
        stdout_of(&["-q", "triage", input, "--format", "csv", "-o", csv.to_str().unwrap()]);
        let notes = std::fs::read_to_string(csv.join("notes.csv")).unwrap();
        assert!(notes.lines().next() == Some("note") && notes.contains(want), "notes.csv on {input}: {notes}");
    }
}

#[test]
fn a_batch_of_one_file_names_it_as_a_file() {
    let file = String::from_utf8(stdout_of(&["-q", "batch", FIXTURE])).unwrap();
    assert!(
        file.lines().nth(1).is_some_and(|l| l.starts_with("File: ") && l.ends_with("synthetic_vllm_small.json")),
        "{file}"
    );
    let dir = String::from_utf8(stdout_of(&["-q", "batch", RANKS])).unwrap();
    assert!(dir.lines().nth(1).is_some_and(|l| l.starts_with("Directory: ")), "{dir}");
}

/// Runs the binary with `args` and its standard output closed (`>&-`).
#[cfg(target_os = "linux")]
fn run_without_stdout(args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg("exec \"$@\" >&-")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_torchtriage"))
        .args(args)
        .output()
        .expect("run sh")
}

#[cfg(target_os = "linux")]
#[test]
fn a_report_for_a_closed_stdout_is_refused_not_lost() {
    for args in [&["-q", "triage", FIXTURE][..], &["stats", FIXTURE], &["-q", "diff", FIXTURE, FIXTURE]] {
        let out = run_without_stdout(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.trim_end(),
            "torchtriage: stdout: standard output is closed, so the report would be lost: give -o FILE",
            "{args:?}"
        );
    }
    // A report written to a file does not need stdout.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.md");
    let out = run_without_stdout(&["-q", "triage", FIXTURE, "-o", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&file).unwrap().contains("Triage View"));
}
