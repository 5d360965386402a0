//! Kernel detection for the overlap analysis. This module's detector,
//! categories and name canonicalization are its own (broader detector,
//! five coarse categories, "void f(args)" trimmed to "void f") and must not
//! be confused with the kernel-table module's versions.

use crate::analysis::kernels::names::{kernel_category, KernelRule};
use crate::columns::{KernelRow, Trace};
use crate::pysem::normalize_text;

pub const COMMUNICATION_STRONG: &[&str] = &[
    "allreduce",
    "all_reduce",
    "reduce_scatter",
    "allgather",
    "all_gather",
    "nccl",
    "cross_device_reduce",
    "deepep",
    "a2a",
    "alltoall",
    "allreduce_fusion",
    "mooncake",
];
pub const COMMUNICATION_WEAK: &[&str] = &["broadcast", "dispatch", "combine"];
pub const MEMORY_STRONG: &[&str] = &["memcpy", "memset", "dma", "prefetch"];
pub const MEMORY_WEAK: &[&str] = &["fill", "copy"];
pub const ELEMENTWISE: &[&str] = &[
    "sigmoid",
    "silu",
    "gelu",
    "relu",
    "softmax",
    "layernorm",
    "rmsnorm",
    "norm",
    "rotary",
    "rope",
    "topk",
    "gate",
    "bias",
    "_cast",
    "index",
    "gather",
    "scatter",
    "masked",
    "elementwise",
    "activation",
];
pub const COMPUTE: &[&str] = &[
    "cublas",
    "cudnn",
    "cutlass",
    "triton",
    "gemm",
    "gemv",
    "matmul",
    "grouped_mm",
    "flash",
    "attention",
    "fmha",
    "marlin",
    "fused_moe",
    "moe_kernel",
    "groupgemm",
    "mma",
    "wgmma",
    "conv",
    "bmm",
    "mm_kernel",
];

/// Name prefixes that mark a stream-tagged event as GPU work.
const KERNEL_NAME_PREFIXES: &[&str] = &["void ", "ampere_", "sm80_", "sm90_"];

pub fn contains_any(text: &str, keywords: &[&str]) -> bool {
    keywords.iter().any(|k| text.contains(k))
}

/// Any of the communication, memory or compute hint words.
fn has_kernel_name_hint(lowered: &str) -> bool {
    [COMMUNICATION_STRONG, COMMUNICATION_WEAK, MEMORY_STRONG, MEMORY_WEAK, COMPUTE]
        .iter()
        .any(|list| contains_any(lowered, list))
}

/// The coarse bucket of a kernel: memory and communication beat compute,
/// compute beats elementwise, and the weak memory / communication words only
/// count when nothing compute-like is in the name.
pub fn overlap_category(name: &str) -> &'static str {
    let lowered = name.to_lowercase();
    let compute_like = contains_any(&lowered, COMPUTE);
    if contains_any(&lowered, MEMORY_STRONG) {
        "memory"
    } else if contains_any(&lowered, COMMUNICATION_STRONG) {
        "communication"
    } else if compute_like {
        "compute"
    } else if contains_any(&lowered, ELEMENTWISE) {
        "elementwise"
    } else if contains_any(&lowered, MEMORY_WEAK) {
        "memory"
    } else if contains_any(&lowered, COMMUNICATION_WEAK) {
        "communication"
    } else {
        "other"
    }
}

/// [`overlap_category`], refined under [`KernelRule::Default`]: a kernel
/// the kernel table names a GEMM or attention kernel (ROCm's Tensile
/// `Cijk_…` GEMMs, whose `_Bias_` reads as elementwise; FlashAttention) is
/// compute, the work the others overlap with, not an elementwise or other
/// candidate for overlap. Memory and communication kernels keep their
/// bucket.
pub fn overlap_category_by(name: &str, rule: KernelRule) -> &'static str {
    let coarse = overlap_category(name);
    match (rule, coarse) {
        (KernelRule::Default, "elementwise" | "other")
            if matches!(kernel_category(name, KernelRule::Default), "gemm" | "attention") =>
        {
            "compute"
        }
        _ => coarse,
    }
}

pub use crate::analysis::text::{mask_hex_addresses, Masking};

