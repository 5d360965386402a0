//! The report does not depend on how the kernel-table and overlap steps are
//! scheduled: side by side, or one after the other with a single trace's
//! overlap stages built, swept and analysed one at a time (what a large
//! trace gets, to bound its memory). Checked on every trace of both
//! corpora, and on a two-stage trace built here, where the stage-at-a-time
//! path differs most.

mod common;

use std::path::{Path, PathBuf};

use common::Corpus;
use libtest_mimic::{Failed, Trial};
use serde_json::{json, Value};
use torchtriage::report::json as report_json;
use torchtriage::run::triage::{run_triage, Schedule, TriageInput, TriageOptions};

/// The JSON report under `schedule`, or the error's text.
fn report(path: &Path, schedule: Schedule) -> Result<Value, String> {
    let opts = TriageOptions { schedule, ..TriageOptions::default() };
    run_triage(&TriageInput::Single(path.to_path_buf()), &opts)
        .map(|r| report_json::to_value(&r))
        .map_err(|e| e.to_string())
}

/// The side-by-side report, after checking the other schedules give it too.
fn same_under_every_schedule(path: &Path) -> Result<Result<Value, String>, Failed> {
    let side_by_side = report(path, Schedule::Parallel);
    for schedule in [Schedule::OneAtATime, Schedule::Auto] {
        if report(path, schedule) != side_by_side {
            return Err(format!("{}: the {schedule:?} report differs from the side-by-side one", path.display()).into());
        }
    }
    Ok(side_by_side)
}

fn x(name: &str, cat: &str, pid: u32, tid: u32, ts: f64, dur: f64, args: Value) -> Value {
    json!({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args})
}

/// A prefill window and a decode window; in each, compute kernels on
/// stream 7 partly hidden under communication on stream 20, every kernel
/// launched under a Python frame.
fn two_stage_trace(dir: &Path) -> PathBuf {
    let mut events = vec![
        x("prefill", "gpu_user_annotation", 0, 7, 0.0, 1000.0, json!({})),
        x("decode", "gpu_user_annotation", 0, 7, 1000.0, 3000.0, json!({})),
    ];
    let mut corr = 100;
    for step in 0..40 {
        let base = 20.0 + 95.0 * step as f64;
        for (k, (name, stream, offset, dur)) in [
            ("void gemm_kernel<128>(float*)", 7, 0.0, 30.0),
            ("ncclDevKernel_AllReduce", 20, 10.0, 40.0),
            ("void rms_norm_kernel(float*)", 7, 35.0, 8.0),
        ]
        .into_iter()
        .enumerate()
        {
            corr += 1;
            let ts = base + offset;
            let cpu = ts - 15.0;
            let frame = format!("/srv/model.py({}): layer_{k}", 10 + k);
            events.push(x(&frame, "python_function", 1, 1, cpu - 1.0, 6.0, json!({})));
            events.push(x("aten::mm", "cpu_op", 1, 1, cpu, 4.0, json!({"External id": corr})));
            events.push(x(
                "cudaLaunchKernel",
                "cuda_runtime",
                1,
                1,
                cpu + 1.0,
                2.0,
                json!({"correlation": corr, "External id": corr}),
            ));
            events.push(x(name, "kernel", 0, stream, ts, dur, json!({"correlation": corr, "stream": stream})));
        }
    }
    let path = dir.join("two_stage.json");
    std::fs::write(&path, serde_json::to_vec(&json!({ "traceEvents": events })).expect("json")).expect("write trace");
    path
}

fn trials(corpus: &Corpus) -> Vec<Trial> {
    corpus
        .traces()
        .into_iter()
        .map(|(name, path)| {
            Trial::test(corpus.name("schedule", &name), move || same_under_every_schedule(&path).map(|_| ()))
        })
        .collect()
}

fn main() {
    let mut trials = common::over_corpora("schedule", trials);
    trials.push(Trial::test("schedule::two_stages", || {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let report = same_under_every_schedule(&two_stage_trace(dir.path()))??;
        let stages: Vec<&str> =
            report["overlap_stats"].as_array().into_iter().flatten().filter_map(|s| s["stage"].as_str()).collect();
        let rows = report["overlap"].as_array().map_or(0, Vec::len);
        if stages != ["extend", "decode"] || rows == 0 {
            return Err(format!("expected overlap rows in two stages, got stages {stages:?} and {rows} rows").into());
        }
        Ok(())
    }));
    common::run_trials(trials)
}
