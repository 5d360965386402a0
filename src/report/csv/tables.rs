//! Which rows of each JSON report make which CSV file.

use serde_json::Value;

use super::Table;

fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn done(name: &'static str, t: Table) -> (&'static str, String) {
    (name, t.render())
}

/// `kernels.csv` (every kernel row, with its trace and stage), `overlap.csv`,
/// `overlap_stats.csv`, `fuse.csv`, `timeline.csv` (one row per stage and
/// GPU) and `idle.csv` (one row per stage, GPU and stream).
pub(super) fn triage(r: &Value) -> Vec<(&'static str, String)> {
    let mut kernels = Table::default();
    for t in items(&r["kernel_tables"]) {
        let context = [("trace", &t["trace"]), ("stage", &t["stage"]), ("stage_total_us", &t["total_us"])];
        for row in items(&t["rows"]) {
            kernels.push(&context, row, &[]);
        }
    }
    let mut overlap = Table::default();
    for row in items(&r["overlap"]) {
        overlap.push(&[], row, &[]);
    }
    let mut overlap_stats = Table::default();
    for row in items(&r["overlap_stats"]) {
        overlap_stats.push(&[], row, &[]);
    }
    let mut fuse = Table::default();
    for row in items(&r["fuse"]) {
        fuse.push(&[], row, &[]);
    }
    let (mut timeline, mut idle) = (Table::default(), Table::default());
    for s in items(&r["timeline"]["stages"]) {
        for g in items(&s["gpus"]) {
            timeline.push(&[("stage", &s["stage"])], g, &["idle_by_stream"]);
            for stream in items(&g["idle_by_stream"]) {
                idle.push(&[("stage", &s["stage"]), ("pid", &g["pid"]), ("rank", &g["rank"])], stream, &[]);
            }
        }
    }
    let mut steps = Table::default();
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
    ]
}

/// `ranks.csv` (one row per stage and rank), `kernels.csv` (the cross-rank
/// kernel rows), `failures.csv`.
pub(super) fn batch(b: &Value) -> Vec<(&'static str, String)> {
    let (mut ranks, mut kernels, mut failures) = (Table::default(), Table::default(), Table::default());
    for s in items(&b["stages"]) {
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
    vec![done("ranks.csv", ranks), done("kernels.csv", kernels), done("failures.csv", failures)]
}

/// `timeline.csv` (one row per stage: base, new and delta figures, the
/// normalisation and the gate), `kernels.csv`, `categories.csv`.
pub(super) fn diff(d: &Value) -> Vec<(&'static str, String)> {
    let (mut timeline, mut kernels, mut categories) = (Table::default(), Table::default(), Table::default());
    for s in items(&d["stages"]) {
        timeline.push(&[], s, &["kernels", "categories"]);
        for row in items(&s["kernels"]) {
            kernels.push(&[("stage", &s["stage"])], row, &[]);
        }
        for row in items(&s["categories"]) {
            categories.push(&[("stage", &s["stage"])], row, &[]);
        }
    }
    vec![done("timeline.csv", timeline), done("kernels.csv", kernels), done("categories.csv", categories)]
}
