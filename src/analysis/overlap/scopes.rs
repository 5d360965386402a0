//! Python scope names: canonical form (`path(line): func` with the path
//! made repo-relative and hex addresses masked), which frames are
//! meaningful (framework code) or acceptable fallbacks, low-signal wrappers,
//! and the scoring that picks one scope out of a chain.

use super::detect::{mask_hex_addresses, Masking};
use crate::pysem::normalize_text;
use crate::pysem::{fcmp, first_max_by};

/// Frames from these files or packages never name a launch site.
const IGNORE_PREFIXES: &[&str] = &[
    "threading.py(",
    "selectors.py(",
    "contextlib.py(",
    "queue.py(",
    "logging/",
    "logging/__init__.py(",
    "socket.py(",
    "asyncio/",
    "concurrent/futures/",
    "tqdm/",
    "uvicorn/",
    "fastapi/",
    "starlette/",
    "http/",
    "torch/_ops.py(",
    "torch/nn/modules/module.py(",
    "torch/utils/_contextlib.py(",
    "torch/autograd/",
    "torch/_tensor.py(",
    "torch/distributed/",
    "torch/_dynamo/",
    "torch/_inductor/",
];

const LOW_SIGNAL_FUNCTIONS: &[&str] =
    &["__torch_function__", "__torch_dispatch__", "__call__", "_call_impl", "_wrapped_call_impl"];

const LOW_SIGNAL_PATHS: &[&str] = &[
    "model_executor/parameter.py(",
    "model_executor/parameter.py:",
    "model_executor/cuda_graph_runner.py(",
    "model_executor/cuda_graph_runner.py:",
    "compilation/cuda_graph.py(",
    "compilation/cuda_graph.py:",
    "pyexecutor/cuda_graph_runner.py(",
    "pyexecutor/cuda_graph_runner.py:",
    "pyexecutor/py_executor.py(",
    "pyexecutor/py_executor.py:",
    "_torch/utils.py(",
    "_torch/utils.py:",
    "torch/fx/graph_module.py(",
    "torch/fx/graph_module.py:",
];

use crate::analysis::sites::locations::REPO_MARKERS;

/// Finds `needle` in the lowercased text and returns the byte offset of
/// the same code-point position in the original text.
fn find_lowered(text: &str, lowered: &str, needle: &str) -> Option<usize> {
    let at = lowered.find(needle)?;
    if text.is_ascii() {
        return Some(at);
    }
    // Python indexes by code point: map the position across.
    let cp = lowered[..at].chars().count();
    Some(text.char_indices().nth(cp).map_or(text.len(), |(i, _)| i))
}

/// Cuts a source path down to its repository-relative form
/// (`.../site-packages/vllm/x.py` → `vllm/x.py`, `sglang/...` →
/// `python/sglang/...`).
pub fn normalize_repo_relative_path(path: &str) -> String {
    let text = normalize_text(path).replace('\\', "/");
    let lowered = text.to_lowercase();
    let char_len = |s: &str| s.chars().count();
    for (marker, normalized) in REPO_MARKERS {
        if let Some(at) = find_lowered(&text, &lowered, marker) {
            // Skip as many code points as the marker has.
            let rest: String = text[at..].chars().skip(char_len(marker)).collect();
            let joined = format!("{normalized}{}", rest.trim_start_matches('/'));
            return joined.trim_start_matches('/').to_string();
        }
    }
    if let Some(at) = find_lowered(&text, &lowered, "sglang/") {
        return format!("python/{}", &text[at..]).trim_start_matches('/').to_string();
    }
    text.trim_start_matches('/').to_string()
}

