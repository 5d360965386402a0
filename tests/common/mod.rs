//! Shared helpers for integration tests: locating `../shared` (the traces
//! and goldens beside the clone) and running the built binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `../shared` from the crate root. Missing: panics under CI=true (the
/// tests must not pass vacuously there), otherwise returns None so local
/// runs without the folder can skip with a note.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.join("traces/counts.json").is_file() {
        return Some(dir);
    }
    if std::env::var("CI").map(|v| v == "true").unwrap_or(false) {
        panic!("../shared/traces/counts.json is missing: CI must provide ../shared beside the clone");
    }
    eprintln!("note: ../shared not found; skipping tests that need it");
    None
}

/// Every trace listed in counts.json, as (relative name, full path).
pub fn shared_traces(shared: &Path) -> Vec<(String, PathBuf)> {
    let text = std::fs::read_to_string(shared.join("traces/counts.json")).expect("read counts.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("parse counts.json");
    let mut out: Vec<(String, PathBuf)> = v
        .as_object()
        .expect("counts.json is an object")
        .keys()
        .map(|k| (k.clone(), shared.join("traces").join(k)))
        .collect();
    out.sort();
    out
}

/// Runs the torchtriage binary with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_torchtriage")).args(args).output().expect("run torchtriage")
}

/// Runs the binary with raw input on stdin.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_torchtriage"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn torchtriage");
    let mut stdin = child.stdin.take().expect("stdin");
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    out
}
