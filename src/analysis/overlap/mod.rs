//! Multi-stream overlap analysis (stub). The real module, ported on another
//! branch, replaces this file at merge time; only the API the triage driver
//! calls is declared here, and every body returns empty or zero values.

use crate::analysis::types::{KernelEntry, StagePayload};
use crate::columns::Trace;

/// One kernel execution as the overlap analysis sees it.
pub struct OverlapKernel {
    _private: (),
}

/// Busy time, time covered by two or more streams, and peak concurrency.
pub struct OverlapStats {
    pub total_busy_us: f64,
    pub overlap_us: f64,
    pub max_concurrent_streams: usize,
}

/// One row of the overlap opportunity table.
pub struct ActionRow {
    pub priority: String,
    pub verdict: String,
    pub kernel: String,
    pub category: String,
    pub total_us: f64,
    pub share_pct: f64,
    pub exclusive_ratio: f64,
    pub hidden_ratio: f64,
    pub python_scope: String,
    pub launch_op: String,
    pub mapping_ratio: f64,
    pub dependency_signal: String,
    pub prev_neighbor: String,
    pub next_neighbor: String,
    pub recommendation: String,
    pub suggestion: String,
    pub representative_idx: usize,
}

/// The kernels of one stage of one trace.
pub struct StageBundle<'t> {
    pub label: String,
    pub trace: &'t Trace,
    pub events: Vec<OverlapKernel>,
    pub pid: Option<String>,
}

/// Stage → bundle for one trace file, in render order.
pub fn stage_bundles<'t>(
    trace: &'t Trace,
    default_stage: &str,
    label_prefix: &str,
    pid_substring: Option<&str>,
) -> Vec<(String, StageBundle<'t>)> {
    let _ = (trace, default_stage, label_prefix, pid_substring);
    Vec::new()
}

/// Overlap statistics of a stage's kernels.
pub fn analyze_overlap(events: &mut [OverlapKernel]) -> OverlapStats {
    let _ = events;
    OverlapStats { total_busy_us: 0.0, overlap_us: 0.0, max_concurrent_streams: 0 }
}

/// Overlap opportunity rows of one stage.
pub fn build_action_rows(
    formal: &StageBundle,
    mapping: &StageBundle,
    stage: &str,
    stats: &OverlapStats,
    kernel_map_lookup: &dyn Fn(&str, &str) -> Option<KernelEntry>,
    formal_stage_payload: Option<&StagePayload>,
    table_limit: usize,
) -> Vec<ActionRow> {
    let _ = (formal, mapping, stage, stats, kernel_map_lookup, formal_stage_payload, table_limit);
    Vec::new()
}
