//! Kernel names: the canonical grouping key (addresses masked, the argument
//! list of `void f(...)` signatures dropped), the coarse category from name
//! keywords, and display truncation.

use std::sync::LazyLock;

use super::keywords::{Hits, Keywords};
use crate::pysem::normalize_text;

/// Ordered (category, keywords) list; the first category whose keyword occurs
/// in the lowercased name wins.
const CATEGORY_PATTERNS: &[(&str, &[&str])] = &[
    ("hybrid_linear", &["gdn", "gated_delta", "mamba", "selective_scan", "ssd", "causal_conv", "ssm"]),
    (
        "attention",
        &[
            "flash_attn",
            "flashattention",
            "flash_attention",
            "fmha",
            "attention",
            "mla",
            "paged_attention",
            "decode_attention",
        ],
    ),
    ("moe", &["fused_moe", "grouped_mm", "groupgemm", "group_gemm", "moe", "expert", "groupproblemshape"]),
    ("gemm", &["gemm", "gemv", "matmul", "cublas", "cutlass", "wgmma", "mma", "bmm", "nvjet"]),
    ("norm", &["rmsnorm", "layernorm", "_norm_", " norm", "normkernel"]),
    ("rope", &["rotary", "rope", "mrope"]),
    ("softmax", &["softmax"]),
    ("activation", &["silu", "gelu", "relu", "act_and_mul", "sigmoid"]),
    ("quantize", &["quant", "fp8", "mxfp", "nvfp4", "dequant", "cvt"]),
    ("reduce_topk", &["topk", "reduce", "argmax", "argtopk", "sampling", "multinomial"]),
    ("sampling_io", &["prepare_inputs", "write_req_to", "catarraybatched", "prepare_next", "copy_next"]),
    (
        "elementwise",
        &[
            "elementwise",
            "vectorized_elementwise_kernel",
            "unrolled_elementwise_kernel",
            "gpu_kernel_impl",
            "binary_internal",
            "unaryfunctor",
            "add_kernel",
            "sub_kernel",
            "mul_kernel",
            "div_",
            "floor_kernel",
            "log_kernel",
            "neg_kernel",
        ],
    ),
];

const COMMUNICATION_STRONG: &[&str] = &[
    "nccl",
    "allreduce",
    "all_reduce",
    "reduce_scatter",
    "allgather",
    "all_gather",
    "alltoall",
    "all_to_all",
    "cross_device_reduce",
    "deepep",
    "mooncake",
];
const COMMUNICATION_WEAK: &[&str] = &["broadcast", "dispatch", "combine"];
/// `dma` last: the default rule takes it only as a word of its own.
const MEMORY_STRONG: &[&str] = &["memcpy", "memset", "prefetch", "dma"];
const MEMORY_WEAK: &[&str] = &["copy", "fill"];
const COMPUTE_HINTS: &[&str] = &[
    "gemm",
    "gemv",
    "matmul",
    "cublas",
    "cutlass",
    "wgmma",
    "mma",
    "bmm",
    "nvjet",
    "fmha",
    "attention",
    "flash_attn",
    "flashattention",
    "flash_attention",
    "grouped_mm",
    "groupgemm",
    "moe",
    "expert",
];

/// True when any keyword occurs in `text`.
pub fn contains_any(text: &str, keywords: &[&str]) -> bool {
    keywords.iter().any(|k| text.contains(k))
}

/// Namespaces of expert-parallel communication libraries, whose kernels are
/// named for their step (`dispatch`, `combine`, `cached_notify`) rather than
/// for a collective: DeepEP (`deep_ep::`) and DeepSeek's build of it
/// (`dpsk::ep::`).
const COMMUNICATION_NAMESPACES: &[&str] = &["deep_ep::", "dpsk::ep::"];

/// Whether a kernel's name names a collective or a communication library
/// (`nccl`, `all_reduce`, vLLM's `cross_device_reduce`, `deepep`, …, the
/// kernel table's sure sign of communication, before the weaker words
/// `dispatch`, `combine` and `broadcast` that compute kernels use too), or
/// lies in an expert-parallel library's namespace (`deep_ep::`,
/// `dpsk::ep::`).
pub fn names_communication(name: &str) -> bool {
    let lowered = name.to_lowercase();
    Holds::of(&lowered).names_communication()
}

