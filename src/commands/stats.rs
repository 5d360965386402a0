//! `torchtriage stats`: event counts and column sizes of one trace.

use std::path::PathBuf;

use super::Global;
use crate::error::Result;
use crate::ingest::{load_path, IngestOptions};

#[derive(Clone, Debug, clap::Args)]
pub struct StatsArgs {
    /// Trace file (`.json`, `.json.gz`, `.json.zst`) or `-` for stdin.
    pub input: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &StatsArgs, global: &Global) -> Result<i32> {
    let trace = load_path(&args.input, &IngestOptions { quiet: global.quiet })?;
    let mut cat = serde_json::Map::new();
    for (k, v) in &trace.counts.by_cat {
        cat.insert(trace.s(*k).to_string(), (*v).into());
    }
    let mut ph = serde_json::Map::new();
    for (k, v) in &trace.counts.by_ph {
        ph.insert(trace.s(*k).to_string(), (*v).into());
    }
    let out = serde_json::json!({"events": trace.counts.events, "cat": cat, "ph": ph});
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(0)
}
