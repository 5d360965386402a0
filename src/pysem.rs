//! Python value semantics the reference relies on: `str()` of JSON scalars,
//! `float()`, `coerce_optional_int`, `normalize_text`, truthiness and
//! `round()`. Kept in one place so every analysis agrees on them.

/// One JSON value as ingest hands it to the column builder. Numbers keep
/// their raw text so `str()`, `float()` and `int()` can each be applied the
/// way Python would apply them to what `json.load` produced.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Scalar<'a> {
    /// The key is absent.
    #[default]
    Missing,
    Null,
    Bool(bool),
    /// Raw number text as written (`12`, `-3.5e2`, `NaN`, `Infinity`).
    Num(&'a str),
    /// Decoded string contents.
    Str(&'a str),
    /// An object or array; its contents were skipped.
    Compound,
}

impl<'a> Scalar<'a> {
    pub fn is_missing(&self) -> bool {
        matches!(self, Scalar::Missing)
    }

    /// `value is None` after `dict.get(key)`: absent or JSON null.
    pub fn is_none(&self) -> bool {
        matches!(self, Scalar::Missing | Scalar::Null)
    }

    /// Python truthiness of the value (`Missing` counts as `None`).
    pub fn truthy(&self) -> bool {
        match *self {
            Scalar::Missing | Scalar::Null => false,
            Scalar::Bool(b) => b,
            Scalar::Num(raw) => match py_float_of_num(raw) {
                Some(f) => f != 0.0,
                None => true,
            },
            Scalar::Str(s) => !s.is_empty(),
            // An empty object or array is falsy, but the builder never needs
            // truthiness of containers for the fields it keeps.
            Scalar::Compound => true,
        }
    }

    /// The string value if this is a JSON string.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `str(event.get(key, default))`. Writes into `out` (cleared first).
    pub fn py_str_into(&self, default: &str, out: &mut String) {
        out.clear();
        self.py_str_push(default, out);
    }

    /// `str(...)` appended to `out`.
    pub fn py_str_push(&self, default: &str, out: &mut String) {
        match *self {
            Scalar::Missing => out.push_str(default),
            Scalar::Null => out.push_str("None"),
            Scalar::Bool(true) => out.push_str("True"),
            Scalar::Bool(false) => out.push_str("False"),
            Scalar::Num(raw) => push_py_num_str(raw, out),
            Scalar::Str(s) => out.push_str(s),
            Scalar::Compound => out.push_str("<compound>"),
        }
    }

    /// `str(...)` as an owned string.
    pub fn py_str(&self, default: &str) -> String {
        let mut s = String::new();
        self.py_str_into(default, &mut s);
        s
    }

    /// `float(value)`; `None` where Python would raise.
    pub fn py_float(&self) -> Option<f64> {
        match *self {
            Scalar::Missing | Scalar::Null | Scalar::Compound => None,
            Scalar::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            Scalar::Num(raw) => py_float_of_num(raw),
            Scalar::Str(s) => py_float_of_str(s),
        }
    }

    /// `float(event.get(key, default))`.
    pub fn py_float_or(&self, default: f64) -> Option<f64> {
        if self.is_missing() {
            Some(default)
        } else {
            self.py_float()
        }
    }

    /// The reference's `coerce_optional_int`. Integers outside i64 are
    /// treated as missing (documented deviation: Python keeps big ints).
    pub fn coerce_int(&self) -> Option<i64> {
        match *self {
            Scalar::Missing | Scalar::Null | Scalar::Compound => None,
            Scalar::Bool(b) => Some(b as i64),
            Scalar::Num(raw) => {
                if is_int_literal(raw) {
                    raw.parse::<i64>().ok()
                } else {
                    let f = py_float_of_num(raw)?;
                    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 {
                        Some(f as i64)
                    } else {
                        None
                    }
                }
            }
            Scalar::Str(s) => {
                if s.is_empty() || s == "None" {
                    None
                } else {
                    py_int_of_str(s)
                }
            }
        }
    }
}

/// The one order for floats that are sorted or compared for order: Python's
/// `<` on every non-NaN value (so `-0.0 == 0.0`), and every NaN equal to
/// every other NaN and after all numbers. It is a total order, so a sort
/// never sees an inconsistent comparator (Rust's sorts panic on one), and a
/// trace with NaN times sorts the same on every run and thread count.
#[inline]
pub fn fcmp(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            _ => Ordering::Less,
        },
    }
}

