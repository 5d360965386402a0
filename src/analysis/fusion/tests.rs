//! End-to-end tests of ranking, consumption and `subsumes` on synthetic rows.

use super::*;
use crate::analysis::framework::Framework;
use crate::analysis::types::{Aggregate, KernelEntry, SiteEntry};

fn row(name: &str, location: &str, us: f64) -> KernelRow {
    KernelRow {
        name: name.into(),
        category: "other".into(),
        location: [location].iter().filter(|l| !l.is_empty() && **l != "unresolved").map(|l| l.to_string()).collect(),
        aggregate: Aggregate { total_us: us, count: 1, max_us: us },
        ..Default::default()
    }
}

#[test]
fn direct_match_is_confirmed_with_evidence_and_locations() {
    let reg = Registry::builtin();
    let mut r = row("void vllm::act_and_mul_kernel<silu>", "unresolved", 5.0);
    r.entry = Some(KernelEntry {
        sites: vec![SiteEntry {
            location: "vllm/model_executor/models/llama.py:374 forward".into(),
            ..Default::default()
        }],
        ..Default::default()
    });
    let rows = vec![r, row("gemm", "unresolved", 95.0)];
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Vllm));
    assert_eq!(got.len(), 1);
    let o = &got[0];
    assert_eq!(o.pattern, "vLLM fused activation-and-mul");
    assert_eq!(o.status, "upstream direct");
    assert_eq!(o.confidence, "Confirmed");
    assert_eq!(o.related_us, 5.0);
    assert_eq!(o.evidence, vec!["void vllm::act_and_mul_kernel<silu> (5.0%)"]);
    assert_eq!(o.current_locations, vec!["forward @ vllm/model_executor/models/llama.py:374"]);
    assert_eq!(o.candidate_path, vec!["vllm/_custom_ops.py", "vllm/compilation/passes/fusion/act_quant_fusion.py"]);
    assert!(o.has_direct_match());
}

#[test]
fn framework_filter_and_auto() {
    let reg = Registry::builtin();
    let rows = vec![row("silu_and_mul_kernel", "", 10.0)];
    let names = |fw: Option<Framework>| -> Vec<String> {
        detect_fusion_opportunities(&reg, &rows, 100.0, None, fw).into_iter().map(|o| o.pattern).collect()
    };
    assert_eq!(names(Some(Framework::Sglang)), vec!["Fused activation-and-mul (SwiGLU / GeGLU)"]);
    assert_eq!(names(Some(Framework::Vllm)), vec!["vLLM fused activation-and-mul"]);
    // With every framework allowed the first-listed pattern consumes the row.
    assert_eq!(names(None), vec!["Fused activation-and-mul (SwiGLU / GeGLU)"]);
    assert!(detect_fusion_opportunities(&reg, &rows, 0.0, None, None).is_empty());
}

#[test]
fn higher_priority_consumes_rows_and_subsumes() {
    let reg = Registry::builtin();
    // rotary + kv cache write rows: both "Fused QK RoPE reshape + KV cache
    // write" (priority 40) and "Fused RoPE + KV cache store" (20) match.
    let rows = vec![
        row("rotary_embedding_kernel", "", 10.0),
        row("reshape_and_cache_kernel", "", 10.0),
        row("set_kv_buffer_kernel", "", 10.0),
        row("gemm", "", 70.0),
    ];
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang));
    let names: Vec<&str> = got.iter().map(|o| o.pattern.as_str()).collect();
    assert_eq!(names[0], "Fused QK RoPE reshape + KV cache write");
    assert!(!names.contains(&"Fused RoPE + KV cache store"));
    assert_eq!(got[0].status, "mainline split");
    assert_eq!(got[0].confidence, "Confirmed");
}

#[test]
fn candidate_below_likely_share() {
    let reg = Registry::builtin();
    let rows = vec![row("temperature_kernel", "", 0.2), row("softmax_kernel", "", 0.2), row("gemm", "", 99.6)];
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang));
    let o = got.iter().find(|o| o.pattern == "Fused sampling temperature + softmax").unwrap();
    assert_eq!(o.confidence, "Candidate");
    assert!(o.evidence.is_empty());
    assert!(o.current_locations.is_empty());
}

#[test]
fn server_args_model_and_tp() {
    let args = serde_json::json!({"model_path": "", "model": "DeepSeek-AI/DeepSeek-V3", "tp_size": "8"});
    assert_eq!(model_path_from_server_args(Some(&args)), "deepseek-ai/deepseek-v3");
    assert_eq!(tp_size_from_server_args(Some(&args)), 8);
    let args = serde_json::json!({"tp_size": 0, "model_path": 7});
    assert_eq!(tp_size_from_server_args(Some(&args)), 1);
    assert_eq!(model_path_from_server_args(Some(&args)), "7");
    assert_eq!(tp_size_from_server_args(Some(&serde_json::json!({"tp_size": 2.9}))), 2);
    assert_eq!(tp_size_from_server_args(None), 1);
    assert_eq!(model_path_from_server_args(Some(&serde_json::json!([1]))), "");
}
