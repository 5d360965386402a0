//! Tokenizer: a hand-written pull scanner over JSON text that streams the
//! `traceEvents` array one event at a time into a
//! [`crate::columns::ColumnsBuilder`], never building a DOM. `scan` has the
//! byte-level primitives (with `simd`: sixteen bytes at a time), `event` one
//! event object (through `shape` when it is written as an earlier one was),
//! `doc` the document structure and parallel chunking.

pub mod doc;
pub mod event;
pub mod scan;
mod shape;
#[cfg(test)]
mod shape_tests;
mod simd;

pub use doc::{
    find_event_boundary, parse_chunk, parse_events_partial, Chunk, DocError, DocParser, EventsFrom, Partial, Step,
};
