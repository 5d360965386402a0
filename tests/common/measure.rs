//! Running the binary under measurement: exit status, peak RSS and wall
//! time of one run, with a time limit, for the hostile-input tests.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Peak resident set allowed per run.
pub const MAX_RSS_KB: i64 = 512 * 1024;

/// Wall time allowed per run (debug binaries get more headroom).
pub fn time_limit() -> Duration {
    Duration::from_secs(if cfg!(debug_assertions) { 120 } else { 10 })
}

/// What one run of the binary did.
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub max_rss_kb: i64,
    pub wall: Duration,
}

impl Outcome {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or(Value::Null)
    }
}

/// Runs `torchtriage ARGS` with stdout / stderr in files, waits with
/// `wait4` for its exit status and peak RSS, and kills it at the time limit.
///
/// Peak RSS caveat: the child is spawned with vfork, and Linux carries the
/// parent's high-water mark into the child's at exec, so the figure is
/// max(this test process, the child). The mark is reset to this process's
/// current size before each spawn (`/proc/self/clear_refs`), so that a
/// buffer another test held earlier does not count; tests still write big
/// inputs in pieces and keep this process small, and the check errs on the
/// safe side.
pub fn run_measured(args: &[&std::ffi::OsStr]) -> Outcome {
    run_measured_stdin(args, None)
}

/// Like [`run_measured`] with extra environment variables.
pub fn run_measured_env(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Outcome {
    run_with(args, None, env)
}

pub fn run_measured_stdin(args: &[&std::ffi::OsStr], stdin: Option<&Path>) -> Outcome {
    run_with(args, stdin, &[])
}

fn run_with(args: &[&std::ffi::OsStr], stdin: Option<&Path>, env: &[(&str, &str)]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let (out_p, err_p) = (dir.path().join("out"), dir.path().join("err"));
    // Where the kernel has no such file the mark stays as it was: the figure
    // is then only higher.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_torchtriage"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(match stdin {
            Some(p) => std::process::Stdio::from(std::fs::File::open(p).unwrap()),
            None => std::process::Stdio::null(),
        })
        .stdout(std::fs::File::create(&out_p).unwrap())
        .stderr(std::fs::File::create(&err_p).unwrap())
        .spawn()
        .expect("spawn torchtriage");
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        assert!(r == 0, "wait4 failed: {}", std::io::Error::last_os_error());
        if !killed && start.elapsed() > time_limit() {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(child);
    let wall = start.elapsed();
    let code = if libc::WIFEXITED(status) { Some(libc::WEXITSTATUS(status)) } else { None };
    let o = Outcome {
        code,
        stdout: std::fs::read(&out_p).unwrap(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_p).unwrap()).into_owned(),
        max_rss_kb: ru.ru_maxrss,
        wall,
    };
    assert!(!killed, "timed out after {wall:?}: {args:?}");
    o
}

/// Never a panic, a signal, a hang or a memory blow-up.
pub fn assert_sane(o: &Outcome, what: &str) {
    assert!(o.code == Some(0) || o.code == Some(2), "{what}: exit {:?} (101 is a panic)\n{}", o.code, o.stderr);
    assert!(o.max_rss_kb < MAX_RSS_KB, "{what}: peak RSS {} MB", o.max_rss_kb / 1024);
    assert!(o.wall < time_limit(), "{what}: took {:?}", o.wall);
}
