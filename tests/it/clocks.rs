//! The CPU's and the GPU's clocks: a bundled trace whose GPU timestamps run
//! 146 ms behind its launch calls is reported as offset, with its launch
//! delays and host waits caveated in every format and its launch delay left
//! out of a diff; traces on one clock are not, nor is one whose kernels wait
//! behind a busy GPU.

use crate::common;

use serde_json::Value;

const OFFSET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
);
const ONE_CLOCK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
);

/// A trace on one clock with an extend stage only.
const ONE_CLOCK_EXTEND: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/b200/eager_trace.json.gz");

/// [`OFFSET`] in a folder that names its stage, extend (its annotations
/// name none), so that a diff against [`ONE_CLOCK_EXTEND`] has a stage on
/// both sides.
fn offset_extend() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run_prefill");
    std::fs::create_dir(&run).unwrap();
    let p = run.join("graph_execution.json.gz");
    std::fs::copy(OFFSET, &p).unwrap();
    (dir, p.to_str().unwrap().to_string())
}

fn report(trace: &str, format: &str) -> String {
    let out = common::run(&["-q", "triage", "--format", format, trace]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_offset_trace_says_so_in_json_and_text() {
    let v: Value = serde_json::from_str(&report(OFFSET, "json")).unwrap();
    let tl = &v["timeline"];
    // No kernel starts sooner than 146.39 ms after its launch call ends
    // (the smallest kernel start − launch end in the file).
    let offset = tl["launch"]["clock_offset_us"].as_f64().unwrap();
    assert!((146_380.0..146_390.0).contains(&offset), "{offset}");
    for stage in tl["stages"].as_array().unwrap() {
        assert_eq!(stage["launch"]["clock_offset_us"].as_f64(), Some(offset));
        assert_eq!(stage["verdict"]["clock_offset_us"].as_f64(), Some(offset));
    }
    for format in ["markdown", "table", "html"] {
        let text = report(OFFSET, format);
        assert!(text.contains("clocks look offset"), "{format}");
        // The delays measured across the two clocks are not shown.
        assert!(!text.contains("213963.2"), "{format}");
        // The host waits are shown, marked as measured across the two clocks.
        assert!(text.to_lowercase().contains("host wait (clocks offset)"), "{format}");
    }
}

#[test]
fn a_trace_on_one_clock_has_no_offset() {
    let v: Value = serde_json::from_str(&report(ONE_CLOCK, "json")).unwrap();
    assert!(v["timeline"]["launch"]["kernels"].as_u64().unwrap() > 100);
    assert_eq!(v["timeline"]["launch"]["clock_offset_us"], Value::Null);
    for format in ["markdown", "table", "html"] {
        let text = report(ONE_CLOCK, format);
        assert!(!text.contains("clocks look offset") && !text.contains("clocks offset"), "{format}");
    }
}

/// Its first 30 ms are kernels launched before the profiler started: the
/// kernels launched in the trace wait 21 to 34 ms behind them, on one clock.
const QUEUED: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/mi300/resnet_act_checkpoint.json.gz");

#[test]
fn kernels_queued_behind_a_busy_gpu_are_not_an_offset() {
    let v: Value = serde_json::from_str(&report(QUEUED, "json")).unwrap();
    let launch = &v["timeline"]["launch"];
    assert_eq!(launch["clock_offset_us"], Value::Null);
    assert!(launch["delay_p50_us"].as_f64().unwrap() > 20_000.0, "{launch}");
    // The queue's delays are shown as they are.
    let text = report(QUEUED, "markdown");
    assert!(text.contains("launch delay p50 27.00 ms") && !text.contains("clocks look offset"), "{text}");
}

/// The launch delay of each side's stages in a diff of `trace` against itself.
fn diffed_delays(trace: &str) -> Vec<Value> {
    let out = common::run(&["-q", "diff", "--format", "json", trace, trace]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stages = v["stages"].as_array().unwrap();
    assert!(!stages.is_empty());
    stages
        .iter()
        .flat_map(|s| ["base", "new", "delta"].map(|side| s["timeline"][side]["launch_delay_p50_us"].clone()))
        .collect()
}

#[test]
fn a_diff_does_not_compare_launch_delays_across_two_clocks() {
    assert!(diffed_delays(OFFSET).iter().all(Value::is_null));
    assert!(diffed_delays(ONE_CLOCK).iter().all(Value::is_number));
}

#[test]
fn a_diff_gives_each_sides_clock_offset() {
    let (_dir, offset) = offset_extend();
    let out = common::run(&["-q", "diff", "--format", "json", ONE_CLOCK_EXTEND, &offset]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tl = &v["stages"][0]["timeline"];
    assert_eq!(tl["base"]["clock_offset_us"], Value::Null);
    let offset = tl["new"]["clock_offset_us"].as_f64().unwrap();
    assert!((146_380.0..146_390.0).contains(&offset), "{offset}");
    assert_eq!(tl["delta"]["clock_offset_us"], Value::Null);
}

/// The text of a diff of `base` against `new`.
fn diff_text(base: &str, new: &str, format: &str) -> String {
    let out = common::run(&["-q", "diff", "--format", format, base, new]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_diff_says_why_a_launch_delay_is_not_compared() {
    for format in ["markdown", "table", "html"] {
        let text = diff_text(OFFSET, OFFSET, format);
        assert!(
            text.contains("Launch delay not compared") && text.contains("clocks look offset on both sides"),
            "{format}"
        );
        let (_dir, offset) = offset_extend();
        let text = diff_text(ONE_CLOCK_EXTEND, &offset, format);
        assert!(text.contains("clocks look offset on the new side"), "{format}");
        assert!(!diff_text(ONE_CLOCK, ONE_CLOCK, format).contains("not compared"), "{format}");
    }
}

/// A trace whose timestamps are past 2^53 µs (a clock in nanoseconds
/// written as microseconds) is warned of: a double holds such a time only
/// to 128 µs, so its short kernels and gaps are not measured. The bundled
/// traces, on a clock since the epoch in microseconds, are not.
#[test]
fn timestamps_a_double_holds_coarsely_are_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ns.json");
    let kernel = |ts: u64| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {ts}, "dur": 5, "args": {{"stream": 7}}}}"#
        )
    };
    let base = 1_700_000_000_000_000_000u64;
    std::fs::write(&p, format!("{{\"traceEvents\": [{}, {}]}}", kernel(base), kernel(base + 1000))).unwrap();
    let out = common::run(&["triage", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = "ns.json: timestamps reach 1.700e18 µs, where a double holds a time only to 256 µs";
    assert_eq!(err.lines().filter(|l| l.contains(want)).count(), 1, "{err}");
    let json: Value = serde_json::from_str(&report(p.to_str().unwrap(), "json")).unwrap();
    assert!(json["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains(want)), "{json}");
    // A clock far below zero keeps its sign.
    let neg = dir.path().join("neg.json");
    let text = std::fs::read_to_string(&p).unwrap().replace("\"ts\": 17", "\"ts\": -17");
    std::fs::write(&neg, text).unwrap();
    let out = common::run(&["triage", neg.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("timestamps reach -1.700e18 µs"), "{out:?}");
    for trace in [OFFSET, ONE_CLOCK, ONE_CLOCK_EXTEND] {
        let out = common::run(&["triage", "--format", "json", trace]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("timestamps reach"), "{trace}");
    }
}
