//! Source-location helpers the fuse table needs to show where a kernel is
//! launched from: the display location of a mapping site (prefer a
//! framework frame, else the best frame of its Python stack), frame ranking,
//! and repo-relative path normalisation.
//!
//! The kernel-table port needs the same rules; when both land they should
//! share one module.

use crate::pyfmt::{is_py_space, normalize_text};
use crate::analysis::types::SiteEntry;

const LOW_SIGNAL_FUNCTION_TOKENS: [&str; 5] =
    ["__torch_function__", "__torch_dispatch__", "__call__", "_call_impl", "_wrapped_call_impl"];

const LOW_SIGNAL_PATH_TOKENS: [&str; 7] = [
    "model_executor/parameter.py:",
    "model_executor/cuda_graph_runner.py:",
    "compilation/cuda_graph.py:",
    "pyexecutor/cuda_graph_runner.py:",
    "pyexecutor/py_executor.py:",
    "_torch/utils.py:",
    "torch/fx/graph_module.py:",
];

const PREFERRED_PREFIXES: [&str; 7] =
    ["python/sglang/", "sglang/", "vllm/", "python/tokenspeed/", "tokenspeed/", "tensorrt_llm/", "sgl_kernel/"];

fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// A frame inside a wrapper or dispatch layer that says little about the
/// model code.
pub fn is_low_signal_location(location: &str) -> bool {
    let lowered = py_strip(location).to_lowercase();
    !lowered.is_empty()
        && (LOW_SIGNAL_FUNCTION_TOKENS.iter().any(|t| lowered.contains(t))
            || LOW_SIGNAL_PATH_TOKENS.iter().any(|t| lowered.contains(t)))
}

