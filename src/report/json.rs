//! The triage report as JSON: every kernel row of every stage at full
//! precision (with whether it was rendered), stage totals, the overlap and
//! fuse rows, and the overlap statistics. Layout: `docs/json-schema.md`.

use serde_json::{json, Value};

use crate::analysis::mapping::pct;
use crate::report::model::TriageReport;

fn paths(p: &[std::path::PathBuf]) -> Value {
    Value::Array(p.iter().map(|p| Value::String(p.display().to_string())).collect())
}

/// The report as a JSON value.
pub fn to_value(r: &TriageReport, kernel_table_limit: usize) -> Value {
    let kernel_tables: Vec<Value> = r
        .kernel_tables
        .iter()
        .map(|t| {
            let rows: Vec<Value> = t
                .rows
                .iter()
                .enumerate()
                .map(|(i, row)| {
                    let share = pct(row.total_us(), t.total_us);
                    let within_limit = kernel_table_limit == 0 || i < kernel_table_limit;
                    json!({
                        "kernel": row.name,
                        "category": row.category,
                        "total_us": row.total_us(),
                        "share_pct": share,
                        "launches": row.aggregate.count,
                        "max_us": row.aggregate.max_us,
                        "avg_us": row.aggregate.avg_us(),
                        "location": row.location,
                        "cpu_op": row.cpu_op,
                        "rendered": within_limit && share >= r.min_share,
                    })
                })
                .collect();
            json!({
                "trace": t.trace.display().to_string(),
                "stage": t.stage,
                "total_us": t.total_us,
                "trace_total_us": t.trace_total_us,
                "rows": rows,
            })
        })
        .collect();
    let overlap: Vec<Value> = r
        .overlap_rows
        .iter()
        .map(|o| {
            let a = &o.row;
            json!({
                "stage": o.stage,
                "priority": a.priority,
                "verdict": a.verdict,
                "kernel": a.kernel,
                "category": a.category,
                "total_us": a.total_us,
                "share_pct": a.share_pct,
                "exclusive_ratio": a.exclusive_ratio,
                "hidden_ratio": a.hidden_ratio,
                "python_scope": a.python_scope,
                "launch_op": a.launch_op,
                "mapping_ratio": a.mapping_ratio,
                "dependency_signal": a.dependency_signal,
                "prev_neighbor": a.prev_neighbor,
                "next_neighbor": a.next_neighbor,
                "recommendation": a.recommendation,
                "suggestion": a.suggestion,
                "representative_idx": a.representative_idx,
                "rendered": o.rendered,
            })
        })
        .collect();
    let overlap_stats: Vec<Value> = r
        .overlap_stats
        .iter()
        .map(|s| {
            json!({
                "bundle": s.bundle,
                "stage": s.stage,
                "total_busy_us": s.total_busy_us,
                "total_overlap_us": s.overlap_us,
                "max_concurrent_streams": s.max_concurrent_streams,
            })
        })
        .collect();
    let fuse: Vec<Value> = r
        .fuse_rows
        .iter()
        .map(|f| {
            let it = &f.item;
            json!({
                "stage": f.stage,
                "pattern": it.pattern,
                "status": it.status,
                "confidence": it.confidence,
                "related_us": it.related_us,
                "share_pct": f.share_pct,
                "evidence": it.evidence,
                "current_locations": it.current_locations,
                "candidate_path": it.candidate_path,
                "rationale": it.rationale,
            })
        })
        .collect();
    json!({
        "mode": if r.single { "single-trace" } else { "mapping-formal" },
        "framework": {"mapping": r.mapping_framework, "formal": r.formal_framework},
        "mapping_traces": paths(&r.mapping_traces),
        "formal_traces": paths(&r.formal_traces),
        "model": r.model,
        "min_share_pct": r.min_share,
        "kernel_tables": kernel_tables,
        "overlap": overlap,
        "overlap_stats": overlap_stats,
        "fuse": fuse,
    })
}

/// Pretty-printed JSON text.
pub fn render(r: &TriageReport, kernel_table_limit: usize) -> String {
    serde_json::to_string_pretty(&to_value(r, kernel_table_limit)).unwrap_or_else(|_| "{}".into())
}
