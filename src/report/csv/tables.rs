//! Which rows of each JSON report make which CSV file.

use serde_json::Value;

use super::Table;

const KERNELS: &[&str] = &[
    "trace",
    "stage",
    "stage_total_us",
    "kernel",
    "category",
    "total_us",
    "share_pct",
    "launches",
    "max_us",
    "avg_us",
    "location",
    "cpu_op",
    "rendered",
];
const OVERLAP: &[&str] = &[
    "stage",
    "priority",
    "verdict",
    "kernel",
    "category",
    "total_us",
    "share_pct",
    "exclusive_ratio",
    "hidden_ratio",
    "python_scope",
    "launch_op",
    "mapping_ratio",
    "dependency_signal",
    "prev_neighbor",
    "next_neighbor",
    "recommendation",
    "suggestion",
    "representative_idx",
    "rendered",
];
const OVERLAP_STATS: &[&str] = &["bundle", "stage", "total_busy_us", "total_overlap_us", "max_concurrent_streams"];
const FUSE: &[&str] = &[
    "stage",
    "pattern",
    "status",
    "confidence",
    "related_us",
    "share_pct",
    "evidence",
    "current_locations",
    "candidate_path",
    "rationale",
];
const TIMELINE: &[&str] = &[
    "stage",
    "pid",
    "rank",
    "kernels",
    "window_us",
    "busy_us",
    "idle_us",
    "compute_us",
    "non_compute_us",
    "idle_pct",
    "compute_pct",
    "non_compute_pct",
    "comm_us",
    "memory_us",
    "comm_comp_overlap_pct",
    "exposed_comm_us",
    "idle_host_wait_us",
    "idle_short_gap_us",
    "longest_idle_gap_us",
    "device_wait_us",
    "basis",
];
const IDLE: &[&str] = &["stage", "pid", "rank", "stream", "host_wait_us", "kernel_wait_us", "other_us"];
const STAGES: &[&str] = &[
    "stage",
    "launch.launches",
    "launch.kernels",
    "launch.cpu_us",
    "launch.delay_p50_us",
    "launch.delay_p90_us",
    "launch.delay_p99_us",
    "launch.kernel_p50_us",
    "launch.launch_p50_us",
    "launch.short_kernel_pct",
    "launch.kernels_per_step",
    "launch.clock_offset_us",
    "steps.source",
    "steps.count",
    "steps.mean_us",
    "steps.p50_us",
    "steps.p90_us",
    "steps.max_us",
    "steps.slowest",
    "steps.without_gpu_work",
    "verdict.kind",
    "verdict.window_us",
    "verdict.idle_pct",
    "verdict.host_wait_pct",
    "verdict.exposed_comm_pct",
    "verdict.kernel_p50_us",
    "verdict.launch_p50_us",
    "verdict.delay_p50_us",
    "verdict.kernels_per_launch",
    "verdict.clock_offset_us",
    "verdict.steps_us",
    "verdict.steps_idle_pct",
    "verdict.host_cause",
    "verdict.longest_gap_us",
    "verdict.device_wait_pct",
    "verdict.host_wait_call.name",
    "verdict.host_wait_call.calls",
    "verdict.host_wait_call.wait_us",
];
const RANKS: &[&str] = &[
    "stage",
    "slow_rank",
    "rank",
    "rank_source",
    "file",
    "bundle",
    "busy_us",
    "overlap_us",
    "overlap_pct",
    "gpu_time_us",
    "compute_us",
    "exposed_comm_us",
    "exposed_comm_pct",
    "idle_us",
    "steps",
    "top_exposed_comm.kernel",
    "top_exposed_comm.exclusive_us",
    "top_headroom.priority",
    "top_headroom.kernel",
    "leading_kernel.kernel",
    "leading_kernel.category",
    "leading_kernel.total_us",
    "role",
    "waits_on",
    "straggler",
];
const RANK_KERNELS: &[&str] =
    &["stage", "kernel", "category", "leads_ranks", "ranks_with_kernel", "min_us", "median_us", "max_us", "max_rank"];