/// The kernel name used to group launches: whitespace-normalized, hex
/// addresses masked, and for `void f(args)` the argument list dropped.
pub fn overlap_kernel_name(name: &str, masking: Masking) -> String {
    let mut name = mask_hex_addresses(&normalize_text(name), masking);
    if name.starts_with("void ") && name.ends_with(')') {
        let mut depth: i64 = 0;
        let mut split = None;
        for (i, c) in name.bytes().enumerate().rev() {
            if c == b')' {
                depth += 1;
            } else if c == b'(' {
                depth -= 1;
                if depth == 0 {
                    split = Some(i);
                    break;
                }
            }
        }
        if let Some(i) = split {
            name.truncate(i);
        }
    }
    name
}

/// `short_name`: normalized text cut to `max_len` code points, the last
/// three replaced by `...` when cut.
pub fn short_name(name: &str, max_len: usize) -> String {
    let name = normalize_text(name);
    let n = name.chars().count();
    if n <= max_len {
        return name.into_owned();
    }
    let keep = max_len.saturating_sub(3);
    let mut out: String = name.chars().take(keep).collect();
    out.push_str("...");
    out
}

/// True for names that look like Python frames (`x.py(`, `python/...`,
/// `nn.Module: ...`).
pub fn looks_like_python_scope_name(name: &str) -> bool {
    let lowered = normalize_text(name).to_lowercase();
    lowered.contains(".py(") || lowered.starts_with("python/") || lowered.starts_with("nn.module:")
}

/// Whether a kernel-like row counts as GPU work for the overlap analysis.
/// The column builder has already required a complete duration, a
/// non-metadata name, a category other than python_function / cpu_op /
/// trace / annotation, and a kernel-ish category or a stream marker; this
/// adds the rest: a kernel-ish category wins outright, otherwise the row
/// needs a stream marker and a kernel-looking name that is not a Python
/// frame.
pub fn is_kernel_event(trace: &Trace, row: &KernelRow) -> bool {
    let cat = normalize_text(trace.s(row.cat)).to_lowercase();
    if cat.contains("kernel") || cat.starts_with("gpu_") {
        return true;
    }
    let name = trace.s(row.name);
    if looks_like_python_scope_name(name) {
        return false;
    }
    if !row.has_stream_marker {
        return false;
    }
    let lowered = normalize_text(name).to_lowercase();
    KERNEL_NAME_PREFIXES.iter().any(|p| lowered.starts_with(p)) || has_kernel_name_hint(&lowered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_follow_precedence() {
        assert_eq!(overlap_category("ncclKernel_AllReduce"), "communication");
        assert_eq!(overlap_category("Memcpy HtoD"), "memory");
        assert_eq!(overlap_category("void cutlass::Kernel<gemm>"), "compute");
        assert_eq!(overlap_category("fused_rmsnorm"), "elementwise");
        assert_eq!(overlap_category("fill_kernel"), "memory");
        assert_eq!(overlap_category("copy_gemm"), "compute");
        let tensile = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1";
        assert_eq!(overlap_category(tensile), "elementwise");
        assert_eq!(overlap_category_by(tensile, KernelRule::Reference), "elementwise");
        assert_eq!(overlap_category_by(tensile, KernelRule::Default), "compute");
        for (name, coarse) in [("fused_rmsnorm", "elementwise"), ("ncclDevKernel_AllReduce", "communication")] {
            assert_eq!(overlap_category_by(name, KernelRule::Default), coarse);
        }
        assert_eq!(overlap_category("dispatch_tokens"), "communication");
        assert_eq!(overlap_category("mystery"), "other");
    }

    #[test]
    fn canonical_names() {
        assert_eq!(overlap_kernel_name("void foo<int>(float*, int)", Masking::WordStart), "void foo<int>");
        assert_eq!(overlap_kernel_name("void f(a(b))", Masking::WordStart), "void f");
        assert_eq!(overlap_kernel_name("k 0x7f12 0x 0xg", Masking::WordStart), "k 0xADDR 0x 0xg");
        assert_eq!(overlap_kernel_name("  a   b ", Masking::WordStart), "a b");
        assert_eq!(mask_hex_addresses("0x0x1", Masking::WordStart), "0xADDRx1");
        assert_eq!(mask_hex_addresses("0xADDR", Masking::WordStart), "0xADDRR");
        assert_eq!(overlap_kernel_name("void g)", Masking::WordStart), "void g)");
    }

    #[test]
    fn short_names_count_code_points() {
        assert_eq!(short_name("abcdef", 5), "ab...");
        assert_eq!(short_name("abcde", 5), "abcde");
        assert_eq!(short_name("ééééé", 4), "é...");
    }
}
