//! Ingest: file → [`Trace`]. Picks the reading strategy for an opened input:
//! a mapped plain file is split at event boundaries and parsed on all cores
//! (pages released behind the cursor); a compressed or piped stream is
//! decoded into 8 MiB buffers, the next one while the current one is parsed
//! where it was decoded. Errors carry the file name and byte offset.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::columns::{ColumnsBuilder, Trace};
use crate::error::{Error, Result};
use crate::input::{self, Source};
use crate::tokenizer::{
    find_event_boundary, parse_chunk, parse_events_partial, Chunk, DocError, DocParser, EventsFrom, Partial, Step,
};

/// Knobs for one ingest.
#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// Split a mapped file into this many parallel chunks (default: the
    /// rayon pool size).
    pub chunks: Option<usize>,
    /// Smallest event array (bytes) worth splitting; default 4 MiB.
    pub parallel_min: Option<usize>,
}

/// Decoded-stream buffer size: the decoder fills one while the parser
/// reads the one before, in place (two threads split its events), so the
/// decoded bytes are never copied.
const STREAM_BATCH: usize = 8 << 20;
/// Room before a stream buffer's data for the unfinished unit (an event cut
/// by the buffer's end, usually under a kilobyte) that the buffer before
/// ended with; a longer one is gathered apart, as a whole.
const STREAM_HEAD: usize = 64 << 10;
/// Largest single event or top-level value accepted from a stream (the
/// stream window must hold one whole; this bounds its memory on hostile
/// input such as a gzip bomb that decodes to one endless string).
pub const MAX_UNIT_BYTES: usize = 256 << 20;
/// A compressed input may decode to at most this many times its size on
/// disk (past [`BOMB_FLOOR`]): real traces compress 5-30x, a compression
/// bomb about 1000x, and the columns of a dense bomb grow with its output.
pub const MAX_RATIO: u64 = 100;
/// Decoded bytes a compressed input may always produce, whatever the ratio.
pub const BOMB_FLOOR: u64 = 64 << 20;
/// Below this many bytes of events a mapped file is parsed on one thread.
const PARALLEL_MIN: usize = 4 << 20;

fn doc_err(e: DocError, base: u64) -> Error {
    Error::bad_input(e.msg).at(base + e.pos as u64)
}

/// The decoded bytes a stream buffer holds: [`STREAM_BATCH`], or less for a
/// small file (a batch of thousands of small files would otherwise allocate
/// and zero megabytes per file). Compressed data is allowed eight times its
/// size on disk before the buffer is handed over.
fn stream_buffer(disk_len: Option<u64>, encoding: input::Encoding) -> usize {
    const SMALLEST: u64 = 64 << 10;
    let Some(len) = disk_len else { return STREAM_BATCH };
    let wanted = if encoding == input::Encoding::Plain { len.saturating_add(1) } else { len.saturating_mul(8) };
    wanted.clamp(SMALLEST, STREAM_BATCH as u64) as usize
}

/// Reads a whole trace file (plain, gzip, zstd or `-`) into columns.
pub fn load_path(path: &Path, opts: &IngestOptions) -> Result<Trace> {
    load_opened(path, input::open(path)?, opts)
}

/// Reads an input [`input::open`] has opened into columns. `opened.consumed`
/// counts the bytes read from disk as it goes, for a progress display.
pub fn load_opened(path: &Path, opened: input::Opened, opts: &IngestOptions) -> Result<Trace> {
    let consumed = opened.consumed.clone();
    let compressed = opened.encoding != input::Encoding::Plain;
    let trace = match opened.source {
        Source::Mapped { map, .. } => load_mapped(&map, opts, &consumed),
        Source::Stream { reader, encoding, .. } => {
            let budget = (encoding != input::Encoding::Plain)
                .then_some(Budget { disk_len: opened.disk_len, consumed: &consumed });
            load_stream(reader, stream_buffer(opened.disk_len, encoding), budget)
        }
    };
    let shown = if path.as_os_str() == "-" { Path::new(input::STDIN_NAME) } else { path };
    trace.map_err(|mut e| {
        if compressed && e.offset.is_some() {
            e.message.push_str(&format!(" [offset in the decompressed {} data]", opened.encoding.name()));
        }
        e.in_file(shown)
    })
}

