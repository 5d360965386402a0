//! A kernel's category for comparing runs: the reference's keyword
//! category ([`kernel_table_category`](super::names::kernel_table_category))
//! refined where its keywords miss kernels that other GPU vendors and
//! libraries name differently: ROCm's Tensile and skinny GEMMs,
//! FlashAttention and Triton attention kernels (`attn_fwd`; which the reference files
//! under `gemm` or `other`), and Inductor's fused RMSNorm. The kernel
//! table's default rule applies it too
//! ([`KernelRule::Default`](super::names::KernelRule::Default)).

/// Refines `category` (the kernel table's category of `name`).
pub fn comparison_category(name: &str, category: &'static str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    let has = |k: &str| lower.contains(k);
    if has("flashattn")
        || has("flash::")
        || has("flash_fwd")
        || has("flash_bwd")
        || has("unified_attention")
        || has("attn_fwd")
        || has("attn_bwd")
        || lower.starts_with("_fwd_kernel")
    {
        return "attention";
    }
    if lower.starts_with("cijk_") || has("wvsplitk") || has("splitkreduce") || has("hipblaslt") || has("rocblas") {
        return "gemm";
    }
    if lower.starts_with("triton_") && has("rsqrt") && (has("mean") || has("pow")) {
        return "norm";
    }
    category
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::kernels::names::kernel_table_category;

    fn refined(name: &str) -> &'static str {
        comparison_category(name, kernel_table_category(name))
    }

    #[test]
    fn vendor_gemms_are_gemms() {
        let tensile = "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT192x16x128_MI16x16x1_SN_LDSB1";
        assert_eq!(kernel_table_category(tensile), "other");
        assert_eq!(refined(tensile), "gemm");
        assert_eq!(refined("Cijk_SB_BiasS_HAS_ScaleAlphaVec_PostGSU8_VW4"), "gemm");
        assert_eq!(refined("void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>"), "gemm");
        assert_eq!(refined("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_cublas"), "gemm");
    }

    #[test]
    fn attention_kernels_are_attention() {
        let fa3 = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<2> > >";
        assert_eq!(kernel_table_category(fa3), "gemm");
        assert_eq!(refined(fa3), "attention");
        assert_eq!(refined("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128> >"), "attention");
        assert_eq!(refined("_fwd_kernel"), "attention");
        // Triton's flash attention (ROCm's and the tutorial's).
        assert_eq!(kernel_table_category("attn_fwd"), "other");
        assert_eq!(refined("attn_fwd"), "attention");
        assert_eq!(refined("_attn_bwd_dq"), "attention");
        assert_eq!(refined("void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16>"), "attention");
    }

    #[test]
    fn inductor_rms_norm_is_norm_and_the_rest_is_unchanged() {
        assert_eq!(refined("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2"), "norm");
        assert_eq!(refined("triton_poi_fused_mul_silu_1"), "activation");
        assert_eq!(refined("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), "communication");
        assert_eq!(refined("triton_poi_fused_cat_0"), kernel_table_category("triton_poi_fused_cat_0"));
    }
}
