//! Document structure: the top-level object (keys in any order, metadata
//! values parsed with serde_json) or top-level array, and the loop over the
//! `traceEvents` array. Runs as a resumable state machine over a window of
//! bytes, so the same code serves a whole mapped file and a refilled stream
//! buffer; a mapped file can also hand the event array to parallel chunks.

use super::event::{parse_event, EventScratch};
use super::scan::{show, syntax, ScanError, ScanResult, Scanner};
use super::simd;
use crate::columns::{ColumnsBuilder, TraceMeta};

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Before the document; `bom` while nothing, not even whitespace, has
    /// been read (a byte order mark is taken only there).
    Start { bom: bool },
    /// Inside the top-level object, before a key (or the closing brace).
    ObjKey { first: bool },
    /// Inside the event array: what comes next is as `at` says.
    Events { at: EventsFrom, top_array: bool },
    /// After the whole document; only whitespace may follow.
    End,
}

/// What one call to [`DocParser::advance`] achieved.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The window ended inside the unit starting here; refill and call again
    /// from this position.
    NeedMore(usize),
    /// The parser entered the event array; the next event (or `]`) is here.
    /// Only returned when the caller asked to stop there.
    AtEvents(usize),
    /// The document is complete (trailing whitespace consumed).
    Done(usize),
}

impl Step {
    /// The position every step carries: where parsing resumes (or ended).
    pub fn pos(self) -> usize {
        match self {
            Step::NeedMore(p) | Step::AtEvents(p) | Step::Done(p) => p,
        }
    }
}

/// A malformed document: window position and message.
#[derive(Debug, PartialEq)]
pub struct DocError {
    pub pos: usize,
    pub msg: String,
}

/// Distinct top-level keys accepted (a profiler trace has about ten); each
/// is kept, so this bounds memory on a hostile object of millions of keys.
pub const MAX_TOP_KEYS: usize = 10_000;

/// Metadata keys kept (parsed with serde_json).
/// Metadata values longer than this are not read (their keys are listed in
/// [`TraceMeta::oversized_keys`]).
pub const MAX_META_VALUE_BYTES: usize = 1 << 20;

/// How far ahead of the scanner [`parse_chunk`] asks for the file's bytes.
const PREFETCH_AHEAD: usize = 2048;

const META_KEYS: [&str; 6] =
    ["schemaVersion", "deviceProperties", "distributedInfo", "with_stack", "baseTimeNanoseconds", "traceName"];

pub struct DocParser {
    state: State,
    pub builder: ColumnsBuilder,
    scratch: EventScratch,
    saw_events: bool,
    /// Top-level keys seen so far: a repeated key keeps its first position
    /// (a Python dict), and a set keeps that check linear on hostile input.
    seen_keys: rustc_hash::FxHashSet<String>,
}

impl Default for DocParser {
    fn default() -> Self {
        Self::new()
    }
}

impl DocParser {
    pub fn new() -> Self {
        DocParser {
            state: State::Start { bom: true },
            builder: ColumnsBuilder::new(),
            scratch: EventScratch::default(),
            saw_events: false,
            seen_keys: Default::default(),
        }
    }

    /// True once the traceEvents array (or a top-level array) was found.
    pub fn saw_events(&self) -> bool {
        self.saw_events
    }

    /// Continues after the caller parsed the event array itself; `pos` is
    /// just past its closing bracket.
    pub fn resume_after_events(&mut self, top_array: bool) {
        self.state = if top_array { State::End } else { State::ObjKey { first: false } };
    }

    /// Inside the event array: `Some((at, top_array))`, where `at` says
    /// what the position is just after (`[`, an event, or a comma).
    pub fn events_state(&self) -> Option<(EventsFrom, bool)> {
        match self.state {
            State::Events { at, top_array } => Some((at, top_array)),
            _ => None,
        }
    }

    /// Continues inside the event array after the caller parsed events
    /// itself; the position is just after the last complete event.
    pub fn resume_after_event(&mut self, top_array: bool) {
        self.state = State::Events { at: EventsFrom::AfterEvent, top_array };
    }