/// Decoded bytes read at most for a framework sample.
const SAMPLE_READ_LIMIT: usize = 64 << 20;

/// The framework-detection sample of a trace ([`Trace::framework_sample`])
/// without reading the whole file: events are parsed from the start until
/// the sample is full (or 64 MiB have been read). `None` when that start is
/// not a readable trace.
pub fn framework_sample(path: &Path) -> Option<String> {
    let mut reader: Box<dyn Read> = match input::open(path).ok()?.source {
        Source::Mapped { map, .. } => Box::new(std::io::Cursor::new(map)),
        Source::Stream { reader, .. } => reader,
    };
    let mut doc = DocParser::new();
    let mut window: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut pos = 0;
    let mut read = 0;
    loop {
        let n = reader.read(&mut chunk).ok()?;
        let eof = n == 0 || read >= SAMPLE_READ_LIMIT;
        read += n;
        window.extend_from_slice(&chunk[..n]);
        match doc.advance(&window, pos, eof, false).ok()? {
            Step::Done(_) => break,
            Step::NeedMore(p) | Step::AtEvents(p) => {
                window.drain(..p);
                pos = 0;
            }
        }
        if eof || (doc.saw_events() && !doc.builder.wants_sample()) {
            break;
        }
    }
    doc.saw_events().then(|| doc.builder.take_sample())
}

/// Parses a complete in-memory JSON text on the calling thread.
pub fn load_bytes(buf: &[u8]) -> Result<Trace> {
    let mut doc = DocParser::new();
    match doc.advance(buf, 0, true, false).map_err(|e| doc_err(e, 0))? {
        Step::Done(_) => finish(doc, buf.len() as u64),
        Step::NeedMore(p) | Step::AtEvents(p) => Err(Error::bad_input("internal: parser stopped early").at(p as u64)),
    }
}

fn finish(doc: DocParser, json_bytes: u64) -> Result<Trace> {
    if !doc.saw_events() {
        return Err(Error::bad_input("no traceEvents array in this JSON document"));
    }
    let mut trace = doc.builder.finish();
    trace.json_bytes = json_bytes;
    Ok(trace)
}

/// Releases mapped pages in `[from, to)` (rounded inward to pages) so the
/// resident set does not grow with the file.
fn release(map: &memmap2::Mmap, from: usize, to: usize) {
    const PAGE: usize = 4096;
    let a = from.div_ceil(PAGE) * PAGE;
    let b = to / PAGE * PAGE;
    if b > a {
        // SAFETY: DontNeed on a read-only file mapping only drops resident
        // pages; later reads fault them back in from the file.
        unsafe {
            let _ = map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a);
        }
    }
}

