//! Python source locations: turning a profiler frame name
//! (`path/file.py(123): func`) into a repo-relative `path:line func`, and
//! ranking frames and locations by how useful they are to a reader (serving
//! framework code first, torch internals and dispatch wrappers last).

use crate::analysis::types::UNRESOLVED;
use crate::pysem::normalize_text;

const NOISE_FRAME_PREFIXES: &[&str] = &[
    "threading.py(",
    "multiprocessing/",
    "contextlib.py(",
    "torch/utils/_contextlib.py(",
    "runpy.py(",
    "asyncio/",
    "selectors.py(",
    "queue.py(",
    "socket.py(",
    "tqdm/_monitor.py(",
    "<string>(",
    "<built-in method ",
];

const LOW_LEVEL_FRAME_PREFIXES: &[&str] =
    &["triton/runtime/", "triton/backends/", "torch/_ops.py", "torch/nn/modules/module.py"];

const LOW_SIGNAL_FUNCTION_TOKENS: &[&str] =
    &["__torch_function__", "__torch_dispatch__", "__call__", "_call_impl", "_wrapped_call_impl"];

const LOW_SIGNAL_PATH_TOKENS: &[&str] = &[
    "model_executor/parameter.py:",
    "model_executor/cuda_graph_runner.py:",
    "compilation/cuda_graph.py:",
    "pyexecutor/cuda_graph_runner.py:",
    "pyexecutor/py_executor.py:",
    "_torch/utils.py:",
    "torch/fx/graph_module.py:",
];

/// Markers that anchor a repo-relative path, with the prefix they become.
pub const REPO_MARKERS: &[(&str, &str)] = &[
    ("python/sglang/", "python/sglang/"),
    ("sgl_kernel/", "sgl_kernel/"),
    ("vllm/", "vllm/"),
    ("python/tokenspeed/", "python/tokenspeed/"),
    ("tokenspeed/", "tokenspeed/"),
    ("tensorrt_llm/", "tensorrt_llm/"),
    ("tensorrt-llm/", "tensorrt_llm/"),
];

/// Python's `str.strip()` (whitespace only).
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(crate::pysem::is_py_space)
}

/// Cuts a path down to its serving-framework repo-relative form.
pub fn normalize_repo_relative_path(path: &str) -> String {
    let text = normalize_text(path).replace('\\', "/");
    let lowered = text.to_ascii_lowercase();
    for (marker, normalized) in REPO_MARKERS {
        if let Some(idx) = lowered.find(marker) {
            let suffix = text[idx + marker.len()..].trim_start_matches('/');
            return format!("{normalized}{suffix}").trim_start_matches('/').to_string();
        }
    }
    if let Some(idx) = lowered.find("sglang/") {
        return format!("python/{}", &text[idx..]).trim_start_matches('/').to_string();
    }
    text.trim_start_matches('/').to_string()
}