/// Whether a GPU event's name says it is a device-side wait: a stream
/// held until another stream or an event gets there (MTIA's `event_wait`,
/// CUDA's `Stream Wait Event`). Such an event is busy time on the timeline
/// but no work. The name must hold `wait` as a word of its own (split at
/// anything but letters and digits, and at a lowercase-to-uppercase step:
/// `waitOnEvent`), and not name communication, whose kernels wait for
/// their peers as part of their work.
pub fn names_device_wait(name: &str) -> bool {
    let mut words = name.split(|c: char| !c.is_ascii_alphanumeric());
    words.any(|w| camel_words(w).any(|w| w.eq_ignore_ascii_case("wait"))) && !names_communication(name)
}

/// The words of a camel-case identifier: `waitOnEvent` → `wait`, `On`,
/// `Event`. The identifier is ASCII letters and digits, so every cut lies on
/// a character boundary.
fn camel_words(word: &str) -> impl Iterator<Item = &str> {
    let b = word.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= b.len() {
            return None;
        }
        let end = (start + 1..b.len())
            .find(|&i| b[i - 1].is_ascii_lowercase() && b[i].is_ascii_uppercase())
            .unwrap_or(b.len());
        let w = &word[start..end];
        start = end;
        Some(w)
    })
}

/// A library name that holds the `gemm` keyword (`fbgemm_gpu::` in the
/// template arguments of its embedding and conversion kernels).
const LIBRARY_NOT_GEMM: &str = "fbgemm";

/// Norm kernels the reference's `norm` keywords miss.
const NORM_MORE: &[&str] = &["groupnorm", "group_norm", "batchnorm", "batch_norm", "instancenorm", "instance_norm"];

/// Which rule decides the kernel table's kernels and their categories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelRule {
    /// The reference's, with these corrections: a host call of a runtime or
    /// driver category is not a kernel even when it carries a stream (ROCm's
    /// `hipLaunchKernel` with `stream: "0x0"`), as on the timeline; a kernel
    /// in an expert-parallel library's namespace is communication (DeepEP's
    /// `cached_notify`); group, batch and instance norms are `norm`; and the
    /// weak communication words (`dispatch`, `combine`, `broadcast`) count
    /// only as words of their own, not inside `combined` or `redispatch`;
    /// `fbgemm` (FBGEMM's namespace in a kernel's arguments) is no `gemm`
    /// keyword; and the refinements `diff` makes (see [`kernel_category`]).
    #[default]
    Default,
    /// The reference's as they are.
    Reference,
}

/// The kernel table's category for a raw kernel name under the reference's
/// rule.
pub fn kernel_table_category(name: &str) -> &'static str {
    kernel_category(name, KernelRule::Reference)
}

/// The kernel table's category for a raw kernel name under `rule`: under
/// [`KernelRule::Default`] also refined where the keywords miss kernels
/// that other vendors and libraries name differently
/// ([`comparison_category`](super::family::comparison_category): ROCm's
/// Tensile GEMMs, FlashAttention, Inductor's RMSNorm), so that `triage` and
/// `diff` name a kernel alike.
pub fn kernel_category(name: &str, rule: KernelRule) -> &'static str {
    match rule {
        KernelRule::Default => super::family::comparison_category(name, keyword_category(name, rule)),
        KernelRule::Reference => keyword_category(name, rule),
    }
}

