//! torchtriage: streaming triage of PyTorch-profiler (Kineto) traces.
//!
//! Data flows input → tokenizer → columns → analysis → report:
//! [`input`] opens and decompresses, [`ingest`] drives the tokenizer into
//! [`columns`], [`analysis`] computes the kernel, overlap and fuse tables,
//! and [`commands`] renders them for the binary.

// Negated float comparisons (`!(a <= b)`) are deliberate where they
// reproduce Python's behaviour with NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod analysis;
pub mod columns;
pub mod commands;
pub mod error;
pub mod ingest;
pub mod input;
pub mod progress;
pub mod pyfmt;
pub mod report;
pub mod tokenizer;

pub use error::{Error, ErrorKind, Result};
