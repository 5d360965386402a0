//! `torchtriage diff BASE NEW`: the comparison, its JSON and the gate's
//! exit codes, through the binary.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
);

/// `count` back-to-back launches of each (name, duration) on one stream.
fn write_trace(dir: &Path, file: &str, kernels: &[(&str, u64)], count: u64) -> PathBuf {
    let mut events = Vec::new();
    let mut ts = 1000;
    let mut corr = 1;
    for _ in 0..count {
        for &(name, dur) in kernels {
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"stream": 7, "correlation": {corr}, "External id": {corr}}}}}"#
            ));
            ts += dur + 5;
            corr += 1;
        }
    }
    let p = dir.join(file);
    std::fs::write(&p, format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"))).unwrap();
    p
}

/// BASE: three kernels; NEW: the first twice as slow, the third removed.
fn slowed_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_cublas";
    let norm = "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)";
    let act = "void vllm::act_and_mul_kernel<c10::BFloat16>(c10::BFloat16*)";
    let base = write_trace(dir, "base.json", &[(gemm, 100), (norm, 40), (act, 30)], 10);
    let new = write_trace(dir, "new.json", &[(gemm, 200), (norm, 40)], 10);
    (base, new)
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::run(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["-q", "diff", "--format", "json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, v, stderr)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_trace_against_itself_changes_nothing() {
    let (code, v, stderr) = json(&["--gate", "0", BUNDLED, BUNDLED]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["schema_version"], 8);
    assert_eq!(v["gate"]["threshold_pct"], 0.0);
    assert_eq!(v["gate"]["basis"], "auto");
    assert_eq!(v["gate"]["tripped"], false);
    let stages = v["stages"].as_array().unwrap();
    assert!(!stages.is_empty(), "{v}");
    for s in stages {
        let kernels = s["kernels"].as_array().unwrap();
        assert!(!kernels.is_empty(), "{s}");
        for k in kernels {
            assert_eq!(num(&k["delta_us"]), 0.0, "{k}");
            assert_eq!(k["status"], "changed", "{k}");
            assert_eq!(k["base_count"], k["new_count"], "{k}");
        }
        let delta = s["timeline"]["delta"].as_object().unwrap();
        assert_eq!(num(&delta["busy_us"]), 0.0, "{s}");
        for (key, d) in delta {
            assert!(d.is_null() || num(d) == 0.0, "{key}: {d}");
        }
        assert!(num(&s["timeline"]["base"]["busy_us"]) > 0.0, "{s}");
    }
}

#[test]
fn a_slowed_and_a_removed_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = slowed_pair(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let (code, v, stderr) = json(&[base, new]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(v["gate"]["tripped"].is_null(), "{}", v["gate"]);
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "{v}");
    let kernels = stages[0]["kernels"].as_array().unwrap();
    let first = &kernels[0];
    assert_eq!(first["status"], "changed", "{first}");
    assert!(first["kernel"].as_str().unwrap().contains("gemm"), "{first}");
    assert!((num(&first["delta_pct"]) - 100.0).abs() <= 1.0, "{first}");
    assert_eq!(num(&first["delta_us"]), 1000.0, "{first}");
    assert_eq!((first["base_count"].as_u64(), first["new_count"].as_u64()), (Some(10), Some(10)));
    let gone: Vec<&Value> = kernels.iter().filter(|k| k["status"] == "gone").collect();
    assert_eq!(gone.len(), 1, "{kernels:?}");
    assert!(gone[0]["kernel"].as_str().unwrap().contains("act_and_mul"), "{}", gone[0]);
    assert_eq!(num(&gone[0]["new_us"]), 0.0);
    assert_eq!(gone[0]["new_count"], 0);
    let norm = kernels.iter().find(|k| k["kernel"].as_str().unwrap().contains("rms_norm")).unwrap();
    assert_eq!(num(&norm["delta_us"]), 0.0, "{norm}");
    assert!(num(&stages[0]["timeline"]["delta"]["busy_us"]) > 0.0, "{}", stages[0]["timeline"]);

    // Markdown: the same first row, readable.
    let (code, md, _) = run(&["-q", "diff", base, new]);
    assert_eq!(code, Some(0));
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ") && l.ends_with(" |")).collect();
    let first_kernel = rows.iter().find(|l| l.contains("_cublas")).unwrap();
    assert!(first_kernel.contains("+100.0%") && first_kernel.contains("| changed |"), "{md}");
    assert!(md.contains("| busy |"), "{md}");
}

#[test]
fn the_gate_sets_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = slowed_pair(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());

    let (code, v, stderr) = json(&["--gate", "5", base, new]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(v["gate"]["tripped"], true);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("torchtriage: gate: all: busy "), "{stderr}");
    assert!(lines[0].ends_with("exceeds 5%"), "{stderr}");
    // The JSON carries the same lines, for a program that reads it.
    let messages: Vec<String> = lines.iter().map(|l| l.trim_start_matches("torchtriage: ").to_string()).collect();
    assert_eq!(v["gate"]["messages"], serde_json::json!(messages));

    let (code, v, stderr) = json(&["--gate", "200", base, new]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["gate"]["tripped"], false);
    assert_eq!(v["gate"]["messages"], serde_json::json!([]));
    assert!(stderr.is_empty(), "{stderr}");

    // Kernel time went from 1700 µs to 2400 µs: +41%.
    let (code, _, stderr) = json(&["--gate", "40", "--gate-on", "kernel", base, new]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(": kernel "), "{stderr}");
    let (code, _, _) = json(&["--gate", "42", "--gate-on", "kernel", base, new]);
    assert_eq!(code, Some(0));

    // The other way round NEW is faster: never a regression.
    let (code, _, stderr) = json(&["--gate", "0", new, base]);
    assert_eq!(code, Some(0), "{stderr}");

    // Every report names the outcome, the figure compared and the threshold.
    let (_, md, _) = run(&["-q", "diff", "--gate", "5", base, new]);
    assert!(md.contains("- gate: tripped (basis auto, threshold 5%)"), "{md}");
    let (_, html, _) = run(&["-q", "diff", "--format", "html", "--gate", "5", base, new]);
    assert!(html.contains("Gate: tripped (basis auto, threshold 5%)"), "{html}");
}

