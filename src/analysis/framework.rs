//! Which serving framework produced a trace (SGLang, vLLM, TensorRT-LLM,
//! TokenSpeed), or none of them (`generic`: plain PyTorch, training): an
//! explicit choice, else hints from `server_args.json`, the path, and the
//! first events of the trace. What detection settles on when nothing matches
//! is the caller's choice ([`Undetected`]).

use crate::pysem::normalize_text;

/// A serving framework whose traces and fused kernels the analyses know, or
/// [`Framework::Generic`] for a trace from none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    Sglang,
    Vllm,
    Trtllm,
    Tokenspeed,
    /// Plain PyTorch: training jobs, benchmarks, inference outside the
    /// serving frameworks. Only fuse patterns that name no framework (or
    /// name `generic`) apply.
    Generic,
}

impl Framework {
    /// Every framework, in the order pattern files list them.
    pub const ALL: [Framework; 5] =
        [Framework::Sglang, Framework::Vllm, Framework::Trtllm, Framework::Tokenspeed, Framework::Generic];

    /// The id used in pattern files and JSON: `sglang`, `vllm`, `trtllm`,
    /// `tokenspeed`, `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Sglang => "sglang",
            Framework::Vllm => "vllm",
            Framework::Trtllm => "trtllm",
            Framework::Tokenspeed => "tokenspeed",
            Framework::Generic => "generic",
        }
    }

    /// Human name: `SGLang`, `vLLM`, `TensorRT-LLM`, `TokenSpeed`,
    /// `generic PyTorch`.
    pub fn display_name(self) -> &'static str {
        match self {
            Framework::Sglang => "SGLang",
            Framework::Vllm => "vLLM",
            Framework::Trtllm => "TensorRT-LLM",
            Framework::Tokenspeed => "TokenSpeed",
            Framework::Generic => "generic PyTorch",
        }
    }

    /// Whether the mapping trace is attributed from every kernel launch
    /// rather than from a sample per kernel name: SGLang (as the reference
    /// does) and generic PyTorch (whose traces the reference reads as
    /// SGLang's, so their tables stay the same).
    pub fn maps_every_launch(self) -> bool {
        matches!(self, Framework::Sglang | Framework::Generic)
    }

    /// The framework an id names exactly (`sglang`, `vllm`, ...).
    pub fn from_id(id: &str) -> Option<Framework> {
        Framework::ALL.into_iter().find(|f| f.as_str() == id)
    }
}

impl std::fmt::Display for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user asked for: detect the framework, or use this one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameworkChoice {
    #[default]
    Auto,
    Fixed(Framework),
}

impl std::str::FromStr for FrameworkChoice {
    type Err = String;

    /// Accepts `auto` and each framework with its common aliases
    /// (`sgl`, `trt`, `tensorrt-llm`, `ts`, `pytorch`, ...), case-insensitively.
    fn from_str(value: &str) -> Result<Self, String> {
        let lowered = normalize_text(value).to_lowercase().replace('_', "-");
        Ok(match lowered.as_str() {
            "" | "auto" => FrameworkChoice::Auto,
            "sglang" | "sgl" => FrameworkChoice::Fixed(Framework::Sglang),
            "vllm" => FrameworkChoice::Fixed(Framework::Vllm),
            "trt" | "tllm" | "trtllm" | "tensorrt-llm" | "tensorrtllm" => FrameworkChoice::Fixed(Framework::Trtllm),
            "tokenspeed" | "token-speed" | "ts" => FrameworkChoice::Fixed(Framework::Tokenspeed),
            "generic" | "pytorch" | "torch" => FrameworkChoice::Fixed(Framework::Generic),
            _ => {
                return Err(format!(
                    "unknown framework {value:?} (use auto, sglang, vllm, trtllm, tokenspeed or generic)"
                ))
            }
        })
    }
}

