//! The report model: what a triage run produces and every renderer reads.

use std::path::PathBuf;

use crate::analysis::ranks::RankFacts;
use crate::analysis::stage::Stage;
use crate::error::Result;

use crate::analysis::fusion::FusionOpportunity;
use crate::analysis::overlap::ActionRow;
use crate::analysis::types::KernelRow;

/// All kernel rows of one (formal trace, stage), before the share filter.
#[derive(Clone, Debug)]
pub struct KernelTable {
    pub trace: PathBuf,
    pub stage: Stage,
    /// GPU time of the stage's kernels.
    pub total_us: f64,
    /// GPU time of all ranked kernels of the trace.
    pub trace_total_us: f64,
    pub rows: Vec<KernelRow>,
}

/// A kernel row that cleared the share bar.
#[derive(Clone, Debug)]
pub struct RenderedKernelRow {
    pub stage: Stage,
    pub kernel: String,
    pub category: String,
    pub total_us: f64,
    pub share_pct: f64,
    pub launches: u64,
    pub max_us: f64,
    pub location: String,
    pub cpu_op: String,
}

/// An overlap action row of one stage; `rendered` when it clears the share bar.
pub struct RenderedOverlapRow {
    pub stage: Stage,
    pub row: ActionRow,
    /// Cleared the share bar (shown in the markdown table); JSON lists every row.
    pub rendered: bool,
}

/// Overlap statistics of one formal stage bundle.
#[derive(Clone, Debug)]
pub struct OverlapStageStats {
    pub bundle: String,
    pub stage: Stage,
    pub total_busy_us: f64,
    pub overlap_us: f64,
    pub max_concurrent_streams: usize,
    /// Exclusive (exposed) time per kernel of the sweep: (canonical name,
    /// overlap category, exclusive µs), first-seen order.
    pub exclusive_by_kernel: Vec<(String, &'static str, f64)>,
}

/// A fusion opportunity that cleared the share bar.
pub struct RenderedFuseRow {
    pub stage: Stage,
    pub share_pct: f64,
    pub item: FusionOpportunity,
}

/// Everything the report renders.
pub struct TriageReport {
    pub single: bool,
    pub mapping_framework: String,
    pub formal_framework: String,
    pub mapping_traces: Vec<PathBuf>,
    pub formal_traces: Vec<PathBuf>,
    pub model: Option<String>,
    pub min_share: f64,
    pub kernel_tables: Vec<KernelTable>,
    pub kernel_rows: Vec<RenderedKernelRow>,
    pub overlap_rows: Vec<RenderedOverlapRow>,
    pub overlap_stats: Vec<OverlapStageStats>,
    pub fuse_rows: Vec<RenderedFuseRow>,
    /// `distributedInfo` of the first formal trace, if it has one.
    pub distributed_info: Option<serde_json::Value>,
}

/// One trace file of the batch, in batch order.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchFile {
    /// Position in the batch (sorted by path); the rank of last resort.
    pub index: usize,
    pub path: PathBuf,
    pub size: u64,
}

/// A triaged file.
#[derive(Clone, Debug)]
pub struct FileAnalysis {
    /// Rank and per-stage facts, as the cross-rank comparison reads them.
    pub facts: RankFacts,
    /// Stage the file's path names (`all` when none).
    pub path_stage: Stage,
    /// Wall time of the triage run (its load plus all analyses), ms.
    pub triage_ms: f64,
    /// The file's triage report as JSON ([`crate::report::json::to_value`]).
    pub report_json: serde_json::Value,
}

/// The result for one file.
#[derive(Debug)]
pub struct FileOutcome {
    pub file: BatchFile,
    pub result: Result<FileAnalysis>,
}