fn load_mapped(map: &memmap2::Mmap, opts: &IngestOptions, consumed: &AtomicU64) -> Result<Trace> {
    let buf: &[u8] = map;
    let _ = map.advise(memmap2::Advice::Sequential);
    let mut doc = DocParser::new();
    let p = match doc.advance(buf, 0, true, true).map_err(|e| doc_err(e, 0))? {
        Step::AtEvents(p) => p,
        Step::Done(_) => return finish(doc, buf.len() as u64),
        Step::NeedMore(p) => return Err(Error::bad_input("unexpected end of input").at(p as u64)),
    };
    let top_array = doc.builder.meta_mut().top_level_array;
    let n = opts.chunks.unwrap_or_else(rayon::current_num_threads).max(1);
    let span = buf.len() - p;
    let mut starts = vec![p];
    if n > 1 && span >= opts.parallel_min.unwrap_or(PARALLEL_MIN) {
        for k in 1..n {
            let mid = p + span / n * k;
            if let Some(b) = find_event_boundary(buf, mid, 64 << 20) {
                if b > *starts.last().unwrap_or(&p) {
                    starts.push(b);
                }
            }
        }
    }
    let run = |from: usize, first: bool, stop: usize| -> std::result::Result<Chunk, DocError> {
        let mut last = from;
        parse_chunk(buf, from, first, stop, |pos| {
            consumed.fetch_add((pos - last) as u64, Ordering::Relaxed);
            release(map, last, pos);
            last = pos;
        })
    };
    let results: Vec<std::result::Result<Chunk, DocError>> = starts
        .par_iter()
        .enumerate()
        .map(|(i, &from)| run(from, i == 0, starts.get(i + 1).copied().unwrap_or(usize::MAX)))
        .collect();
    // Chain the chunks: chunk k is valid only if chunk k-1 stopped exactly
    // where chunk k started (its boundary guess was a real event start).
    let mut pos = p;
    let mut ended = false;
    for (i, r) in results.into_iter().enumerate() {
        if ended || (i > 0 && pos != starts[i]) {
            break;
        }
        let c = r.map_err(|e| doc_err(e, 0))?;
        pos = c.next;
        ended = c.ended;
        doc.builder.merge(c.builder);
    }
    if !ended {
        // A boundary guess fell inside a string: finish sequentially.
        let c = run(pos, false, usize::MAX).map_err(|e| doc_err(e, 0))?;
        pos = c.next;
        doc.builder.merge(c.builder);
    }
    doc.resume_after_events(top_array);
    match doc.advance(buf, pos, true, false).map_err(|e| doc_err(e, 0))? {
        Step::Done(_) => {}
        Step::NeedMore(q) | Step::AtEvents(q) => return Err(Error::bad_input("unexpected end of input").at(q as u64)),
    }
    consumed.store(buf.len() as u64, Ordering::Relaxed);
    release(map, 0, buf.len());
    finish(doc, buf.len() as u64)
}

/// Parses an already-decoded JSON stream (the path gzip, zstd and stdin
/// take), reading it in buffers of `chunk` bytes. Small chunks exercise the
/// refill logic; tests and the fuzzer use this.
pub fn load_reader(reader: Box<dyn Read + Send>, chunk: usize) -> Result<Trace> {
    load_stream(reader, chunk.max(1), None)
}

/// Decoded-size budget of a compressed stream: the compression-bomb guard.
struct Budget<'a> {
    /// Compressed size; stdin has none, so the bytes read so far stand in.
    disk_len: Option<u64>,
    consumed: &'a AtomicU64,
}

impl Budget<'_> {
    fn allows(&self, decoded: u64) -> bool {
        let packed = self.disk_len.unwrap_or_else(|| self.consumed.load(Ordering::Relaxed));
        decoded <= BOMB_FLOOR.max(packed.saturating_mul(MAX_RATIO))
    }
}

/// A buffer of `head` bytes of room and then `n` bytes of decoded data,
/// and the error that stopped the decoder after them, if one did.
struct Decoded {
    buf: Vec<u8>,
    n: usize,
    err: Option<std::io::Error>,
}

/// Decoded bytes asked of the decoder at a time. A decoder that fails
/// drops what it decoded in the failing call, so the error's offset, the
/// end of the data delivered before it, is at most this far before the
/// fault.
const DECODE_PIECE: usize = 64 << 10;

/// Decodes up to `data` bytes into `buf` after `head` bytes of room (a
/// buffer that comes back with its length is zeroed only once).
fn decode_into(reader: &mut (dyn Read + Send), mut buf: Vec<u8>, head: usize, data: usize) -> Decoded {
    if buf.len() != head + data {
        buf.clear();
        buf.resize(head + data, 0);
    }
    let mut n = 0;
    while n < data {
        let piece = head + n..head + data.min(n + DECODE_PIECE);
        match reader.read(&mut buf[piece]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Decoded { buf, n, err: Some(e) },
        }
    }
    Decoded { buf, n, err: None }
}