/// The category the name's keywords give under `rule`.
fn keyword_category(name: &str, rule: KernelRule) -> &'static str {
    let ours = rule == KernelRule::Default;
    let mut lowered = name.to_lowercase();
    if ours && lowered.contains(LIBRARY_NOT_GEMM) {
        // FBGEMM's namespace names every kernel of the library (embedding
        // lookups, index checks, fp8 casts), GEMM or not: its `gemm` is no
        // sign of one.
        lowered = lowered.replace(LIBRARY_NOT_GEMM, "fb_lib");
    }
    let holds = Holds::of(&lowered);
    let sure = if ours { holds.names_communication() } else { holds.any(List::CommStrong) };
    if sure {
        return "communication";
    }
    // `dma` counts as a word of its own under the default rule, so that
    // CUTLASS's `ThreadMap` (a GEMM's or convolution's) is not memory.
    let memory = if ours {
        holds.any(List::MemoryStrongButDma) || contains_word(name, "dma")
    } else {
        holds.any(List::MemoryStrong)
    };
    if memory {
        return "memory";
    }
    let compute_like = holds.any(List::Compute);
    if holds.any(List::MemoryWeak) && !compute_like {
        return "memory";
    }
    for (i, (category, _)) in CATEGORY_PATTERNS.iter().enumerate() {
        if holds.any(List::Category(i)) || (ours && *category == "norm" && holds.any(List::NormMore)) {
            return category;
        }
    }
    let weak = if ours { COMMUNICATION_WEAK.iter().any(|w| contains_word(name, w)) } else { holds.any(List::CommWeak) };
    if weak && !compute_like {
        return "communication";
    }
    "other"
}

/// The keyword lists a category is decided by.
#[derive(Clone, Copy)]
enum List {
    CommStrong,
    CommNamespaces,
    CommWeak,
    MemoryStrong,
    MemoryStrongButDma,
    MemoryWeak,
    Compute,
    NormMore,
    /// The keywords of `CATEGORY_PATTERNS[i]`.
    Category(usize),
}

impl List {
    const FIXED: [List; 8] = [
        List::CommStrong,
        List::CommNamespaces,
        List::CommWeak,
        List::MemoryStrong,
        List::MemoryStrongButDma,
        List::MemoryWeak,
        List::Compute,
        List::NormMore,
    ];

    fn words(self) -> &'static [&'static str] {
        match self {
            List::CommStrong => COMMUNICATION_STRONG,
            List::CommNamespaces => COMMUNICATION_NAMESPACES,
            List::CommWeak => COMMUNICATION_WEAK,
            List::MemoryStrong => MEMORY_STRONG,
            List::MemoryStrongButDma => &MEMORY_STRONG[..MEMORY_STRONG.len() - 1],
            List::MemoryWeak => MEMORY_WEAK,
            List::Compute => COMPUTE_HINTS,
            List::NormMore => NORM_MORE,
            List::Category(i) => CATEGORY_PATTERNS.get(i).map_or(&[], |c| c.1),
        }
    }

    /// Its place in [`Table::sets`], as [`List::all`] lists it.
    fn index(self) -> usize {
        match self {
            List::CommStrong => 0,
            List::CommNamespaces => 1,
            List::CommWeak => 2,
            List::MemoryStrong => 3,
            List::MemoryStrongButDma => 4,
            List::MemoryWeak => 5,
            List::Compute => 6,
            List::NormMore => 7,
            List::Category(i) => Self::FIXED.len() + i,
        }
    }

    fn all() -> impl Iterator<Item = List> {
        Self::FIXED.into_iter().chain((0..CATEGORY_PATTERNS.len()).map(List::Category))
    }
}

/// Every list's keywords in one automaton, and each list's set of them.
struct Table {
    keywords: Keywords,
    sets: Vec<Hits>,
}

static TABLE: LazyLock<Option<Table>> = LazyLock::new(|| {
    let lists: Vec<&'static [&'static str]> = List::all().map(List::words).collect();
    let keywords = Keywords::new(&lists)?;
    let sets = List::all().map(|l| keywords.set(l.words())).collect();
    Some(Table { keywords, sets })
});

