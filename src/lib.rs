//! torchtriage: streaming triage of PyTorch-profiler (Kineto) traces.
//!
//! Data flows input → tokenizer → columns → analysis → report:
//! [`input`] opens and decompresses, [`tokenizer`] streams `traceEvents`,
//! [`columns`] keeps what the analyses need, [`analysis`] computes the
//! kernel, overlap and fuse tables, [`report`] renders them.

pub mod columns;
pub mod pyfmt;
pub mod analysis;
