//! torchtriage: streaming triage of PyTorch-profiler (Kineto) traces.
//!
//! Data flows input → tokenizer → columns → analysis → report:
//! [`input`] opens and decompresses, [`ingest`] drives the tokenizer into
//! [`columns`], [`analysis`] computes the kernel, overlap and fuse tables,
//! and [`commands`] renders them for the binary.

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