#[test]
fn a_gate_that_compared_nothing_has_not_passed() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = slowed_pair(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let cpu_only = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    );
    // Neither side has steps, so a step gate has no figure to compare; a
    // CPU-only trace has no stage in common with a GPU one.
    for (args, why) in [
        (vec!["--gate", "5", "--gate-on", "step", base, new], "no stage has the gate's figure on both sides"),
        (vec!["--gate", "5", cpu_only, new], "no stage is present on both sides (base: no GPU kernels; new: all)"),
        // Two CPU-only traces: the same trace on both sides still has
        // nothing to compare, and says why.
        (vec!["--gate", "5", cpu_only, cpu_only], "neither side has GPU kernels"),
    ] {
        let (code, v, stderr) = json(&args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert_eq!(v["gate"]["tripped"], Value::Null, "{args:?}");
        assert_eq!(v["gate"]["threshold_pct"], 5.0);
        assert_eq!(v["gate"]["not_evaluated"], why, "{args:?}");
        assert_eq!(stderr, format!("torchtriage: gate: not evaluated: {why}\n"), "{args:?}");
        assert_eq!(v["gate"]["messages"], serde_json::json!([format!("gate: not evaluated: {why}")]), "{args:?}");
        let mut md = vec!["-q", "diff", "--format", "markdown"];
        md.extend_from_slice(&args);
        let (code, stdout, _) = run(&md);
        assert_eq!(code, Some(1));
        assert!(stdout.contains(&format!("- gate: not evaluated ({why})")), "{stdout}");
    }
    // Without a gate nothing changes.
    let (code, v, stderr) = json(&[cpu_only, new]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["gate"]["tripped"], Value::Null);
    assert_eq!(v["gate"]["not_evaluated"], Value::Null);
    // A gate that was evaluated has no reason.
    let (code, v, _) = json(&["--gate", "5", base, new]);
    assert_eq!((code, &v["gate"]["not_evaluated"]), (Some(1), &Value::Null));
}

