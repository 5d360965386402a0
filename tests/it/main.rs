//! The integration tests that run under libtest's own harness, as modules
//! of one test binary (linked once rather than once a file). Each module
//! drives the built `torchtriage` binary, or reads the repository, on one
//! subject; the data-driven suites over the trace corpora (`parity`,
//! `timeline_hta`, `batch`, ...) are binaries of their own beside this one.

#[path = "../common/mod.rs"]
mod common;

mod clocks;
mod csv_files;
mod deviations;
mod diff;
mod discovery;
mod framework;
mod fusion_dumps;
mod fusion_registry;
mod fuzz_regressions;
mod gen_trace;
mod hostile_analyses;
mod html;
mod ingest_errors;
mod layers;
mod layout;
mod legends;
mod merge;
mod options;
mod output;
mod schema_doc;
mod scripts;
mod table;
mod truncation;
mod unreadable;
mod verdicts;
