//! `--output FILE`: the same report as stdout, written whole or not at all.

mod common;

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
