//! Sixteen bytes at a time: where the next quote or backslash is, where the
//! next structural byte of a skipped container is, where whitespace and
//! runs of digits end, and which bytes are not ASCII. SSE2 on x86_64 (every
//! x86_64 CPU has it); a portable word-at-a-time version elsewhere. Each
//! function looks at one 16-byte block and returns a bit mask (bit i: byte
//! i matches), so callers keep their own bounds and error handling.

/// Bytes in one block.
pub const BLOCK: usize = 16;

#[cfg(target_arch = "x86_64")]
use sse2 as imp;
#[cfg(not(target_arch = "x86_64"))]
use swar as imp;

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    #[inline(always)]
    fn load(b: &[u8; 16]) -> __m128i {
        // SAFETY: SSE2 is part of x86_64; the load is unaligned and reads
        // exactly the 16 bytes of `b`.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    #[inline(always)]
    fn eq(v: __m128i, c: u8) -> __m128i {
        // SAFETY: SSE2 is part of x86_64.
        unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)) }
    }

    #[inline(always)]
    fn mask(v: __m128i) -> u32 {
        // SAFETY: SSE2 is part of x86_64.
        unsafe { _mm_movemask_epi8(v) as u32 }
    }

    #[inline(always)]
    fn or(a: __m128i, b: __m128i) -> __m128i {
        // SAFETY: SSE2 is part of x86_64.
        unsafe { _mm_or_si128(a, b) }
    }

    #[inline(always)]
    pub fn quote_or_backslash(b: &[u8; 16]) -> u32 {
        let v = load(b);
        mask(or(eq(v, b'"'), eq(v, b'\\')))
    }

    #[inline(always)]
    pub fn non_ascii(b: &[u8; 16]) -> u32 {
        // The movemask is the high bit of each byte.
        mask(load(b))
    }

    #[inline(always)]
    pub fn whitespace(b: &[u8; 16]) -> u32 {
        let v = load(b);
        mask(or(or(eq(v, b' '), eq(v, b'\n')), or(eq(v, b'\r'), eq(v, b'\t'))))
    }

    #[inline(always)]
    pub fn digits(b: &[u8; 16]) -> u32 {
        let v = load(b);
        // Signed compares: bytes from 0x80 up are negative, never digits.
        // SAFETY: SSE2 is part of x86_64.
        unsafe {
            let lo = _mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8 - 1));
            let hi = _mm_cmplt_epi8(v, _mm_set1_epi8(b'9' as i8 + 1));
            mask(_mm_and_si128(lo, hi))
        }
    }

    #[inline(always)]
    pub fn structural(b: &[u8; 16]) -> u32 {
        let v = load(b);
        // `{` 0x7b and `[` 0x5b differ only in bit 5, as do `}` and `]`.
        // SAFETY: SSE2 is part of x86_64.
        let folded = unsafe { _mm_or_si128(v, _mm_set1_epi8(0x20)) };
        mask(or(eq(v, b'"'), or(eq(folded, b'{'), eq(folded, b'}'))))
    }
}

/// The portable version (tested on every target, used where SSE2 is not).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod swar {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;

    /// High bit of each byte of `x` equal to `c` (exact: no carries).
    #[inline(always)]
    fn eq(x: u64, c: u8) -> u64 {
        let y = x ^ (LO * u64::from(c));
        !(((y & !HI) + !HI) | y) & HI
    }

    /// One bit per byte, in byte order.
    #[inline(always)]
    fn bits(m: u64) -> u32 {
        let mut out = 0;
        for i in 0..8 {
            out |= (((m >> (8 * i + 7)) & 1) as u32) << i;
        }
        out
    }

    #[inline(always)]
    fn halves(b: &[u8; 16], f: impl Fn(u64) -> u64) -> u32 {
        let lo = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let hi = u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
        bits(f(lo)) | bits(f(hi)) << 8
    }

    #[inline(always)]
    pub fn quote_or_backslash(b: &[u8; 16]) -> u32 {
        halves(b, |x| eq(x, b'"') | eq(x, b'\\'))
    }

    #[inline(always)]
    pub fn non_ascii(b: &[u8; 16]) -> u32 {
        halves(b, |x| x & HI)
    }

    #[inline(always)]
    pub fn whitespace(b: &[u8; 16]) -> u32 {
        halves(b, |x| eq(x, b' ') | eq(x, b'\n') | eq(x, b'\r') | eq(x, b'\t'))
    }

    #[inline(always)]
    pub fn digits(b: &[u8; 16]) -> u32 {
        halves(b, |x| {
            // A digit is a byte whose xor with `0` is below 10.
            let y = x ^ (LO * u64::from(b'0'));
            !(((y & !HI) + LO * 0x76) | y) & HI
        })
    }

    #[inline(always)]
    pub fn structural(b: &[u8; 16]) -> u32 {
        halves(b, |x| {
            let f = x | (LO * 0x20);
            eq(x, b'"') | eq(f, b'{') | eq(f, b'}')
        })
    }
}

