//! `torchtriage._native`: the Rust side of the Python package. The Python
//! functions in `torchtriage/__init__.py` build a command line and run it
//! here in-process, so their results are exactly the command's. Work runs
//! on its own thread with the GIL released; the calling thread checks for
//! Ctrl-C (and other signals) every 50 ms, so a notebook interrupt returns
//! at once (the abandoned run finishes in the background and is dropped).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use torchtriage::{Error, ErrorKind};

create_exception!(torchtriage, TraceError, PyValueError, "A trace that cannot be read as one.");

/// A library error as a Python exception: bad input as `TraceError` with
/// `path` and `offset`, unreadable files as `OSError`, bad options as
/// `ValueError`.
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind {
        ErrorKind::BadInput => {
            let err = TraceError::new_err(msg);
            let value = err.value(py);
            let path = e.path.as_ref().map(|p| p.display().to_string());
            if value.setattr("path", path).is_err() || value.setattr("offset", e.offset).is_err() {
                return err;
            }
            err
        }
        ErrorKind::Io => PyOSError::new_err(msg),
        ErrorKind::Usage => PyValueError::new_err(msg),
    }
}

/// A command-line parse error as `ValueError`, in one line without the
/// pointer to `--help`, which names command-line flags a Python caller
/// never typed.
fn option_error(e: torchtriage::cli::ParseError) -> PyErr {
    PyValueError::new_err(torchtriage::cli::usage_message(&e))
}

/// Runs `work` on a new thread with the GIL released, checking for signals
/// while it runs: `KeyboardInterrupt` (or whatever a signal handler raises)
/// is returned as soon as the signal arrives.
fn interruptible<T: Send + 'static>(py: Python<'_>, work: impl FnOnce() -> T + Send + 'static) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("torchtriage".into())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start a thread: {e}")))?;
    let mut rx = rx;
    loop {
        // The receiver goes into the GIL-free closure and back (it is Send,
        // not Sync).
        let (got, back) = py.allow_threads(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyValueError::new_err("internal error: the run ended without a result"))
            }
        }
    }
}

/// Runs the `torchtriage` command line (`argv[0]` is the program name) and
/// returns its exit code; errors are printed as the command prints them.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<OsString>) -> PyResult<i32> {
    interruptible(py, move || torchtriage::cli::run(argv))
}

/// Runs a command line (without the program name) and returns its exit
/// code; an error raises instead of being printed. The arguments are the
/// file system's: a path that is not UTF-8 (a `str` with its bytes escaped,
/// as `os.fsdecode` gives it) reaches the command as those bytes.
#[pyfunction]
fn run(py: Python<'_>, args: Vec<OsString>) -> PyResult<i32> {
    let argv = std::iter::once(OsString::from("torchtriage")).chain(args);
    let mut parsed = torchtriage::cli::parse(argv).map_err(option_error)?;
    // The caller gets the report, failures and gate verdicts included.
    parsed.global.embedded = true;
    interruptible(py, move || torchtriage::cli::dispatch(&parsed))?.map_err(|e| to_py(py, e))
}

/// The traces `batch DIR` would triage, in its order (the position is the
/// `index` that `summarize` takes), each with the rank the name it was
/// found by carries (a symbolic link's own name), if any.
#[pyfunction]
fn batch_files(py: Python<'_>, dir: PathBuf) -> PyResult<Traces> {
    let found = torchtriage::run::batch::discover_batch_files(&dir).map_err(|e| to_py(py, e))?;
    Ok(found.files.into_iter().map(|f| (f.path, f.name_rank)).collect())
}

/// Files or directories a batch left out, each with the reason.
type Skipped = Vec<(String, String)>;

/// Traces a batch reads, each with the rank its name carries.
type Traces = Vec<(PathBuf, Option<u64>)>;

