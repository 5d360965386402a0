//! The one-line verdicts on bundled traces: when host waits and exposed
//! communication both pass their bars the larger share of the window
//! decides, and host waits are called launch overhead only when kernels are
//! about as short as their launch calls, start right after them, are
//! launched one a call and no single gap holds half the idle time.

use crate::common;

use serde_json::Value;

fn trace(rel: &str) -> String {
    format!("{}/tests/data/traces/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn run(trace: &str, format: &str) -> String {
    let out = common::run(&["-q", "triage", "--format", format, trace]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Triages `trace` (exit 0) and checks that stderr warns `on_stderr` and
/// the report carries `in_report`.
fn warns(trace: &str, on_stderr: &str, in_report: &str) {
    let out = common::run(&["triage", trace]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(on_stderr), "{stderr}");
    assert!(stdout.contains(in_report), "{stdout}");
}

/// (kind, host_cause, host wait points, exposed communication points) of
/// the trace's one stage.
fn verdict(trace: &str) -> (String, Value, f64, f64) {
    let report: Value = serde_json::from_str(&run(trace, "json")).unwrap();
    let v = &report["timeline"]["stages"][0]["verdict"];
    (
        v["kind"].as_str().unwrap().to_string(),
        v["host_cause"].clone(),
        v["host_wait_pct"].as_f64().unwrap(),
        v["exposed_comm_pct"].as_f64().unwrap(),
    )
}

#[test]
fn the_larger_share_of_the_window_decides() {
    // DLRM rank 0: 48.5 points of host waits against 42.6 of exposed
    // communication; rank 1: 33.2 against 59.0.
    let (kind, cause, host, comm) = verdict(&trace("param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"));
    assert!(host > comm && comm >= 20.0, "{host} {comm}");
    assert_eq!((kind.as_str(), cause), ("cpu_launch_bound", Value::from("launch_overhead")));
    let rank1 = trace("param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz");
    let (kind, cause, host, comm) = verdict(&rank1);
    assert!(comm > host && host >= 20.0, "{host} {comm}");
    assert_eq!((kind.as_str(), cause), ("communication_bound", Value::Null));
    assert!(run(&rank1, "markdown").contains("→ communication-bound"));
}

#[test]
fn one_long_gap_makes_the_host_busy_elsewhere() {
    // 123 µs kernels behind 14 µs launch calls, the GPU idle 98 % of the
    // window waiting for the host, 96 % of that in one gap of 18.46 ms
    // (an event synchronization): not launch overhead.
    let t = trace("hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz");
    let (kind, cause, _, _) = verdict(&t);
    assert_eq!((kind.as_str(), cause), ("cpu_launch_bound", Value::from("host_work")));
    let md = run(&t, "markdown");
    assert!(md.contains("→ host-bound: one gap of 18.46 ms holds 96% of the idle time"), "{md}");
    assert!(!md.contains("CPU launch-bound"), "{md}");
    let report: Value = serde_json::from_str(&run(&t, "json")).unwrap();
    let stage = &report["timeline"]["stages"][0];
    let gap = stage["verdict"]["longest_gap_us"].as_f64().unwrap();
    assert!((gap - 18_460.0).abs() < 10.0, "{gap}");
    assert_eq!(stage["gpus"][0]["longest_idle_gap_us"].as_f64(), Some(gap));
    // Rank 0 of the DLRM job: 3 µs kernels behind 5 µs calls.
    let md = run(&trace("param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"), "markdown");
    assert!(md.contains("→ CPU launch-bound: kernels about as short as their launch calls"), "{md}");
}

#[test]
fn a_kernel_issued_early_and_held_on_the_device_is_no_host_wait() {
    // SGLang decode on MI300X: 555 kernels from 12 graph launches. The GPU
    // idles 98 % of the window in one 463 ms gap, but the kernel that ends
    // it was launched 38 µs into the gap (a 5 µs call), behind a stream
    // wait for an event; the host then sat in a synchronous copy waiting
    // for the GPU. The GPU waited on the device, not for the host.
    let t = trace("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let (kind, cause, _, _) = verdict(&t);
    assert_eq!((kind.as_str(), cause), ("gpu_idle", Value::Null));
    let report: Value = serde_json::from_str(&run(&t, "json")).unwrap();
    let v = &report["timeline"]["stages"][0]["verdict"];
    assert!((v["kernels_per_launch"].as_f64().unwrap() - 555.0 / 12.0).abs() < 1e-9, "{v}");
    assert!(v["host_wait_pct"].as_f64().unwrap() < 1.0, "{v}");
    let md = run(&t, "markdown");
    assert!(md.contains("idle 97.9% (other waits)"), "{md}");
    assert!(md.contains("→ GPU idle on other waits"), "{md}");
    assert!(md.contains("one gap of 463.30 ms holds 100% of the idle time"), "{md}");
    assert!(!md.contains("host-bound"), "{md}");
}

#[test]
fn a_device_side_wait_is_not_the_top_kernel() {
    // MTIA's event_wait (a stream held until another gets there) sums to
    // 43.4 % of the kernel time, but other streams work beside it: only
    // 0.6 % of the window has nothing but waits running.
    let mtia = trace("edge_cases/hta_mtia/mtia_inference_rank_0.json.gz");
    let report: Value = serde_json::from_str(&run(&mtia, "json")).unwrap();
    let stage = &report["timeline"]["stages"][0];
    let waits = stage["verdict"]["device_wait_pct"].as_f64().unwrap();
    assert!((0.5..0.7).contains(&waits), "{waits}");
    assert!(stage["gpus"][0]["device_wait_us"].as_f64().unwrap() > 2_000.0);
    assert_eq!(stage["verdict"]["kind"], "gpu_bound");
    for format in ["markdown", "table"] {
        // The table wraps long lines: compare words.
        let text = run(&mtia, format).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("top kernel merge (31.8%; event_wait, 43.4%, is a device-side wait, not work)"),
            "{format}: {text}"
        );
    }
}

#[test]
fn kernels_queued_ahead_of_the_gpu_mean_bursts_of_launches() {
    // HTA's sampled rank 1: kernels start a median 11.8 ms after their
    // launch calls, yet 26.9 points of the window wait for the host: the
    // host queues work in bursts and the GPU idles between them.
    let t = trace("hta/trace_filter/sampled_rank-1.json.gz");
    let (kind, cause, _, _) = verdict(&t);
    assert_eq!((kind.as_str(), cause), ("cpu_launch_bound", Value::from("host_work")));
    let md = run(&t, "markdown");
    assert!(
        md.contains("→ host-bound: the host launches in bursts that queue kernels ahead of the GPU (median launch delay 11.83 ms;"),
        "{md}"
    );
    assert!(md.contains("leaves it waiting between bursts while it works elsewhere"), "{md}");
}

#[test]
fn the_headline_and_verdict_name_a_stage_as_its_section_does() {
    let t = trace("tracelens/b200/eager_trace.json.gz");
    let md = run(&t, "markdown");
    assert!(md.contains("##### extend/prefill"), "{md}");
    assert!(md.contains("\n- extend/prefill: window ") && md.contains("\nextend/prefill: GPU "), "{md}");
}

/// A batch whose pid filter keeps no rank's kernels measures no waits, so
/// the rank that computes the most is not named slow: the report says the
/// test cannot be made.
#[test]
fn no_slow_rank_without_measured_waits() {
    let dir = trace("param_dlrm_8rank");
    let out = common::run(&["-q", "batch", "--pid-substring", "no-such-process", "--format", "json", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stage = &v["stages"][0];
    assert_eq!(stage["slow_rank"], Value::Null);
    assert_eq!(stage["unexplained_slow_rank"]["comm_spread_us"], Value::Null);
    assert!(stage["ranks"].as_array().unwrap().iter().all(|r| r["role"] == ""));
    let md = common::run(&["-q", "batch", "--pid-substring", "no-such-process", &dir]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(!md.contains("Likely slow rank"), "{md}");
    assert!(md.contains("exposed communication was measured on fewer than two ranks"), "{md}");
}

#[test]
fn the_table_view_gives_the_stage_s_host_wait_and_its_call() {
    // DLRM rank 0: 6.30 ms of the stage's idle time waits for the host,
    // while its streams' own gaps sum to 22.24 ms (they overlap).
    let t = trace("param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz");
    let report: Value = serde_json::from_str(&run(&t, "json")).unwrap();
    let gpu = &report["timeline"]["stages"][0]["gpus"][0];
    let host_ms = gpu["idle_host_wait_us"].as_f64().unwrap() / 1000.0;
    let table = run(&t, "table");
    let row = |label: &str| {
        let line = table.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}: {table}"));
        line.split_whitespace().last().unwrap().parse::<f64>().unwrap()
    };
    assert!((row("idle, waiting for the host (ms)") - host_ms).abs() < 0.005, "{table}");
    assert!(row("stream idle, host wait (ms)") > 3.0 * host_ms, "{table}");
    let call = &report["timeline"]["stages"][0]["verdict"]["host_wait_call"];
    let label = format!("  of it in {} (ms)", call["name"].as_str().unwrap());
    assert!((row(&label) - call["wait_us"].as_f64().unwrap() / 1000.0).abs() < 0.005, "{table}");
}

#[test]
fn a_trace_that_records_a_graph_capture_says_its_timeline_is_the_captures() {
    // A stream capture begins, kernels are launched under it (they run only
    // when the graph is replayed), and the one kernel that runs waits for
    // the capture to end: the idle time is the capture's.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("capture.json");
    let call = |name: &str, ts: u32, corr: u32| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"correlation":{corr}}}}}"#
        )
    };
    let kernel = |ts: u32, corr: u32| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts},"dur":5,"args":{{"stream":7,"correlation":{corr}}}}}"#
        )
    };
    let events = [
        call("hipLaunchKernel", 0, 1),
        kernel(10, 1),
        call("hipStreamBeginCapture", 20, 2),
        call("hipLaunchKernel", 30, 3),
        call("hipStreamEndCapture", 5000, 4),
        call("hipLaunchKernel", 5010, 5),
        kernel(5020, 5),
    ];
    std::fs::write(&p, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    warns(p.to_str().unwrap(), "records a CUDA graph capture", "the timeline and verdict describe the capture");
    // A trace without a capture says nothing of it.
    let plain = run(&trace("hta/trace_filter/sampled_rank-0.json.gz"), "markdown");
    assert!(!plain.contains("graph capture"), "{plain}");
}

#[test]
fn a_communication_bound_verdict_says_a_collective_waits_for_the_slowest_rank() {
    // DLRM rank 1: 59% of the window exposed communication, most of it its
    // all-to-all kernels waiting for rank 7 to join.
    let md = run(&trace("param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz"), "markdown");
    assert!(md.contains("→ communication-bound (GPU idle 34.3%); a collective's kernel runs until the last rank joins it, so part of that may be waiting for a slower rank: a batch over the job's traces (torchtriage batch DIR) names the rank the others wait on"), "{md}");
}

#[test]
fn a_sampled_trace_warns_that_its_timeline_counts_only_the_events_kept() {
    // HTA's sampled traces keep about one host call in twenty: their
    // correlation ids step by 36 and 37 at the median.
    for rank in ["0", "1"] {
        let p = trace(&format!("hta/trace_filter/sampled_rank-{rank}.json.gz"));
        warns(&p, "the trace looks sampled or filtered", "describe only the events kept");
    }
    // A complete trace whose ids step by 8 at the median says nothing of it.
    let complete = run(&trace("tracelens/b200/eager_trace.json.gz"), "json");
    assert!(!complete.contains("looks sampled"), "{complete}");
}
