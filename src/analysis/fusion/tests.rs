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
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Vllm), KeywordMatch::Substring);
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
    // The fused kernel itself ran: the row says so, whichever project the
    // fused path comes from, and does not offer it as still to be done.
    assert!(o.rationale.starts_with("The fused kernel already runs here (5.0% of stage GPU time)."), "{}", o.rationale);
}

#[test]
fn framework_filter_and_auto() {
    let reg = Registry::builtin();
    let rows = vec![row("silu_and_mul_kernel", "", 10.0)];
    let names = |fw: Option<Framework>| -> Vec<String> {
        detect_fusion_opportunities(&reg, &rows, 100.0, None, fw, KeywordMatch::Substring)
            .into_iter()
            .map(|o| o.pattern)
            .collect()
    };
    assert_eq!(names(Some(Framework::Sglang)), vec!["Fused activation-and-mul (SwiGLU / GeGLU)"]);
    assert_eq!(names(Some(Framework::Vllm)), vec!["vLLM fused activation-and-mul"]);
    // With every framework allowed the first-listed pattern consumes the row.
    assert_eq!(names(None), vec!["Fused activation-and-mul (SwiGLU / GeGLU)"]);
    assert!(detect_fusion_opportunities(&reg, &rows, 0.0, None, None, KeywordMatch::Substring).is_empty());
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
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang), KeywordMatch::Substring);
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
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang), KeywordMatch::Substring);
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

/// The rows' fuse matches as (pattern, confidence) under `mode`.
/// The confidence `pattern` is reported with, if it is.
fn confidence_of(rows: &[KernelRow], fw: Framework, mode: KeywordMatch, pattern: &str) -> Option<String> {
    found(rows, fw, mode).into_iter().find(|(p, _)| p == pattern).map(|(_, c)| c)
}

fn found(rows: &[KernelRow], fw: Framework, mode: KeywordMatch) -> Vec<(String, String)> {
    let reg = Registry::builtin();
    detect_fusion_opportunities(&reg, rows, 100.0, None, Some(fw), mode)
        .into_iter()
        .map(|o| (o.pattern, o.confidence))
        .collect()
}

#[test]
fn keywords_inside_cache_file_hashes_match_only_as_substrings() {
    // The only `wk` is inside an inductor cache file's hash.
    let loc = "/tmp/torchinductor_root/ar/carusmwkjwrr7cq4fq2xk6ayzzjvjgmv5z3yv5gt3dbh4urqbctnk.py:12 call";
    let rows = vec![row("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", loc, 10.0), row("sm90_xmma_gemm_bf16", loc, 80.0)];
    let pattern = "vLLM-origin DSV3.2 fused indexer projections";
    let reference = found(&rows, Framework::Vllm, KeywordMatch::Substring);
    assert!(reference.contains(&(pattern.to_string(), "Confirmed".to_string())), "{reference:?}");
    let ours = found(&rows, Framework::Vllm, KeywordMatch::Tokens);
    assert!(!ours.iter().any(|(p, _)| p == pattern), "{ours:?}");
}

#[test]
fn model_family_patterns_need_a_sign_of_the_family() {
    // A plain softmax in a vision model: no MoE anywhere.
    let rows = vec![
        row("void at::native::cunn_SoftMaxForward<8, c10::BFloat16>", "torch/nn/functional.py:2103 softmax", 46.0),
        row("void gate_aggregate_kernel", "torch/nn/functional.py:2437 embedding", 10.0),
        row("gemm", "", 44.0),
    ];
    let pattern = "Fused MoE router / top-k / softcapping";
    let reference = found(&rows, Framework::Sglang, KeywordMatch::Substring);
    assert!(reference.iter().any(|(p, _)| p == pattern), "{reference:?}");
    assert!(!found(&rows, Framework::Sglang, KeywordMatch::Tokens).iter().any(|(p, _)| p == pattern));
    // With an MoE sign the pattern applies again.
    let mut moe = rows.clone();
    moe.push(row("fused_moe_kernel", "sglang/srt/layers/moe/fused_moe.py:10 forward", 0.5));
    assert!(found(&moe, Framework::Sglang, KeywordMatch::Tokens).iter().any(|(p, _)| p == pattern));
}

