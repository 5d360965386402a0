//! Which serving framework produced a trace (SGLang, vLLM, TensorRT-LLM,
//! TokenSpeed): an explicit choice, else hints from `server_args.json`, the
//! path, and the first events of the trace; SGLang when nothing matches.

use crate::pysem::normalize_text;

/// The canonical framework id for a user-supplied name (`auto` if unknown).
pub fn canonicalize_framework(value: &str) -> &'static str {
    let lowered = normalize_text(value).to_lowercase().replace('_', "-");
    match lowered.as_str() {
        "" | "auto" => "auto",
        "sglang" | "sgl" => "sglang",
        "vllm" => "vllm",
        "trt" | "tllm" | "trtllm" | "tensorrt-llm" | "tensorrtllm" => "trtllm",
        "tokenspeed" | "token-speed" | "ts" => "tokenspeed",
        _ => "auto",
    }
}

/// Human name of a framework id.
pub fn framework_display_name(value: &str) -> String {
    match canonicalize_framework(value) {
        "auto" => "auto".into(),
        "sglang" => "SGLang".into(),
        "vllm" => "vLLM".into(),
        "trtllm" => "TensorRT-LLM".into(),
        "tokenspeed" => "TokenSpeed".into(),
        _ => value.to_string(),
    }
}

/// Framework named by free text (a path, a trace sample, server args).
pub fn detect_from_text(text: &str) -> Option<&'static str> {
    let lowered = normalize_text(text).to_lowercase();
    if lowered.is_empty() {
        return None;
    }
    if ["tokenspeed", "token-speed", "/ts/"].iter().any(|t| lowered.contains(t)) {
        return Some("tokenspeed");
    }
    if ["tensorrt_llm", "tensorrt-llm", "trtllm", "pyexecutor"].iter().any(|t| lowered.contains(t)) {
        return Some("trtllm");
    }
    if lowered.contains("vllm") {
        return Some("vllm");
    }
    if ["python/sglang/", "sgl_kernel/", "sglang/"].iter().any(|t| lowered.contains(t)) {
        return Some("sglang");
    }
    None
}

/// Framework implied by a `server_args.json` object.
pub fn detect_from_server_args(server_args: Option<&serde_json::Value>) -> Option<&'static str> {
    let map = server_args?.as_object().filter(|m| !m.is_empty())?;
    let keys: Vec<String> = map.keys().map(|k| normalize_text(k).to_lowercase()).collect();
    let has_key = |set: &[&str]| keys.iter().any(|k| set.contains(&k.as_str()));
    let text = serde_json::to_string(&serde_json::Value::Object(map.clone())).unwrap_or_default();
    let lowered = text.to_lowercase();
    if lowered.contains("tokenspeed") || lowered.contains("token-speed") {
        return Some("tokenspeed");
    }
    if has_key(&[
        "attn_tp_size",
        "dense_tp_size",
        "moe_tp_size",
        "enable_mla_l1_5_cache",
        "mla_chunk_multiplier",
        "comm_fusion_max_num_tokens",
        "enable_allreduce_fusion",
    ]) {
        return Some("tokenspeed");
    }
    if let Some(hint) = detect_from_text(&text) {
        return Some(hint);
    }
    if has_key(&[
        "attention_backend",
        "sampling_backend",
        "disable_cuda_graph",
        "disable_piecewise_cuda_graph",
        "chunked_prefill_size",
        "schedule_policy",
    ]) {
        return Some("sglang");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(canonicalize_framework("TensorRT_LLM"), "trtllm");
        assert_eq!(canonicalize_framework("ts"), "tokenspeed");
        assert_eq!(canonicalize_framework("foo"), "auto");
        assert_eq!(framework_display_name("vllm"), "vLLM");
    }

    #[test]
    fn text_hints() {
        assert_eq!(detect_from_text("/x/vllm_decode_full/a.json"), Some("vllm"));
        assert_eq!(detect_from_text("/x/sglang_decode/a.json"), None);
        assert_eq!(detect_from_text("python/sglang/srt/x.py"), Some("sglang"));
        assert_eq!(detect_from_text("PyExecutor"), Some("trtllm"));
    }

    #[test]
    fn server_args_hints() {
        let v = serde_json::json!({"attention_backend": "fa3", "model_path": "m"});
        assert_eq!(detect_from_server_args(Some(&v)), Some("sglang"));
        let v = serde_json::json!({"model": "/ts/x"});
        assert_eq!(detect_from_server_args(Some(&v)), Some("tokenspeed"));
        assert_eq!(detect_from_server_args(Some(&serde_json::json!({}))), None);
    }
}