/// Splits `path(line): func` (lazy path, ASCII digits; the reference's `\d`
/// would also take other Unicode decimal digits). The text must hold no
/// newline, which normalized text never does.
fn split_frame_name(name: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in name.match_indices('(') {
        if i == 0 {
            continue;
        }
        let rest = &name[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let Some(func) = rest[digits..].strip_prefix("): ") else {
            continue;
        };
        if func.is_empty() || func.contains('\n') {
            continue;
        }
        return Some((&name[..i], &rest[..digits], func));
    }
    None
}

/// The canonical form of a Python frame name.
pub fn canonicalize_python_scope_name(name: &str, masking: Masking) -> String {
    let name = mask_hex_addresses(&normalize_text(name), masking);
    match split_frame_name(&name) {
        Some((path, line, func)) => {
            format!("{}({line}): {func}", normalize_repo_relative_path(path))
        }
        None => name,
    }
}

/// Masking for the scope tests below. They look for fixed path and
/// function tokens, none of which holds a `0x` + hex run, so either rule
/// gives the same answer on real names; the reference's rule keeps parity
/// runs exact.
const TOKEN_TESTS: Masking = Masking::Reference;

/// Framework code (sglang / vllm / tokenspeed / TensorRT-LLM / sgl_kernel)
/// or any other `.py(` frame outside the ignored libraries. Takes any name
/// and canonicalizes it first (again, as the reference does, which matters
/// only for `0xADDR` → `0xADDRR`).
pub fn is_meaningful_python_scope(name: &str) -> bool {
    let n = canonicalize_python_scope_name(name, TOKEN_TESTS);
    if n.is_empty() || n.starts_with("<built-in method") || n.starts_with("nn.Module:") {
        return false;
    }
    if IGNORE_PREFIXES.iter().any(|p| n.starts_with(p)) {
        return false;
    }
    const FRAMEWORK: &[&str] =
        &["python/sglang/", "sglang/", "vllm/", "python/tokenspeed/", "tokenspeed/", "tensorrt_llm/", "sgl_kernel/"];
    if FRAMEWORK.iter().any(|p| n.starts_with(p)) {
        return true;
    }
    n.contains(".py(")
}

/// Any `.py(` or `python/...` frame except built-ins, modules and threading.
pub fn is_fallback_python_scope(name: &str) -> bool {
    let n = canonicalize_python_scope_name(name, TOKEN_TESTS);
    if n.is_empty() || n.starts_with("<built-in method") || n.starts_with("nn.Module:") {
        return false;
    }
    if n.starts_with("threading.py(") {
        return false;
    }
    n.contains(".py(") || n.starts_with("python/")
}

/// Wrapper frames (`__call__`, `_call_impl`, cuda-graph runners, ...).
pub fn is_low_signal_scope(scope: &str) -> bool {
    let lowered = canonicalize_python_scope_name(scope, TOKEN_TESTS).to_lowercase();
    if lowered.is_empty() {
        return false;
    }
    LOW_SIGNAL_FUNCTIONS.iter().any(|t| lowered.contains(t)) || LOW_SIGNAL_PATHS.iter().any(|t| lowered.contains(t))
}

/// What a scope adds to its depth when ranking a chain: framework code
/// scores higher, wrappers lower. All terms are small integers, so the sum
/// is exact in any order.
fn scope_bonus(scope: &str) -> f64 {
    let mut score = 0.0;
    if scope.starts_with("python/sglang/") {
        score += 50.0;
    } else if scope.starts_with("sglang/") {
        score += 48.0;
    } else if scope.starts_with("vllm/") {
        score += 46.0;
    } else if scope.starts_with("python/tokenspeed/") || scope.starts_with("tokenspeed/") {
        score += 45.0;
    } else if scope.starts_with("tensorrt_llm/") {
        score += 44.0;
    } else if scope.starts_with("sgl_kernel/") {
        score += 30.0;
    } else if scope.contains(".py(") {
        score += 10.0;
    }
    if scope.contains("utils.py") && scope.contains("__call__") {
        score -= 15.0;
    }
    if scope.contains("scheduler_profiler_mixin.py") {
        score -= 20.0;
    }
    if is_low_signal_scope(scope) {
        score -= 25.0;
    }
    score
}

/// The scope of a chain most likely to be the launch site: deeper frames
/// and framework code score higher, wrappers lower; first best wins. The
/// uncached definition, kept as the oracle for [`ScopeRanker`].
#[cfg(test)]
pub fn choose_best_scope(chain: &[impl AsRef<str>]) -> Option<&str> {
    best_scope_by(chain, scope_bonus)
}

fn best_scope_by<S: AsRef<str>>(chain: &[S], mut bonus: impl FnMut(&str) -> f64) -> Option<&str> {
    let ranked: Vec<(f64, &str)> =
        chain.iter().enumerate().map(|(index, scope)| (index as f64 + bonus(scope.as_ref()), scope.as_ref())).collect();
    first_max_by(&ranked, |a, b| fcmp(a.0, b.0)).map(|i| ranked[i].1)
}

/// [`choose_best_scope`] with each scope's bonus computed once.
#[derive(Default)]
pub struct ScopeRanker {
    bonus: rustc_hash::FxHashMap<std::sync::Arc<str>, f64>,
}

impl ScopeRanker {
    pub fn best<'c>(&mut self, chain: &'c [std::sync::Arc<str>]) -> Option<&'c str> {
        best_scope_by(chain, |scope| match self.bonus.get(scope) {
            Some(&b) => b,
            None => {
                let b = scope_bonus(scope);
                self.bonus.insert(scope.into(), b);
                b
            }
        })
    }
}