/// What `batch` reads below each of `dirs` (files too are taken), one walk
/// of each: the traces it would triage, each with the rank the name it was
/// found by carries ([`batch_files`]); each file or directory it would leave
/// out with the reason `batch` gives (`skipped` in its report), in its order;
/// the warnings `batch` gives about those that look like missing ranks (the
/// first of its report's notes); and the warning that the batch is
/// incomplete when it lacks ranks (a directory below could not be listed,
/// an entry with a trace's name could not be read).
#[pyfunction]
fn batch_listing(py: Python<'_>, dirs: Vec<PathBuf>) -> PyResult<(Traces, Skipped, Vec<String>, Option<String>)> {
    let mut traces = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        if dir.is_file() && !torchtriage::run::discover::named_file_looks_like_trace(&dir) {
            // A file of the list that is no trace is left out, as a
            // directory's would be (`batch` of a list reads it as one).
            let why = torchtriage::run::batch::skip_reason(&dir);
            skipped.push((std::path::absolute(&dir).unwrap_or(dir), why));
            continue;
        }
        let found = torchtriage::run::batch::discover_batch_files(&dir).map_err(|e| to_py(py, e))?;
        skipped.extend(torchtriage::run::batch::skipped_files(&dir, &found));
        traces.extend(found.files.into_iter().map(|f| (f.path, f.name_rank)));
    }
    skipped.sort();
    skipped.dedup();
    let note = torchtriage::run::batch::incomplete_note(&skipped);
    let warnings = torchtriage::run::batch::skip_warnings(&skipped);
    // Paths as `batch`'s JSON writes them (a name that is not UTF-8 shown
    // with replacement characters), so the two reports are equal.
    let skipped = skipped.into_iter().map(|(p, why)| (p.display().to_string(), why.as_str().to_string())).collect();
    Ok((traces, skipped, warnings, note))
}

/// The map step of a batch: one trace triaged as `batch` triages it, with
/// `batch`'s analysis options in `args`, as the JSON text of its summary
/// (the file `batch --summaries` writes). A trace that fails gives a
/// summary holding its error; bad options raise `ValueError`. `name_rank`
/// is the rank `batch_files` gave the trace, read before its path's.
#[pyfunction]
#[pyo3(signature = (path, index, args, name_rank=None))]
fn summarize(
    py: Python<'_>,
    path: PathBuf,
    index: usize,
    args: Vec<String>,
    name_rank: Option<u64>,
) -> PyResult<String> {
    let argv = ["torchtriage".to_string(), "batch".to_string(), path.display().to_string()].into_iter().chain(args);
    let parsed = torchtriage::cli::parse(argv).map_err(option_error)?;
    let torchtriage::cli::Command::Batch(batch) = &parsed.command else {
        return Err(PyValueError::new_err("internal error: not a batch command line"));
    };
    let opts = torchtriage::commands::batch::file_options(batch).map_err(|e| to_py(py, e))?;
    let summary =
        interruptible(py, move || torchtriage::run::batch::summary::summarize_trace(&path, index, name_rank, &opts))?;
    serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(format!("internal error: {e}")))
}

/// Checks `batch`'s options in `args` (its analysis options as `summarize`
/// reads them, and `--straggler-pct`), so that a bad one raises `ValueError` before any work is handed out.
#[pyfunction]
fn check_batch_options(py: Python<'_>, args: Vec<String>) -> PyResult<()> {
    let argv = ["torchtriage", "batch", "."].into_iter().map(String::from).chain(args);
    let parsed = torchtriage::cli::parse(argv).map_err(option_error)?;
    let torchtriage::cli::Command::Batch(batch) = &parsed.command else {
        return Err(PyValueError::new_err("internal error: not a batch command line"));
    };
    torchtriage::commands::batch::check_args(batch).map_err(|e| to_py(py, e))?;
    torchtriage::commands::batch::file_options(batch).map(drop).map_err(|e| to_py(py, e))
}

/// The `stats --json` document of one trace, as JSON text.
#[pyfunction]
fn stats_json(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    interruptible(py, move || {
        let trace = torchtriage::run::progress::load_trace(&path, true, torchtriage::input::ReadMode::Read)?;
        let v = torchtriage::commands::stats::stats_json(&trace, &torchtriage::commands::stats::file_name(&path));
        Ok::<_, Error>(v.to_string())
    })?
    .map_err(|e| to_py(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(stats_json, m)?)?;
    m.add_function(wrap_pyfunction!(batch_files, m)?)?;
    m.add_function(wrap_pyfunction!(batch_listing, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    m.add_function(wrap_pyfunction!(check_batch_options, m)?)?;
    Ok(())
}
