//! Analyses over [`crate::columns::Trace`]: stage resolution, kernel
//! attribution and the kernel table, the multi-stream overlap analysis, and
//! fuse-pattern matching. Each reads columns and returns plain row structs;
//! rendering lives in [`crate::report`].

pub mod overlap;
pub mod stage;
pub mod types;
