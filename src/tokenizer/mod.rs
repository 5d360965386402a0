//! Tokenizer: a hand-written pull scanner over JSON text that streams the
//! `traceEvents` array one event at a time into a
//! [`crate::columns::ColumnsBuilder`], never building a DOM. `scan` has the
//! byte-level primitives (with `simd`: sixteen bytes at a time), `event` one
//! event object, `doc` the document structure and parallel chunking.

pub mod doc;
pub mod event;
pub mod scan;
mod simd;

pub use doc::{
    find_event_boundary, parse_chunk, parse_events_partial, Chunk, DocError, DocParser, EventsFrom, Partial, Step,
};