/// Splits `path(line): func` the way the reference's pattern does: the first
/// `(` after at least one character that is followed by digits, `): ` and a
/// non-empty function name.
fn split_frame_name(text: &str) -> Option<(&str, &str, &str)> {
    for (idx, ch) in text.char_indices() {
        if ch != '(' || idx == 0 {
            continue;
        }
        let rest = &text[idx + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let after = &rest[digits..];
        if let Some(func) = after.strip_prefix("): ") {
            if !func.is_empty() && !func.contains('\n') {
                return Some((&text[..idx], &rest[..digits], func));
            }
        }
    }
    None
}

/// `path/file.py(12): func` → `repo/relative/file.py:12 func`; anything else
/// is returned whitespace-normalized.
pub fn normalize_source_location(name: &str) -> String {
    let text = normalize_text(name);
    match split_frame_name(&text) {
        Some((path, line, func)) => format!("{}:{} {}", normalize_repo_relative_path(path), line, func),
        None => text.into_owned(),
    }
}

/// Dispatch wrappers and graph-runner plumbing: real but uninformative sites.
pub fn is_low_signal_source_location(location: &str) -> bool {
    let lowered = py_strip(location).to_lowercase();
    if lowered.is_empty() {
        return false;
    }
    LOW_SIGNAL_FUNCTION_TOKENS.iter().any(|t| lowered.contains(t))
        || LOW_SIGNAL_PATH_TOKENS.iter().any(|t| lowered.contains(t))
}

/// Rank of an already-normalized source location.
pub fn source_location_priority(location: &str) -> i32 {
    let text = py_strip(location);
    if text.is_empty() || text == UNRESOLVED {
        return -100;
    }
    let penalty = if is_low_signal_source_location(text) { 80 } else { 0 };
    if text.starts_with("python/sglang/") {
        return 300 - penalty;
    }
    if text.starts_with("sglang/") {
        return 290 - penalty;
    }
    if text.starts_with("vllm/") {
        return 285 - penalty;
    }
    if text.starts_with("python/tokenspeed/") || text.starts_with("tokenspeed/") {
        return 283 - penalty;
    }
    if text.starts_with("tensorrt_llm/") {
        return 280 - penalty;
    }
    if text.starts_with("sgl_kernel/") {
        return 260 - penalty;
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

/// Locations inside a serving framework's own tree.
pub fn is_preferred_source_location(location: &str) -> bool {
    let text = py_strip(location);
    ["python/sglang/", "sglang/", "vllm/", "python/tokenspeed/", "tokenspeed/", "tensorrt_llm/", "sgl_kernel/"]
        .iter()
        .any(|p| text.starts_with(p))
}

/// The best-ranked location in a ` -> `-joined stack (latest frame on ties),
/// if any frame ranks above zero.
pub fn extract_preferred_stack_location(stack: Option<&str>) -> Option<String> {
    let stack = stack.filter(|s| !s.is_empty())?;
    let mut best: Option<(i32, String)> = None;
    for part in stack.split("->") {
        let normalized = normalize_source_location(py_strip(part));
        let priority = source_location_priority(&normalized);
        if priority <= 0 {
            continue;
        }
        // Later parts win ties: compare with >=.
        if best.as_ref().is_none_or(|(p, _)| priority >= *p) {
            best = Some((priority, normalized));
        }
    }
    best.map(|(_, loc)| loc)
}

/// How useful a Python frame is as a kernel's attributed site.
pub fn frame_priority(frame_name: &str) -> i32 {
    let raw = py_strip(frame_name);
    let normalized = normalize_source_location(raw);
    let n = normalized.as_str();
    let penalty = if is_low_signal_source_location(n) { 80 } else { 0 };
    if NOISE_FRAME_PREFIXES.iter().any(|p| raw.starts_with(p)) {
        return -20;
    }
    if n.starts_with("python/sglang/") {
        return 300 - penalty;
    }
    if n.starts_with("sglang/") {
        return 290 - penalty;
    }
    if n.starts_with("vllm/") {
        return 285 - penalty;
    }
    if n.starts_with("python/tokenspeed/") || n.starts_with("tokenspeed/") {
        return 283 - penalty;
    }
    if n.starts_with("tensorrt_llm/") {
        return 280 - penalty;
    }
    if n.starts_with("sgl_kernel/") {
        return 260 - penalty;
    }
    if n.starts_with("triton_kernels/") {
        return 220 - penalty;
    }
    if LOW_LEVEL_FRAME_PREFIXES.iter().any(|p| n.starts_with(p)) {
        return 0;
    }
    if raw.starts_with("/data/") || raw.starts_with("/Users/") {
        if raw.contains("/sglang/") {
            return 120;
        }
        if raw.contains("/vllm/") {
            return 118;
        }
        if raw.contains("/tokenspeed/") || raw.contains("/TokenSpeed/") {
            return 117;
        }
        if raw.contains("/TensorRT-LLM/") || raw.contains("/tensorrt_llm/") {
            return 116;
        }
        return 100;
    }
    let py_call = raw.contains(".py(");
    if py_call && raw.contains("/sglang/") {
        return 110;
    }
    if py_call && raw.contains("/vllm/") {
        return 108;
    }
    if py_call && (raw.contains("/tokenspeed/") || raw.contains("/TokenSpeed/")) {
        return 107;
    }
    if py_call && (raw.contains("/TensorRT-LLM/") || raw.contains("/tensorrt_llm/")) {
        return 106;
    }
    if n.contains(".py:") && (raw.contains("site-packages") || n.starts_with("torch/")) {
        return 45;
    }
    if n.contains(".py:") {
        return 35;
    }
    if raw.starts_with("<built-in method ") {
        return -10;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_frame_names() {
        assert_eq!(
            normalize_source_location("/usr/lib/python3/site-packages/vllm/model.py(42): forward"),
            "vllm/model.py:42 forward"
        );
        assert_eq!(
            normalize_source_location("torch/nn/modules/linear.py(114): forward"),
            "torch/nn/modules/linear.py:114 forward"
        );
        assert_eq!(normalize_source_location("aten::mm"), "aten::mm");
        assert_eq!(normalize_source_location("(12): f"), "(12): f");
        assert_eq!(normalize_source_location("/x/sglang/srt/a.py(3): g"), "python/sglang/srt/a.py:3 g");
    }

    #[test]
    fn priorities() {
        assert_eq!(source_location_priority("unresolved"), -100);
        assert_eq!(source_location_priority("vllm/a.py:1 f"), 285);
        assert_eq!(source_location_priority("vllm/a.py:1 __call__"), 205);
        assert_eq!(source_location_priority("torch/a.py:1 f"), 20);
        assert_eq!(frame_priority("threading.py(1): run"), -20);
        assert_eq!(frame_priority("<built-in method x>"), -20);
        assert_eq!(frame_priority("torch/nn/modules/module.py(1): _call_impl"), 0);
        assert_eq!(frame_priority("foo.py(1): f"), 35);
    }

    #[test]
    fn preferred_stack_location_takes_latest_on_ties() {
        let s = "vllm/a.py(1): f -> torch/b.py(2): g -> vllm/c.py(3): h";
        assert_eq!(extract_preferred_stack_location(Some(s)).as_deref(), Some("vllm/c.py:3 h"));
        assert_eq!(extract_preferred_stack_location(Some("aten::mm")), None);
        assert_eq!(extract_preferred_stack_location(None), None);
    }
}