/// The last four scopes joined by ` -> `.
pub fn scope_chain_key(chain: &[impl AsRef<str>]) -> Option<String> {
    if chain.is_empty() {
        return None;
    }
    let tail = &chain[chain.len().saturating_sub(4)..];
    Some(tail.iter().map(|s| s.as_ref()).collect::<Vec<_>>().join(" -> "))
}

/// How much a scope is worth when ranking alias matches.
pub fn source_scope_priority(scope: Option<&str>) -> i64 {
    let n = canonicalize_python_scope_name(scope.unwrap_or(""), TOKEN_TESTS);
    if n.is_empty() || n == "unmapped" {
        return 0;
    }
    let penalty = if is_low_signal_scope(&n) { 80 } else { 0 };
    let base = if n.starts_with("python/sglang/") {
        300
    } else if n.starts_with("sglang/") {
        290
    } else if n.starts_with("vllm/") {
        285
    } else if n.starts_with("python/tokenspeed/") || n.starts_with("tokenspeed/") {
        283
    } else if n.starts_with("tensorrt_llm/") {
        280
    } else if n.starts_with("sgl_kernel/") {
        260
    } else if n.contains(".py(") {
        120
    } else {
        return 0;
    };
    base - penalty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_relative_paths() {
        assert_eq!(normalize_repo_relative_path("/usr/lib/site-packages/vllm/x.py"), "vllm/x.py");
        assert_eq!(normalize_repo_relative_path("/src/SGLang/srt/a.py"), "python/SGLang/srt/a.py");
        assert_eq!(normalize_repo_relative_path("/a/TensorRT-LLM/b.py"), "tensorrt_llm/b.py");
        assert_eq!(normalize_repo_relative_path("/x/python/sglang//y.py"), "python/sglang/y.py");
        assert_eq!(normalize_repo_relative_path("/plain/file.py"), "plain/file.py");
    }

    #[test]
    fn frame_names_canonicalize() {
        assert_eq!(
            canonicalize_python_scope_name("/opt/vllm/worker.py(12): run at 0x7fff", Masking::WordStart),
            "vllm/worker.py(12): run at 0xADDR"
        );
        assert_eq!(canonicalize_python_scope_name("a(b)(3): f", Masking::WordStart), "a(b)(3): f");
        assert_eq!(
            canonicalize_python_scope_name("<built-in method foo>", Masking::WordStart),
            "<built-in method foo>"
        );
        assert_eq!(canonicalize_python_scope_name("x(1):f", Masking::WordStart), "x(1):f");
    }

    #[test]
    fn meaningful_and_fallback() {
        assert!(is_meaningful_python_scope("vllm/worker.py(12): run"));
        assert!(!is_meaningful_python_scope("threading.py(1): run"));
        assert!(!is_meaningful_python_scope("torch/nn/modules/module.py(1): _call_impl"));
        assert!(is_fallback_python_scope("torch/nn/modules/module.py(1): _call_impl"));
        assert!(!is_fallback_python_scope("threading.py(1): run"));
        assert!(!is_meaningful_python_scope("nn.Module: Linear"));
    }

    #[test]
    fn best_scope_prefers_deep_framework_frames() {
        let chain = ["a.py(1): f", "vllm/x.py(2): g", "vllm/y.py(3): __call__"];
        assert_eq!(choose_best_scope(&chain), Some("vllm/x.py(2): g"));
        let empty: [&str; 0] = [];
        assert_eq!(choose_best_scope(&empty), None);
        let shared: Vec<std::sync::Arc<str>> = chain.iter().map(|s| std::sync::Arc::from(*s)).collect();
        let mut ranker = ScopeRanker::default();
        assert_eq!(ranker.best(&shared), choose_best_scope(&chain));
        assert_eq!(ranker.best(&shared), choose_best_scope(&chain));
        assert_eq!(scope_chain_key(&["1", "2", "3", "4", "5"]).as_deref(), Some("2 -> 3 -> 4 -> 5"));
        assert_eq!(source_scope_priority(Some("vllm/x.py(2): g")), 285);
        assert_eq!(source_scope_priority(Some("vllm/x.py(2): __call__")), 205);
        assert_eq!(source_scope_priority(None), 0);
    }
}
