//! `torchtriage triage`: kernel, overlap and fuse tables for one trace (or a
//! mapping + formal pair). Placeholder until the triage analyses land.

use std::path::PathBuf;

use super::Global;
use crate::error::Result;

#[derive(Clone, Debug, clap::Args)]
pub struct TriageArgs {
    /// Trace file or profile directory.
    pub input: Option<PathBuf>,
}

pub fn run(args: &TriageArgs, global: &Global) -> Result<i32> {
    let _ = (args, global);
    eprintln!("torchtriage: triage is not implemented yet");
    Ok(2)
}