/// The parsing side of a stream: the document parser and where its
/// unparsed bytes start in the decoded stream.
struct StreamParse {
    doc: DocParser,
    /// Offset in the decoded stream of the first byte not yet parsed.
    base: u64,
    /// An unfinished unit is rescanned from its start, so it is retried only
    /// once the bytes held have doubled: a huge value costs linear, not
    /// quadratic, time.
    retry_at: usize,
    parallel: bool,
    split: Split,
}

impl StreamParse {
    /// Bytes to hold before parsing again.
    fn wanted(&self) -> usize {
        if self.doc.events_state().is_some() && self.parallel {
            self.retry_at.max(STREAM_BATCH)
        } else {
            self.retry_at
        }
    }

    /// Parses what is complete in `window` (the bytes from `base` on); the
    /// step's position is where the unparsed rest starts.
    fn parse(&mut self, window: &[u8], eof: bool) -> Result<Step> {
        // At the end of the stream the last batch is split too, if it is
        // big enough to be worth a second thread.
        let batch = if eof { STREAM_TAIL_BATCH } else { STREAM_BATCH };
        let mut pos = 0;
        if self.doc.events_state().is_some() && self.parallel && window.len() >= batch {
            pos = events_in_parallel(window, &mut self.doc, &mut self.split).map_err(|e| doc_err(e, self.base))?;
        }
        self.doc.advance(window, pos, eof, false).map_err(|e| doc_err(e, self.base))
    }

    /// Takes in a buffer's `n` decoded bytes (after `head` bytes of room),
    /// parsing what is complete once enough is held. `carry` holds the
    /// unfinished unit the last parse left, or the bytes gathered while too
    /// few to parse; a short one goes in the buffer's room, so that the
    /// buffer is parsed where it was decoded.
    fn take_in(&mut self, carry: &mut Vec<u8>, buf: &mut [u8], head: usize, n: usize) -> Result<()> {
        let wanted = self.wanted();
        if carry.len() <= head && carry.len() + n >= wanted {
            let from = head - carry.len();
            buf[from..head].copy_from_slice(carry);
            let window = &buf[from..head + n];
            let p = self.parse(window, false)?.pos();
            carry.clear();
            carry.extend_from_slice(&window[p..]);
            self.advance(p, carry.len())
        } else {
            carry.extend_from_slice(&buf[head..head + n]);
            if carry.len() < wanted {
                return Ok(());
            }
            let p = self.parse(carry, false)?.pos();
            carry.drain(..p);
            self.advance(p, carry.len())
        }
    }

    /// Moves past `parsed` bytes, with `left` bytes held unparsed.
    fn advance(&mut self, parsed: usize, left: usize) -> Result<()> {
        self.base += parsed as u64;
        if left > MAX_UNIT_BYTES {
            return Err(
                Error::bad_input(format!("a single value is larger than {} MiB", MAX_UNIT_BYTES >> 20)).at(self.base)
            );
        }
        self.retry_at = left.saturating_mul(2).min(MAX_UNIT_BYTES + 1);
        Ok(())
    }
}

