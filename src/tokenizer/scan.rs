//! Byte-level JSON scanning primitives over an in-memory window: whitespace,
//! strings (borrowed when escape-free, decoded otherwise), numbers, literals
//! and skipping whole values. Running off the end of the window is reported
//! as [`ScanError::Incomplete`] so a streaming caller can refill and retry.

use memchr::memchr2;

use super::simd;

/// Deepest nesting accepted inside one event (hostile-input bound).
pub const MAX_DEPTH: usize = 512;

#[derive(Clone, Debug, PartialEq)]
pub enum ScanError {
    /// The window ended before the value did; more input may complete it.
    Incomplete,
    /// Malformed JSON at this position of the window.
    Syntax { pos: usize, msg: String },
}

pub type ScanResult<T> = Result<T, ScanError>;

pub fn syntax<T>(pos: usize, msg: impl Into<String>) -> ScanResult<T> {
    Err(ScanError::Syntax { pos, msg: msg.into() })
}

/// Where a scanned scalar's text lives.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Loc {
    #[default]
    Missing,
    Null,
    True,
    False,
    /// Raw number text `buf[start..end]`.
    Num(usize, usize),
    /// String contents `buf[start..end]`, no escapes.
    Str(usize, usize),
    /// String contents `buf[start..end]`, no escapes, every byte ASCII
    /// (so valid UTF-8 without a second look).
    Ascii(usize, usize),
    /// Decoded string contents in the scratch buffer.
    Scratch(usize, usize),
    /// Object or array, skipped.
    Compound,
}

#[cold]
#[inline(never)]
fn expected<T>(pos: usize, what: &str, found: u8) -> ScanResult<T> {
    syntax(pos, format!("expected {what}, found {}", show(found)))
}