/// What framework detection settles on when no hint names one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Undetected {
    /// The framework whose source paths the trace's strings name
    /// ([`detect_from_strings`]: Python frames beyond the first events),
    /// else [`Framework::Generic`]: the trace is read as plain PyTorch.
    #[default]
    Generic,
    /// [`Framework::Sglang`], as the reference tool does.
    Sglang,
}

impl Undetected {
    /// The framework this fallback stands for.
    pub fn framework(self) -> Framework {
        match self {
            Undetected::Generic => Framework::Generic,
            Undetected::Sglang => Framework::Sglang,
        }
    }
}

/// Framework named by free text (a path, a trace sample, server args).
pub fn detect_from_text(text: &str) -> Option<Framework> {
    // In order of precedence: the first group with a marker in the text wins.
    const MARKERS: [(Framework, &[&str]); 4] = [
        (Framework::Tokenspeed, &["tokenspeed", "token-speed", "/ts/"]),
        (Framework::Trtllm, &["tensorrt_llm", "tensorrt-llm", "trtllm", "pyexecutor"]),
        (Framework::Vllm, &["vllm"]),
        (Framework::Sglang, &["python/sglang/", "sgl_kernel/", "sglang/"]),
    ];
    let needles: Vec<&str> = MARKERS.iter().flat_map(|(_, group)| group.iter().copied()).collect();
    let found = lowered_contains(text, &needles);
    let mut at = 0;
    MARKERS.iter().find_map(|(framework, group)| {
        let hit = found[at..at + group.len()].contains(&true);
        at += group.len();
        hit.then_some(*framework)
    })
}

/// Which of `needles` (lowercase ASCII without whitespace) occur in
/// `text.to_lowercase()`, read a piece at a time so that a long text is
/// never copied whole. The reference also collapses whitespace first, which
/// neither makes nor breaks a match of text without whitespace.
fn lowered_contains(text: &str, needles: &[&str]) -> Vec<bool> {
    const PIECE: usize = 64 * 1024;
    let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut found = vec![false; needles.len()];
    let mut window = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        // A match that ends in this piece starts at most `longest` bytes
        // before it, on ASCII characters, so on a character boundary.
        let mut keep = window.len().saturating_sub(longest);
        while !window.is_char_boundary(keep) {
            keep += 1;
        }
        window.drain(..keep);
        window.extend(piece.chars().flat_map(char::to_lowercase));
        for (f, n) in found.iter_mut().zip(needles) {
            *f |= window.contains(n);
        }
    }
    found
}

