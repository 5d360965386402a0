//! Fuse-pattern matching (stub). The real module, ported on another branch,
//! replaces this file at merge time; only the API the triage driver calls is
//! declared here, and it finds nothing.

use crate::analysis::types::KernelRow;

/// One matched fusion opportunity for the fuse table.
pub struct FusionOpportunity {
    pub pattern: String,
    pub status: String,
    pub confidence: String,
    pub related_us: f64,
    pub evidence: String,
    pub current_locations: String,
    pub candidate_path: String,
    pub rationale: String,
}

/// Fusion opportunities among a stage's kernel rows.
pub fn detect_fusion_opportunities(
    rows: &[KernelRow],
    total_us: f64,
    server_args: Option<&serde_json::Value>,
    framework: &str,
) -> Vec<FusionOpportunity> {
    let _ = (rows, total_us, server_args, framework);
    Vec::new()
}