    /// Parses as far as `buf` allows from `pos`. With `eof`, running out of
    /// bytes is an error (truncated input). With `stop_at_events`, returns
    /// [`Step::AtEvents`] on entering the event array.
    pub fn advance(&mut self, buf: &[u8], pos: usize, eof: bool, stop_at_events: bool) -> Result<Step, DocError> {
        let mut s = Scanner::new(buf, pos);
        loop {
            let unit_start = s.pos;
            match self.unit(&mut s, stop_at_events) {
                Ok(Some(step)) => return Ok(step),
                Ok(None) => {}
                Err(ScanError::Incomplete) if eof => {
                    return Err(DocError { pos: buf.len(), msg: self.truncated_msg() });
                }
                Err(ScanError::Incomplete) => {
                    // Whitespace before a unit is never read again: a
                    // stream need not hold a long run of it.
                    let mut ws = Scanner::new(buf, unit_start);
                    ws.skip_ws();
                    if let State::Start { bom } = &mut self.state {
                        *bom &= ws.pos == unit_start;
                    }
                    return Ok(Step::NeedMore(ws.pos));
                }
                Err(ScanError::Syntax { pos, msg }) => return Err(DocError { pos, msg }),
            }
        }
    }

    fn truncated_msg(&self) -> String {
        match self.state {
            State::Events { .. } => "unexpected end of input inside traceEvents (truncated file?)".into(),
            State::Start { .. } => "empty input: expected a JSON object or array".into(),
            _ => "unexpected end of input (truncated file?)".into(),
        }
    }

    /// Parses one unit (a key and its value, an event, a bracket).
    fn unit(&mut self, s: &mut Scanner<'_>, stop_at_events: bool) -> ScanResult<Option<Step>> {
        match self.state {
            State::Start { bom } => {
                const BOM: &[u8] = b"\xEF\xBB\xBF";
                let rest = &s.buf[s.pos..];
                if bom && rest.starts_with(BOM) {
                    s.pos += 3;
                } else if bom && !rest.is_empty() && BOM.starts_with(rest) {
                    // A stream window that ends inside the BOM.
                    return Err(ScanError::Incomplete);
                }
                let b = s.peek()?;
                s.pos += 1;
                if matches!(b, b'{' | b'[') && s.buf.get(s.pos) == Some(&0) {
                    // A brace and a zero byte: UTF-16 without a byte-order mark.
                    let hint = other_format(s.buf).unwrap_or(UTF16LE);
                    return syntax(s.pos, format!("not a JSON trace: found byte 0x00 after '{}'; {hint}", b as char));
                }
                match b {
                    b'{' => self.state = State::ObjKey { first: true },
                    b'[' => {
                        self.saw_events = true;
                        self.builder.meta_mut().top_level_array = true;
                        self.state = State::Events { at: EventsFrom::AfterOpen, top_array: true };
                        if stop_at_events {
                            return Ok(Some(Step::AtEvents(s.pos)));
                        }
                    }
                    _ => {
                        let hint = other_format(s.buf).map_or(String::new(), |h| format!("; {h}"));
                        return syntax(
                            s.pos - 1,
                            format!("not a JSON trace: expected '{{' or '[', found {}{hint}", show(b)),
                        );
                    }
                }
            }
            State::ObjKey { first } => {
                let mut b = s.peek()?;
                if !first {
                    match b {
                        b',' => {
                            s.pos += 1;
                            b = s.peek()?;
                        }
                        b'}' => {
                            s.pos += 1;
                            self.state = State::End;
                            return Ok(None);
                        }
                        _ => return syntax(s.pos, format!("expected ',' or '}}' at top level, found {}", show(b))),
                    }
                } else if b == b'}' {
                    s.pos += 1;
                    self.state = State::End;
                    return Ok(None);
                }
                if b != b'"' {
                    return syntax(s.pos, format!("expected a key at top level, found {}", show(b)));
                }
                let key_start = s.pos;
                let mut kbuf = Vec::new();
                let key_loc = s.string(&mut kbuf)?;
                let key = match key_loc {
                    super::scan::Loc::Str(a, e) => String::from_utf8_lossy(&s.buf[a..e]).into_owned(),
                    _ => String::from_utf8_lossy(&kbuf).into_owned(),
                };
                if self.seen_keys.len() >= MAX_TOP_KEYS && !self.seen_keys.contains(&key) {
                    return syntax(
                        key_start,
                        format!("more than {MAX_TOP_KEYS} top-level keys (not a profiler trace?)"),
                    );
                }
                s.expect(b':', "':'")?;
                let vstart = {
                    s.peek()?;
                    s.pos
                };
                if key == "traceEvents" {
                    if self.saw_events {
                        return syntax(vstart, "duplicate traceEvents key");
                    }
                    let b = s.peek()?;
                    if b != b'[' {
                        return syntax(vstart, "traceEvents is not an array");
                    }
                    s.pos += 1;
                    self.saw_events = true;
                    self.seen_keys.insert(key.clone());
                    self.builder.meta_mut().top_level_keys.push(key);
                    self.state = State::Events { at: EventsFrom::AfterOpen, top_array: false };
                    if stop_at_events {
                        return Ok(Some(Step::AtEvents(s.pos)));
                    }
                    return Ok(None);
                }
                s.skip_value()?;
                let raw = &s.buf[vstart..s.pos];
                let meta = self.builder.meta_mut();
                if META_KEYS.contains(&key.as_str()) {
                    if raw.len() > MAX_META_VALUE_BYTES {
                        // A parsed JSON value costs up to 80 bytes per byte
                        // of text; no profiler writes metadata this big.
                        set_meta(meta, &key, None);
                        if !meta.oversized_keys.contains(&key) {
                            meta.oversized_keys.push(key.clone());
                        }
                    } else {
                        let v = serde_json::from_slice::<serde_json::Value>(raw).ok();
                        set_meta(meta, &key, v);
                        meta.oversized_keys.retain(|k| *k != key);
                    }
                }
                if self.seen_keys.insert(key.clone()) {
                    meta.top_level_keys.push(key);
                }
                self.state = State::ObjKey { first: false };
            }
            State::Events { at, top_array } => {
                let b = s.peek()?;
                if b == b']' && at != EventsFrom::AtEvent {
                    s.pos += 1;
                    self.resume_after_events(top_array);
                    return Ok(None);
                }
                if at == EventsFrom::AfterEvent {
                    if b != b',' {
                        return syntax(s.pos, format!("expected ',' or ']' in traceEvents, found {}", show(b)));
                    }
                    // The comma is a unit of its own, so that whitespace
                    // after it is left behind like whitespace before it.
                    s.pos += 1;
                    self.state = State::Events { at: EventsFrom::AtEvent, top_array };
                    return Ok(None);
                }
                parse_event(s, &mut self.builder, &mut self.scratch)?;
                self.state = State::Events { at: EventsFrom::AfterEvent, top_array };
            }
            State::End => {
                s.skip_ws();
                if s.pos < s.buf.len() {
                    return syntax(s.pos, "unexpected data after the end of the JSON document");
                }
                // Whitespace only so far; more may follow in a stream.
                return Ok(Some(Step::Done(s.pos)));
            }
        }
        Ok(None)
    }
}