/// An integer key in [`fcmp`]'s order: `fcmp(a, b) == fcmp_key(a).cmp(&fcmp_key(b))`
/// (both zeros one key, every NaN the last one), for sorting on plain integers.
#[inline]
pub fn fcmp_key(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    // +0.0 for -0.0; flipping the sign bit of positives and every bit of
    // negatives makes the bit patterns sort as the numbers do.
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// True when a JSON number literal has no fraction or exponent (Python's
/// `json` turns it into an `int`).
pub fn is_int_literal(raw: &str) -> bool {
    !raw.bytes().any(|b| matches!(b, b'.' | b'e' | b'E' | b'N' | b'I'))
}

/// `float()` of what `json.load` made of a number literal.
pub fn py_float_of_num(raw: &str) -> Option<f64> {
    match raw {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => exact_decimal(raw.as_bytes()).or_else(|| raw.parse::<f64>().ok()),
    }
}

/// The value of a plain decimal (`-?digits(.digits)?`) whose digits, read
/// as one integer, are below 2^53: that integer and the power of ten that
/// scales it are exact doubles, so one IEEE division gives the correctly
/// rounded value, as a full parse does. `None` for anything else (exponents,
/// more digits), which the full parse takes.
#[inline]
fn exact_decimal(b: &[u8]) -> Option<f64> {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    // Integer digits, then (after a point with digits on both sides)
    // fraction digits, each a tight loop without a per-byte branch on `.`.
    // Eight integer digits at once when there are that many (a trace's
    // microsecond timestamps have thirteen or more).
    let (mut m, mut i) = match digits.first_chunk::<8>().and_then(|w| eight_digits(u64::from_le_bytes(*w))) {
        Some(v) => (v, 8),
        None => (0, 0),
    };
    while let Some(d) = digits.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
        m = m * 10 + u64::from(d);
        i += 1;
    }
    // Digits after the point, if there is one.
    let frac = if i < digits.len() {
        if digits[i] != b'.' || i == 0 || i + 1 == digits.len() {
            return None;
        }
        let f0 = i + 1;
        for &c in &digits[f0..] {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            m = m * 10 + u64::from(d);
        }
        digits.len() - f0
    } else {
        0
    };
    exact_scaled(m, frac, neg)
}

/// `±m / 10^k` for the digits `m` of a plain decimal, `k` of them after
/// the point: `None` unless `m` is below 2^53 and `k` at most 15. Both the
/// digits and the power of ten are then exact doubles, so the one IEEE
/// division rounds correctly, as a full parse does.
#[inline(always)]
fn exact_scaled(m: u64, k: usize, neg: bool) -> Option<f64> {
    const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    if m >= 1 << 53 {
        return None;
    }
    let v = m as f64 / *POW10.get(k)?;
    Some(if neg { -v } else { v })
}