/// A location inside one of the serving frameworks' own trees.
pub fn is_preferred_location(location: &str) -> bool {
    let text = py_strip(location);
    PREFERRED_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// Rank of a location as the place to show for a kernel (higher is better).
pub fn location_priority(location: &str) -> i32 {
    let text = py_strip(location);
    if text.is_empty() || text == "unresolved" {
        return -100;
    }
    let penalty = if is_low_signal_location(text) { 80 } else { 0 };
    let ranked: [(&str, i32); 7] = [
        ("python/sglang/", 300),
        ("sglang/", 290),
        ("vllm/", 285),
        ("python/tokenspeed/", 283),
        ("tokenspeed/", 283),
        ("tensorrt_llm/", 280),
        ("sgl_kernel/", 260),
    ];
    if let Some((_, score)) = ranked.iter().find(|(p, _)| text.starts_with(p)) {
        return score - penalty;
    }
    if text.starts_with("python/") {
        return 180 - penalty;
    }
    if text.starts_with("torch/") || text.contains("/torch/") {
        return 20;
    }
    if text.contains(".py:") {
        return 120 - penalty;
    }
    0
}

/// Cuts an absolute or site-packages path down to its repository-relative
/// form (`.../site-packages/vllm/x.py` → `vllm/x.py`).
pub fn repo_relative_path(path: &str) -> String {
    let text = normalize_text(path).replace('\\', "/");
    // ASCII lowering keeps byte offsets aligned with `text`.
    let lowered = text.to_ascii_lowercase();
    let markers: [(&str, &str); 7] = [
        ("python/sglang/", "python/sglang/"),
        ("sgl_kernel/", "sgl_kernel/"),
        ("vllm/", "vllm/"),
        ("python/tokenspeed/", "python/tokenspeed/"),
        ("tokenspeed/", "tokenspeed/"),
        ("tensorrt_llm/", "tensorrt_llm/"),
        ("tensorrt-llm/", "tensorrt_llm/"),
    ];
    for (marker, canonical) in markers {
        if let Some(idx) = lowered.find(marker) {
            let suffix = text[idx + marker.len()..].trim_start_matches('/');
            return format!("{canonical}{suffix}").trim_start_matches('/').to_string();
        }
    }
    if let Some(idx) = lowered.find("sglang/") {
        return format!("python/{}", &text[idx..]).trim_start_matches('/').to_string();
    }
    text.trim_start_matches('/').to_string()
}

/// Profiler frame names look like `path(line): func`; returns
/// `repo/path:line func`, or the normalised text when it has no such shape.
pub fn normalize_frame_location(name: &str) -> String {
    let text = normalize_text(name);
    match split_frame_name(&text) {
        Some((path, line, func)) => format!("{}:{} {}", repo_relative_path(path), line, func),
        None => text.into_owned(),
    }
}

/// Finds the first `(` (after at least one char) followed by digits, `): `
/// and a non-empty rest.
fn split_frame_name(text: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in text.match_indices('(') {
        if i == 0 {
            continue;
        }
        let after = &text[i + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        if let Some(func) = after[digits..].strip_prefix("): ") {
            if !func.is_empty() && !func.contains('\n') {
                return Some((&text[..i], &after[..digits], func));
            }
        }
    }
    None
}

/// The best-ranked frame of a `a -> b -> c` stack (ties go to the deeper
/// frame), if any frame ranks above zero.
pub fn preferred_stack_location(stack: &str) -> Option<String> {
    let mut best: Option<(i32, String)> = None;
    for part in stack.split("->") {
        let normalized = normalize_frame_location(py_strip(part));
        let priority = location_priority(&normalized);
        if priority <= 0 {
            continue;
        }
        if best.as_ref().map_or(true, |(p, _)| priority >= *p) {
            best = Some((priority, normalized));
        }
    }
    best.map(|(_, loc)| loc)
}

/// Where a mapping site is shown: its own location when that is a
/// framework frame of substance, else the best frame of its stack.
pub fn site_display_location(site: &SiteEntry) -> String {
    let location = if site.location.is_empty() { "unresolved" } else { site.location.as_str() };
    let location = py_strip(location);
    if is_preferred_location(location) && !is_low_signal_location(location) {
        return location.to_string();
    }
    site.stack
        .as_deref()
        .filter(|s| !s.is_empty())
        .and_then(preferred_stack_location)
        .unwrap_or_else(|| location.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_become_repo_relative() {
        assert_eq!(
            normalize_frame_location("/usr/lib/python3/site-packages/vllm/attn/layer.py(290): forward"),
            "vllm/attn/layer.py:290 forward"
        );
        assert_eq!(normalize_frame_location("torch/nn/functional.py(2103): softmax"), "torch/nn/functional.py:2103 softmax");
        assert_eq!(normalize_frame_location("no frame here"), "no frame here");
        assert_eq!(repo_relative_path("/src/sglang/srt/x.py"), "python/sglang/srt/x.py");
        assert_eq!(repo_relative_path("/a/TensorRT-LLM/b.py"), "tensorrt_llm/b.py");
    }

    #[test]
    fn stack_prefers_framework_frames_and_deeper_ties() {
        let stack = "main.py(1): main -> vllm/a.py(2): f -> vllm/b.py(3): g -> torch/nn/m.py(4): _call_impl";
        assert_eq!(preferred_stack_location(stack).as_deref(), Some("vllm/b.py:3 g"));
        assert_eq!(preferred_stack_location("torch/x.py(1): f").as_deref(), Some("torch/x.py:1 f"));
        assert_eq!(preferred_stack_location("<built-in>"), None);
    }

    #[test]
    fn site_display_uses_stack_for_low_signal_location() {
        let site = SiteEntry {
            location: "vllm/model_executor/parameter.py:10 __call__".into(),
            stack: Some("vllm/models/llama.py(374): forward".into()),
            ..Default::default()
        };
        assert_eq!(site_display_location(&site), "vllm/models/llama.py:374 forward");
        let site = SiteEntry { location: "vllm/models/llama.py:374 forward".into(), ..Default::default() };
        assert_eq!(site_display_location(&site), "vllm/models/llama.py:374 forward");
    }
}