fn set_meta(meta: &mut TraceMeta, key: &str, v: Option<serde_json::Value>) {
    match key {
        "schemaVersion" => meta.schema_version = v,
        "deviceProperties" => meta.device_properties = v,
        "distributedInfo" => meta.distributed_info = v,
        "with_stack" => meta.with_stack = v,
        "baseTimeNanoseconds" => meta.base_time_nanoseconds = v,
        "traceName" => meta.trace_name = v,
        _ => {}
    }
}

/// Result of parsing one slice of a mapped event array.
pub struct Chunk {
    pub builder: ColumnsBuilder,
    /// Start of the first event this chunk did not parse, or just past `]`.
    pub next: usize,
    /// The closing `]` was reached.
    pub ended: bool,
}

/// Parses events of a whole mapped array from `start` (just after `[` when
/// `first`, else at an event's `{`), stopping before the first event that
/// starts at or after `stop`. `tick(pos)` is called every few MB.
pub fn parse_chunk(
    buf: &[u8],
    start: usize,
    first: bool,
    stop: usize,
    mut tick: impl FnMut(usize),
) -> Result<Chunk, DocError> {
    let mut b = ColumnsBuilder::new();
    let mut scratch = EventScratch::default();
    let mut s = Scanner::new(buf, start);
    let err = |e: ScanError, s: &Scanner<'_>| match e {
        ScanError::Incomplete => {
            DocError { pos: buf.len(), msg: "unexpected end of input inside traceEvents (truncated file?)".into() }
        }
        ScanError::Syntax { pos, msg } => DocError { pos: pos.min(s.buf.len()), msg },
    };
    let mut next_tick = start + (8 << 20);
    // The next cache line to ask for ahead of the scanner.
    let mut ahead = start;
    if first {
        match s.peek() {
            Ok(b']') => {
                s.pos += 1;
                return Ok(Chunk { builder: b, next: s.pos, ended: true });
            }
            Ok(_) => {}
            Err(e) => return Err(err(e, &s)),
        }
    }
    loop {
        if s.pos >= stop {
            return Ok(Chunk { builder: b, next: s.pos, ended: false });
        }
        // (An event that skipped a long value leaves nothing to ask for
        // behind the scanner.)
        ahead = ahead.max(s.pos);
        while ahead < s.pos + PREFETCH_AHEAD {
            simd::prefetch(buf, ahead);
            ahead += 64;
        }
        if let Err(e) = parse_event(&mut s, &mut b, &mut scratch) {
            return Err(err(e, &s));
        }
        if s.pos >= next_tick {
            tick(s.pos);
            next_tick = s.pos + (8 << 20);
        }
        match s.peek() {
            Ok(b',') => {
                s.pos += 1;
                s.skip_ws();
            }
            Ok(b']') => {
                s.pos += 1;
                tick(s.pos);
                return Ok(Chunk { builder: b, next: s.pos, ended: true });
            }
            Ok(c) => {
                return Err(DocError {
                    pos: s.pos,
                    msg: format!("expected ',' or ']' in traceEvents, found {}", show(c)),
                })
            }
            Err(e) => return Err(err(e, &s)),
        }
    }
}

