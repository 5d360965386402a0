//! Measures what a simdjson-style structural pre-pass would cost on one
//! plain trace, for docs/architecture.md: per 64-byte block, the masks of
//! quotes, backslashes and structural bytes (`{ } [ ] : ,`), the quotes
//! that a backslash escapes, the in-string mask by prefix XOR, and the
//! structural bytes outside strings; with `--index`, also their positions
//! written to a reused buffer, as an event parser that jumps between fields
//! would read them; with `--prefetch`, each block also asks for the bytes
//! 1 KiB ahead (the CPU's own prefetcher stops at every 4 KiB page). One
//! core, SSE2 (x86_64 only); the file is mapped and read in once before the
//! passes are timed, so the times are the pass's own.
//!
//! Usage: structural_pass FILE [--index] [--prefetch] [--passes N]

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::time::Instant;

    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};

    /// The 64 bytes of a block as four SSE2 vectors, loaded once.
    #[inline(always)]
    fn load(block: &[u8; 64]) -> [__m128i; 4] {
        // SAFETY: SSE2 is part of x86_64; each load reads 16 bytes of `block`,
        // unaligned.
        std::array::from_fn(|k| unsafe { _mm_loadu_si128(block[16 * k..].as_ptr().cast()) })
    }

    /// The 64-bit mask of four 16-byte compare results.
    #[inline(always)]
    fn mask(parts: [__m128i; 4]) -> u64 {
        // SAFETY: SSE2 is part of x86_64.
        parts.iter().enumerate().fold(0, |m, (k, &p)| m | u64::from(unsafe { _mm_movemask_epi8(p) } as u32) << (16 * k))
    }

    /// Bit i set when byte i of the block is `c`.
    #[inline(always)]
    fn eq_mask(v: &[__m128i; 4], c: u8) -> u64 {
        // SAFETY: SSE2 is part of x86_64.
        mask(v.map(|x| unsafe { _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8)) }))
    }

    /// Bit i set when byte i is one of `{ } [ ] : ,`.
    #[inline(always)]
    fn structural_mask(v: &[__m128i; 4]) -> u64 {
        // SAFETY: SSE2 is part of x86_64. `[` and `{` differ only in bit 5, as
        // do `]` and `}`.
        mask(v.map(|x| unsafe {
            let folded = _mm_or_si128(x, _mm_set1_epi8(0x20));
            let braces = _mm_or_si128(
                _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)),
                _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)),
            );
            let punct = _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b':' as i8)),
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b',' as i8)),
            );
            _mm_or_si128(braces, punct)
        }))
    }

    /// Bit i set when an odd number of set bits are at or below i.
    #[inline(always)]
    fn prefix_xor(mut x: u64) -> u64 {
        for shift in [1, 2, 4, 8, 16, 32] {
            x ^= x << shift;
        }
        x
    }

    /// State carried from one block to the next.
    #[derive(Default)]
    struct Carry {
        /// The last block ended inside a string (all ones) or not (zero).
        in_string: u64,
        /// The last block ended with an odd run of backslashes.
        odd_backslash: u64,
    }

    /// Structural bytes outside strings, plus the quotes that open and close
    /// them, of one block.
    #[inline(always)]
    fn structurals(block: &[u8; 64], carry: &mut Carry) -> u64 {
        let v = load(block);
        let backslash = eq_mask(&v, b'\\');
        let escaped = if backslash == 0 && carry.odd_backslash == 0 {
            0
        } else {
            // Bytes after an odd run of backslashes (simdjson's even/odd
            // carries).
            const EVEN: u64 = 0x5555_5555_5555_5555;
            let starts = backslash & !(backslash << 1) & !carry.odd_backslash;
            let even_ends = backslash.wrapping_add(starts & EVEN) & !backslash;
            let (odd, overflow) = backslash.overflowing_add(starts & !EVEN);
            carry.odd_backslash = u64::from(overflow);
            let odd_ends = (odd | carry.odd_backslash) & !backslash;
            (even_ends & !EVEN) | (odd_ends & EVEN)
        };
        let quotes = eq_mask(&v, b'"') & !escaped;
        let inside = prefix_xor(quotes) ^ carry.in_string;
        carry.in_string = ((inside as i64) >> 63) as u64;
        (structural_mask(&v) & !inside) | quotes
    }

    /// How far ahead `--prefetch` asks for the bytes to come.
    const PREFETCH_AHEAD: usize = 1024;

    /// One pass over `buf`: the number of structural positions found.
    fn pass(buf: &[u8], index: bool, prefetch: bool, positions: &mut Vec<u32>) -> u64 {
        let mut carry = Carry::default();
        let mut found = 0u64;
        positions.clear();
        for (b, block) in buf.chunks_exact(64).enumerate() {
            let Ok(block) = <&[u8; 64]>::try_from(block) else { continue };
            if prefetch {
                // SAFETY: a prefetch never faults, wherever it points.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        block.as_ptr().wrapping_add(PREFETCH_AHEAD).cast(),
                    )
                };
            }
            let mut bits = structurals(block, &mut carry);
            if !index {
                found += u64::from(bits.count_ones());
                continue;
            }
            let base = (b * 64) as u32;
            while bits != 0 {
                positions.push(base.wrapping_add(bits.trailing_zeros()));
                bits &= bits - 1;
            }
            if positions.len() >= (1 << 20) - 64 {
                found += positions.len() as u64;
                positions.clear();
            }
        }
        found + positions.len() as u64
    }

    pub fn main() {
        let mut args = std::env::args().skip(1);
        let (mut path, mut index, mut passes, mut prefetch) = (None, false, 3, false);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--index" => index = true,
                "--prefetch" => prefetch = true,
                "--passes" => passes = args.next().and_then(|n| n.parse().ok()).unwrap_or(3),
                _ => path = Some(a),
            }
        }
        let Some(path) = path else {
            eprintln!("usage: structural_pass FILE [--index] [--prefetch] [--passes N]");
            std::process::exit(2);
        };
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: the file is only read, and not changed while mapped.
        let map =
            unsafe { memmap2::MmapOptions::new().populate().map(&file) }.unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut positions = Vec::with_capacity(1 << 20);
        for _ in 0..passes {
            let t = Instant::now();
            let found = pass(&map, index, prefetch, &mut positions);
            let s = t.elapsed().as_secs_f64();
            println!(
                "{} bytes, {found} structural positions{}, {s:.3} s, {:.2} GB/s",
                map.len(),
                if index { " written" } else { " counted" },
                map.len() as f64 / s / 1e9
            );
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn finds_structure_outside_strings_only() {
            let mut text = br#"{"a": "x,{\"}", "b": [1, 2]}"#.to_vec();
            text.resize(64, b' ');
            let bits = structurals(text[..].try_into().unwrap(), &mut Carry::default());
            let found: Vec<u8> = (0..64).filter(|i| bits >> i & 1 == 1).map(|i| text[i]).collect();
            assert_eq!(found, b"{\"\":\"\",\"\":[,]}".to_vec());
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    x86::main();
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("structural_pass measures an x86_64 SSE2 pass");
    std::process::exit(2);
}
