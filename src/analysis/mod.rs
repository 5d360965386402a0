//! Analyses over [`crate::columns::Trace`]: stage resolution, kernel
//! attribution and the kernel table, the multi-stream overlap analysis,
//! fuse-pattern matching and the cross-rank comparison of a batch. Each is a
//! pure function from a trace (or rows) and options to typed rows: no file
//! access, no globals, no progress, no rendering.

pub mod framework;
pub mod fusion;
pub mod hardware;
pub mod kernels;
pub mod mapping;
pub mod overlap;
pub mod ranks;
pub mod sites;
pub mod stage;
pub mod text;
pub mod timeline;
pub mod types;