#[test]
fn confirmed_needs_kernels_of_the_patterns_own_family() {
    // Attention by kernel name; quantization only in the Python location of
    // a generic kernel, or in a template value cast (which is not matched).
    let rows = vec![
        row("kernel_unified_attention_2d", "", 5.0),
        row("void at::native::vectorized_elementwise_kernel<4>", "vllm/layers/quantization/fp8.py:10 apply", 1.0),
        row("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, (vllm::Fp8KVCacheDataType)0>", "", 1.0),
        row("gemm", "", 93.0),
    ];
    let confidence =
        |rows: &[KernelRow], mode| confidence_of(rows, Framework::Vllm, mode, "vLLM-origin Attention + Quantization");
    assert_eq!(confidence(&rows, KeywordMatch::Substring).as_deref(), Some("Confirmed"));
    assert_eq!(confidence(&rows, KeywordMatch::Tokens).as_deref(), Some("Possible"));
    // The cast alone is no quantization at all.
    let cast_only = [rows[0].clone(), rows[2].clone(), rows[3].clone()];
    assert_eq!(confidence(&cast_only, KeywordMatch::Tokens), None);
    // A quantization kernel makes it confirmed.
    let mut quant = rows.clone();
    quant.push(row("void vllm::scaled_fp8_quant_kernel<c10::BFloat16>", "", 1.0));
    assert_eq!(confidence(&quant, KeywordMatch::Tokens).as_deref(), Some("Confirmed"));
}

#[test]
fn an_attention_kernel_reading_a_paged_kv_cache_is_no_cache_write() {
    // ROCm's prefill attention names its paged KV cache (`PagedKVCache`),
    // which the cache-write group's `paged kv` matches; the real pieces
    // (RoPE, the reshape, the cache store) are small.
    let rows = vec![
        row("FmhaBatchPrefillWithPagedKVCacheKernel", "sglang/srt/utils/kernel_shape_profiler.py:302 impl", 4.0),
        row("void rotary_embedding_kernel<c10::BFloat16, true>", "", 1.0),
        row("void (anonymous namespace)::store_kvcache<2048l, 4, false, long>", "", 0.9),
        row("gemm", "", 94.1),
    ];
    let pattern = "Fused QK RoPE reshape + KV cache write";
    let get = |rows: &[KernelRow], mode| confidence_of(rows, Framework::Sglang, mode, pattern);
    // The reference's rule counts the attention kernel as a cache write.
    assert_eq!(get(&rows, KeywordMatch::Substring).as_deref(), Some("Confirmed"));
    // By default it is left out: 1.9 % of RoPE and cache store, above the
    // pattern's 0.4 % but below its 2 % for `Confirmed`.
    assert_eq!(get(&rows, KeywordMatch::Tokens).as_deref(), Some("Possible"));
    let reg = Registry::builtin();
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang), KeywordMatch::Tokens);
    let o = got.iter().find(|o| o.pattern == pattern).unwrap();
    assert!((o.related_us - 1.9).abs() < 1e-9, "{}", o.related_us);
    assert!(o.evidence.iter().all(|e| !e.contains("Fmha")), "{:?}", o.evidence);
}

#[test]
fn the_launching_cpu_op_names_a_fused_kernel_a_python_location_does_not() {
    // SGLang on ROCm: the fused kernel's name is mangled and says
    // `act_and_mul`, the CPU op that launched it `silu_and_mul`.
    let kernel = "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16EEvPS3_i";
    let mut fused = row(kernel, "python/sglang/srt/layers/activation.py:83 forward_cuda", 3.4);
    fused.cpu_op = vec!["sgl_kernel::silu_and_mul".into()];
    let rows = vec![fused.clone(), row("gemm", "", 96.6)];
    let pattern = "Fused activation-and-mul (SwiGLU / GeGLU)";
    let reg = Registry::builtin();
    let get = |rows: &[KernelRow]| {
        detect_fusion_opportunities(&reg, rows, 100.0, None, Some(Framework::Sglang), KeywordMatch::Tokens)
            .into_iter()
            .find(|o| o.pattern == pattern)
            .map(|o| (o.confidence, o.rationale))
    };
    let (confidence, rationale) = get(&rows).unwrap();
    assert_eq!(confidence, "Confirmed");
    assert!(rationale.starts_with("The fused kernel already runs here (3.4% of stage GPU time)."), "{rationale}");
    // The keyword in a Python location alone: the fused path's module
    // launches kernels, none of which is shown to be the fused one.
    let mut located = fused;
    located.cpu_op = vec!["aten::mul".into()];
    located.location = vec!["python/sglang/srt/layers/silu_and_mul.py:83 forward".into()];
    let (confidence, rationale) = get(&[located, row("gemm", "", 96.6)]).unwrap();
    assert_eq!(confidence, "Possible");
    assert!(
        rationale.starts_with(
            "A Python location of the fused path launches kernels here, but no kernel or CPU op is named after it"
        ),
        "{rationale}"
    );
}
