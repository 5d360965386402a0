//! `--output FILE`: the same report as stdout, written whole or not at all.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

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
    }
    let d = dir.path().join("d.json");
    let printed = stdout_of(&["-q", "diff", FIXTURE, FIXTURE, "--format", "json"]);
    stdout_of(&["-q", "diff", FIXTURE, FIXTURE, "-o", d.to_str().unwrap()]);
    assert_eq!(std::fs::read(&d).unwrap(), printed);
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

/// `/proc` exists but takes no new files, even for root.
#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_is_named_as_the_report() {
    let out = common::run(&["-q", "triage", FIXTURE, "-o", "/proc/torchtriage-report.html"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/proc/torchtriage-report.html: cannot write the report: "), "{err}");
}