#[test]
fn a_note_both_sides_share_is_said_once() {
    // One rank of an 8-rank directory on each side: the note that says so
    // is the same for both.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let (code, _, stderr) = run(&["diff", dir, dir]);
    assert_eq!(code, Some(0), "{stderr}");
    let notes: Vec<&str> = stderr.lines().filter(|l| l.contains("analysed rank 0 only")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    // The report says it too.
    let (_, v, _) = json(&[dir, dir]);
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{v}");
    assert!(notes[0].as_str().unwrap().contains("analysed rank 0 only"), "{v}");
    let (_, md, _) = run(&["-q", "diff", dir, dir]);
    assert_eq!(md.matches("analysed rank 0 only").count(), 1, "{md}");
}

#[test]
fn a_gate_over_a_directory_of_ranks_is_refused() {
    // Rank 0 alike on both sides, rank 1 of NEW far slower: a gate that
    // compared rank 0 alone would pass.
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    for (side, slow) in [(&base, 1), (&new, 50)] {
        std::fs::create_dir(side).unwrap();
        write_trace(side, "rank0.json", &[("gemm_kernel", 100)], 10);
        write_trace(side, "rank1.json", &[("gemm_kernel", 100 * slow)], 10);
    }
    let (b, n) = (base.to_str().unwrap(), new.to_str().unwrap());
    let (code, stdout, stderr) = run(&["diff", "--gate", "5", b, n]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stdout, "");
    // One line, no note of an analysis the refusal stopped.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(b) && stderr.contains("2 traces") && stderr.contains("rank 0 only"), "{stderr}");
    // Without a gate the comparison of rank 0 is shown, with its note.
    let (code, stdout, stderr) = run(&["diff", b, n]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("analysed rank 0 only"), "{stdout}");
    // One rank's pair of files is gated as asked.
    let pair = |side: &Path| side.join("rank1.json").to_str().unwrap().to_string();
    let (code, _, stderr) = run(&["-q", "diff", "--gate", "5", &pair(&base), &pair(&new)]);
    assert_eq!(code, Some(1), "{stderr}");
    // Traces without ranks in their names: diff reads the newest of each
    // stage, which may be an unrelated trace on each side.
    let (base, new) = (dir.path().join("base2"), dir.path().join("new2"));
    for (side, slow) in [(&base, 1), (&new, 50)] {
        std::fs::create_dir(side).unwrap();
        write_trace(side, "host-a.json", &[("gemm_kernel", 100)], 10);
        write_trace(side, "host-b.json", &[("gemm_kernel", 100 * slow)], 10);
    }
    let (code, _, stderr) = run(&["diff", "--gate", "5", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the newest trace of each stage only"), "{stderr}");
}

#[test]
fn stdin_on_both_sides_is_a_usage_error() {
    let out = common::run_stdin(&["-q", "diff", "-", "-"], b"{\"traceEvents\": []}");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("same stream"), "{err}");
}

#[test]
fn bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (base, _) = slowed_pair(dir.path());
    let base = base.to_str().unwrap();
    let missing = dir.path().join("missing.json");
    let (code, stdout, stderr) = run(&["-q", "diff", base, missing.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty() && stderr.starts_with("torchtriage: "), "{stderr}");
    let (code, _, stderr) = run(&["-q", "diff", "--gate=-3", base, base]);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, _) = run(&["-q", "diff", "--gate-on", "busy", base, base]);
    assert_eq!(code, Some(2));
    let (code, _, _) = run(&["-q", "diff", "--gate", "1", "--gate-on", "nonesuch", base, base]);
    assert_eq!(code, Some(2));
}

/// The generator built beside the test binaries (`cargo test` builds the
/// examples).
pub(crate) fn gen_trace() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let p = dir.join("examples").join(format!("gen_trace{}", std::env::consts::EXE_SUFFIX));
    assert!(p.is_file(), "{} is missing: build it with `cargo build --release --example gen_trace`", p.display());
    p
}

/// A 3 MB generated trace of seed 7, GPU-bound.
fn generate(out: &Path, extra: &[&str]) {
    generate_with(out, &["--seed", "7", "--gpu-bound"], extra);
}