/// A likely event start at or after `from`: the `{` of `}` `,` `{` (with
/// optional whitespace). May be wrong inside a string; callers validate.
pub fn find_event_boundary(buf: &[u8], from: usize, limit: usize) -> Option<usize> {
    let end = buf.len().min(from.saturating_add(limit));
    let mut i = from;
    while i < end {
        let k = memchr::memchr(b',', &buf[i..end])?;
        let comma = i + k;
        let mut before = comma;
        while before > 0 && super::scan::is_ws(buf[before - 1]) {
            before -= 1;
        }
        let mut after = comma + 1;
        while after < buf.len() && super::scan::is_ws(buf[after]) {
            after += 1;
        }
        if before > 0 && buf[before - 1] == b'}' && buf.get(after) == Some(&b'{') {
            return Some(after);
        }
        i = comma + 1;
    }
    None
}

/// Where in the event array a parse starts ([`parse_events_partial`],
/// [`DocParser::events_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsFrom {
    /// Just after the array's `[`.
    AfterOpen,
    /// Just after a complete event (a `,` or `]` comes next).
    AfterEvent,
    /// Where an event must start: after a comma, or at a guessed `{`.
    AtEvent,
}

/// Result of parsing the complete events in a window of a stream.
pub struct Partial {
    pub builder: ColumnsBuilder,
    /// Just after the last complete event parsed (or after `]`); `None`
    /// when no event was parsed.
    pub end: Option<usize>,
    /// The closing `]` was reached (`end` is just past it).
    pub ended: bool,
    /// Start of the first event not parsed because it begins at or after
    /// `stop`.
    pub declined_at: Option<usize>,
}

/// Parses every complete event of `buf` from `start` (see [`EventsFrom`]),
/// stopping before an event that starts at or after `stop`, at `]`, or at
/// the end of the window (an unfinished event is left for later). The
/// events go into `builder`, which comes back in the result.
pub fn parse_events_partial(
    buf: &[u8],
    start: usize,
    from: EventsFrom,
    stop: usize,
    builder: ColumnsBuilder,
) -> Result<Partial, DocError> {
    let mut out = Partial { builder, end: None, ended: false, declined_at: None };
    let mut scratch = EventScratch::default();
    let mut s = Scanner::new(buf, start);
    let syntax_err = |e: ScanError| match e {
        ScanError::Syntax { pos, msg } => Some(DocError { pos, msg }),
        ScanError::Incomplete => None,
    };
    let mut after_event = from == EventsFrom::AfterEvent;
    let mut at_open = from == EventsFrom::AfterOpen;
    loop {
        if after_event || at_open {
            match s.peek() {
                Ok(b']') => {
                    s.pos += 1;
                    out.end = Some(s.pos);
                    out.ended = true;
                    return Ok(out);
                }
                Ok(b',') if after_event => s.pos += 1,
                Ok(_) if at_open => {}
                Ok(c) => {
                    return Err(DocError {
                        pos: s.pos,
                        msg: format!("expected ',' or ']' in traceEvents, found {}", show(c)),
                    })
                }
                Err(e) => return syntax_err(e).map_or(Ok(out), Err),
            }
        }
        match s.peek() {
            Ok(_) => {}
            Err(e) => return syntax_err(e).map_or(Ok(out), Err),
        }
        if s.pos >= stop {
            out.declined_at = Some(s.pos);
            return Ok(out);
        }
        match parse_event(&mut s, &mut out.builder, &mut scratch) {
            Ok(()) => out.end = Some(s.pos),
            Err(e) => return syntax_err(e).map_or(Ok(out), Err),
        }
        after_event = true;
        at_open = false;
    }
}

