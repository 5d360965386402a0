//! Notes on stderr that qualify a report: a `--pid-substring` filter that
//! keeps no process says so, once per trace, in every command that takes it.

mod common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

fn stderr_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().map(str::to_string).collect()
}

fn unmatched_warnings(out: &std::process::Output) -> usize {
    stderr_lines(out)
        .iter()
        .filter(|l| {
            l.starts_with("torchtriage: warning: ") && l.contains("--pid-substring \"zzzz\" matches no process")
        })
        .count()
}

#[test]
fn a_pid_filter_matching_nothing_is_warned_about() {
    let out = common::run(&["triage", "--pid-substring", "zzzz", FIXTURE]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
    assert!(stderr_lines(&out)[0].contains("synthetic_vllm_small.json"));
    // The overlap table is indeed empty.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No rows cleared"), "{text}");
}

#[test]
fn a_pid_filter_that_matches_is_not_warned_about() {
    let out = common::run(&["triage", "--pid-substring", "0", FIXTURE]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
}

#[test]
fn quiet_keeps_the_pid_filter_warning_off_stderr() {
    let out = common::run(&["--quiet", "triage", "--pid-substring", "zzzz", FIXTURE]);
    assert_eq!((out.status.code(), out.stderr.is_empty()), (Some(0), true));
}

#[test]
fn diff_and_batch_warn_about_the_pid_filter_too() {
    let out = common::run(&["diff", "--pid-substring", "zzzz", FIXTURE, FIXTURE]);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert_eq!(unmatched_warnings(&out), 2, "{:?}", stderr_lines(&out));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, dir.path().join("rank0.json")).unwrap();
    let out = common::run(&["batch", "--pid-substring", "zzzz", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
}
