//! Analyses over [`crate::columns::Trace`]: stage resolution, kernel
//! attribution and the kernel table, the multi-stream overlap analysis, and
//! fuse-pattern matching. Each reads columns and returns plain row structs;
//! rendering lives in [`crate::report`].

pub mod batch;
pub mod discover;
pub mod framework;
pub mod fusion;
pub mod kernels;
pub mod mapping;
pub mod overlap;
pub mod sites;
pub mod stage;
pub mod text;
pub mod triage;
pub mod types;
