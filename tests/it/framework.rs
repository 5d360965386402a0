//! Framework detection on real traces: a training trace is read as generic
//! PyTorch (no serving framework's fuse patterns), `--compat reference`
//! keeps the reference's SGLang fallback, serving traces keep their
//! framework, and `generic` is a framework pattern files may name.

use crate::common;

use serde_json::Value;
use torchtriage::analysis::framework::Framework;
use torchtriage::analysis::fusion::{detect_fusion_opportunities, KeywordMatch, Registry};
use torchtriage::analysis::types::{Aggregate, KernelRow};

/// An HTA sample of a DLRM training rank: no SGLang, vLLM, TensorRT-LLM or
/// TokenSpeed text anywhere, and an SGLang-only pattern (NSA fused quantize)
/// matches its kernels when it is read as SGLang.
const TRAINING: &str = "tests/data/traces/hta/trace_filter/sampled_rank-0.json.gz";
/// An SGLang decode step with `python/sglang/` frames.
const SGLANG: &str = "tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
const SGLANG_ONLY_PATTERN: &str = "NSA fused quantize + indexed K-cache store";

fn triage_json(args: &[&str]) -> Value {
    let mut all = vec!["-q", "triage", "--format", "json"];
    all.extend_from_slice(args);
    let out = common::run(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("triage JSON")
}

fn triage_markdown(args: &[&str]) -> String {
    let mut all = vec!["-q", "triage"];
    all.extend_from_slice(args);
    let out = common::run(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn framework_of(report: &Value) -> (&str, &str) {
    let f = &report["framework"];
    (f["mapping"].as_str().unwrap_or("?"), f["formal"].as_str().unwrap_or("?"))
}

fn fuse_patterns(report: &Value) -> Vec<String> {
    report["fuse"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["pattern"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Names of the built-in patterns tied to at least one framework
/// (`torchtriage patterns` prints `frameworks: any` for the others).
fn framework_bound_patterns() -> Vec<String> {
    let out = common::run(&["patterns"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut names = Vec::new();
    let mut current: Option<&str> = None;
    for line in text.lines() {
        if !line.starts_with(' ') {
            current = Some(line.trim());
        } else if let (Some(name), Some(list)) = (current, line.split("frameworks: ").nth(1)) {
            if list.trim() != "any" {
                names.push(name.to_string());
            }
        }
    }
    assert!(names.iter().any(|n| n == SGLANG_ONLY_PATTERN), "{names:?}");
    names
}

#[test]
fn a_training_trace_is_generic_pytorch_without_serving_patterns() {
    let report = triage_json(&[TRAINING]);
    assert_eq!(framework_of(&report), ("generic", "generic"));
    let bound = framework_bound_patterns();
    let fuse = fuse_patterns(&report);
    assert!(fuse.iter().all(|p| !bound.contains(p)), "serving-framework patterns applied: {fuse:?}");

    let md = triage_markdown(&[TRAINING]);
    assert!(md.lines().any(|l| l == "Framework: generic PyTorch"), "{md}");
    assert!(!md.contains("Framework: SGLang"), "{md}");
    assert!(!md.contains(SGLANG_ONLY_PATTERN), "{md}");
}

#[test]
fn the_reference_compat_keeps_the_sglang_fallback() {
    let report = triage_json(&["--compat", "reference", TRAINING]);
    assert_eq!(framework_of(&report), ("sglang", "sglang"));
    assert!(fuse_patterns(&report).iter().any(|p| p == SGLANG_ONLY_PATTERN), "{report}");
    let md = triage_markdown(&["--compat", "reference", TRAINING]);
    assert!(md.lines().any(|l| l == "Framework: SGLang"), "{md}");
}

#[test]
fn framework_generic_is_accepted_and_drops_serving_patterns() {
    let detected = triage_json(&[SGLANG]);
    assert_eq!(framework_of(&detected), ("sglang", "sglang"));
    assert!(!fuse_patterns(&detected).is_empty(), "the SGLang trace has a fuse match: {detected}");

    let generic = triage_json(&["--framework", "generic", SGLANG]);
    assert_eq!(framework_of(&generic), ("generic", "generic"));
    let bound = framework_bound_patterns();
    let fuse = fuse_patterns(&generic);
    assert!(fuse.iter().all(|p| !bound.contains(p)), "{fuse:?}");

    // Asked for explicitly, SGLang applies its patterns to a training trace
    // (the reference's keyword rule then matches its NSA pattern there).
    let sglang = triage_json(&["--framework", "sglang", "--compat", "reference", TRAINING]);
    assert!(fuse_patterns(&sglang).iter().any(|p| p == SGLANG_ONLY_PATTERN), "{sglang}");
}

#[test]
fn a_pattern_file_may_name_the_generic_framework() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("training.toml");
    std::fs::write(
        &file,
        r#"
[[pattern]]
name = "Table-batched embedding forward"
candidate_paths = ["fbgemm_gpu/split_table_batched_embeddings_ops.py"]
keywords = ["split_embedding_codegen_forward"]
frameworks = ["generic"]
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let generic = triage_json(&["--patterns", path, TRAINING]);
    let fuse = fuse_patterns(&generic);
    assert!(!fuse.is_empty() && fuse.iter().all(|p| p == "Table-batched embedding forward"), "{fuse:?}");
    let sglang = triage_json(&["--patterns", path, "--framework", "sglang", TRAINING]);
    assert!(!fuse_patterns(&sglang).iter().any(|p| p == "Table-batched embedding forward"), "{sglang}");
}

#[test]
fn generic_gates_out_framework_bound_patterns_only() {
    let text = r#"
[[pattern]]
name = "SGLang only"
candidate_paths = ["x.py"]
keywords = ["alpha_kernel"]
frameworks = ["sglang"]

[[pattern]]
name = "Generic only"
candidate_paths = ["x.py"]
keywords = ["beta_kernel"]
frameworks = ["generic"]

[[pattern]]
name = "Any framework"
candidate_paths = ["x.py"]
keywords = ["gamma_kernel"]
"#;
    let reg = Registry::from_toml(text, "gates.toml").unwrap();
    let row = |name: &str| KernelRow {
        name: name.into(),
        category: "other".into(),
        aggregate: Aggregate { total_us: 10.0, count: 2, max_us: 5.0 },
        ..Default::default()
    };
    let rows = vec![row("alpha_kernel"), row("beta_kernel"), row("gamma_kernel")];
    let names = |framework: Framework| {
        let mut got: Vec<String> =
            detect_fusion_opportunities(&reg, &rows, 30.0, None, Some(framework), KeywordMatch::Tokens)
                .into_iter()
                .map(|o| o.pattern)
                .collect();
        got.sort();
        got
    };
    assert_eq!(names(Framework::Generic), vec!["Any framework", "Generic only"]);
    assert_eq!(names(Framework::Sglang), vec!["Any framework", "SGLang only"]);
    assert_eq!(names(Framework::Vllm), vec!["Any framework"]);
}

#[test]
fn a_directory_is_read_as_the_framework_of_the_trace_it_analyses() {
    // SGLang's decode trace beside two vLLM traces: the run reads the
    // newest trace of the stage, a vLLM one, and names vLLM, where the
    // reference names the framework of the first trace it finds.
    let dir = tempfile::tempdir().unwrap();
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/inference");
    for sub in ["sglang_decode", "vllm_decode_full", "vllm_prefilldecode_piecewise"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let copy = |from: &str, to: &str| std::fs::copy(format!("{base}/{from}"), dir.path().join(to)).unwrap();
    copy("sglang_decode/sglang_Qwen3-8B_decode.json.gz", "sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    copy("vllm_decode_full/graph_execution.json.gz", "vllm_decode_full/graph_execution.json.gz");
    // Written last, so it is the newest trace.
    copy(
        "vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "vllm_prefilldecode_piecewise/graph_execution.json.gz",
    );
    let d = dir.path().to_str().unwrap();
    let report = triage_json(&[d]);
    let traces = report["formal_traces"].to_string();
    assert!(traces.contains("vllm_"), "{traces}");
    assert_eq!(framework_of(&report), ("vllm", "vllm"), "{traces}");
    assert_eq!(framework_of(&triage_json(&["--compat", "reference", d])), ("sglang", "sglang"));
}
