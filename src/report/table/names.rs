//! Kernel and location names as the table shows them: mangled C++ and Rust
//! symbols demangled, a long demangled signature's argument list dropped,
//! control characters made visible, and names too long for their column
//! shortened in the middle (head and tail kept, `…` between).

/// A demangled signature longer than this many characters is shown
/// without its argument list.
const LONG_SIGNATURE: usize = 60;

/// The symbol demangled, or `None` when it is not a mangled C++ (`_Z…`) or
/// Rust (`_R…`, `_ZN…17h<hash>E`) name or does not demangle.
pub fn demangle(name: &str) -> Option<String> {
    let sym = name.strip_prefix('_').filter(|_| name.starts_with("__Z")).unwrap_or(name);
    if sym.starts_with("_R") || is_legacy_rust(sym) {
        if let Ok(d) = rustc_demangle::try_demangle(sym) {
            return Some(format!("{d:#}"));
        }
    }
    if !sym.starts_with("_Z") {
        return None;
    }
    demangle_cpp(sym).or_else(|| {
        // Template parameter declarations (`Ty`, `Tn <type>`, newer
        // compilers' C++20 manglings) are not understood by the demangler:
        // read the name without them (a `Tn`'s type then shows as one more
        // template argument).
        let positions: Vec<usize> = sym.match_indices("Tn").chain(sym.match_indices("Ty")).map(|(i, _)| i).collect();
        if positions.is_empty() || positions.len() > 16 {
            return None;
        }
        let without = |drop: &[usize]| -> String {
            let mut out = String::with_capacity(sym.len());
            let mut i = 0;
            for &p in drop {
                out.push_str(&sym[i..p]);
                i = p + 2;
            }
            out.push_str(&sym[i..]);
            out
        };
        let mut all = positions.clone();
        all.sort_unstable();
        demangle_cpp(&without(&all)).or_else(|| positions.iter().find_map(|&p| demangle_cpp(&without(&[p]))))
    })
}

fn demangle_cpp(sym: &str) -> Option<String> {
    let symbol = cpp_demangle::Symbol::new(sym.as_bytes()).ok()?;
    let text = symbol.demangle().ok()?;
    (!text.is_empty() && text != sym).then_some(text)
}

/// `_ZN…17h<16 hex digits>E`: the legacy Rust mangling.
fn is_legacy_rust(sym: &str) -> bool {
    let Some(body) = sym.strip_prefix("_ZN").and_then(|s| s.strip_suffix('E')) else { return false };
    body.len() > 19 && {
        let tail = &body[body.len() - 19..];
        tail.starts_with("17h") && tail[3..].chars().all(|c| c.is_ascii_hexdigit())
    }
}

/// A function signature without its trailing argument list:
/// `void f<int>(int*, float)` becomes `void f<int>(…)`. Unchanged when the
/// name does not end in a balanced `(...)` after some text.
pub fn drop_arguments(name: &str) -> String {
    if !name.ends_with(')') {
        return name.to_string();
    }
    let mut depth = 0usize;
    for (i, c) in name.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return if i == 0 || name[..i].ends_with(' ') {
                        name.to_string()
                    } else {
                        format!("{}(…)", &name[..i])
                    };
                }
            }
            _ => {}
        }
    }
    name.to_string()
}

/// Control and bidirectional formatting characters (which could corrupt
/// the terminal or reorder the line) as `\uXXXX`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if crate::report::is_hidden_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A kernel name for display: demangled when mangled (the argument list
/// of a long signature dropped), without the `void ` every CUDA kernel's
/// signature starts with (a narrow column then keeps the kernel's own
/// name), control characters made visible.
pub fn display_name(name: &str) -> String {
    let shown = match demangle(name) {
        Some(d) if d.chars().count() > LONG_SIGNATURE => drop_arguments(&d),
        Some(d) => d,
        None => name.to_string(),
    };
    visible(shown.strip_prefix("void ").filter(|rest| !rest.is_empty()).unwrap_or(&shown))
}

