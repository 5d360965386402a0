//! Token bounds for whole-token keyword matching: a text compacted to
//! lower-case ASCII letters and digits, with a bit per byte saying where a
//! token begins and where one ends, and hash-like runs replaced by a
//! separator no keyword holds.

/// Bit `i` of a bit set.
#[inline]
pub(super) fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

fn set(bits: &mut Vec<u64>, i: usize) {
    let w = i / 64;
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    bits[w] |= 1 << (i % 64);
}

/// A token begins at `b[i]` inside a run of letters and digits: at a
/// camel-case hump (`aB`, and `AB` before a lower-case letter, as in
/// `RMSNorm`) or where letters and digits meet.
fn splits(b: &[u8], i: usize) -> bool {
    let (p, c) = (b[i - 1], b[i]);
    (p.is_ascii_lowercase() && c.is_ascii_uppercase())
        || (p.is_ascii_uppercase() && c.is_ascii_uppercase() && b.get(i + 1).is_some_and(u8::is_ascii_lowercase))
        || (p.is_ascii_digit() != c.is_ascii_digit())
}

/// A run of letters and digits that is an identifier nobody writes: 24 or
/// more characters without a camel-case hump (inductor cache files and
/// other base-32 hashes), 12 or more hex digits mixing letters and digits,
/// or a `0x` address.
pub(super) fn looks_like_hash(run: &str) -> bool {
    let b = run.as_bytes();
    let (lower, upper) = (b.iter().any(u8::is_ascii_lowercase), b.iter().any(u8::is_ascii_uppercase));
    let (digit, letter) = (b.iter().any(u8::is_ascii_digit), lower || upper);
    let hex = b.iter().all(u8::is_ascii_hexdigit);
    let address =
        b.len() > 2 && (b.starts_with(b"0x") || b.starts_with(b"0X")) && b[2..].iter().all(u8::is_ascii_hexdigit);
    (b.len() >= 24 && !(lower && upper)) || (b.len() >= 12 && hex && digit && letter) || address
}

