//! `torchtriage merge`: the cross-rank report of a batch from per-trace
//! summary files (`batch --summaries DIR`, or the Python package's
//! map-and-reduce), wherever the traces were triaged.

use std::path::PathBuf;

use super::output::OutputArgs;
use super::Global;
use crate::error::{Error, Result};
use crate::report::batch::{RunInfo, Source};
use crate::run::batch::summary::{merge_summaries, read_summary_files, summary_files};

#[derive(Clone, Debug, clap::Args)]
pub struct MergeArgs {
    /// Summary files, or directories searched (with their subdirectories) for
    /// `*.summary.json` files. Two summaries of one trace that differ are
    /// refused.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Bar, in percent above the stage median, for the likely slow rank and
    /// for waiting ranks (as `batch --straggler-pct`).
    #[arg(long, default_value_t = 10.0, value_parser = super::percent, allow_hyphen_values = true)]
    pub straggler_pct: f64,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(args: &MergeArgs, global: &Global) -> Result<i32> {
    if !args.straggler_pct.is_finite() || args.straggler_pct < 0.0 {
        return Err(Error::usage("--straggler-pct must be a finite number, 0 or more"));
    }
    let output = args.output.resolve(global.quiet)?;
    // Neither a summary nor a trace they were made from may be replaced.
    let files = summary_files(&args.inputs)?;
    output.check_not_among(files.iter().map(PathBuf::as_path), "a summary")?;
    let summaries = read_summary_files(&files, &args.inputs)?;
    output.check_not_input(summaries.iter().map(|s| s.file.as_path()))?;
    if !global.quiet {
        for s in &summaries {
            super::warn_skipped(&s.file, s.skipped_events);
        }
    }
    let (summary, errors) = merge_summaries(&summaries, args.straggler_pct);
    let failures: Vec<(&std::path::Path, &Error)> = errors.iter().map(|(p, e)| (p.as_path(), e)).collect();
    let facts: Vec<&crate::analysis::ranks::RankFacts> = summaries.iter().filter_map(|s| s.facts.as_ref()).collect();
    let info = RunInfo {
        source: Source::Merge { inputs: &args.inputs },
        files: summaries.len(),
        straggler_pct: args.straggler_pct,
        failures: &failures,
        skipped: &[],
        world_sizes: crate::analysis::ranks::world_sizes(summaries.iter().filter_map(|s| s.facts.as_ref())),
        file_notes: summaries.iter().flat_map(|s| s.notes.clone()).collect(),
        skip_notes: Vec::new(),
        incomplete: None,
        ranks: crate::analysis::ranks::ranks_of(&facts),
        copies: crate::analysis::ranks::copied_ranks(&facts),
    };
    super::batch::print_batch(&output, &summary, &info, global)
}
