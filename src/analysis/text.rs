//! Text rules shared by the kernel and overlap analyses: hex-address
//! masking of kernel and frame names, and the compacted match form and alias
//! token groups of the relaxed kernel lookups.
//!
//! The reference masks every `0x` followed by hex digits, which also eats the
//! `0x64` inside tile shapes such as `MT192x160x64` (turning it into
//! `MT192x160xADDR` and merging kernels that differ only in tile size). We
//! mask only a `0x` that starts a word (not preceded by a letter, digit or
//! `_`), a deviation listed in docs/deviations.md. The reference's rule can
//! be switched back on for parity checks against its output.

/// Which `0x` + hex digits count as an address to mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Masking {
    /// Only a `0x` that starts a word (the default).
    #[default]
    WordStart,
    /// Every `0x` + hex digits, as the reference does (for parity checks).
    Reference,
}

/// Replaces each hex address (`0x` + hex digits) with `0xADDR`.
pub fn mask_hex_addresses(text: &str, masking: Masking) -> String {
    let anywhere = masking == Masking::Reference;
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i + 2 < b.len() {
        let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i] == b'0' && b[i + 1] == b'x' && b[i + 2].is_ascii_hexdigit() && (anywhere || starts_word) {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            out.push_str(&text[copied..i]);
            out.push_str("0xADDR");
            copied = j;
            i = j;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Only the ASCII letters and digits of the normalized text, lowercased:
/// the form kernel names and locations are compared in by the relaxed
/// lookups.
pub fn normalize_match_text(text: &str) -> String {
    crate::pysem::normalize_text(text)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The alias token groups, in the order they are tried.
const ALIAS_GROUPS: [&[&str]; 4] = [
    &["flashattnfwdsm90", "flashattnvarlenfunc", "vllmflashattnflashattninterface", "vllmfa3cfwd"],
    &["maskedmultiheadattentionkernel", "attentioninplace", "attentionbackendtrtllm"],
    &["fusedqknormropekernel", "applyqknormrope", "modelingqwen3py98applyqknormrope"],
    &["memset"],
];

/// Which [`alias_token_groups`] a kernel name has, as bits (group `i` is
/// bit `i`): the alias pass depends on the name only through these.
pub fn alias_group_mask(kernel_name: &str) -> u8 {
    let lowered = normalize_match_text(kernel_name);
    let tests = [
        lowered.contains("flashattnfwdcombine"),
        lowered.contains("kernelmha"),
        lowered.contains("applybiasropeupdatekvcachev2"),
        lowered.starts_with("memset"),
    ];
    tests.iter().enumerate().filter(|(_, &hit)| hit).fold(0, |mask, (i, _)| mask | 1 << i)
}

/// The groups of a [`alias_group_mask`], in order.
pub fn alias_groups_of(mask: u8) -> Vec<&'static [&'static str]> {
    ALIAS_GROUPS.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, g)| *g).collect()
}

/// Token groups that identify the launcher of kernels whose names say
/// little about where they come from (the same kernel family under other
/// names on other backends).
pub fn alias_token_groups(kernel_name: &str) -> Vec<&'static [&'static str]> {
    alias_groups_of(alias_group_mask(kernel_name))
}

/// Score of a candidate's match text against alias token groups: for each
/// group with a token in `text`, 1000 × (group rank) plus the longest such
/// token's length; 0 when no group matches.
pub fn alias_score(groups: &[&[&str]], text: &str) -> i64 {
    let mut score: i64 = 0;
    for (i, group) in groups.iter().enumerate() {
        let group_score = group.iter().filter(|t| text.contains(*t)).map(|t| t.len()).max().unwrap_or(0);
        if group_score > 0 {
            score += 1000 * (i as i64 + 1) + group_score as i64;
        }
    }
    score
}