/// A kernel name without its parenthesized parts: parameter lists and the
/// casts of template values, such as `(vllm::Fp8KVCacheDataType)0`, which
/// name a type the kernel was *not* instantiated with as often as one it
/// was. An unclosed parenthesis keeps the rest.
pub(super) fn without_parens(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains('(') {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut open_at = 0usize;
    for (i, c) in name.char_indices() {
        match c {
            '(' => {
                if depth == 0 {
                    open_at = i;
                }
                depth += 1;
                if depth == 1 {
                    out.push(' ');
                }
            }
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    if depth > 0 {
        out.push_str(&name[open_at..]);
    }
    std::borrow::Cow::Owned(out)
}

/// Where the tokens of a run begin, as byte offsets into the run, with
/// the words of an enum or type name (`FusedQuantEnum`,
/// `Fp8KVCacheDataType`: capitalized words and digit groups ending in
/// `Enum` or `Type`) taken as one token: such names appear in kernel names
/// as the types of template values, which say nothing of what the kernel
/// does (`Rmsnorm2dFusedQuantEnum` 0 is a norm without quantization).
fn token_starts(b: &[u8]) -> Vec<usize> {
    let mut starts: Vec<usize> = (0..b.len()).filter(|&i| i == 0 || splits(b, i)).collect();
    let token = |k: usize, starts: &[usize]| &b[starts[k]..starts.get(k + 1).copied().unwrap_or(b.len())];
    let mut k = starts.len();
    while k > 1 {
        k -= 1;
        if !matches!(token(k, &starts), b"Enum" | b"Type") {
            continue;
        }
        let mut first = k;
        while first > 0 {
            let t = token(first - 1, &starts);
            if t[0].is_ascii_uppercase() || t.iter().all(u8::is_ascii_digit) {
                first -= 1;
            } else {
                break;
            }
        }
        // A name begins with a word, not with a digit group (`18Fp8…`).
        while first < k && token(first, &starts).iter().all(u8::is_ascii_digit) {
            first += 1;
        }
        if first < k {
            starts.drain(first + 1..=k);
            k = first;
        }
    }
    starts
}

/// `text` compacted (runs of ASCII letters and digits, lower-cased and
/// joined), with the bits of token starts and token ends.
pub(super) fn compact_with_bounds(text: &str) -> (String, Vec<u64>, Vec<u64>) {
    let mut out = String::with_capacity(text.len());
    let (mut starts, mut ends) = (Vec::new(), Vec::new());
    for run in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|r| !r.is_empty()) {
        if looks_like_hash(run) {
            out.push(' ');
            continue;
        }
        let b = run.as_bytes();
        let base = out.len();
        for (k, &at) in token_starts(b).iter().enumerate() {
            set(&mut starts, base + at);
            if k > 0 {
                set(&mut ends, base + at);
            }
        }
        out.extend(b.iter().map(|c| c.to_ascii_lowercase() as char));
        set(&mut ends, out.len());
    }
    (out, starts, ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let (c, starts, ends) = compact_with_bounds(text);
        let mut out = Vec::new();
        let mut from = None;
        for i in 0..=c.len() {
            if bit(&ends, i) {
                if let Some(f) = from.take() {
                    out.push(c[f..i].to_string());
                }
            }
            if i < c.len() && bit(&starts, i) {
                from = Some(i);
            }
        }
        out
    }

    #[test]
    fn tokens_split_at_separators_humps_and_digits() {
        assert_eq!(tokens("FusedAddRMSNormKernel<8>"), ["fused", "add", "rms", "norm", "kernel", "8"]);
        assert_eq!(tokens("triton_poi_fused_add_0"), ["triton", "poi", "fused", "add", "0"]);
        assert_eq!(tokens("sm90_xmma_gemm_bf16"), ["sm", "90", "xmma", "gemm", "bf", "16"]);
        assert_eq!(tokens("cunn_SoftMaxForward"), ["cunn", "soft", "max", "forward"]);
    }

    #[test]
    fn parenthesized_parts_are_dropped() {
        let name = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, (vllm::Fp8KVCacheDataType)0>";
        assert_eq!(without_parens(name), "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16,  0>");
        assert_eq!(without_parens("nccl(ncclDevComm*, (a)b) tail"), "nccl  tail");
        assert_eq!(without_parens("f(unclosed"), "f (unclosed");
        assert_eq!(without_parens("plain"), "plain");
    }

    #[test]
    fn enum_and_type_names_are_one_token() {
        assert_eq!(tokens("Rmsnorm2dFusedQuantEnumE0"), ["rmsnorm", "2", "d", "fusedquantenum", "e", "0"]);
        assert_eq!(tokens("N4vllm18Fp8KVCacheDataTypeE0"), ["n", "4", "vllm", "18", "fp8kvcachedatatype", "e", "0"]);
        assert_eq!(tokens("GemmType"), ["gemmtype"]);
        assert_eq!(tokens("Type"), ["type"]);
        assert_eq!(tokens("FlashAttnFwdSm90"), ["flash", "attn", "fwd", "sm", "90"]);
    }

    #[test]
    fn hashes_are_left_out() {
        let cache = "/tmp/torchinductor_root/ar/carusmwkjwrr7cq4fq2xk6ayzzjvjgmv5z3yv5gt3dbh4urqbctnk.py:12 call";
        assert_eq!(tokens(cache), ["tmp", "torchinductor", "root", "ar", "py", "12", "call"]);
        assert!(looks_like_hash("7f3a9b2c4d5e"));
        assert!(looks_like_hash("0x7f3a"));
        assert!(!looks_like_hash("bf16bf16"));
        assert!(!looks_like_hash("MergedColumnParallelLinear"));
        assert!(!looks_like_hash("tilesize128x256x64"));
    }
}