/// What a lowercased name holds of each keyword list: found in one pass,
/// or (should the table not build) searched for list by list.
enum Holds<'a> {
    Found(Hits, &'a [Hits]),
    Search(&'a str),
}

impl<'a> Holds<'a> {
    fn of(lowered: &'a str) -> Self {
        match &*TABLE {
            Some(t) => Holds::Found(t.keywords.hits(lowered), &t.sets),
            None => Holds::Search(lowered),
        }
    }

    /// Whether the name holds any keyword of `list`.
    fn any(&self, list: List) -> bool {
        match self {
            Holds::Found(hits, sets) => sets.get(list.index()).is_some_and(|set| hits.any(*set)),
            Holds::Search(text) => contains_any(text, list.words()),
        }
    }

    /// [`names_communication`] of the name.
    fn names_communication(&self) -> bool {
        self.any(List::CommStrong) || self.any(List::CommNamespaces)
    }
}

/// Whether `word` (lowercase ASCII) occurs in `name`, in any case, as a
/// word of its own: neither the byte before it nor the one after it is a
/// lowercase letter, so `combine` is found in `moe_combine`, `Combine` and
/// `CombineKernel` but not in `combined` or `recombine`.
fn contains_word(name: &str, word: &str) -> bool {
    let (b, w) = (name.as_bytes(), word.as_bytes());
    if w.is_empty() || b.len() < w.len() {
        return false;
    }
    (0..=b.len() - w.len()).any(|i| {
        b[i..i + w.len()].eq_ignore_ascii_case(w)
            && (i == 0 || !b[i - 1].is_ascii_lowercase())
            && b.get(i + w.len()).is_none_or(|c| !c.is_ascii_lowercase())
    })
}

/// The category [`kernel_table_category`] names `name`, as its static
/// text; `None` for a name it never gives.
pub fn known_category(name: &str) -> Option<&'static str> {
    ["communication", "memory", "other"]
        .into_iter()
        .chain(CATEGORY_PATTERNS.iter().map(|(c, _)| *c))
        .find(|c| *c == name)
}

use crate::analysis::text::{mask_hex_addresses as mask_addresses, Masking};

/// The grouping key of a kernel name: whitespace normalized, hex addresses
/// masked, and for `void name(...)` signatures the trailing balanced argument
/// list removed.
pub fn kernel_table_name(name: &str, masking: Masking) -> String {
    let normalized = normalize_text(name);
    let text = if normalized.contains("0x") { mask_addresses(&normalized, masking) } else { normalized.into_owned() };
    if text.starts_with("void ") && text.ends_with(')') {
        let mut depth: i64 = 0;
        for (idx, ch) in text.char_indices().rev() {
            if ch == ')' {
                depth += 1;
            } else if ch == '(' {
                depth -= 1;
                if depth == 0 {
                    return text[..idx].to_string();
                }
            }
        }
    }
    text
}

/// Whitespace-normalized name cut to `max_len` characters (with `...`).
pub fn short_name(name: &str, max_len: usize) -> String {
    let text = normalize_text(name);
    if text.chars().count() <= max_len {
        return text.into_owned();
    }
    let keep = max_len.saturating_sub(3);
    let mut out: String = text.chars().take(keep).collect();
    out.push_str("...");
    out
}

#[cfg(test)]
mod tests {
    use super::{contains_any, Holds, List, TABLE};

    #[test]
    fn one_pass_finds_what_a_search_per_keyword_finds() {
        assert!(TABLE.is_some(), "the keyword table builds");
        for (i, list) in List::all().enumerate() {
            assert_eq!(list.index(), i);
        }
        let names = [
            "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_relu_bf16_32x32_128x2_tn_align8>(T1::Params)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "fbgemm_gpu::embedding_forward_kernel<float>",
            "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
            "flash_fwd_splitkv_kernel",
            "Memcpy DtoH (Device -> Pinned)",
            "deep_ep::intranode::dispatch",
            "rms_norm_kernel",
            "moe_align_block_size_kernel",
            "",
            "ÄÖÜ_gemm_ǅ",
        ];
        for name in names {
            let lowered = name.to_lowercase();
            let found = Holds::of(&lowered);
            let searched = Holds::Search(&lowered);
            for list in List::all() {
                assert_eq!(found.any(list), searched.any(list), "{name}");
                assert_eq!(searched.any(list), contains_any(&lowered, list.words()), "{name}");
            }
        }
    }

    #[test]
    fn device_waits_by_word() {
        for name in ["event_wait", "Stream Wait Event", "waitOnEvent", "wait_kernel", "WAIT"] {
            assert!(names_device_wait(name), "{name}");
        }
        for name in ["await_done", "waiting_room", "gemm_kernel", "ncclDevKernel_Wait", "all_reduce_wait", ""] {
            assert!(!names_device_wait(name), "{name}");
        }
    }

    #[test]
    fn camel_case_words() {
        let words = |w| camel_words(w).collect::<Vec<_>>();
        assert_eq!(words("waitOnEvent"), ["wait", "On", "Event"]);
        assert_eq!(words("WAIT"), ["WAIT"]);
        assert_eq!(words("cudaStreamWaitEvent2"), ["cuda", "Stream", "Wait", "Event2"]);
        assert!(words("").is_empty());
    }