const FAILURES: &[&str] = &["file", "error"];
const SKIPPED: &[&str] = &["file", "reason"];
const BATCH_STAGES: &[&str] = &[
    "stage",
    "median_busy_us",
    "median_compute_us",
    "median_exposed_comm_us",
    "slow_rank",
    "shared_ranks",
    "unexplained_slow_rank.rank",
    "unexplained_slow_rank.excess_compute_us",
    "unexplained_slow_rank.comm_spread_us",
    "unexplained_slow_rank.file",
    "late_rank",
];
/// The per-unit figures of a kernel or category diff row.
const NORMALIZED: &[&str] = &[
    "normalized.base_us",
    "normalized.new_us",
    "normalized.delta_us",
    "normalized.delta_pct",
    "normalized.base_count",
    "normalized.new_count",
];
const DIFF_KERNELS: &[&str] =
    &["stage", "kernel", "category", "base_us", "new_us", "delta_us", "delta_pct", "base_count", "new_count", "status"];
const DIFF_CATEGORIES: &[&str] =
    &["stage", "category", "base_us", "new_us", "delta_us", "delta_pct", "base_count", "new_count"];
/// The figures a diff compares per stage, on each side and as the change.
const FIGURES: &[&str] = &[
    "window_us",
    "busy_us",
    "idle_us",
    "idle_pct",
    "compute_us",
    "comm_us",
    "comm_comp_overlap_pct",
    "steps",
    "step_p50_us",
    "step_p90_us",
    "launch_delay_p50_us",
    "kernels_per_step",
    "kernel_us",
    "clock_offset_us",
];
const DIFF_STAGE: &[&str] = &[
    "normalization.basis",
    "normalization.base_units",
    "normalization.new_units",
    "kernels_hidden",
    "matched_base_pct",
    "gate.basis",
    "gate.per",
    "gate.base_us",
    "gate.new_us",
    "gate.change_pct",
    "gate.tripped",
    "gate.work_ratio",
    "gate.uneven_launches.ratio",
    "gate.uneven_launches.agreeing_pct",
];

fn joined(parts: &[&[&str]]) -> Vec<String> {
    parts.iter().flat_map(|p| p.iter().map(|c| c.to_string())).collect()
}

