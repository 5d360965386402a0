//! The synthetic trace generator's command line (`examples/gen_trace.rs`),
//! which the benchmark and PGO scripts drive.

use std::process::Command;

use crate::diff::gen_trace;

/// Runs the generator in an empty folder; its exit code, stdout, stderr
/// and the names of the files it left there.
fn run(args: &[&str]) -> (Option<i32>, String, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(gen_trace()).args(args).current_dir(dir.path()).output().unwrap();
    let mut files: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr), files)
}

#[test]
fn help_prints_the_usage_and_writes_nothing() {
    for flag in ["--help", "-h"] {
        let (code, stdout, _, files) = run(&[flag]);
        assert_eq!(code, Some(0));
        assert!(stdout.starts_with("usage: gen_trace"), "{stdout}");
        assert!(files.is_empty(), "{files:?}");
    }
}

#[test]
fn a_bad_command_line_is_refused_without_writing() {
    for (args, message) in [
        (&["--bogus", "out.json"][..], "unknown option --bogus"),
        (&["--size-mb", "x", "out.json"][..], "--size-mb: not a number: x"),
        (&["out.json", "--threads"][..], "--threads needs N"),
        (&["--format", "xz", "out.json"][..], "unknown format xz"),
        (&["a.json", "b.json"][..], "one output path only, not also b.json"),
        (&[][..], "no output path"),
    ] {
        let (code, _, stderr, files) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(&format!("gen_trace: {message}\n")), "{args:?}: {stderr}");
        assert!(files.is_empty(), "{args:?}: {files:?}");
    }
}

#[test]
fn a_good_command_line_writes_its_one_file() {
    let (code, _, stderr, files) = run(&["--size-kb", "64", "--seed", "5", "--format", "gz", "t.json.gz"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(files, ["t.json.gz"]);
}
