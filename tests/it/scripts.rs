//! The benchmark and build scripts refuse a bad command line before they
//! build or time anything.

use std::process::Command;

fn run(script: &str, args: &[&str]) -> (Option<i32>, String) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/");
    let out = Command::new("bash").arg(format!("{path}{script}")).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_pgo_build_refuses_what_it_does_not_know() {
    let (code, stderr) = run("pgo-build.sh", &["--bogus"]);
    assert_eq!((code, stderr.as_str()), (Some(2), "pgo-build.sh: unknown option --bogus\n"));
    let (code, stderr) = run("pgo-build.sh", &["--out"]);
    assert_eq!((code, stderr.as_str()), (Some(2), "pgo-build.sh: --out needs a path\n"));
    let (code, stderr) = run("pgo-build.sh", &["--install", "--out", "tt"]);
    let both = "pgo-build.sh: --install and --out name two places for the binary; give one\n";
    assert_eq!((code, stderr.as_str()), (Some(2), both));
}

#[test]
fn the_benchmark_refuses_what_it_does_not_know() {
    let (code, stderr) = run("bench.sh", &["--bogus"]);
    assert_eq!((code, stderr.as_str()), (Some(2), "unknown option --bogus\n"));
    let (code, stderr) = run("bench.sh", &["--sizes", "one"]);
    assert_eq!((code, stderr.as_str()), (Some(2), "size one is not a number of GB\n"));
}
