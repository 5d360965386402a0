//! A closed or full stdout ends a command cleanly: no panic, the exit code
//! the command would have had for a reader that went away (`| head`), exit
//! 2 with one line for a full disk. A full stderr is not a panic either.

use std::process::{Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_torchtriage"))
}

#[test]
fn a_closed_pipe_is_not_a_panic() {
    for args in [&["patterns"][..], &["patterns", "--names"][..]] {
        let mut child = bin().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn a_full_stdout_is_one_error_line() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = bin().args(["patterns"]).stdout(full).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_batch_with_failures_into_a_closed_pipe_still_fails() {
    let dir = tempfile::tempdir().unwrap();
    let good = "tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
    std::fs::copy(good, dir.path().join("rank0.trace.json.gz")).unwrap();
    std::fs::write(dir.path().join("rank1.trace.json"), br#"{"traceEvents": [{"ph": "X""#).unwrap();
    let mut child =
        bin().args(["batch", "--quiet"]).arg(dir.path()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("torchtriage: 1 of 2 files failed:"), "{stderr}");
}

#[test]
fn a_full_stderr_is_not_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = bin().args(["stats", "no-such-trace.json"]).stderr(full).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
