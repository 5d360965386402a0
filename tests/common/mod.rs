//! Shared helpers for integration tests: the two trace corpora, the
//! data-driven trials built over them, and running the built binary.
//!
//! Corpora: `tests/data` (a few public traces with their goldens, in the
//! repository: always there) and the full set in `../shared` beside the
//! clone, or in the folder named by `TORCHTRIAGE_SHARED`. Both are laid out
//! alike: `traces/` (with `counts.json`), `golden/`, `golden-hta/`.
//!
//! Trials over the full set are built only when it is there. When it is
//! missing, one trial per kind (`KIND::shared/*`) stands for them: reported
//! ignored, except under `CI=true` where it runs and fails naming the
//! missing folder (as it also does when run with `--ignored`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use libtest_mimic::{Arguments, Failed, Trial};

pub mod measure;

/// Environment variable naming the folder to use instead of `../shared`.
pub const SHARED_ENV: &str = "TORCHTRIAGE_SHARED";

/// A folder of traces and goldens, and the label trial names carry for it
/// (`data` or `shared`).
#[derive(Clone)]
pub struct Corpus {
    pub label: &'static str,
    pub root: PathBuf,
}

impl Corpus {
    /// `tests/data` in the repository.
    pub fn bundled() -> Corpus {
        Corpus { label: "data", root: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data") }
    }

    /// Where the full set is looked for: `$TORCHTRIAGE_SHARED`, else
    /// `../shared` from the crate root.
    pub fn shared_location() -> PathBuf {
        match std::env::var_os(SHARED_ENV) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            // `../shared`, spelt without the `..` so messages name it plainly.
            _ => Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crate root has a parent").join("shared"),
        }
    }

    /// The full set, or the folder where it was looked for.
    pub fn shared() -> Result<Corpus, PathBuf> {
        let root = Self::shared_location();
        if root.join("traces/counts.json").is_file() {
            Ok(Corpus { label: "shared", root })
        } else {
            Err(root)
        }
    }

    pub fn traces_dir(&self) -> PathBuf {
        self.root.join("traces")
    }

    pub fn golden_dir(&self) -> PathBuf {
        self.root.join("golden")
    }

    /// `traces/counts.json`.
    pub fn counts(&self) -> serde_json::Value {
        let path = self.traces_dir().join("counts.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
    }

    /// Every trace listed in `counts.json`, as (relative name, full path),
    /// sorted by name.
    pub fn traces(&self) -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = self
            .counts()
            .as_object()
            .expect("counts.json is an object")
            .keys()
            .map(|k| (k.clone(), self.traces_dir().join(k)))
            .collect();
        out.sort();
        out
    }

    /// The trace a golden stands for, from the golden's path relative to
    /// `golden/` without its `.md` / `.json`: `X.dir` is the directory `X`;
    /// otherwise the trace `X`, or `X.gz` where only a recompressed copy
    /// is kept (tests/data/SOURCES.md).
    pub fn trace_for_golden(&self, stem: &str) -> PathBuf {
        if let Some(dir) = stem.strip_suffix(".dir") {
            return self.traces_dir().join(dir);
        }
        let plain = self.traces_dir().join(stem);
        let gz = self.traces_dir().join(format!("{stem}.gz"));
        if !plain.exists() && gz.is_file() {
            gz
        } else {
            plain
        }
    }

    /// A trial name: `KIND::LABEL/ITEM`.
    pub fn name(&self, kind: &str, item: &str) -> String {
        format!("{kind}::{}/{item}", self.label)
    }
}

/// Whether this run is CI's (`CI=true`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A trial that fails with `message`.
pub fn failing(name: String, message: String) -> Trial {
    Trial::test(name, move || Err(Failed::from(message)))
}

/// Trials of one kind over both corpora: `make` builds them for
/// `tests/data` always and for the full set when it is there; when it is
/// missing, one trial stands for them (see the module doc).
pub fn over_corpora(kind: &str, make: impl Fn(&Corpus) -> Vec<Trial>) -> Vec<Trial> {
    let mut trials = make(&Corpus::bundled());
    match Corpus::shared() {
        Ok(shared) => trials.extend(make(&shared)),
        Err(missing) => trials.push(missing_shared(kind, &missing)),
    }
    trials
}

/// The stand-in for the trials of `kind` over a missing full set.
fn missing_shared(kind: &str, missing: &Path) -> Trial {
    let message = format!(
        "{} is missing (no traces/counts.json there): the {kind} trials over the full trace set \
         did not run; put the shared folder at ../shared beside the clone or name it in {SHARED_ENV}",
        missing.display()
    );
    failing(format!("{kind}::shared/*"), message).with_ignored_flag(!ci())
}

/// Trials of tests that need no corpus, each a plain function that panics
/// on failure.
pub fn plain_trials(tests: impl IntoIterator<Item = (&'static str, fn())>) -> Vec<Trial> {
    tests
        .into_iter()
        .map(|(name, test)| {
            Trial::test(name, move || {
                test();
                Ok(())
            })
        })
        .collect()
}

/// Runs `trials` as this test binary's whole set (libtest's command line:
/// filters, `--ignored`, `--list`, `--test-threads`, ...) and exits.
pub fn run_trials(trials: Vec<Trial>) -> ! {
    let args = Arguments::from_args();
    if let Err(missing) = Corpus::shared() {
        if !args.list {
            eprintln!(
                "note: {} not found: trials over the full trace set are reported as ignored{}",
                missing.display(),
                if ci() { " (failing under CI=true)" } else { "" }
            );
        }
    }
    libtest_mimic::run(&args, trials).exit()
}

/// Deterministic seed for `name` (FNV-1a), to mix into per-trace RNG seeds.
pub fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// Runs the torchtriage binary with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_torchtriage")).args(args).output().expect("run torchtriage")
}

/// Runs the binary in the working directory `dir`.
pub fn run_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_torchtriage")).current_dir(dir).args(args).output().expect("run torchtriage")
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