/// Asks the CPU to bring the cache line holding `buf[at]` into cache ahead
/// of use. Scanning bytes one field at a time leaves few loads in flight,
/// and a CPU's own prefetcher stops at every 4 KiB page, so without this
/// the tokenizer waits on memory at each new page of a mapped file. A hint
/// only: it never faults, and does nothing past the end of `buf`.
#[inline(always)]
pub fn prefetch(buf: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = buf.get(at) {
        // SAFETY: SSE is part of x86_64; a prefetch reads nothing.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(b).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (buf, at);
}

/// The block of `buf` at `i`, when 16 bytes are left.
#[inline(always)]
pub fn block(buf: &[u8], i: usize) -> Option<&[u8; 16]> {
    buf.get(i..i.checked_add(BLOCK)?).and_then(|s| s.try_into().ok())
}

/// Bit i set: byte i is `"` or `\`.
#[inline(always)]
pub fn quote_or_backslash(b: &[u8; 16]) -> u32 {
    imp::quote_or_backslash(b)
}

/// Bit i set: byte i is not ASCII (its high bit is set).
#[inline(always)]
pub fn non_ascii(b: &[u8; 16]) -> u32 {
    imp::non_ascii(b)
}

/// Bit i set: byte i is JSON whitespace (space, `\n`, `\r`, `\t`).
#[inline(always)]
pub fn whitespace(b: &[u8; 16]) -> u32 {
    imp::whitespace(b)
}

/// Bit i set: byte i is an ASCII digit.
#[inline(always)]
pub fn digits(b: &[u8; 16]) -> u32 {
    imp::digits(b)
}

/// Bit i set: byte i is `"`, `{`, `}`, `[` or `]`.
#[inline(always)]
pub fn structural(b: &[u8; 16]) -> u32 {
    imp::structural(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn each_bit(b: &[u8; 16], f: impl Fn(u8) -> bool) -> u32 {
        (0..16).filter(|&i| f(b[i])).fold(0, |m, i| m | 1 << i)
    }

    #[test]
    fn masks_match_a_byte_by_byte_check() {
        // Every byte value in every position, plus random blocks.
        let mut blocks: Vec<[u8; 16]> = (0..=255u8).map(|v| [v; 16]).collect();
        let mut rng = crate::pysem::test_rng(3);
        for _ in 0..20_000 {
            let mut b = [0u8; 16];
            for x in &mut b {
                // Mostly the bytes that matter, some of anything.
                let pick = b" \n\r\t\"\\{}[]:,a0/9:\x7b\x5b\xfb\xdb\xb0\xb9";
                let r = rng();
                *x = if r % 4 == 0 { r as u8 } else { pick[(r >> 8) as usize % pick.len()] };
            }
            blocks.push(b);
        }
        for b in &blocks {
            assert_eq!(swar::quote_or_backslash(b), each_bit(b, |c| c == b'"' || c == b'\\'), "{b:?}");
            assert_eq!(swar::whitespace(b), whitespace(b), "{b:?}");
            assert_eq!(swar::non_ascii(b), non_ascii(b), "{b:?}");
            assert_eq!(non_ascii(b), each_bit(b, |c| !c.is_ascii()), "{b:?}");
            assert_eq!(swar::structural(b), structural(b), "{b:?}");
            assert_eq!(swar::digits(b), digits(b), "{b:?}");
            assert_eq!(digits(b), each_bit(b, |c| c.is_ascii_digit()), "{b:?}");
            assert_eq!(quote_or_backslash(b), each_bit(b, |c| c == b'"' || c == b'\\'), "{b:?}");
            assert_eq!(whitespace(b), each_bit(b, |c| matches!(c, b' ' | b'\n' | b'\r' | b'\t')), "{b:?}");
            assert_eq!(structural(b), each_bit(b, |c| matches!(c, b'"' | b'{' | b'}' | b'[' | b']')), "{b:?}");
        }
    }

    #[test]
    fn block_needs_sixteen_bytes() {
        let buf = [0u8; 20];
        assert!(block(&buf, 4).is_some());
        assert!(block(&buf, 5).is_none());
        assert!(block(&buf, usize::MAX).is_none());
    }
}