fn load_stream(mut reader: Box<dyn Read + Send>, buffer: usize, budget: Option<Budget<'_>>) -> Result<Trace> {
    let head = buffer.min(STREAM_HEAD);
    let mut st = StreamParse {
        doc: DocParser::new(),
        base: 0,
        retry_at: 0,
        parallel: rayon::current_num_threads() > 1,
        split: Split::default(),
    };
    let mut carry: Vec<u8> = Vec::new();
    let mut spare: Vec<u8> = Vec::new();
    let mut next = decode_into(&mut *reader, Vec::new(), head, buffer);
    loop {
        let Decoded { mut buf, n, err } = next;
        if n == 0 && err.is_none() {
            break;
        }
        let decoded = st.base + (carry.len() + n) as u64;
        if budget.as_ref().is_some_and(|b| !b.allows(decoded)) {
            return Err(Error::bad_input(format!(
                "decompresses to more than {MAX_RATIO}x its compressed size (a compression bomb?); \
                 decompress it yourself and pass the plain file to read it anyway"
            ))
            .at(decoded));
        }
        if let Some(e) = err {
            // What was decoded before the failure is parsed first, so that
            // the error's offset is where the data really ends.
            st.take_in(&mut carry, &mut buf, head, n)?;
            let text = if e.get_ref().is_some_and(|x| x.is::<crate::input::TrailingData>()) {
                e.to_string()
            } else {
                format!("corrupt or truncated compressed stream ({e})")
            };
            return Err(Error::bad_input(text).at(st.base + carry.len() as u64));
        }
        // The next buffer is decoded while this one is parsed, as one more
        // task of the pool: the pool's threads share the cores with no
        // decoder thread competing for them.
        let (taken, following) = rayon::join(
            || st.take_in(&mut carry, &mut buf, head, n),
            || decode_into(&mut *reader, std::mem::take(&mut spare), head, buffer),
        );
        taken?;
        spare = buf;
        next = following;
    }
    match st.parse(&carry, true)? {
        Step::Done(_) => finish(st.doc, st.base + carry.len() as u64),
        Step::NeedMore(p) | Step::AtEvents(p) => {
            Err(Error::bad_input("unexpected end of input").at(st.base + p as u64))
        }
    }
}

/// The smallest final batch of a stream that is still split across two
/// threads.
const STREAM_TAIL_BATCH: usize = 1 << 20;

/// Where [`events_in_parallel`] cuts a batch: the share of its bytes the
/// first half gets, following the two halves' measured speeds. The halves
/// do not run equally fast: the second half usually runs on the thread
/// that has just decoded the next buffer, so with an even cut the first
/// would wait for it at every batch (the first half settles at about 70 %
/// of a gzip batch and 74 % of a zstd one). Where the cut falls changes
/// nothing in the result, only which thread parses which events.
#[derive(Clone, Copy, Debug)]
struct Split {
    first_share: f64,
}

impl Default for Split {
    fn default() -> Split {
        Split { first_share: 0.5 }
    }
}

impl Split {
    /// Shares are kept within these bounds, so that one slow batch cannot
    /// leave a half with almost nothing to do.
    const MIN: f64 = 0.1;
    const MAX: f64 = 0.9;

    /// Learns from one batch: `a` and `b` are the (bytes, seconds) of each half.
    fn observe(&mut self, a: (usize, f64), b: (usize, f64)) {
        if a.0 == 0 || b.0 == 0 || a.1 <= 0.0 || b.1 <= 0.0 {
            return;
        }
        let (speed_a, speed_b) = (a.0 as f64 / a.1, b.0 as f64 / b.1);
        let ideal = speed_a / (speed_a + speed_b);
        self.first_share = (0.7 * self.first_share + 0.3 * ideal).clamp(Self::MIN, Self::MAX);
    }
}