/// Of the bytes of `w`, read as a little-endian word (the first byte
/// lowest), those that are not ASCII digits are non-zero; so the word is
/// all digits when this is 0, and its first non-digit is byte
/// `trailing_zeros() / 8`.
#[inline(always)]
pub(crate) fn non_digit_bytes(w: u64) -> u64 {
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // A high nibble other than 3, or a low nibble above 9 (adding 6
    // carries it into the high nibble). A carry out of a byte from 0xfa up
    // reaches only bytes after a non-digit, so the first non-digit is exact.
    ((w & HIGH) ^ ZEROS) | ((w.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ ZEROS)
}

/// The value of eight ASCII digits read as a little-endian word (the first
/// digit in the lowest byte); `None` unless every byte is a digit.
#[inline(always)]
fn eight_digits(w: u64) -> Option<u64> {
    (non_digit_bytes(w) == 0).then(|| digits_value(w))
}

/// A plain decimal literal (`-?digits(.digits)?`) at `start` of `buf`, its
/// end and its value read in one pass, a word of digits at a time: the end
/// the scanner finds for it and the value [`py_float_of_num`] gives its
/// text. `None` for anything else (exponents, a leading zero, `NaN`, digits
/// at or above 2^53 as one integer, more than fifteen after the point), and
/// whenever fewer than eight bytes are left to read at a step: the literal
/// may go on past them, so the scanner reads it apart.
#[inline(always)]
pub(crate) fn decimal_prefix(buf: &[u8], start: usize) -> Option<(usize, f64)> {
    let neg = *buf.get(start)? == b'-';
    let d0 = start + usize::from(neg);
    let (m, i) = digit_run(buf, d0, 0)?;
    if i == d0 || (i - d0 > 1 && buf[d0] == b'0') {
        return None;
    }
    let (m, end, frac) = if buf.get(i) == Some(&b'.') {
        let (m, j) = digit_run(buf, i + 1, m)?;
        if j == i + 1 {
            return None;
        }
        (m, j, j - i - 1)
    } else {
        (m, i, 0)
    };
    if matches!(buf.get(end), None | Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
        return None;
    }
    Some((end, exact_scaled(m, frac, neg)?))
}

/// The digits from `i`, appended to `m`: the new value and the end of the
/// run. `None` when a read of eight bytes would pass the end of `buf`, or
/// on overflow.
#[inline(always)]
fn digit_run(buf: &[u8], mut i: usize, mut m: u64) -> Option<(u64, usize)> {
    const SCALE: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
    loop {
        let w = u64::from_le_bytes(*buf.get(i..)?.first_chunk::<8>()?);
        let other = non_digit_bytes(w);
        if other == 0 {
            m = m.checked_mul(100_000_000)?.checked_add(digits_value(w))?;
            i += 8;
            continue;
        }
        let n = (other.trailing_zeros() / 8) as usize;
        if n > 0 {
            // The run's digits moved to the word's top bytes, '0's below
            // them: the same value read as eight digits.
            let shift = 8 * (8 - n) as u32;
            let aligned = (w << shift) | (0x3030_3030_3030_3030 >> (64 - shift));
            m = m.checked_mul(SCALE[n])?.checked_add(digits_value(aligned))?;
        }
        return Some((m, i + n));
    }
}

/// The value of eight ASCII digits read as a little-endian word (the first
/// digit in the lowest byte). Every byte must be a digit.
#[inline(always)]
fn digits_value(w: u64) -> u64 {
    // Pairs, then fours, then all eight digits, each step one multiply.
    let d = w - 0x3030_3030_3030_3030;
    let pairs = (d.wrapping_mul(10) + (d >> 8)) & 0x00ff_00ff_00ff_00ff;
    let fours = (pairs.wrapping_mul(100) + (pairs >> 16)) & 0x0000_ffff_0000_ffff;
    (fours.wrapping_mul(10_000) + (fours >> 32)) & 0xffff_ffff
}

/// `float(s)` for a Python string: surrounding whitespace allowed,
/// `inf` / `nan` / `infinity` in any case, underscores between digits.
pub fn py_float_of_str(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    if t.is_empty() {
        return None;
    }
    if t.contains('_') {
        if !underscores_ok(t) {
            return None;
        }
        return t.replace('_', "").parse::<f64>().ok();
    }
    t.parse::<f64>().ok()
}

/// `int(s)` for a Python string: whitespace, sign, underscores between digits.
pub fn py_int_of_str(s: &str) -> Option<i64> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    if !underscores_ok(digits) {
        return None;
    }
    t.replace('_', "").parse::<i64>().ok()
}

