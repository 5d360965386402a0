//! Whether a JSON document names `traceEvents` among its top-level keys,
//! read as a stream: discovery asks this of a file named for a rank whose
//! first bytes did not settle whether it is a trace (a trace whose
//! metadata, written first, is longer than the bytes sniffed). Memory stays
//! a fixed buffer whatever the file holds.

use std::io::Read;
use std::path::Path;

const KEY: &[u8] = b"traceEvents";

/// Where the scanner is in the document.
#[derive(Default)]
struct Keys {
    /// Open objects and arrays.
    depth: u64,
    in_string: bool,
    escaped: bool,
    /// The next string at depth 1 is a key.
    expect_key: bool,
    /// The key being read is one of the top-level object's.
    in_key: bool,
    /// Bytes of that key matched against [`KEY`] so far, or `None` once it
    /// differs.
    matched: Option<usize>,
    /// The document's top-level value is over (or is no object).
    done: bool,
}

impl Keys {
    /// Feeds `bytes`; true once a top-level key `traceEvents` is read.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &c in bytes {
            if self.done {
                return false;
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.matched = None;
                } else if c == b'\\' {
                    self.escaped = true;
                    self.matched = None;
                } else if c == b'"' {
                    self.in_string = false;
                    if self.in_key && self.matched == Some(KEY.len()) {
                        return true;
                    }
                    self.in_key = false;
                } else if self.in_key {
                    self.matched = self.matched.filter(|&m| KEY.get(m) == Some(&c)).map(|m| m + 1);
                }
                continue;
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    self.in_key = self.depth == 1 && self.expect_key;
                    self.matched = Some(0);
                    self.expect_key = false;
                }
                b'{' | b'[' => {
                    if self.depth == 0 && c == b'[' {
                        self.done = true;
                    }
                    self.depth += 1;
                    self.expect_key = self.depth == 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.done |= self.depth == 0;
                }
                b',' => self.expect_key = self.depth == 1,
                _ => {}
            }
        }
        false
    }
}

/// Decoded bytes read before the search gives up: far beyond any
/// profiler's metadata (one value over 256 MiB is refused when a trace is
/// read), and a bound on the time a hostile file can cost discovery.
const MAX_READ: u64 = 1 << 30;

/// Whether the document `reader` yields is an object with a top-level key
/// `traceEvents` within its first GiB. Reads until that key
/// or the object's end; a read error ends the search with `false`.
pub fn names_trace_events(reader: impl Read) -> bool {
    let mut reader = reader.take(MAX_READ);
    let mut keys = Keys::default();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                if keys.feed(&buf[..n]) {
                    return true;
                }
                if keys.done {
                    return false;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// [`names_trace_events`] of the file at `path`, decoded as a trace is.
pub fn file_names_trace_events(path: &Path) -> bool {
    match crate::input::open(path).map(|o| o.source) {
        Ok(crate::input::Source::Mapped { map, .. }) => names_trace_events(&map[..]),
        Ok(crate::input::Source::Stream { reader, .. }) => names_trace_events(reader),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::names_trace_events;

    fn names(doc: &str) -> bool {
        names_trace_events(doc.as_bytes())
    }

    #[test]
    fn a_top_level_trace_events_key_is_found_after_long_metadata() {
        let meta = "x".repeat(200_000);
        assert!(names(&format!(r#"{{"meta": {{"note": "{meta}", "traceEvents": 1}}, "traceEvents": []}}"#)));
        assert!(names(r#"{"a":[1,{"b":"}"}],"traceEvents":[]}"#));
    }

    #[test]
    fn the_key_elsewhere_is_not_enough() {
        // Nested, as a value, escaped, a longer or shorter key, after the
        // document's end, or in an array document.
        assert!(!names(r#"{"meta": {"traceEvents": []}}"#));
        assert!(!names(r#"{"k": "traceEvents", "l": ["traceEvents"]}"#));
        assert!(!names(r#"{"trace\u0045vents": []}"#));
        assert!(!names(r#"{"traceEventsX": [], "traceEvent": []}"#));
        assert!(!names(r#"{"a": 1} {"traceEvents": []}"#));
        assert!(!names(r#"[{"traceEvents": []}]"#));
        assert!(!names(""));
    }

    #[test]
    fn a_string_holding_quotes_and_braces_does_not_derail_the_scan() {
        assert!(names(r#"{"a": "\"}{,", "b": "\\", "traceEvents": []}"#));
        assert!(!names(r#"{"a": "\"traceEvents\": []"}"#));
    }
}