fn generate_with(out: &Path, shape: &[&str], extra: &[&str]) {
    let status = std::process::Command::new(gen_trace())
        .args(["--size-kb", "3000"])
        .args(shape)
        .args(extra)
        .arg(out)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_generated_pair_with_a_slowed_and_a_removed_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.json"), dir.path().join("new.json"));
    generate(&base, &[]);
    generate(&new, &["--slow-kernel", "sm90_xmma_gemm", "--drop-kernel", "triton_red_fused"]);
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let (code, v, stderr) = json(&["--gate", "5", base, new]);
    assert_eq!(code, Some(1), "{stderr}");
    let stages = v["stages"].as_array().unwrap();
    assert!(!stages.is_empty(), "{v}");
    for s in stages {
        assert_eq!(s["normalization"]["basis"], "none", "same steps on both sides: {}", s["normalization"]);
        let kernels = s["kernels"].as_array().unwrap();
        let first = kernels.iter().find(|k| k["status"] == "changed").unwrap();
        assert!(first["kernel"].as_str().unwrap().starts_with("sm90_xmma_gemm"), "{first}");
        assert!((num(&first["delta_pct"]) - 100.0).abs() <= 1.0, "{first}");
        let gone: Vec<&str> =
            kernels.iter().filter(|k| k["status"] == "gone").map(|k| k["kernel"].as_str().unwrap()).collect();
        assert_eq!(gone, ["triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2"], "{kernels:?}");
        assert_eq!(s["gate"]["basis"], "step", "{}", s["gate"]);
        assert_eq!(s["gate"]["tripped"], true, "{}", s["gate"]);
        // The changed kernel says where it was launched from.
        assert_eq!(first["cpu_op"][0], "aten::mm", "{first}");
        assert!(!first["location"].as_array().unwrap().is_empty(), "{first}");
    }
    assert_eq!(stderr.lines().count(), stages.len(), "{stderr}");
    let (code, _, stderr) = json(&["--gate", "200", base, new]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_slower_kernel_on_a_host_bound_run_trips_the_default_gate() {
    // The generator's default run is host-bound: its model steps last
    // longer than their kernels, so a kernel twice as slow leaves the step
    // median as it was, and busy time shows it.
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.json"), dir.path().join("new.json"));
    generate_with(&base, &["--seed", "42"], &[]);
    generate_with(&new, &["--seed", "42"], &["--slow-kernel", "flash"]);
    let (code, v, stderr) = json(&["--gate", "2", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    for s in v["stages"].as_array().unwrap() {
        let step = num(&s["timeline"]["delta"]["step_p50_us"]) / num(&s["timeline"]["base"]["step_p50_us"]);
        assert!(step.abs() < 0.02, "the steps moved: {}", s["timeline"]);
        assert_eq!(s["gate"]["basis"], "busy", "{}", s["gate"]);
        assert_eq!(s["gate"]["tripped"], true, "{}", s["gate"]);
    }
}

#[test]
fn kernels_under_the_share_bar_are_said_to_need_a_lower_bar_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = slowed_pair(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    // The norm and activation kernels are under 30% on both sides.
    let (_, v, _) = json(&[base, new, "--min-share", "30"]);
    // The JSON lists all three, the two under the bar not rendered.
    let rendered: Vec<bool> =
        v["stages"][0]["kernels"].as_array().unwrap().iter().map(|k| k["rendered"].as_bool().unwrap()).collect();
    assert_eq!(rendered.iter().filter(|r| **r).count(), 1, "{rendered:?}");
    assert_eq!(rendered.len(), 3);
    assert_eq!(v["stages"][0]["kernels_hidden"], 2);
    let (_, all, _) = json(&[base, new, "--min-share", "0"]);
    let kernels = all["stages"][0]["kernels"].as_array().unwrap();
    assert!(kernels.len() == 3 && kernels.iter().all(|k| k["rendered"] == true), "--min-share 0 renders them");
    let note =
        "2 kernels below 30.0% of the stage's kernel time on both sides are not shown (--min-share 0 shows them).";
    for format in ["markdown", "table", "html"] {
        let (code, out, err) = run(&["-q", "diff", base, new, "--min-share", "30", "--format", format]);
        assert_eq!(code, Some(0), "{err}");
        let shown = if format == "html" { note.replace('\'', "&#39;") } else { note.to_string() };
        assert!(out.contains(&shown), "{format}: {out}");
        assert!(!out.contains("JSON format lists"), "{format}: the JSON does not list them");
    }
}

#[test]
fn a_gate_says_which_stages_it_did_not_compare() {
    let dir = tempfile::tempdir().unwrap();
    let gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_cublas";
    // BASE: a prefill and a decode trace of one run; NEW: the decode one.
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    for d in [&base, &new] {
        std::fs::create_dir(d).unwrap();
        write_trace(d, "run-decode.trace.json", &[(gemm, 100)], 10);
    }
    write_trace(&base, "run-prefill.trace.json", &[(gemm, 300)], 10);
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let (code, v, stderr) = json(&["--gate", "5", base, new]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(v["gate"]["tripped"], false);
    let note = "warning: the gate did not compare the stages only one side has (base: extend/prefill): a trace's \
                stages come from its annotations, else from its file and folder names";
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n == note), "{}", v["notes"]);
    let (_, _, stderr) = run(&["diff", "--gate", "5", base, new]);
    assert_eq!(stderr, format!("torchtriage: {note}\n"));
    // Without a gate there is nothing to warn of.
    let (_, v, stderr) = json(&[base, new]);
    assert!(v["notes"].as_array().unwrap().is_empty() && stderr.is_empty(), "{stderr}");
}

/// Two runs on different GPU models or world sizes are compared, with a
/// warning that a change may be the hardware's; two ranks of one job are
/// not warned of.
#[test]
fn sides_on_different_hardware_are_warned_of() {
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let rank = |r: &str| {
        std::fs::read_dir(ranks)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("worker{r}_")))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let b200 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/b200/eager_trace.json.gz");
    let (code, v, _) = json(&[&rank("0"), b200]);
    assert_eq!(code, Some(0));
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(
            "warning: the sides ran on different hardware (GPUs 8× Tesla V100-SXM2-32GB against 8× NVIDIA B200): \
             a change may be the hardware's, not the code's"
        ),
        "{notes}"
    );
    let (_, stdout, stderr) = run(&["diff", &rank("0"), b200]);
    assert!(stderr.contains("torchtriage: warning: the sides ran on different hardware"), "{stderr}");
    assert!(stdout.contains("the sides ran on different hardware"), "{stdout}");
    let (_, same, _) = json(&[&rank("0"), &rank("1")]);
    assert!(!same["notes"].to_string().contains("different hardware"), "{same}");
}

/// A side whose kernels have unusable start times loses them from the
/// timeline and looks faster: the gate is not evaluated (exit 1), never
/// passed on what is left.
#[test]
fn a_side_that_lost_kernels_to_unusable_times_is_not_gated() {
    let dir = tempfile::tempdir().unwrap();
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let new = dir.path().join("new.json");
    std::fs::write(&new, with_unusable_kernel_starts(&std::fs::read_to_string(base).unwrap())).unwrap();
    let (code, _, stderr) = run(&["diff", base, new.to_str().unwrap(), "--gate", "5"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("gate: not evaluated: new left out "), "{stderr}");
    assert!(stderr.contains("events for unusable times"), "{stderr}");
}

/// The text with every kernel event's `"ts": NUMBER` made `"ts": Infinity`.
fn with_unusable_kernel_starts(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match (line.contains("\"cat\": \"kernel\""), line.find("\"ts\": ")) {
            (true, Some(i)) => {
                let start = i + "\"ts\": ".len();
                let end = start + line[start..].find(|c: char| c != '.' && !c.is_ascii_digit()).unwrap_or(0);
                out.push_str(&line[..start]);
                out.push_str("Infinity");
                out.push_str(&line[end..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[test]
fn a_gate_may_be_given_with_a_percent_sign() {
    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let plain = common::run(&["-q", "diff", FIXTURE, FIXTURE, "--gate", "5"]);
    let signed = common::run(&["-q", "diff", FIXTURE, FIXTURE, "--gate", "5%"]);
    assert_eq!(signed.status.code(), Some(0), "{}", String::from_utf8_lossy(&signed.stderr));
    assert_eq!(signed.stdout, plain.stdout);
    let bad = common::run(&["-q", "diff", FIXTURE, FIXTURE, "--gate", "5%%"]);
    assert_eq!(bad.status.code(), Some(2));
    // A negative value is the option's own refusal, not a flag clap does
    // not know.
    for args in [["--gate", "-5%"], ["--min-share", "-2%"]] {
        let out = common::run(&[&["-q", "diff", FIXTURE, FIXTURE][..], &args].concat());
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(&format!("torchtriage: {} must be", args[0])), "{err}");
    }
}
