//! A trace file truncated by another process while torchtriage reads it:
//! a mapped file (`stats`, `triage`) ends the run with exit 2 and one line
//! naming the file, not a `SIGBUS` crash; in `batch` (files are read, not
//! mapped) that file fails alone and the others complete.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A valid trace of about `mb` MB: kernels and nothing else.
fn write_big_trace(path: &Path, mb: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"{\"traceEvents\": [\n").unwrap();
    let mut written = 0;
    let mut i = 0u64;
    while written < mb << 20 {
        let line = format!(
            "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_{}\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 2, \"args\": {{\"stream\": 7, \"correlation\": {i}}}}},\n",
            i % 7,
            i * 3
        );
        f.write_all(line.as_bytes()).unwrap();
        written += line.len();
        i += 1;
    }
    f.write_all(b"{\"ph\": \"i\", \"name\": \"end\", \"pid\": 0, \"tid\": 7, \"ts\": 0}\n]}\n").unwrap();
}

/// Waits until the process `pid` has `path` open (`fd`) or mapped (`maps`),
/// then truncates the file to a few bytes. False when the process ended
/// first.
fn truncate_when_open(pid: u32, path: &Path, how: &str) -> bool {
    let needle = path.to_string_lossy().into_owned();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let seen = match how {
            "maps" => std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| m.contains(&needle)),
            _ => std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
                d.flatten().any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == needle))
            }),
        };
        if seen {
            std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(100).unwrap();
            return true;
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

#[test]
fn a_mapped_file_truncated_while_read_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut hit = false;
    for attempt in 0..3 {
        let path = dir.path().join(format!("big{attempt}.json"));
        write_big_trace(&path, 120 << attempt);
        let child = Command::new(env!("CARGO_BIN_EXE_torchtriage"))
            .args(["triage", "--quiet"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let truncated = truncate_when_open(child.id(), &path, "maps");
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        if truncated && out.status.code() != Some(0) {
            // Either the fault was caught, or the parser saw the short file
            // first: both are one line and exit 2.
            assert_eq!(out.status.code(), Some(2), "signal or other exit: {:?} {stderr}", out.status);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(&*path.to_string_lossy()), "{stderr}");
            hit = true;
            break;
        }
    }
    assert!(hit, "the file was never truncated while it was read");
}

#[test]
fn a_batch_file_truncated_while_read_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let good = "tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
    let mut hit = false;
    for attempt in 0..3 {
        let sub = dir.path().join(format!("run{attempt}"));
        std::fs::create_dir(&sub).unwrap();
        std::fs::copy(good, sub.join("rank0.trace.json.gz")).unwrap();
        let big = sub.join("rank1.trace.json");
        write_big_trace(&big, 120 << attempt);
        let child = Command::new(env!("CARGO_BIN_EXE_torchtriage"))
            .args(["batch", "--quiet", "--format", "json", "--jobs", "1"])
            .arg(&sub)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let truncated = truncate_when_open(child.id(), &big.canonicalize().unwrap(), "fd");
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(out.status.code().is_some(), "killed by a signal: {:?} {stderr}", out.status);
        if truncated && out.status.code() == Some(1) {
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let text = report.to_string();
            assert!(text.contains("rank0.trace.json.gz"), "{text}");
            hit = true;
            break;
        }
    }
    assert!(hit, "the file was never truncated while it was read");
}
