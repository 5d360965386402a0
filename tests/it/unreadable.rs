//! Files and directories the user running the tool may not read: a trace
//! that cannot be opened fails naming the file and the reason (`batch`
//! counts it among the failures), and a directory that cannot be listed is
//! named, never passed over as if the job had one rank fewer; so is a pipe
//! or a device with a rank's name, which is not read. Run as root,
//! the binary is started as user `nobody` through `setpriv`, since
//! permissions do not stop root.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

/// Runs the binary as a user without root's access to every file. As root,
/// a copy of the binary in `dir` (which any user may enter) runs as
/// `nobody`, since the build directory may be private to root.
fn run_unprivileged(dir: &Path, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_torchtriage");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let copy = dir.join("torchtriage-bin");
        if !copy.exists() {
            std::fs::copy(bin, &copy).unwrap();
            chmod(&copy, 0o755);
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(copy);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args).output().expect("run torchtriage (as root this needs setpriv, from util-linux)")
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A directory any user may read, holding the fixture as two ranks.
fn ranks() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    for r in 0..2 {
        let p = dir.path().join(format!("rank{r}.json"));
        std::fs::copy(FIXTURE, &p).unwrap();
        chmod(&p, 0o644);
    }
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unreadable_rank_fails_the_batch_naming_it() {
    let dir = ranks();
    let locked = dir.path().join("rank1.json");
    chmod(&locked, 0o000);
    let out = run_unprivileged(dir.path(), &["batch", "--format", "json", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failures = summary["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 1, "{summary}");
    assert!(failures[0].to_string().contains("rank1.json"), "{summary}");
    assert!(failures[0].to_string().to_lowercase().contains("permission denied"), "{summary}");
}

#[test]
fn triage_of_a_directory_fails_on_an_unreadable_rank() {
    let dir = ranks();
    let locked = dir.path().join("rank0.json");
    chmod(&locked, 0o000);
    let out = run_unprivileged(dir.path(), &["triage", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rank0.json: cannot open input: Permission denied"), "{err}");
}

#[test]
fn an_unreadable_subdirectory_is_named() {
    let dir = ranks();
    let sub = dir.path().join("node1");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(FIXTURE, sub.join("rank2.json")).unwrap();
    chmod(&sub, 0o000);
    let out = run_unprivileged(dir.path(), &["batch", "--format", "json", dir.path().to_str().unwrap()]);
    // The two ranks it could read are reported; the exit code says the
    // batch may lack others.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = summary["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{summary}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("node1"), "{summary}");
    assert_eq!(skipped[0]["reason"], "unreadable directory");
    assert_eq!(summary["files"], 2, "{summary}");
    let err = stderr(&out);
    assert!(err.contains("node1: skipped, unreadable directory"), "{err}");
    let incomplete = "warning: the batch is incomplete: 1 directory below it could not be listed";
    assert!(err.contains(incomplete), "{err}");
    assert!(summary["notes"].to_string().contains(incomplete), "{summary}");
    // Quiet drops the warnings, not the reason for the exit code.
    let out = run_unprivileged(dir.path(), &["batch", "-q", dir.path().to_str().unwrap()]);
    chmod(&sub, 0o755);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        format!("torchtriage: {incomplete}; the ranks in them or named by them are not in it")
    );
}

#[test]
fn a_directory_that_cannot_be_listed_is_not_called_empty() {
    let dir = ranks();
    let sub = dir.path().join("job");
    std::fs::create_dir(&sub).unwrap();
    chmod(&sub, 0o311);
    for cmd in ["triage", "batch"] {
        let out = run_unprivileged(dir.path(), &[cmd, sub.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("cannot list this directory") && !err.contains("no trace files"), "{cmd}: {err}");
    }
    chmod(&sub, 0o755);
}

/// `triage` and `diff` of a directory with a subdirectory they cannot list
/// choose the rank and run from what they could list: `triage` warns that
/// the choice did not see the rest, and a gate refuses the side.
#[test]
fn triage_of_a_directory_warns_of_a_subdirectory_it_cannot_list() {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let job = dir.path().join("job");
    let sub = job.join("node0");
    std::fs::create_dir_all(&sub).unwrap();
    chmod(&job, 0o755);
    std::fs::copy(FIXTURE, job.join("rank1.json")).unwrap();
    chmod(&job.join("rank1.json"), 0o644);
    std::fs::copy(FIXTURE, sub.join("rank0.json")).unwrap();
    chmod(&sub, 0o000);
    let job = job.to_str().unwrap();
    let out = run_unprivileged(dir.path(), &["triage", job]);
    let diff = run_unprivileged(dir.path(), &["diff", job, job, "--gate", "5"]);
    chmod(&sub, 0o755);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "job: could not look at node0 (cannot be listed) below it, which may hold other ranks or a newer run: analysed rank1.json"
        ),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("node0 (cannot be listed)"));
    assert_eq!(diff.status.code(), Some(2), "{}", stderr(&diff));
    let refused = "--gate compares whole inputs, and diff could not look at node0 (cannot be listed)";
    assert!(stderr(&diff).contains(refused), "{}", stderr(&diff));
}

/// A pipe or a device with a rank's name is not read (a pipe without a
/// writer would block), and the rank it stands for is missing: `batch`
/// names it and exits 1, `triage` of the directory warns that its choice of
/// rank did not see it.
#[test]
fn a_pipe_or_device_named_as_a_rank_is_a_missing_rank() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, dir.path().join("rank1.pt.trace.json")).unwrap();
    let fifo = dir.path().join("rank0.pt.trace.json");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("rank2.pt.trace.json")).unwrap();
    let d = dir.path().to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_torchtriage");
    let out = Command::new(bin).args(["batch", "--format", "json", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["files"], 1, "{summary}");
    let reasons: Vec<&str> =
        summary["skipped"].as_array().unwrap().iter().map(|s| s["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["not a regular file (a pipe, socket or device)"; 2], "{summary}");
    let err = stderr(&out);
    assert!(err.contains("rank0.pt.trace.json: skipped, not a regular file"), "{err}");
    assert!(err.contains("the batch is incomplete: 2 entries named for a rank are not regular files"), "{err}");
    let out = Command::new(bin).args(["triage", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("could not look at rank0.pt.trace.json (not a regular file), rank2.pt.trace.json (not a regular file) below it"), "{err}");
}