    use super::*;

    #[test]
    fn canonical_names() {
        assert_eq!(kernel_table_name("void foo<int>(int*, float)", Masking::WordStart), "void foo<int>");
        assert_eq!(kernel_table_name("void f(a(b)) ", Masking::WordStart), "void f");
        assert_eq!(kernel_table_name("kernel 0x1aF2 at 0x", Masking::WordStart), "kernel 0xADDR at 0x");
        assert_eq!(kernel_table_name("ncclKernel_X(ncclWorkElem)", Masking::WordStart), "ncclKernel_X(ncclWorkElem)");
        assert_eq!(kernel_table_name("void g)", Masking::WordStart), "void g)");
    }

    #[test]
    fn categories() {
        assert_eq!(kernel_table_category("ncclKernel_AllReduce"), "communication");
        assert_eq!(kernel_table_category("Memcpy HtoD"), "memory");
        assert_eq!(kernel_table_category("copy_gemm"), "gemm");
        assert_eq!(kernel_table_category("void at::native::vectorized_elementwise_kernel"), "elementwise");
        assert_eq!(kernel_table_category("dispatch_thing"), "communication");
        assert_eq!(kernel_table_category("xyz"), "other");
    }

    #[test]
    fn the_default_rule_corrects_the_reference_categories() {
        let both =
            |name: &str| (kernel_category(name, KernelRule::Default), kernel_category(name, KernelRule::Reference));
        // Kernels of real traces: DeepEP's notify step, vLLM's MoE routing,
        // a ROCm group norm.
        assert_eq!(both("void dpsk::ep::internode::cached_notify<false>"), ("communication", "other"));
        assert_eq!(both("_combined_routing_compute"), ("other", "communication"));
        assert_eq!(
            both("void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>"),
            ("norm", "communication")
        );
        // A weak word of its own still counts, in any case.
        for name in ["dispatch_thing", "ep_Combine_step", "BroadcastKernel", "notify_dispatch"] {
            assert_eq!(both(name), ("communication", "communication"), "{name}");
        }
        assert_eq!(both("recombine_rows"), ("other", "communication"));
        // FBGEMM's namespace in a kernel's arguments is no GEMM (a DLRM
        // training trace's embedding lookups and index checks); a GEMM
        // keyword of the kernel's own still is.
        let lookup = "void bounds_check_indices_kernel<long, false>(at::GenericPackedTensorAccessor<long, 1ul, \
                      at::RestrictPtrTraits, int>, int const*, long, fbgemm_gpu::FixedDivisor)";
        assert_eq!(both(lookup), ("other", "gemm"));
        let cast = "void at::native::vectorized_elementwise_kernel<4, fbgemm_gpu::_float_to_hfp8_gpu(at::Tensor \
                    const&, long, long, double)::{lambda(float)#1}, at::detail::Array<char*, 2> >";
        assert_eq!(both(cast), ("quantize", "gemm"));
        assert_eq!(both("void fbgemm_gpu::bf16_fast_gemv_kernel<128>").0, "gemm");
        // The refinements `diff` makes too.
        assert_eq!(both("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_A"), ("gemm", "other"));
        assert_eq!(both("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128> >").0, "attention");
        // `dma` inside a word (CUTLASS's `ThreadMap`) is no copy; a word of
        // its own still is.
        let conv = "void cutlass::Kernel<cutlass_tensorop_s1688fprop_optimized_256x128_32x3_nhwc_align4_ThreadMap>";
        assert_eq!(both(conv), ("gemm", "memory"));
        assert_eq!(both("sdma_copy_kernel").0, "memory");
        assert_eq!(both("rocm_DMA_engine").0, "memory");
        // Everything else is the reference's.
        for name in ["ncclKernel_AllReduce", "Memcpy HtoD", "copy_gemm", "fused_moe_dispatch", "xyz", "rmsnorm"] {
            assert_eq!(both(name).0, both(name).1, "{name}");
        }
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("abcdef", 5), "ab...");
        assert_eq!(short_name("abc", 5), "abc");
        assert_eq!(short_name("ééééééé", 6), "ééé...");
    }
}
