//! Ingest: file → [`Trace`]. Chooses the reading strategy for an opened
//! input and reports progress. (Temporary: reads through serde_json until the
//! streaming tokenizer lands; the signature stays.)

use std::io::Read;
use std::path::Path;

use crate::columns::{value::trace_from_value, Trace};
use crate::error::{Error, Result};
use crate::input::{self, Source};

/// Knobs for one ingest.
#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// Suppress progress output.
    pub quiet: bool,
}

/// Reads a whole trace file (plain, gzip, zstd or `-`) into columns.
pub fn load_path(path: &Path, opts: &IngestOptions) -> Result<Trace> {
    let _ = opts;
    let opened = input::open(path)?;
    let bytes: Vec<u8> = match opened.source {
        Source::Mapped { map, .. } => map.to_vec(),
        Source::Stream { mut reader, .. } => {
            let mut v = Vec::new();
            reader.read_to_end(&mut v).map_err(|e| Error::bad_input(e.to_string()).in_file(path))?;
            v
        }
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_input(format!("not valid JSON: {e}")).in_file(path))?;
    Ok(trace_from_value(&value))
}