/// What a document that is not JSON is, when its first bytes (`head`, from
/// the start of the document) say so: data
/// compressed in a format torchtriage does not read (or compressed twice),
/// an archive, or text in another encoding, with what to do about it.
fn other_format(head: &[u8]) -> Option<&'static str> {
    const KNOWN: &[(&[u8], &str)] = &[
        (b"\x1f\x8b", "it is gzip data (compressed twice?): decompress it first with `gzip -dc`"),
        (b"\x28\xb5\x2f\xfd", "it is zstd data (compressed twice?): decompress it first with `zstd -dc`"),
        (b"BZh", "it is bzip2 data, which torchtriage does not read: decompress it first with `bzip2 -dc`"),
        (b"\xfd7zXZ\x00", "it is xz data, which torchtriage does not read: decompress it first with `xz -dc`"),
        (b"\x04\x22\x4d\x18", LZ4),
        (b"\x02\x21\x4c\x18", LZ4),
        (b"PK\x03\x04", "it is a zip archive: extract the trace first with `unzip`"),
        // UTF-32 first: its little-endian mark begins with UTF-16's.
        (b"\xff\xfe\x00\x00", UTF32),
        (b"\x00\x00\xfe\xff", UTF32),
        (b"\xff\xfe", UTF16),
        (b"\xfe\xff", UTF16),
    ];
    if head.get(257..262) == Some(b"ustar") {
        return Some("it is a tar archive: extract the trace first with `tar -xf`");
    }
    if let Some(&(_, what)) = KNOWN.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Some(what);
    }
    // ASCII text in UTF-16 without a byte-order mark: every other byte zero.
    let ascii = |b: u8| (1..0x80).contains(&b);
    match head {
        [a, 0, b, 0, ..] if ascii(*a) && ascii(*b) => Some(UTF16LE),
        [0, a, 0, b, ..] if ascii(*a) && ascii(*b) => Some(UTF16BE),
        _ => None,
    }
}

const LZ4: &str = "it is lz4 data, which torchtriage does not read: decompress it first with `lz4 -dc`";
const UTF16: &str = "it is UTF-16 text: convert it to UTF-8 first with `iconv -f UTF-16 -t UTF-8`";
const UTF16LE: &str = "it is UTF-16 text without a byte-order mark: convert it to UTF-8 first with \
                       `iconv -f UTF-16LE -t UTF-8`";
const UTF16BE: &str = "it is UTF-16 text without a byte-order mark: convert it to UTF-8 first with \
                       `iconv -f UTF-16BE -t UTF-8`";
const UTF32: &str = "it is UTF-32 text: convert it to UTF-8 first with `iconv -f UTF-32 -t UTF-8`";

#[cfg(test)]
mod tests {
    use super::other_format;

    #[test]
    fn other_formats_are_told_by_their_first_bytes() {
        let said = |head: &[u8]| other_format(head).unwrap_or("").split(':').next().unwrap_or("").to_string();
        assert_eq!(said(b"BZh91AY&SY"), "it is bzip2 data, which torchtriage does not read");
        assert_eq!(said(b"\xfd7zXZ\x00\x00"), "it is xz data, which torchtriage does not read");
        assert_eq!(said(b"\x1f\x8b\x08\x00"), "it is gzip data (compressed twice?)");
        assert_eq!(said(b"\xff\xfe{\x00"), "it is UTF-16 text");
        assert_eq!(said(b"PK\x03\x04"), "it is a zip archive");
        assert_eq!(said(b"\xff\xfe\x00\x00{\x00\x00\x00"), "it is UTF-32 text");
        assert_eq!(said(b"\x00{\x00\""), "it is UTF-16 text without a byte-order mark");
        assert_eq!(said(b"\n\x00{\x00"), "it is UTF-16 text without a byte-order mark");
        assert_eq!(said(b"\x02\x21\x4c\x18"), "it is lz4 data, which torchtriage does not read");
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(said(&tar), "it is a tar archive");
        // Too short to tell, or just not JSON.
        for head in [&b"BZ"[..], b"\x1f", b"hello", b"42", b""] {
            assert_eq!(other_format(head), None, "{head:?}");
        }
    }
}