/// `text` cut to at most `width` characters by replacing its middle with
/// `…`: the head keeps one character more than the tail when the kept
/// count is odd. The same (text, width) always gives the same result.
pub fn shorten_middle(text: &str, width: usize) -> String {
    if columns(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let keep = width - 1;
    let head = keep.div_ceil(2);
    let mut out = take_columns(text.chars(), head);
    out.push('…');
    // The tail gets what the head left: a wide character that did not fit
    // there leaves its column to the tail.
    let tail = width - columns(&out);
    out.push_str(&take_tail_columns(text, tail));
    out
}

/// The longest end of `text` that takes at most `width` columns and does
/// not start with a combining mark (or another zero-width character) whose
/// base character it left out.
pub fn take_tail_columns(text: &str, width: usize) -> String {
    let tail: String = take_columns(text.chars().rev(), width).chars().rev().collect();
    tail.chars().skip_while(|&c| unicode_width::UnicodeWidthChar::width(c) == Some(0)).collect()
}

/// Terminal columns `text` takes: two for a wide (CJK) character, none for
/// a combining mark, one for the rest.
pub fn columns(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// The longest run of `chars` (in their order) that takes at most `width`
/// columns.
pub fn take_columns(chars: impl Iterator<Item = char>, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in chars {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// `text` cut to at most `width` characters around character `at`, where
/// it first differs from another text that [`shorten_middle`] would cut to
/// the same: a short head, `…`, the stretch from just before `at`, `…`, a
/// short tail (an ellipsis is left out where nothing is cut). Below seven
/// characters, the same as [`shorten_middle`].
pub fn shorten_around(text: &str, width: usize, at: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    // (Counted in characters: a text of wide characters or combining marks
    // is cut in the middle instead.)
    if n <= width || width < 7 || columns(text) != n {
        return shorten_middle(text, width);
    }
    let head = (width - 2) / 4;
    let tail = head;
    let window = width - 2 - head - tail;
    let start = at.saturating_sub(window / 3).clamp(head, n - tail - window);
    let mut out: String = chars[..head].iter().collect();
    if start > head {
        out.push('…');
    }
    out.extend(&chars[start..start + window]);
    if start + window < n - tail {
        out.push('…');
    }
    out.extend(&chars[n - tail..]);
    out
}

/// Each of `texts` cut to at most `width` characters in the middle
/// ([`shorten_middle`]), except texts that would then look alike (two
/// kernels that differ only inside the cut): those are cut around where
/// each first differs from the others ([`shorten_around`]). The same text
/// always gets the same result.
pub fn shorten_apart(texts: &[&str], width: usize) -> Vec<String> {
    let mut alike: std::collections::HashMap<String, Vec<&str>> = std::collections::HashMap::new();
    for &t in texts {
        let group = alike.entry(shorten_middle(t, width)).or_default();
        if !group.contains(&t) {
            group.push(t);
        }
    }
    texts
        .iter()
        .map(|&t| {
            let short = shorten_middle(t, width);
            match alike.get(&short) {
                Some(group) if group.len() > 1 => {
                    let at = group.iter().filter(|&&o| o != t).map(|o| common_prefix_chars(t, o)).max();
                    shorten_around(t, width, at.unwrap_or(0))
                }
                _ => short,
            }
        })
        .collect()
}

/// Characters `a` and `b` share before they first differ.
pub fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_leaves_a_combining_mark_without_its_letter() {
        let name = format!("{}_combining", "e\u{301}".repeat(50));
        for width in 5..40 {
            let cut = shorten_middle(&name, width);
            assert!(!cut.contains("…\u{301}"), "{width}: {cut:?}");
            assert!(columns(&cut) <= width, "{width}: {cut:?}");
            let head = crate::report::table::layout::shorten_head(&name, width);
            assert!(!head.contains("…\u{301}"), "{width}: {head:?}");
        }
    }

    #[test]
    fn shortening_around_a_difference_keeps_it() {
        let a = "void split_embed_kernel_cta_per_row<float, float, 5ul>";
        let b = "void split_embed_kernel_warp_per_row<float, float, 5ul>";
        assert_eq!(shorten_middle(a, 20), shorten_middle(b, 20));
        let at = common_prefix_chars(a, b);
        assert_eq!(at, 24);
        let (x, y) = (shorten_around(a, 20, at), shorten_around(b, 20, at));
        assert_ne!(x, y);
        assert!(x.chars().count() <= 20 && y.chars().count() <= 20, "{x} {y}");
        assert_eq!(x, "void…el_cta_per…5ul>");
        // Near either end, no ellipsis where nothing is cut.
        assert_eq!(shorten_around("abcdefghijklmnop", 10, 1), "abcdef…op");
        assert_eq!(shorten_around("abcdefghijklmnop", 10, 15), "ab…klmnop");
        assert_eq!(shorten_around("abc", 10, 1), "abc");
        assert_eq!(shorten_around("abcdefghij", 5, 3), shorten_middle("abcdefghij", 5));
    }

    #[test]
    fn shortening_keeps_head_and_tail() {
        let name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>";
        let s = shorten_middle(name, 24);
        assert_eq!(s.chars().count(), 24);
        assert_eq!(s, "void at::nat…tor<float>>");
        assert_eq!(shorten_middle(name, 24), s, "stable");
        assert_eq!(shorten_middle("short", 24), "short");
        assert_eq!(shorten_middle("abcdef", 5), "ab…ef");
        assert_eq!(shorten_middle("abcdef", 1), "…");
        assert_eq!(shorten_middle("héllo wörld", 6), "hél…ld");
    }

    #[test]
    fn cpp_names_demangle() {
        let m = "_ZN4vllm18act_and_mul_kernelIN3c108BFloat16ETnPFT_RKS3_EXadL_ZNS_11silu_kernelIS2_EES3_S5_EELb1EEEvPS3_PS4_i";
        let d = demangle(m).expect("demangles");
        assert!(d.starts_with("void vllm::act_and_mul_kernel<c10::BFloat16, "), "{d}");
        let shown = display_name(m);
        assert!(shown.starts_with("vllm::act_and_mul_kernel<c10::BFloat16, "), "{shown}");
        assert!(shown.ends_with("(…)"), "{shown}");
        assert_eq!(demangle("_Z3fooi").as_deref(), Some("foo(int)"));
        assert_eq!(display_name("_Z3fooi"), "foo(int)");
    }

    #[test]
    fn rust_names_demangle() {
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE").as_deref(), Some("core::fmt::write"));
        assert_eq!(demangle("_RNvCs15kBYyAo9fc_7mycrate7example").as_deref(), Some("mycrate::example"));
    }

    #[test]
    fn other_names_stay() {
        for name in ["ampere_sgemm_128x64_tn", "_Znotmangled", "_Z", "f<int>(int)", "void", "void ", ""] {
            assert_eq!(display_name(name), name);
        }
        // A CUDA kernel's `void ` goes, mangled or not.
        assert_eq!(display_name("void f<int>(int)"), "f<int>(int)");
        assert_eq!(display_name("a\u{1b}b"), "a\\u001bb");
        assert_eq!(display_name("gemm\u{202e}txt.exe\u{2066}"), "gemm\\u202etxt.exe\\u2066");
    }

    #[test]
    fn argument_lists_drop() {
        assert_eq!(drop_arguments("void f<int>(int*, g(h))"), "void f<int>(…)");
        assert_eq!(drop_arguments("(anonymous)"), "(anonymous)");
        assert_eq!(drop_arguments("plain"), "plain");
    }
}