/// Whether `needle` (lowercase ASCII) occurs in `text.to_ascii_lowercase()`,
/// found without copying `text`.
fn contains_ignoring_ascii_case(text: &str, needle: &str) -> bool {
    let (hay, needle) = (text.as_bytes(), needle.as_bytes());
    let Some(&first) = needle.first() else { return true };
    (0..hay.len().saturating_sub(needle.len() - 1))
        .any(|i| hay[i].to_ascii_lowercase() == first && hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// Framework whose source paths occur in a trace's strings (every distinct
/// name: Python frames, CPU ops, kernels): the one named by the most
/// distinct strings, the first in [`Framework::ALL`] on a tie; `None` when no
/// string names one. A serving framework's Python stacks name its package
/// (`python/sglang/srt/...`, `vllm/v1/...`) even where the trace's first
/// events do not.
pub fn detect_from_strings<'a>(strings: impl IntoIterator<Item = &'a str>) -> Option<Framework> {
    const MARKERS: [(Framework, &[&str]); 4] = [
        (Framework::Sglang, &["python/sglang/", "sglang/srt/", "sgl_kernel/"]),
        (Framework::Vllm, &["vllm/"]),
        (Framework::Trtllm, &["tensorrt_llm/"]),
        (Framework::Tokenspeed, &["tokenspeed/", "tokenspeed_"]),
    ];
    let mut counts = [0usize; MARKERS.len()];
    for s in strings {
        for (count, (_, tokens)) in counts.iter_mut().zip(MARKERS.iter()) {
            if tokens.iter().any(|t| contains_ignoring_ascii_case(s, t)) {
                *count += 1;
            }
        }
    }
    let mut best: Option<(Framework, usize)> = None;
    for ((framework, _), count) in MARKERS.iter().zip(counts) {
        if count > 0 && best.is_none_or(|(_, n)| count > n) {
            best = Some((*framework, count));
        }
    }
    best.map(|(f, _)| f)
}

/// Framework implied by a `server_args.json` object.
pub fn detect_from_server_args(server_args: Option<&serde_json::Value>) -> Option<Framework> {
    let map = server_args?.as_object().filter(|m| !m.is_empty())?;
    let keys: Vec<String> = map.keys().map(|k| normalize_text(k).to_lowercase()).collect();
    let has_key = |set: &[&str]| keys.iter().any(|k| set.contains(&k.as_str()));
    let text = serde_json::to_string(&serde_json::Value::Object(map.clone())).unwrap_or_default();
    let lowered = text.to_lowercase();
    if lowered.contains("tokenspeed") || lowered.contains("token-speed") {
        return Some(Framework::Tokenspeed);
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
        return Some(Framework::Tokenspeed);
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
        return Some(Framework::Sglang);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let parse = |s: &str| s.parse::<FrameworkChoice>();
        assert_eq!(parse("TensorRT_LLM"), Ok(FrameworkChoice::Fixed(Framework::Trtllm)));
        assert_eq!(parse("ts"), Ok(FrameworkChoice::Fixed(Framework::Tokenspeed)));
        assert_eq!(parse("AUTO"), Ok(FrameworkChoice::Auto));
        assert!(parse("foo").is_err());
        assert_eq!(Framework::Vllm.display_name(), "vLLM");
        assert_eq!(Framework::from_id("trtllm"), Some(Framework::Trtllm));
    }

    /// The reference's reading of free text: normalized, lowered whole,
    /// then searched.
    fn detect_whole(text: &str) -> Option<Framework> {
        let lowered = normalize_text(text).to_lowercase();
        let has = |ts: &[&str]| ts.iter().any(|t| lowered.contains(t));
        if has(&["tokenspeed", "token-speed", "/ts/"]) {
            Some(Framework::Tokenspeed)
        } else if has(&["tensorrt_llm", "tensorrt-llm", "trtllm", "pyexecutor"]) {
            Some(Framework::Trtllm)
        } else if has(&["vllm"]) {
            Some(Framework::Vllm)
        } else if has(&["python/sglang/", "sgl_kernel/", "sglang/"]) {
            Some(Framework::Sglang)
        } else {
            None
        }
    }

    #[test]
    fn text_is_searched_in_pieces_as_if_lowered_whole() {
        let piece = 64 * 1024;
        let mut texts: Vec<String> = [
            "",
            "  \t ",
            "VLLM",
            "v LLM",
            "/work/SGLang/python/SGLANG/srt",
            "TensorRT-LLM and vllm",
            "sglang/ then vllm",
            // KELVIN SIGN lowers to an ASCII `k`.
            "sgl_\u{212A}ernel/",
            "to\u{212A}enspeed",
            "İ ß Σ tokenspeed",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        // Markers across the pieces' seams, after ASCII and after
        // multi-byte characters.
        for marker in ["python/sglang/", "vllm", "/ts/", "PyExecutor"] {
            for pad in ["a", "é", "€", "\u{212A}"] {
                for shift in 0..marker.len() + 2 {
                    let lead = pad.repeat((piece - shift) / pad.len() + 1);
                    texts.push(format!("{lead}{marker} tail"));
                }
            }
        }
        texts.push(format!("{}pyexec", "x".repeat(piece - 6)) + "utor");
        for t in &texts {
            assert_eq!(detect_from_text(t), detect_whole(t), "{:?}", t.chars().rev().take(40).collect::<String>());
        }
        assert_eq!(detect_from_text(&format!("{}vllm", "é".repeat(3 * piece))), Some(Framework::Vllm));
    }

    #[test]
    fn strings_are_searched_ignoring_ascii_case_only() {
        assert!(contains_ignoring_ascii_case("Python/SGLang/srt", "python/sglang/"));
        assert!(contains_ignoring_ascii_case("x/VLLM/", "vllm/"));
        assert!(!contains_ignoring_ascii_case("vll", "vllm"));
        assert!(!contains_ignoring_ascii_case("", "vllm"));
        assert!(!contains_ignoring_ascii_case("v\u{212A}llm/", "vllm/"));
        assert_eq!(detect_from_strings(["A/VLLM/b", "c"]), Some(Framework::Vllm));
        assert_eq!(detect_from_strings(["tensorrt_llm"]), None);
    }

    #[test]
    fn generic_framework_names() {
        let parse = |s: &str| s.parse::<FrameworkChoice>();
        for spelling in ["generic", "Generic", "pytorch", "torch"] {
            assert_eq!(parse(spelling), Ok(FrameworkChoice::Fixed(Framework::Generic)), "{spelling}");
        }
        assert_eq!(Framework::from_id("generic"), Some(Framework::Generic));
        assert!(Framework::ALL.contains(&Framework::Generic));
        assert_eq!(Framework::Generic.as_str(), "generic");
        assert_eq!(Framework::Generic.display_name(), "generic PyTorch");
        assert_eq!(serde_json::to_value(Framework::Generic).unwrap(), serde_json::json!("generic"));
        assert!(parse("foo").unwrap_err().contains("generic"));
    }

    #[test]
    fn undetected_framework_fallbacks() {
        assert_eq!(Undetected::default().framework(), Framework::Generic);
        assert_eq!(Undetected::Sglang.framework(), Framework::Sglang);
        // A training trace's text names no framework: the fallback decides.
        let training = "ProfilerStep#3 aten::convolution torch/nn/modules/conv.py(456): forward";
        assert_eq!(detect_from_text(training), None);
    }

    #[test]
    fn framework_from_trace_strings() {
        let sglang = ["aten::mm", "python/sglang/srt/layers/linear.py(10): forward", "sgl_kernel/ops.py(3): f"];
        assert_eq!(detect_from_strings(sglang), Some(Framework::Sglang));
        let vllm = ["vllm/v1/worker/gpu_model_runner.py(1): execute_model", "vllm/model_executor/x.py(2): f"];
        assert_eq!(detect_from_strings(vllm.into_iter().chain(["python/sglang/x.py"])), Some(Framework::Vllm));
        let training = ["ProfilerStep#1", "torch/nn/modules/conv.py(456): forward", "aten::conv2d"];
        assert_eq!(detect_from_strings(training), None);
        assert_eq!(detect_from_strings([]), None);
    }

    #[test]
    fn generic_framework_maps_every_launch() {
        assert!(Framework::Generic.maps_every_launch());
        assert!(Framework::Sglang.maps_every_launch());
        assert!(!Framework::Vllm.maps_every_launch());
    }

    #[test]
    fn text_hints() {
        assert_eq!(detect_from_text("/x/vllm_decode_full/a.json"), Some(Framework::Vllm));
        assert_eq!(detect_from_text("/x/sglang_decode/a.json"), None);
        assert_eq!(detect_from_text("python/sglang/srt/x.py"), Some(Framework::Sglang));
        assert_eq!(detect_from_text("PyExecutor"), Some(Framework::Trtllm));
    }

    #[test]
    fn server_args_hints() {
        let v = serde_json::json!({"attention_backend": "fa3", "model_path": "m"});
        assert_eq!(detect_from_server_args(Some(&v)), Some(Framework::Sglang));
        let v = serde_json::json!({"model": "/ts/x"});
        assert_eq!(detect_from_server_args(Some(&v)), Some(Framework::Tokenspeed));
        assert_eq!(detect_from_server_args(Some(&serde_json::json!({}))), None);
    }
}
