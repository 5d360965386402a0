//! `torchtriage triage`: kernel, overlap and fuse tables for one trace or
//! profile directory (which serves as its own mapping trace), or for a
//! graph-off mapping + graph-on formal pair.

use std::path::PathBuf;

use super::output::OutputArgs;
use super::{AnalysisArgs, Global};
use crate::analysis::text::Masking;
use crate::error::{Error, Result};
use crate::report::model::Compat;
use crate::run::triage::{run_triage, TriageInput, TriageOptions};

#[derive(Clone, Debug, clap::Args)]
pub struct TriageArgs {
    /// Trace file or profile directory (used as both mapping and formal input).
    pub input: Option<PathBuf>,
    /// Graph-off mapping trace file or directory (with --formal).
    #[arg(long, conflicts_with = "input", requires = "formal")]
    pub mapping: Option<PathBuf>,
    /// Graph-on formal trace file or directory (with --mapping).
    #[arg(long, conflicts_with = "input", requires = "mapping")]
    pub formal: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Kernel rows considered per stage (0 = all).
    #[arg(long, default_value_t = 0)]
    pub kernel_table_limit: usize,
    /// Overlap rows per stage (0 = all).
    #[arg(long, default_value_t = 0)]
    pub overlap_table_limit: usize,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Extra fuse-pattern file (TOML, see docs/patterns.md); adds patterns or
    /// overrides built-in ones by name. Repeatable.
    #[arg(long = "patterns", value_name = "FILE")]
    pub patterns: Vec<PathBuf>,
    /// `reference`: reproduce the reference tool's tables exactly (hex
    /// masking included), for parity checks; the timeline and notes that
    /// the reference does not print stay out of its sections.
    #[arg(long, value_enum, default_value_t = Compat::Default)]
    pub compat: Compat,
    /// The same as `--compat reference` (older spelling).
    #[arg(long, hide = true)]
    pub reference_masking: bool,
}

pub fn run(args: &TriageArgs, global: &Global) -> Result<i32> {
    let input = match (&args.input, &args.mapping, &args.formal) {
        (Some(p), None, None) => TriageInput::Single(p.clone()),
        (None, Some(m), Some(f)) => TriageInput::Pair { mapping: m.clone(), formal: f.clone() },
        _ => {
            return Err(Error::usage(
                "give either INPUT or both --mapping and --formal; see 'torchtriage triage --help'",
            ))
        }
    };
    let compat = if args.reference_masking { Compat::Reference } else { args.compat };
    let opts = TriageOptions {
        kernel_table_limit: args.kernel_table_limit,
        overlap_table_limit: args.overlap_table_limit,
        patterns: args.patterns.clone(),
        masking: if compat == Compat::Reference { Masking::Reference } else { Masking::WordStart },
        compat,
        ..args.analysis.triage_options(global.quiet)?
    };
    let output = args.output.resolve(global.quiet)?;
    let inputs = || [&args.input, &args.mapping, &args.formal].into_iter().flatten().map(PathBuf::as_path);
    output.check_not_input(inputs())?;
    output.check_not_trace_below(inputs())?;
    let rep = run_triage(&input, &opts)?;
    // The traces found in an input directory, too.
    output.check_not_input(rep.mapping_traces.iter().chain(&rep.formal_traces).map(PathBuf::as_path))?;
    if !global.quiet {
        super::warn_report(&rep);
    }
    // JSON is written as it is made: with hundreds of thousands of kernel
    // rows the text is over a hundred megabytes.
    output.emit(output.renderer().triage(&rep))?;
    Ok(0)
}
