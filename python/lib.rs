//! `torchtriage._native`: the Rust side of the Python package. The Python
//! functions in `torchtriage/__init__.py` build a command line and run it
//! here in-process, so their results are exactly the command's.

use std::path::PathBuf;

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

/// Runs the `torchtriage` command line (`argv[0]` is the program name) and
/// returns its exit code; errors are printed as the command prints them.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.allow_threads(|| torchtriage::cli::run(argv.into_iter().map(Into::into)))
}

/// Runs a command line (without the program name) and returns its exit
/// code; an error raises instead of being printed.
#[pyfunction]
fn run(py: Python<'_>, args: Vec<String>) -> PyResult<i32> {
    let argv = std::iter::once("torchtriage".to_string()).chain(args);
    let parsed = torchtriage::cli::parse(argv).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.allow_threads(|| torchtriage::cli::dispatch(&parsed)).map_err(|e| to_py(py, e))
}

/// The `stats --json` document of one trace, as JSON text.
#[pyfunction]
fn stats_json(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.allow_threads(|| {
        let trace = torchtriage::run::progress::load_trace(&path, true, torchtriage::input::ReadMode::Read)?;
        let v = torchtriage::commands::stats::stats_json(&trace, &path.display().to_string());
        Ok::<_, Error>(v.to_string())
    })
    .map_err(|e| to_py(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(stats_json, m)?)?;
    Ok(())
}