/// Parses the complete events of `window` on two threads: the first
/// half goes on into the parser's own builder; the second starts at a
/// guessed event boundary (placed as `split` says), in a builder of its own
/// that is appended only if the first half stopped exactly there. Returns
/// the position after the last complete event (or after `]`) and updates
/// the parser's state.
fn events_in_parallel(window: &[u8], doc: &mut DocParser, split: &mut Split) -> std::result::Result<usize, DocError> {
    let Some((from, top_array)) = doc.events_state() else { return Ok(0) };
    let mid = (window.len() as f64 * split.first_share) as usize;
    let Some(cut) = find_event_boundary(window, mid, 8 << 20) else { return Ok(0) };
    // Each half packs its Python frames where it was parsed, so that the
    // merge below only moves packed runs.
    let timed = |r: std::result::Result<Partial, DocError>, t: std::time::Instant| {
        r.map(|mut p| {
            p.builder.pack_frames();
            (p, t.elapsed().as_secs_f64())
        })
    };
    let own = std::mem::replace(&mut doc.builder, ColumnsBuilder::new());
    // Both halves are timed from the same start: the second one's includes
    // the wait before a core takes it up.
    let t = std::time::Instant::now();
    let (a, b) = rayon::join(
        || timed(parse_events_partial(window, 0, from, cut, own), t),
        || timed(parse_events_partial(window, cut, EventsFrom::AtEvent, usize::MAX, ColumnsBuilder::new()), t),
    );
    let (a, a_secs) = a?;
    let mut end = a.end;
    let mut ended = a.ended;
    doc.builder = a.builder;
    if a.declined_at == Some(cut) {
        let (b, b_secs) = b?;
        if let Some(e) = b.end {
            split.observe((cut, a_secs), (e - cut, b_secs));
            end = b.end;
            ended = b.ended;
        }
        doc.builder.merge(b.builder);
    }
    match end {
        None => Ok(0),
        Some(e) => {
            if ended {
                doc.resume_after_events(top_array);
            } else {
                doc.resume_after_event(top_array);
            }
            Ok(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_moves_work_to_the_faster_half_within_bounds() {
        let mut split = Split::default();
        // The second half took twice as long for the same bytes.
        split.observe((1000, 1.0), (1000, 2.0));
        assert!(split.first_share > 0.5 && split.first_share < 2.0 / 3.0, "{split:?}");
        for _ in 0..100 {
            split.observe((1000, 1.0), (1000, 100.0));
        }
        assert_eq!(split.first_share, Split::MAX);
        for _ in 0..100 {
            split.observe((1000, 100.0), (1000, 1.0));
        }
        assert_eq!(split.first_share, Split::MIN);
        // Nothing to learn from an empty half or a zero time.
        let before = split.first_share;
        split.observe((0, 1.0), (1000, 1.0));
        split.observe((1000, 0.0), (1000, 1.0));
        assert_eq!(split.first_share, before);
    }

    #[test]
    fn small_streams_get_small_read_buffers() {
        use input::Encoding::{Gzip, Plain};
        assert_eq!(stream_buffer(Some(3_532), Plain), 64 << 10);
        assert_eq!(stream_buffer(Some(512 << 10), Plain), (512 << 10) + 1);
        assert_eq!(stream_buffer(Some(100_000), Gzip), 800_000);
        assert_eq!(stream_buffer(Some(1 << 30), Plain), STREAM_BATCH);
        assert_eq!(stream_buffer(Some(u64::MAX), Gzip), STREAM_BATCH);
        assert_eq!(stream_buffer(None, Plain), STREAM_BATCH);
    }

    /// The fixture's events repeated to about `target` bytes, inside a
    /// `traceEvents` object with metadata on both sides.
    fn big_doc(target: usize) -> Vec<u8> {
        let text = include_str!("../fixtures/synthetic_vllm_small.json");
        let start = text.find("\"traceEvents\": [").unwrap() + "\"traceEvents\": [".len();
        let end = text.rfind(']').unwrap();
        let events = text[start..end].trim();
        let mut out = String::from("{\"schemaVersion\": 1, \"traceEvents\": [");
        while out.len() < target {
            if !out.ends_with('[') {
                out.push_str(",\n");
            }
            out.push_str(events);
        }
        out.push_str("], \"traceName\": \"big\"}");
        out.into_bytes()
    }

    fn summary(t: &Trace) -> (u64, usize, usize, usize, usize, f64, f64, usize, Vec<String>) {
        (
            t.counts.events,
            t.kernels.len(),
            t.frames.len(),
            t.cpu_ops.len(),
            t.launches.len(),
            t.kernels.iter().map(|k| k.ts).sum(),
            t.frames.in_trace_order().iter().map(|f| f.ts + f.dur).sum(),
            t.corr_to_ext.len(),
            t.meta.top_level_keys.clone(),
        )
    }

    #[test]
    fn stream_path_splits_across_threads_with_the_same_result() {
        let doc = big_doc(3 * STREAM_BATCH);
        let want = summary(&load_bytes(&doc).unwrap());
        for chunk in [1 << 20, 3 << 20, 5_000_003] {
            let got = load_reader(Box::new(std::io::Cursor::new(doc.clone())), chunk).unwrap();
            assert_eq!(summary(&got), want, "chunk {chunk}");
        }
        // A cut inside the last events is still an error with its offset.
        let cut = &doc[..doc.len() - 100];
        let e = load_reader(Box::new(std::io::Cursor::new(cut.to_vec())), 1 << 20).unwrap_err();
        assert_eq!(e.offset, Some(cut.len() as u64), "{e}");
    }

    #[test]
    fn stream_units_longer_than_the_head_room_are_gathered_apart() {
        // An event of 200 KB (more than the room before a buffer's data)
        // starting just before the second buffer's end, so that it is
        // carried over, among small ones; read in buffers of other sizes too.
        let mut doc = big_doc(3 * STREAM_BATCH + (1 << 20));
        let long = format!(
            r#"{{"ph": "X", "cat": "python_function", "name": "{}", "pid": 1, "tid": 1, "ts": 5, "dur": 1}},
"#,
            "x".repeat(200 << 10)
        );
        let near = 2 * STREAM_BATCH - (100 << 10);
        let at = near + doc[near..].windows(3).position(|w| w == b"},\n").unwrap() + 3;
        doc.splice(at..at, long.bytes());
        let want = summary(&load_bytes(&doc).unwrap());
        for chunk in [300 << 10, 1 << 20, STREAM_BATCH] {
            let got = load_reader(Box::new(std::io::Cursor::new(doc.clone())), chunk).unwrap();
            assert_eq!(summary(&got), want, "chunk {chunk}");
        }
    }

    #[test]
    fn the_json_size_is_what_each_path_read() {
        let plain = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
        let len = std::fs::metadata(plain).unwrap().len();
        let split = IngestOptions { chunks: Some(3), parallel_min: Some(1) };
        assert_eq!(load_path(Path::new(plain), &split).unwrap().json_bytes, len, "mapped");
        let gz = format!("{plain}.gz");
        assert_eq!(load_path(Path::new(&gz), &IngestOptions::default()).unwrap().json_bytes, len, "gzip");
        let doc = big_doc(3 * STREAM_BATCH);
        let streamed = load_reader(Box::new(std::io::Cursor::new(doc.clone())), 1 << 20).unwrap();
        assert_eq!(streamed.json_bytes, doc.len() as u64, "stream");
        assert_eq!(load_bytes(&doc).unwrap().json_bytes, doc.len() as u64, "bytes");
    }

    #[test]
    fn bytes_parse_object_and_array_forms() {
        let t = load_bytes(br#"{"a": {"x": [1, 2]}, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 1, "dur": 2, "args": {"stream": 7}}], "schemaVersion": 1}"#).unwrap();
        assert_eq!(t.kernels.len(), 1);
        assert_eq!(t.meta.top_level_keys, vec!["a", "traceEvents", "schemaVersion"]);
        let t = load_bytes(br#"[{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}]"#)
            .unwrap();
        assert_eq!(t.thread_names.len(), 1);
    }

    #[test]
    fn bad_documents_name_the_offset() {
        let e = load_bytes(b"{\"traceEvents\": [{\"ph\": \"X\"}").unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
        let e = load_bytes(b"{\"other\": 1}").unwrap_err();
        assert!(e.message.contains("no traceEvents"), "{e}");
        let e = load_bytes(b"{\"traceEvents\": [1]}").unwrap_err();
        assert_eq!(e.offset, Some(17));
        let e = load_bytes(b"{\"traceEvents\": {}}").unwrap_err();
        assert!(e.message.contains("not an array"));
        let e = load_bytes(b"nope").unwrap_err();
        assert_eq!(e.offset, Some(0));
        let e = load_bytes(b"{\"traceEvents\": []} x").unwrap_err();
        assert!(e.message.contains("after the end"));
    }
}