fn underscores_ok(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter().enumerate().all(|(i, &c)| {
        c != b'_' || (i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
    })
}

/// `str()` of the value `json.load` made of a number literal.
pub fn push_py_num_str(raw: &str, out: &mut String) {
    if is_int_literal(raw) {
        // Python ints print canonically: no leading '+', "-0" is "0".
        let neg = raw.starts_with('-');
        let digits = raw.trim_start_matches('-');
        let digits = digits.trim_start_matches('0');
        if digits.is_empty() {
            out.push('0');
        } else {
            if neg {
                out.push('-');
            }
            out.push_str(digits);
        }
        return;
    }
    match py_float_of_num(raw) {
        Some(f) => out.push_str(&py_float_repr(f)),
        None => out.push_str(raw),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation
/// when the decimal exponent is below -4 or at least 16.
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` prints the shortest round-trip digits as d.ddddde±x.
    let sci = format!("{:e}", f);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

/// Python's `str.isspace` set used by `str.split()` (Unicode whitespace plus
/// the separators U+001C..U+001F).
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The reference's `normalize_text`: strip, and collapse runs of whitespace
/// to one space when the text contains an ASCII whitespace character.
pub fn normalize_text(text: &str) -> std::borrow::Cow<'_, str> {
    let t = text.trim_matches(is_py_space);
    if t.is_empty() {
        return std::borrow::Cow::Borrowed("");
    }
    if t.bytes().any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) {
        let parts: Vec<&str> = t.split(is_py_space).filter(|p| !p.is_empty()).collect();
        return std::borrow::Cow::Owned(parts.join(" "));
    }
    std::borrow::Cow::Borrowed(t)
}

/// Python's `round(x)` for floats: half to even.
pub fn py_round(x: f64) -> f64 {
    x.round_ties_even()
}

/// The positions the reference keeps when it samples `limit` of `n` items
/// (`n > limit >= 2`): `round(i * (n - 1) / (limit - 1))` for each `i` below
/// `limit`, with Python's exact integer product and half-to-even rounding.
pub fn sample_positions(n: usize, limit: usize) -> impl Iterator<Item = usize> {
    (0..limit).map(move |i| sample_position(n, limit, i))
}

/// The `i`-th of the [`sample_positions`].
fn sample_position(n: usize, limit: usize, i: usize) -> usize {
    let span = n.saturating_sub(1);
    let steps = limit.saturating_sub(1).max(1);
    py_round(i.saturating_mul(span) as f64 / steps as f64) as usize
}

/// The reference's per-name sampling: items grouped by `name`, names in
/// sorted order, every item of a name with at most `limit` items, else the
/// [`sample_positions`] of its items (in their given order). `limit == 0`
/// keeps everything, in the given order. Callers order the result.
///
/// Two passes over `items` (counts, then picks) with one small record per
/// name and the picks themselves, so the memory is per name and per pick,
/// not per item: the overlap step samples millions of kernels, and a trace
/// can have hundreds of thousands of names.
pub fn sample_per_name<'a, T, I>(items: I, name: impl Fn(&T) -> &str, limit: usize) -> Vec<&'a T>
where
    I: IntoIterator<Item = &'a T>,
    I::IntoIter: Clone,
{
    let items = items.into_iter();
    if limit == 0 {
        return items.collect();
    }
    /// One name's item count, items seen so far in the second pass, and
    /// which of its sample positions comes next.
    struct Name {
        count: usize,
        seen: usize,
        next: usize,
    }
    // Names are found by their text's address first: callers hand out
    // shared texts, so a name's items mostly point at the same bytes, and
    // the same address and length is the same text. A new address is
    // looked up by the text itself, once.
    let mut names: Vec<Name> = Vec::new();
    let mut by_text: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    let mut by_address: rustc_hash::FxHashMap<(usize, usize), usize> = rustc_hash::FxHashMap::default();
    let mut index_of = |text: &'a str, names: &mut Vec<Name>| -> usize {
        let address = (text.as_ptr() as usize, text.len());
        if let Some(&i) = by_address.get(&address) {
            return i;
        }
        let i = *by_text.entry(text).or_insert_with(|| {
            names.push(Name { count: 0, seen: 0, next: 0 });
            names.len() - 1
        });
        by_address.insert(address, i);
        i
    };
    for item in items.clone() {
        let i = index_of(name(item), &mut names);
        names[i].count += 1;
    }
    let mut picked: Vec<&'a T> = Vec::new();
    for item in items {
        let i = index_of(name(item), &mut names);
        let n = &mut names[i];
        if n.count <= limit {
            picked.push(item);
        } else {
            // Sample positions never decrease; one can repeat.
            while n.next < limit && sample_position(n.count, limit, n.next) == n.seen {
                picked.push(item);
                n.next += 1;
            }
        }
        n.seen += 1;
    }
    drop(names);
    // Names in sorted order, each name's picks in item order (stable).
    picked.sort_by(|a, b| name(a).cmp(name(b)));
    picked
}

/// Python's `max(a, b)`: `a` unless `b > a`.
pub fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// Python's `min(a, b)`: `a` unless `b < a`.
pub fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// Index of the first maximal element by `cmp` (Python's `max(..., key=)`).
pub fn first_max_by<T>(items: &[T], mut cmp: impl FnMut(&T, &T) -> std::cmp::Ordering) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, item) in items.iter().enumerate() {
        match best {
            None => best = Some(i),
            Some(b) => {
                if cmp(item, &items[b]) == std::cmp::Ordering::Greater {
                    best = Some(i);
                }
            }
        }
    }
    best
}

/// Python's `Counter.most_common(1)[0][0]`: the first key holding the
/// largest count, in insertion order (an `IndexMap` or a list of pairs).
pub fn most_common_key<'a, K: 'a, V: PartialOrd + Copy + 'a>(
    counter: impl IntoIterator<Item = (&'a K, &'a V)>,
) -> Option<&'a K> {
    let mut best: Option<(&K, V)> = None;
    for (k, &v) in counter {
        match best {
            None => best = Some((k, v)),
            Some((_, bv)) if v > bv => best = Some((k, v)),
            _ => {}
        }
    }
    best.map(|(k, _)| k)
}

/// A xorshift64 generator for tests: the same sequence for the same seed
/// on every run, so a failing case can be replayed.
#[cfg(test)]
pub(crate) fn test_rng(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_decimals_match_the_full_parse() {
        let fixed = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "12.5",
            "3676599943489.556",
            "9007199254740991",
            "9007199254740992",
            "0.1",
            "0.30000000000000004",
            "123456789012345.6",
            "1.000",
            "-17.25",
            "99999999999999999",
        ];
        let mut rng = test_rng(7);
        let random = (0..200_000).map(|_| {
            let digits = 1 + rng() % 17;
            let t: String = (0..digits).map(|_| char::from(b'0' + (rng() % 10) as u8)).collect();
            let t = t.trim_start_matches('0').to_string();
            let mut t = if t.is_empty() { "0".to_string() } else { t };
            if t.len() > 1 && rng() % 3 > 0 {
                let at = 1 + (rng() as usize) % (t.len() - 1);
                t.insert(at, '.');
            }
            if rng() % 5 == 0 {
                t.insert(0, '-');
            }
            t
        });
        for raw in fixed.iter().map(|s| s.to_string()).chain(random) {
            let want: f64 = raw.parse().unwrap();
            let got = py_float_of_num(&raw).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{raw}");
        }
        for raw in [
            "1e5",
            "1.5E-3",
            "-",
            "1.",
            ".5",
            "12345678901234567890",
            "1.2.3",
            "12:5",
            "1/25",
            "--1",
            "1234567:89",
            "12345/6789",
            "12345678:5",
            "1234567812:5",
        ] {
            assert_eq!(exact_decimal(raw.as_bytes()), None, "{raw}");
        }
    }

    #[test]
    fn fcmp_is_a_total_order_with_nan_last() {
        let neg_nan = -f64::NAN;
        let vals = [f64::NAN, 1.0, -0.0, f64::INFINITY, neg_nan, 0.0, f64::NEG_INFINITY, -1e308, f64::NAN];
        // Rust's sorts panic on a comparator that is not a total order;
        // check every triple for transitivity and every pair for symmetry.
        for &a in &vals {
            for &b in &vals {
                assert_eq!(fcmp(a, b), fcmp(b, a).reverse());
                for &c in &vals {
                    if fcmp(a, b).is_le() && fcmp(b, c).is_le() {
                        assert!(fcmp(a, c).is_le(), "{a} {b} {c}");
                    }
                }
            }
        }
        let mut sorted: Vec<f64> = (0..200).map(|i| vals[i * 7 % vals.len()]).collect();
        sorted.sort_by(|a, b| fcmp(*a, *b));
        let numbers = sorted.iter().filter(|x| !x.is_nan()).count();
        assert!(numbers < 200 && sorted[numbers..].iter().all(|x| x.is_nan()));
        assert!(sorted[..numbers].windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(fcmp(-0.0, 0.0), std::cmp::Ordering::Equal);
    }

    #[test]
    fn fcmp_key_orders_as_fcmp() {
        let vals = [
            f64::NAN,
            -f64::NAN,
            1.0,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1e308,
            1e308,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            1.5,
            -1.5,
            1234.5678,
        ];
        for &a in &vals {
            for &b in &vals {
                assert_eq!(fcmp_key(a).cmp(&fcmp_key(b)), fcmp(a, b), "{a} {b}");
            }
        }
        assert!(fcmp_key(f64::INFINITY) < fcmp_key(f64::NAN));
    }

    #[test]
    fn per_name_sampling_groups_sorts_and_spreads() {
        let items: Vec<(&str, usize)> = (0..10).map(|i| (if i % 3 == 0 { "b" } else { "a" }, i)).collect();
        let picked: Vec<usize> = sample_per_name(&items, |x| x.0, 3).iter().map(|x| x.1).collect();
        // "a" has 6 items (1 2 4 5 7 8): positions 0, round(2.5) = 2, 5; "b" has 4 (0 3 6 9).
        assert_eq!(picked, vec![1, 4, 8, 0, 6, 9]);
        assert_eq!(sample_per_name(&items, |x| x.0, 0).len(), 10);
    }

    #[test]
    fn per_name_sampling_matches_the_grouping_definition() {
        // The definition: group by name (sorted), keep each group whole or
        // its sample positions.
        fn naive(items: &[(String, usize)], limit: usize) -> Vec<&(String, usize)> {
            let mut groups: std::collections::BTreeMap<&str, Vec<&(String, usize)>> = Default::default();
            for it in items {
                groups.entry(it.0.as_str()).or_default().push(it);
            }
            let mut out = Vec::new();
            for (_, group) in groups {
                if group.len() <= limit {
                    out.extend(group);
                } else {
                    out.extend(sample_positions(group.len(), limit).map(|p| group[p]));
                }
            }
            out
        }
        let mut next = crate::pysem::test_rng(0x9e37_79b9_7f4a_7c15_u64);
        for round in 0..200 {
            let names = 1 + (next() % 40) as usize;
            let len = (next() % 600) as usize;
            let items: Vec<(String, usize)> = (0..len).map(|i| (format!("k{}", next() as usize % names), i)).collect();
            let limit = [1, 2, 3, 16][round % 4];
            let got: Vec<usize> = sample_per_name(&items, |x| x.0.as_str(), limit).iter().map(|x| x.1).collect();
            let want: Vec<usize> = naive(&items, limit).iter().map(|x| x.1).collect();
            assert_eq!(got, want, "round {round}");
            // The same names, some items sharing one copy of their text and
            // others holding their own.
            let pool: Vec<String> = (0..names).map(|k| format!("k{k}")).collect();
            let shared: Vec<(&str, usize)> = items
                .iter()
                .map(|(name, i)| {
                    let own = next() % 2 == 0;
                    (if own { name.as_str() } else { pool.iter().find(|p| *p == name).unwrap().as_str() }, *i)
                })
                .collect();
            let got: Vec<usize> = sample_per_name(&shared, |x| x.0, limit).iter().map(|x| x.1).collect();
            assert_eq!(got, want, "round {round}, shared texts");
        }
    }

    #[test]
    fn str_of_scalars_matches_python() {
        assert_eq!(Scalar::Num("0").py_str(""), "0");
        assert_eq!(Scalar::Num("-0").py_str(""), "0");
        assert_eq!(Scalar::Num("1.0").py_str(""), "1.0");
        assert_eq!(Scalar::Num("1e16").py_str(""), "1e+16");
        assert_eq!(Scalar::Num("123456789012345678901").py_str(""), "123456789012345678901");
        assert_eq!(Scalar::Null.py_str(""), "None");
        assert_eq!(Scalar::Missing.py_str("dflt"), "dflt");
        assert_eq!(Scalar::Bool(true).py_str(""), "True");
    }

    #[test]
    fn float_repr_matches_python() {
        for (f, s) in [
            (0.1, "0.1"),
            (1.5, "1.5"),
            (100.0, "100.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1234567.125, "1234567.125"),
            (1e22, "1e+22"),
            (-2.5e-7, "-2.5e-07"),
            (123456789012345.6, "123456789012345.6"),
        ] {
            assert_eq!(py_float_repr(f), s, "{f}");
        }
    }

    #[test]
    fn coerce_optional_int_cases() {
        assert_eq!(Scalar::Str("12").coerce_int(), Some(12));
        assert_eq!(Scalar::Str(" 12 ").coerce_int(), Some(12));
        assert_eq!(Scalar::Str("12.0").coerce_int(), None);
        assert_eq!(Scalar::Str("None").coerce_int(), None);
        assert_eq!(Scalar::Str("").coerce_int(), None);
        assert_eq!(Scalar::Num("12.0").coerce_int(), Some(12));
        assert_eq!(Scalar::Num("12.5").coerce_int(), None);
        assert_eq!(Scalar::Num("1e3").coerce_int(), Some(1000));
        assert_eq!(Scalar::Num("18446744073709551615").coerce_int(), None);
        assert_eq!(Scalar::Bool(true).coerce_int(), Some(1));
        assert_eq!(Scalar::Null.coerce_int(), None);
    }

    #[test]
    fn float_and_truthiness() {
        assert_eq!(Scalar::Str(" 7 ").py_float(), Some(7.0));
        assert!(Scalar::Str("nan").py_float().unwrap().is_nan());
        assert_eq!(Scalar::Str("1_000").py_float(), Some(1000.0));
        assert_eq!(Scalar::Str("x").py_float(), None);
        assert!(!Scalar::Num("0").truthy());
        assert!(!Scalar::Num("0.0").truthy());
        assert!(Scalar::Num("7").truthy());
        assert!(!Scalar::Str("").truthy());
        assert_eq!(Scalar::Missing.py_float_or(0.0), Some(0.0));
    }

    #[test]
    fn sample_positions_round_half_to_even() {
        // round(i * 4 / 8): 0, 0.5 -> 0, 1, 1.5 -> 2, 2, 2.5 -> 2, 3, 3.5 -> 4, 4
        let got: Vec<usize> = sample_positions(5, 9).collect();
        assert_eq!(got, vec![0, 0, 1, 2, 2, 2, 3, 4, 4]);
        assert_eq!(sample_positions(100, 16).last(), Some(99));
    }

    #[test]
    fn normalize_text_collapses_whitespace() {
        assert_eq!(normalize_text("  a \t b\n"), "a b");
        assert_eq!(normalize_text("abc"), "abc");
        assert_eq!(normalize_text("a\u{1c}b"), "a\u{1c}b");
        assert_eq!(normalize_text("a \u{1c}b"), "a b");
        assert_eq!(py_round(2.5), 2.0);
        assert_eq!(py_round(3.5), 4.0);
    }

    #[test]
    fn first_max_keeps_first_of_equals() {
        assert_eq!(first_max_by(&[3, 1, 3, 2], |a, b| a.cmp(b)), Some(0));
        assert_eq!(first_max_by::<i32>(&[], |a, b| a.cmp(b)), None);
    }

    #[test]
    fn most_common_ties_go_to_first_inserted() {
        let mut c: indexmap::IndexMap<&str, i64> = indexmap::IndexMap::new();
        c.insert("b", 2);
        c.insert("a", 2);
        c.insert("c", 1);
        assert_eq!(most_common_key(&c), Some(&"b"));
    }

    #[test]
    fn python_two_argument_max_keeps_negative_zero() {
        assert!(py_max(-0.0, 0.0).is_sign_negative());
        assert_eq!(py_min(20.0, 3.0), 3.0);
        assert_eq!(fcmp(-0.0, 0.0), std::cmp::Ordering::Equal);
        assert_eq!(fcmp(1.0, f64::NAN), std::cmp::Ordering::Less);
    }
}
