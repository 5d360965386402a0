//! torchtriage: streaming triage of PyTorch-profiler (Kineto) traces.
//!
//! The layers follow the data:
//! [`input`] opens and decompresses, [`tokenizer`] scans the JSON,
//! [`ingest`] drives it into the per-category [`columns`] of a
//! [`columns::Trace`]; [`analysis`] holds pure functions from a trace (and
//! options) to typed rows; [`report`] holds the one report model and its
//! renderers; [`run`] finds files, loads them, schedules batches and shows
//! progress; [`commands`] turns command-line arguments into options for
//! the run layer; [`cli`] parses the command line and dispatches to them.
//! [`pysem`] keeps the Python value semantics every layer agrees on.

// Negated float comparisons (`!(a <= b)`) are deliberate where they
// reproduce Python's behaviour with NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod analysis;
pub mod cli;
pub mod columns;
pub mod commands;
pub mod error;
pub mod ingest;
pub mod input;
pub mod pysem;
pub mod report;
pub mod run;
pub mod tokenizer;

pub use error::{Error, ErrorKind, Result};