/// Score of a long templated kernel name `cand` against `compact` (both in
/// match form): their common prefix length, plus 32 for two FlashAttention
/// cutlass kernels; `None` when `cand` is shorter than 96 or the common prefix
/// is under 64 or under 40 % of the shorter name.
pub fn long_prefix_score(compact: &str, cand: &str) -> Option<usize> {
    if cand.len() < 96 {
        return None;
    }
    let prefix = compact.bytes().zip(cand.bytes()).take_while(|(x, y)| x == y).count();
    let shorter = compact.len().min(cand.len());
    if prefix < 64 || prefix < (shorter as f64 * 0.4) as usize {
        return None;
    }
    const FLASH: &str = "voidcutlassdevicekernelflash";
    let bonus = if compact.starts_with(FLASH) && cand.starts_with(FLASH) { 32 } else { 0 };
    Some(prefix + bonus)
}

/// The first key with the highest score, skipping keys scored `None`.
fn first_best_key<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    score: impl Fn(&str) -> Option<usize>,
) -> Option<&'k str> {
    let mut best: Option<(&'k str, usize)> = None;
    for key in keys {
        let Some(s) = score(key) else { continue };
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((key, s));
        }
    }
    best.map(|(k, _)| k)
}

/// The relaxed lookup's first pass: the key whose lowercase form is a
/// prefix of the lowercase name or has it as a prefix (scored by the
/// shorter length in characters), else contains it or is contained in it
/// (half that); first on ties.
pub fn best_substring_key<'k>(keys: impl IntoIterator<Item = &'k str>, name: &str) -> Option<&'k str> {
    let lowered = name.to_lowercase();
    let lowered_len = lowered.chars().count();
    first_best_key(keys, |key| {
        let cand = key.to_lowercase();
        let shorter = cand.chars().count().min(lowered_len);
        if cand.starts_with(&lowered) || lowered.starts_with(&cand) {
            Some(shorter)
        } else if cand.contains(&lowered) || lowered.contains(&cand) {
            Some(shorter / 2)
        } else {
            None
        }
    })
}

/// The relaxed lookup's second pass: the key with the best
/// [`long_prefix_score`] against `compact` (the name in match form); first
/// on ties.
pub fn best_long_prefix_key<'k>(keys: impl IntoIterator<Item = &'k str>, compact: &str) -> Option<&'k str> {
    first_best_key(keys, |key| long_prefix_score(compact, &normalize_match_text(key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_passes_keep_the_first_best_key() {
        // Prefix matches score the shorter length (4 for both), first wins.
        assert_eq!(best_substring_key(["gemm_a", "GEMM", "xgemmx", "other"], "gemm"), Some("gemm_a"));
        assert_eq!(best_substring_key(["xgemmx", "GEMM"], "gemm"), Some("GEMM"));
        assert_eq!(best_substring_key(["xgemmx", "gemmy"], "gemm"), Some("gemmy"));
        assert_eq!(best_substring_key(["xgemmx", "ygemmy"], "gemm"), Some("xgemmx"));
        assert_eq!(best_substring_key(["other"], "gemm"), None);
        let long = "void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>>, cutlass::bfloat16_t>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>>>>>(int)";
        let compact = normalize_match_text(long);
        assert_eq!(best_long_prefix_key(["short", long], &compact), Some(long));
        assert_eq!(best_long_prefix_key(["short"], &compact), None);
    }

    #[test]
    fn masks_addresses_but_not_tile_shapes() {
        assert_eq!(mask_hex_addresses("method at 0x7f3a2c>", Masking::WordStart), "method at 0xADDR>");
        assert_eq!(mask_hex_addresses("k 0x7f12 0x 0xg", Masking::WordStart), "k 0xADDR 0x 0xg");
        assert_eq!(mask_hex_addresses("0x0x1", Masking::WordStart), "0xADDRx1");
        assert_eq!(mask_hex_addresses("0xADDR", Masking::WordStart), "0xADDRR");
        // The reference would give MT192x160xADDR and MT160xADDRx64 here.
        assert_eq!(mask_hex_addresses("Cijk_MT192x160x64_MI16", Masking::WordStart), "Cijk_MT192x160x64_MI16");
        assert_eq!(mask_hex_addresses("MT160x128x64", Masking::WordStart), "MT160x128x64");
        let r = Masking::Reference;
        assert_eq!(mask_hex_addresses("Cijk_MT192x160x64_MI16", r), "Cijk_MT192x160xADDR_MI16");
        assert_eq!(mask_hex_addresses("method at 0x7f3a2c>", r), "method at 0xADDR>");
    }
}