fn table(columns: &[String]) -> Table {
    Table::with_columns(&columns.iter().map(String::as_str).collect::<Vec<_>>())
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn done(name: &'static str, t: Table) -> (&'static str, String) {
    (name, t.render())
}

/// `kernels.csv` (every kernel row, with its trace and stage), `overlap.csv`,
/// `overlap_stats.csv`, `fuse.csv`, `timeline.csv` (the whole trace as the
/// stage `trace`, then one row per stage and GPU), `idle.csv` (one row per
/// stage, GPU and stream) and `stages.csv` (launch statistics, steps and
/// verdict: the whole trace, then each stage).
pub(super) fn triage(r: &Value, basis_note: Option<&str>) -> Vec<(&'static str, String)> {
    let mut kernels = Table::with_columns(KERNELS);
    for t in items(&r["kernel_tables"]) {
        let context = [("trace", &t["trace"]), ("stage", &t["stage"]), ("stage_total_us", &t["total_us"])];
        for row in items(&t["rows"]) {
            kernels.push(&context, row, &[]);
        }
    }
    let mut overlap = Table::with_columns(OVERLAP);
    for row in items(&r["overlap"]) {
        overlap.push(&[], row, &[]);
    }
    let mut overlap_stats = Table::with_columns(OVERLAP_STATS);
    for row in items(&r["overlap_stats"]) {
        overlap_stats.push(&[], row, &[]);
    }
    let mut fuse = Table::with_columns(FUSE);
    for row in items(&r["fuse"]) {
        fuse.push(&[], row, &[]);
    }
    let (mut timeline, mut idle) = (Table::with_columns(TIMELINE), Table::with_columns(IDLE));
    let mut steps = Table::with_columns(STAGES);
    // The whole trace's figures, launch statistics and verdict first, as
    // the stage `trace`.
    let tl = &r["timeline"];
    // Every row says which basis its figures are on: HTA's are not the
    // trace's own.
    let basis = &tl["basis"];
    if tl.is_object() {
        let trace = Value::from("trace");
        timeline.push(&[("stage", &trace), ("basis", basis)], &tl["trace"], &["idle_by_stream", "host_wait_calls"]);
        let whole = serde_json::json!({ "launch": tl["launch"], "verdict": tl["verdict"] });
        steps.push(&[("stage", &trace)], &whole, &[]);
    }
    for s in items(&r["timeline"]["stages"]) {
        for g in items(&s["gpus"]) {
            timeline.push(&[("stage", &s["stage"]), ("basis", basis)], g, &["idle_by_stream", "host_wait_calls"]);
            for stream in items(&g["idle_by_stream"]) {
                idle.push(&[("stage", &s["stage"]), ("pid", &g["pid"]), ("rank", &g["rank"])], stream, &[]);
            }
        }
    }
    for s in items(&r["timeline"]["stages"]) {
        steps.push(&[], s, &["gpus"]);
    }
    vec![
        done("kernels.csv", kernels),
        done("overlap.csv", overlap),
        done("overlap_stats.csv", overlap_stats),
        done("fuse.csv", fuse),
        done("timeline.csv", timeline),
        done("idle.csv", idle),
        done("stages.csv", steps),
        notes(r, basis_note),
    ]
}

/// `notes.csv`: the report's notes (what the run left out or could not
/// read, as stderr says), one a row, then `extra` (a triage's note on its
/// timeline basis, as its headline gives it).
fn notes(r: &Value, extra: Option<&str>) -> (&'static str, String) {
    let mut t = Table::with_columns(&["note"]);
    let extra = extra.map(|e| Value::String(e.to_string()));
    for note in items(&r["notes"]).iter().chain(extra.as_ref()) {
        t.push(&[("note", note)], &Value::Object(Default::default()), &[]);
    }
    done("notes.csv", t)
}

/// `stages.csv` (one row per stage: the medians the roles compare with),
/// `ranks.csv` (one row per stage and rank), `kernels.csv` (the cross-rank
/// kernel rows), `failures.csv`, `skipped.csv` (JSON files that are not
/// traces), `notes.csv`.
pub(super) fn batch(b: &Value) -> Vec<(&'static str, String)> {
    let (mut ranks, mut kernels, mut failures) =
        (Table::with_columns(RANKS), Table::with_columns(RANK_KERNELS), Table::with_columns(FAILURES));
    let (mut stages, mut skipped) = (Table::with_columns(BATCH_STAGES), Table::with_columns(SKIPPED));
    for s in items(&b["skipped"]) {
        skipped.push(&[], s, &[]);
    }
    for s in items(&b["stages"]) {
        stages.push(&[], s, &["ranks", "kernels"]);
        for row in items(&s["ranks"]) {
            ranks.push(&[("stage", &s["stage"]), ("slow_rank", &s["slow_rank"])], row, &[]);
        }
        for row in items(&s["kernels"]) {
            kernels.push(&[("stage", &s["stage"])], row, &[]);
        }
    }
    for row in items(&b["failures"]) {
        failures.push(&[], row, &[]);
    }
    vec![
        done("stages.csv", stages),
        done("ranks.csv", ranks),
        done("kernels.csv", kernels),
        done("failures.csv", failures),
        done("skipped.csv", skipped),
        notes(b, None),
    ]
}

/// `timeline.csv` (one row per stage: base, new and delta figures, the
/// normalisation and the gate), `kernels.csv`, `categories.csv`,
/// `gate.csv` (the gate's overall result: one row with a gate, none
/// without), `notes.csv` (the notes, then the gate's lines as stderr has
/// them).
pub(super) fn diff(d: &Value) -> Vec<(&'static str, String)> {
    let sides: Vec<String> = ["base", "new", "delta"]
        .iter()
        .flat_map(|side| FIGURES.iter().map(move |f| format!("timeline.{side}.{f}")))
        .collect();
    let mut timeline = table(&[vec!["stage".to_string()], sides, joined(&[DIFF_STAGE])].concat());
    let mut kernels = table(&joined(&[DIFF_KERNELS, NORMALIZED, &["location", "cpu_op", "rendered"]]));
    let mut categories = table(&joined(&[DIFF_CATEGORIES, NORMALIZED]));
    for s in items(&d["stages"]) {
        timeline.push(&[], s, &["kernels", "categories"]);
        for row in items(&s["kernels"]) {
            kernels.push(&[("stage", &s["stage"])], row, &[]);
        }
        for row in items(&s["categories"]) {
            categories.push(&[("stage", &s["stage"])], row, &[]);
        }
    }
    let mut gate = Table::with_columns(&["threshold_pct", "basis", "tripped", "not_evaluated"]);
    if !d["gate"]["threshold_pct"].is_null() {
        gate.push(&[], &d["gate"], &["messages"]);
    }
    let mut notes = Table::with_columns(&["note"]);
    for note in items(&d["notes"]).iter().chain(items(&d["gate"]["messages"])) {
        notes.push(&[("note", note)], &Value::Object(Default::default()), &[]);
    }
    vec![
        done("timeline.csv", timeline),
        done("kernels.csv", kernels),
        done("categories.csv", categories),
        done("gate.csv", gate),
        done("notes.csv", notes),
    ]
}