#[inline(always)]
pub fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// A cursor over one window of JSON text.
pub struct Scanner<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(buf: &'a [u8], pos: usize) -> Self {
        Scanner { buf, pos }
    }

    #[inline(always)]
    pub fn skip_ws(&mut self) {
        // Most tokens follow no whitespace or one space; runs (a
        // pretty-printed trace's line breaks and indentation) are skipped
        // a block at a time.
        match self.buf.get(self.pos) {
            Some(&b) if is_ws(b) => {}
            _ => return,
        }
        match self.buf.get(self.pos + 1) {
            Some(&b) if is_ws(b) => self.skip_ws_run(),
            _ => self.pos += 1,
        }
    }

    #[inline(always)]
    fn skip_ws_run(&mut self) {
        // A pretty-printed trace's runs are a line break (or space) and up
        // to seven spaces of indentation: read them as one word.
        if let Some(w) = self.buf.get(self.pos + 1..self.pos + 9).and_then(|w| w.first_chunk::<8>()) {
            let other = u64::from_le_bytes(*w) ^ u64::from_le_bytes([b' '; 8]);
            if other != 0 {
                let end = self.pos + 1 + (other.trailing_zeros() / 8) as usize;
                if !is_ws(self.buf[end]) {
                    self.pos = end;
                    return;
                }
            }
        }
        self.skip_ws_block();
    }

    #[inline(never)]
    fn skip_ws_block(&mut self) {
        let mut i = self.pos;
        while let Some(b) = simd::block(self.buf, i) {
            let rest = !simd::whitespace(b) & 0xffff;
            if rest != 0 {
                self.pos = i + rest.trailing_zeros() as usize;
                return;
            }
            i += simd::BLOCK;
        }
        while self.buf.get(i).is_some_and(|&b| is_ws(b)) {
            i += 1;
        }
        self.pos = i;
    }

    /// Next non-whitespace byte, not consumed.
    #[inline]
    pub fn peek(&mut self) -> ScanResult<u8> {
        self.skip_ws();
        self.buf.get(self.pos).copied().ok_or(ScanError::Incomplete)
    }

    /// Consumes `want` (after whitespace) or fails with `what`.
    #[inline(always)]
    pub fn expect(&mut self, want: u8, what: &str) -> ScanResult<()> {
        let b = self.peek()?;
        if b != want {
            return expected(self.pos, what, b);
        }
        self.pos += 1;
        Ok(())
    }

    /// Scans a string whose opening quote is at `pos`. Returns the raw
    /// contents range and whether it contains escapes. Leaves `pos` after
    /// the closing quote.
    #[inline]
    pub fn string_raw(&mut self) -> ScanResult<(usize, usize, bool)> {
        self.string_bounds::<false>().map(|(s, e, escaped, _)| (s, e, escaped))
    }

    /// [`Scanner::string_raw`], and with `ASCII` also whether every byte of
    /// the contents is ASCII (`false` when not known: the window's last
    /// bytes are not looked at).
    #[inline(always)]
    fn string_bounds<const ASCII: bool>(&mut self) -> ScanResult<(usize, usize, bool, bool)> {
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        let mut non_ascii = 0u32;
        loop {
            let found = match simd::block(self.buf, i) {
                Some(b) => {
                    let m = simd::quote_or_backslash(b);
                    if ASCII {
                        // The bytes before the first quote or backslash
                        // (all sixteen when there is none).
                        non_ascii |= simd::non_ascii(b) & (m & m.wrapping_neg()).wrapping_sub(1);
                    }
                    match m {
                        0 => {
                            i += simd::BLOCK;
                            continue;
                        }
                        m => Some(m.trailing_zeros() as usize),
                    }
                }
                // The window's last bytes.
                None => {
                    non_ascii = 1;
                    memchr2(b'"', b'\\', &self.buf[i.min(self.buf.len())..])
                }
            };
            match found {
                None => return Err(ScanError::Incomplete),
                Some(k) => {
                    let at = i + k;
                    if self.buf[at] == b'"' {
                        self.pos = at + 1;
                        return Ok((start, at, escaped, non_ascii == 0));
                    }
                    escaped = true;
                    // Every escape is checked here, in strings that are
                    // decoded and in strings that are skipped alike, so an
                    // invalid one is an error wherever it is.
                    match self.buf.get(at + 1) {
                        None => return Err(ScanError::Incomplete),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                        Some(b'u') => match self.buf.get(at + 2..at + 6) {
                            None => return Err(ScanError::Incomplete),
                            Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => {}
                            Some(_) => return syntax(at, "invalid \\u escape"),
                        },
                        Some(&c) => return syntax(at, invalid_escape(c)),
                    }
                    i = at + 2;
                }
            }
        }
    }

    /// Scans a string and returns where its decoded contents live.
    #[inline(always)]
    pub fn string(&mut self, scratch: &mut Vec<u8>) -> ScanResult<Loc> {
        let (s, e, escaped) = self.string_raw()?;
        if !escaped {
            return Ok(Loc::Str(s, e));
        }
        let from = scratch.len();
        decode_escapes(self.buf, s, e, scratch)?;
        Ok(Loc::Scratch(from, scratch.len()))
    }

    /// Scans any value at `pos` into a [`Loc`] (containers are skipped).
    /// Inlined: returning the 32-byte result through memory stalls on
    /// store forwarding in the per-field loop.
    #[inline(always)]
    pub fn value_into(&mut self, scratch: &mut Vec<u8>, out: &mut Loc) -> ScanResult<()> {
        let b = self.peek()?;
        match b {
            b'"' => {
                // The body of `string`, written out: sharing it through a
                // helper measured 5 % slower on 1 GB (codegen of the copy).
                let (s, e, escaped, ascii) = self.string_bounds::<true>()?;
                if !escaped {
                    *out = if ascii { Loc::Ascii(s, e) } else { Loc::Str(s, e) };
                } else {
                    let from = scratch.len();
                    decode_escapes(self.buf, s, e, scratch)?;
                    *out = Loc::Scratch(from, scratch.len());
                }
                Ok(())
            }
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                let end = self.number_end()?;
                *out = Loc::Num(start, end);
                Ok(())
            }
            _ => {
                *out = self.value(scratch)?;
                Ok(())
            }
        }
    }

    /// [`Self::value_into`] for a field the columns read as a float: a
    /// plain decimal is read with its value in one pass, and the value
    /// returned (what [`crate::pysem::py_float_of_num`] gives its text);
    /// anything else is scanned as `value_into` does, and gives `None`.
    #[inline(always)]
    pub fn float_into(&mut self, scratch: &mut Vec<u8>, out: &mut Loc) -> ScanResult<Option<f64>> {
        if matches!(self.peek()?, b'-' | b'0'..=b'9') {
            if let Some((end, v)) = crate::pysem::decimal_prefix(self.buf, self.pos) {
                *out = Loc::Num(self.pos, end);
                self.pos = end;
                return Ok(Some(v));
            }
        }
        self.value_into(scratch, out)?;
        Ok(None)
    }

    /// Scans any value at `pos` into a [`Loc`] (containers are skipped).
    #[inline]
    pub fn value(&mut self, scratch: &mut Vec<u8>) -> ScanResult<Loc> {
        let b = self.peek()?;
        match b {
            b'"' => self.string(scratch),
            b'{' | b'[' => {
                self.skip_container()?;
                Ok(Loc::Compound)
            }
            b't' => self.literal(b"true", Loc::True),
            b'f' => self.literal(b"false", Loc::False),
            b'n' => self.literal(b"null", Loc::Null),
            b'N' => self.literal(b"NaN", Loc::Num(self.pos, self.pos + 3)),
            b'I' => self.literal(b"Infinity", Loc::Num(self.pos, self.pos + 8)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => syntax(self.pos, format!("expected a JSON value, found {}", show(b))),
        }
    }

    fn literal(&mut self, word: &[u8], loc: Loc) -> ScanResult<Loc> {
        let end = self.pos + word.len();
        let have = &self.buf[self.pos..end.min(self.buf.len())];
        if have != &word[..have.len()] {
            return syntax(self.pos, "invalid literal");
        }
        if have.len() < word.len() {
            return Err(ScanError::Incomplete);
        }
        self.pos = end;
        Ok(loc)
    }

    fn number(&mut self) -> ScanResult<Loc> {
        let start = self.pos;
        self.number_end().map(|end| Loc::Num(start, end))
    }

    /// Scans the number at `pos`; returns its end and leaves `pos` there.
    #[inline(always)]
    fn number_end(&mut self) -> ScanResult<usize> {
        let start = self.pos;
        let rest = &self.buf[start..];
        if rest.get(1) == Some(&b'I') || rest.len() == 1 {
            if rest.starts_with(b"-Infinity") {
                self.pos += 9;
                return Ok(self.pos);
            }
            if rest.len() < 9 && b"-Infinity".starts_with(rest) {
                // `-Inf` at the end of a stream window: the rest may follow.
                return Err(ScanError::Incomplete);
            }
        }
        if let Some(end) = short_int_end(rest) {
            self.pos = start + end;
            return Ok(self.pos);
        }
        // One pass along the grammar; anything unusual takes the general
        // path, which first takes every byte of the number alphabet.
        let buf = self.buf;
        let digits = |mut i: usize| {
            while let Some(b) = simd::block(buf, i) {
                let rest = !simd::digits(b) & 0xffff;
                if rest != 0 {
                    return i + rest.trailing_zeros() as usize;
                }
                i += simd::BLOCK;
            }
            while buf.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        let mut i = start + usize::from(buf.get(start) == Some(&b'-'));
        let d0 = i;
        i = digits(i);
        let mut ok = i > d0 && !(buf[d0] == b'0' && i - d0 > 1);
        if ok && buf.get(i) == Some(&b'.') {
            let f0 = i + 1;
            i = digits(f0);
            ok = i > f0;
        }
        if ok && matches!(buf.get(i), Some(b'e' | b'E')) {
            let e0 = i + 1 + usize::from(matches!(buf.get(i + 1), Some(b'+' | b'-')));
            i = digits(e0);
            ok = i > e0;
        }
        if !ok || buf.get(i).is_some_and(|&b| in_number_alphabet(b)) {
            return self.number_end_general(start);
        }
        if i == buf.len() {
            // The number may continue in the next window.
            return Err(ScanError::Incomplete);
        }
        self.pos = i;
        Ok(i)
    }

    #[cold]
    fn number_end_general(&mut self, start: usize) -> ScanResult<usize> {
        let mut i = start;
        while self.buf.get(i).is_some_and(|&b| in_number_alphabet(b)) {
            i += 1;
        }
        if i == self.buf.len() {
            // The number may continue in the next window.
            return Err(ScanError::Incomplete);
        }
        if !valid_number(&self.buf[start..i]) {
            return syntax(start, "invalid number");
        }
        self.pos = i;
        Ok(i)
    }

    /// Skips an object or array whose opening bracket is at `pos`.
    pub fn skip_container(&mut self) -> ScanResult<()> {
        let mut depth = 0usize;
        let buf = self.buf;
        let mut i = self.pos;
        while i < buf.len() {
            // Jump to the next quote or bracket.
            if let Some(b) = simd::block(buf, i) {
                match simd::structural(b) {
                    0 => {
                        i += simd::BLOCK;
                        continue;
                    }
                    m => i += m.trailing_zeros() as usize,
                }
            }
            match buf[i] {
                b'"' => {
                    self.pos = i;
                    self.string_raw()?;
                    i = self.pos;
                    continue;
                }
                b'{' | b'[' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return syntax(i, format!("nesting deeper than {MAX_DEPTH} levels"));
                    }
                }
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(ScanError::Incomplete)
    }

    /// Skips the integer of one to seven digits or the `null` right at
    /// `pos` (no whitespace before it), as [`Self::skip_value`] would, and
    /// says whether it did; anything else is left to `skip_value`.
    #[inline(always)]
    pub fn skip_short_scalar(&mut self) -> bool {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        match rest.first() {
            Some(b'0'..=b'9') => match short_int_end(rest) {
                Some(end) => {
                    self.pos += end;
                    true
                }
                None => false,
            },
            Some(b'n') if rest.starts_with(b"null") => {
                self.pos += 4;
                true
            }
            _ => false,
        }
    }

    /// Skips any value.
    pub fn skip_value(&mut self) -> ScanResult<()> {
        let b = self.peek()?;
        match b {
            b'"' => self.string_raw().map(|_| ()),
            b'{' | b'[' => self.skip_container(),
            // The values profilers write in keys no analysis reads (`Ev Idx`,
            // `Python id`, `Record function id`): numbers and null.
            b'-' | b'0'..=b'9' => self.number_end().map(|_| ()),
            b'n' => self.literal(b"null", Loc::Null).map(|_| ()),
            _ => {
                let mut none = Vec::new();
                self.value(&mut none).map(|_| ())
            }
        }
    }
}

/// The length of an integer of one to seven digits at the start of `rest`
/// (a pid, an id, a count: most numbers of a trace) when the byte after it
/// ends the number, read as one word; `None` for anything else (a sign, a
/// fraction, a leading zero, eight digits or more, fewer than eight bytes
/// left), which the grammar walk in [`Scanner::number_end`] reads.
#[inline(always)]
fn short_int_end(rest: &[u8]) -> Option<usize> {
    let other = crate::pysem::non_digit_bytes(u64::from_le_bytes(*rest.first_chunk::<8>()?));
    let digits = (other.trailing_zeros() / 8) as usize;
    if digits == 0 || digits == 8 || (digits > 1 && rest[0] == b'0') || in_number_alphabet(rest[digits]) {
        return None;
    }
    Some(digits)
}

#[inline(always)]
fn in_number_alphabet(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
}

fn valid_number(t: &[u8]) -> bool {
    // JSON grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
    let mut i = 0;
    if t.get(i) == Some(&b'-') {
        i += 1;
    }
    let d0 = i;
    while t.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if i == d0 || (t[d0] == b'0' && i - d0 > 1) {
        return false;
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        let f0 = i;
        while t.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == f0 {
            return false;
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let e0 = i;
        while t.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == e0 {
            return false;
        }
    }
    i == t.len()
}

/// Decodes JSON escapes of `buf[s..e]` onto `out`. Lone surrogates become
/// U+FFFD, as a lossy decoder would.
pub fn decode_escapes(buf: &[u8], s: usize, e: usize, out: &mut Vec<u8>) -> ScanResult<()> {
    let mut i = s;
    while i < e {
        let b = buf[i];
        if b != b'\\' {
            let next = memchr::memchr(b'\\', &buf[i..e]).map_or(e, |k| i + k);
            out.extend_from_slice(&buf[i..next]);
            i = next;
            continue;
        }
        let esc = *buf.get(i + 1).ok_or(ScanError::Incomplete)?;
        i += 2;
        let ch = match esc {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(buf, i, e)?;
                i += 4;
                if (0xD800..0xDC00).contains(&hi) && buf.get(i) == Some(&b'\\') && buf.get(i + 1) == Some(&b'u') {
                    let lo = hex4(buf, i + 2, e)?;
                    if (0xDC00..0xE000).contains(&lo) {
                        i += 6;
                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        char::from_u32(c).unwrap_or('\u{FFFD}')
                    } else {
                        '\u{FFFD}'
                    }
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            _ => return syntax(i - 2, invalid_escape(esc)),
        };
        let mut tmp = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
    }
    Ok(())
}

fn hex4(buf: &[u8], i: usize, e: usize) -> ScanResult<u32> {
    if i + 4 > e {
        return syntax(i, "truncated \\u escape");
    }
    let mut v = 0u32;
    for &b in &buf[i..i + 4] {
        let d = (b as char).to_digit(16).ok_or(ScanError::Syntax { pos: i, msg: "invalid \\u escape".into() })?;
        v = v * 16 + d;
    }
    Ok(v)
}

/// The message for a backslash followed by `c`.
fn invalid_escape(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("invalid escape \\{}", c as char)
    } else {
        format!("invalid escape: backslash before {}", show(c))
    }
}

/// A byte for an error message.
pub fn show(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc_of(text: &str) -> (ScanResult<Loc>, Vec<u8>) {
        let mut scratch = Vec::new();
        let mut s = Scanner::new(text.as_bytes(), 0);
        (s.value(&mut scratch), scratch)
    }

    #[test]
    fn every_escape_is_checked_in_skipped_values_too() {
        let skip = |text: &str| Scanner::new(text.as_bytes(), 0).skip_value();
        let at = |pos: usize, msg: &str| Err(ScanError::Syntax { pos, msg: msg.into() });
        assert_eq!(skip(r#""ok \" \/ \b \f \n \r \t \u00e9 \\""#), Ok(()));
        assert_eq!(skip(r#""bad\q""#), at(4, "invalid escape \\q"));
        assert_eq!(skip(r#"{"a": ["x", "\u12g4"]}"#), at(13, "invalid \\u escape"));
        assert_eq!(skip("\"\\\n\""), at(1, "invalid escape: backslash before byte 0x0a"));
        // The window may end inside an escape: more input decides.
        assert_eq!(skip(r#""a\u00"#), Err(ScanError::Incomplete));
        assert_eq!(skip(r#""a\"#), Err(ScanError::Incomplete));
        // Decoded strings report the same position.
        assert_eq!(loc_of(r#""bad\q""#).0, Err(ScanError::Syntax { pos: 4, msg: "invalid escape \\q".into() }));
    }

    #[test]
    fn read_strings_say_when_every_byte_is_ascii() {
        let into = |text: &str| {
            let mut out = Loc::Missing;
            Scanner::new(text.as_bytes(), 0).value_into(&mut Vec::new(), &mut out).map(|_| out)
        };
        let pad = " ".repeat(40);
        let long = "x".repeat(40);
        assert_eq!(into(&format!("\"abc\"{pad}")), Ok(Loc::Ascii(1, 4)));
        // A non-ASCII byte after the closing quote, in the same block.
        assert_eq!(into(&format!("\"abc\"é{pad}")), Ok(Loc::Ascii(1, 4)));
        assert_eq!(into(&format!("\"{long}\"{pad}")), Ok(Loc::Ascii(1, 41)));
        // Non-ASCII contents in the first block, in a later one, last.
        assert_eq!(into(&format!("\"aé\"{pad}")), Ok(Loc::Str(1, 4)));
        assert_eq!(into(&format!("\"{long}é{long}\"{pad}")), Ok(Loc::Str(1, 83)));
        assert_eq!(into(&format!("\"{long}é\"{pad}")), Ok(Loc::Str(1, 43)));
        // The window's last bytes are not looked at: not known to be ASCII.
        assert_eq!(into("\"abc\" "), Ok(Loc::Str(1, 4)));
    }

    #[test]
    fn strings_borrow_or_decode() {
        assert_eq!(loc_of("\"abc\" ").0, Ok(Loc::Str(1, 4)));
        let (l, scratch) = loc_of(r#""a\"b\u00e9\ud83d\ude00" "#);
        assert_eq!(l, Ok(Loc::Scratch(0, scratch.len())));
        assert_eq!(std::str::from_utf8(&scratch).unwrap(), "a\"bé😀");
        assert_eq!(loc_of("\"abc").0, Err(ScanError::Incomplete));
    }

    #[test]
    fn number_fast_path_agrees_with_the_general_one() {
        // Every string of up to five bytes over the number alphabet, a
        // space and 'x', as a whole window.
        let alphabet = b"0123-+.eE x";
        let mut cases: Vec<Vec<u8>> = vec![vec![]];
        for _ in 0..5 {
            let longer: Vec<Vec<u8>> =
                cases.iter().flat_map(|c| alphabet.iter().map(move |&b| [c.clone(), vec![b]].concat())).collect();
            cases.extend(longer);
        }
        for case in cases.iter().filter(|c| matches!(c.first(), Some(b'-' | b'0'..=b'9'))) {
            let mut fast = Scanner::new(case, 0);
            let mut general = Scanner::new(case, 0);
            let a = fast.number_end();
            let b = general.number_end_general(0);
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(case));
            assert_eq!(fast.pos, general.pos);
            let mut into = Loc::Missing;
            let mut scratch = Vec::new();
            let c = Scanner::new(case, 0).value_into(&mut scratch, &mut into).map(|_| into);
            assert_eq!(c, a.map(|end| Loc::Num(0, end)));
            // Followed by more bytes, so that the word-at-a-time read of
            // short integers applies (bytes from 0xfa up carry when added to).
            for pad in
                [&b",}]     "[..], b"\xff\xfa0000000", b"\xfa1", b"9999999x ", b"12345678", b"        ", b"\x800"]
            {
                let text = [&case[..], pad].concat();
                let mut fast = Scanner::new(&text, 0);
                let mut general = Scanner::new(&text, 0);
                let a = fast.number_end();
                assert_eq!(a, general.number_end_general(0), "{:?}", String::from_utf8_lossy(&text));
                assert_eq!(fast.pos, general.pos);
            }
        }
    }

    #[test]
    fn floats_read_in_one_pass_agree_with_the_scan_and_the_parse() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rng = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "7",
            "-7.5",
            "12.5",
            "3676599907536.035",
            "287797.444",
            "9007199254740991",
            "9007199254740992",
            "0.000000000000001",
            "0.0000000000000001",
            "1.000",
            "99999999999999999",
            "123456789012345678901234",
            "01",
            "-01.5",
            "1.",
            ".5",
            "-",
            "1e5",
            "1.5E-3",
            "-Infinity",
            "NaN",
            "1.2.3",
            "12345678",
            "123456781234567812345678",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        for _ in 0..50_000 {
            let digits = 1 + rng() % 20;
            let mut t: String = (0..digits).map(|_| char::from(b'0' + (rng() % 10) as u8)).collect();
            if t.len() > 1 && rng() % 3 > 0 {
                t.insert(1 + (rng() as usize) % (t.len() - 1), '.');
            }
            if rng() % 5 == 0 {
                t.insert(0, '-');
            }
            texts.push(t);
        }
        let mut fast = 0;
        for t in &texts {
            for after in [",", "}", " ", "\n ", "e5", "x", "", ",       \"x\": 1"] {
                let buf = format!("{t}{after}");
                let mut s = Scanner::new(buf.as_bytes(), 0);
                let mut scratch = Vec::new();
                let mut loc = Loc::Missing;
                let got = s.float_into(&mut scratch, &mut loc).map(|v| (v.map(f64::to_bits), loc, s.pos));
                let mut s = Scanner::new(buf.as_bytes(), 0);
                let mut want_loc = Loc::Missing;
                let want = s.value_into(&mut scratch, &mut want_loc).map(|()| (want_loc, s.pos));
                match (got, want) {
                    (Ok((v, loc, pos)), Ok((want_loc, want_pos))) => {
                        assert_eq!((loc, pos), (want_loc, want_pos), "{buf:?}");
                        if let Some(bits) = v {
                            fast += 1;
                            let Loc::Num(a, b) = loc else { panic!("{buf:?}: not a number") };
                            let text = &buf[a..b];
                            let parsed = crate::pysem::py_float_of_num(text).map(f64::to_bits);
                            assert_eq!(Some(bits), parsed, "{buf:?}");
                        }
                    }
                    (Err(g), Err(w)) => assert_eq!(format!("{g:?}"), format!("{w:?}"), "{buf:?}"),
                    (g, w) => panic!("{buf:?}: {g:?} against {w:?}"),
                }
            }
        }
        // The common forms take the one-pass read.
        assert!(fast > 25_000, "{fast}");
        for t in ["3676599907536.035, \"dur\": 1", "287797.444\n    },", "-7.5,       "] {
            let mut s = Scanner::new(t.as_bytes(), 0);
            assert!(s.float_into(&mut Vec::new(), &mut Loc::Missing).unwrap().is_some(), "{t:?}");
        }
    }

    #[test]
    fn numbers_and_literals() {
        assert_eq!(loc_of("12.5e3,").0, Ok(Loc::Num(0, 6)));
        assert_eq!(loc_of("-Infinity,").0, Ok(Loc::Num(0, 9)));
        assert_eq!(loc_of("NaN,").0, Ok(Loc::Num(0, 3)));
        assert_eq!(loc_of("-Inf").0, Err(ScanError::Incomplete));
        assert!(matches!(loc_of("-Inf,").0, Err(ScanError::Syntax { .. })));
        assert_eq!(loc_of("12").0, Err(ScanError::Incomplete));
        assert!(matches!(loc_of("01,").0, Err(ScanError::Syntax { .. })));
        assert!(matches!(loc_of("1.e5,").0, Err(ScanError::Syntax { .. })));
        assert_eq!(loc_of("null,").0, Ok(Loc::Null));
        assert_eq!(loc_of("tru").0, Err(ScanError::Incomplete));
        assert!(matches!(loc_of("trux").0, Err(ScanError::Syntax { .. })));
    }

    #[test]
    fn containers_skip_with_strings_and_depth() {
        assert_eq!(loc_of(r#"{"a":[1,"]}",{"b":{}}]} "#).0, Ok(Loc::Compound));
        assert_eq!(loc_of("[[[1]]").0, Err(ScanError::Incomplete));
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert!(matches!(loc_of(&deep).0, Err(ScanError::Syntax { .. })));
    }

    #[test]
    fn whitespace_runs_of_every_shape_end_at_the_next_token() {
        // Runs the one-word read ends (a line break and indentation), runs
        // it hands to the block loop (other whitespace after the first
        // byte, eight spaces or more, a window's last bytes) and runs that
        // end the window.
        let runs = [
            "\n    ",
            "\n      ",
            " \n",
            "\n\t  ",
            "\r\n  ",
            "\n       ",
            "\n        ",
            "\n                    ",
            "  \n\n",
        ];
        for run in runs {
            for tail in ["x", "\"s\"", "{}", "x                "] {
                let text = format!("{run}{tail}");
                let mut s = Scanner::new(text.as_bytes(), 0);
                assert_eq!(s.peek(), Ok(tail.as_bytes()[0]), "{run:?}{tail:?}");
                assert_eq!(s.pos, run.len(), "{run:?}{tail:?}");
            }
            let mut s = Scanner::new(run.as_bytes(), 0);
            assert_eq!(s.peek(), Err(ScanError::Incomplete), "{run:?}");
            assert_eq!(s.pos, run.len(), "{run:?}");
        }
    }
}
