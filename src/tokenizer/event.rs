//! One event object: scans `{ ... }`, records where the fields the columns
//! need are, skips everything else without allocating, and lends the result
//! to the column builder as a [`RawEvent`].

use super::scan::{show, syntax, Loc, ScanResult, Scanner};
use super::shape::{Recording, Shapes, Target};
use crate::columns::{ArgsFields, ColumnsBuilder, RawEvent};
use crate::pysem::Scalar;

/// Field slots of one event, as scanned.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Slots {
    pub ph: Loc,
    pub cat: Loc,
    pub name: Loc,
    pub pid: Loc,
    pub tid: Loc,
    pub ts: Loc,
    pub dur: Loc,
    /// `float()` of `ts` and `dur` when the scanner read them as plain
    /// decimals.
    pub ts_float: Option<f64>,
    pub dur_float: Option<f64>,
    pub args_object: bool,
    pub ext: Loc,
    pub corr: Loc,
    pub stream: Loc,
    pub cuda_stream: Loc,
    pub arg_name: Loc,
}

/// Reusable per-thread buffers for event parsing, and the event shapes
/// learned so far.
#[derive(Default)]
pub struct EventScratch {
    pub(super) bytes: Vec<u8>,
    head: String,
    pub(super) shapes: Shapes,
    pub(super) rec: Recording,
}

/// Parses the event object at `s.pos` and pushes it into `b`. On success
/// `s.pos` is just past the closing brace.
pub fn parse_event(s: &mut Scanner<'_>, b: &mut ColumnsBuilder, scratch: &mut EventScratch) -> ScanResult<()> {
    let first = s.peek()?;
    if first != b'{' {
        return syntax(s.pos, format!("event is not an object (found {})", show(first)));
    }
    scratch.bytes.clear();
    scratch.head.clear();
    let want_head = b.wants_sample();
    let mut f = Slots::default();
    // The framework sample reads the head of `args`, which only the
    // general parser records.
    if !want_head && scratch.shapes.read(s, &mut scratch.bytes, &mut f) {
        push(s.buf, &scratch.bytes, &f, &scratch.head, b);
        return Ok(());
    }
    let learn = !want_head && scratch.shapes.wants();
    parse_and_learn(s, scratch, want_head, learn, &mut f)?;
    push(s.buf, &scratch.bytes, &f, &scratch.head, b);
    Ok(())
}

/// [`parse_fields`], and with `learn` the event's shape learned from it
/// (unless the event is one a shape cannot describe).
pub(super) fn parse_and_learn(
    s: &mut Scanner<'_>,
    scratch: &mut EventScratch,
    want_head: bool,
    learn: bool,
    f: &mut Slots,
) -> ScanResult<()> {
    let start = s.pos;
    scratch.rec.start(learn);
    parse_fields(s, scratch, want_head, f)?;
    if scratch.rec.ok {
        scratch.shapes.learn(s.buf, start, s.pos, &scratch.rec, f);
    }
    Ok(())
}

/// The general parser: any key order, whitespace and escapes. Records where
/// the values were when `scratch.rec` is on.
pub(super) fn parse_fields(
    s: &mut Scanner<'_>,
    scratch: &mut EventScratch,
    want_head: bool,
    f: &mut Slots,
) -> ScanResult<()> {
    let EventScratch { bytes, head, rec, .. } = scratch;
    s.pos += 1;
    let mut seen_args = false;
    let mut c = s.peek()?;
    if c == b'}' {
        s.pos += 1;
    } else {
        loop {
            if c != b'"' {
                return syntax(s.pos, format!("expected a key, found {}", show(c)));
            }
            let key = if let Some((key, len)) = known_key(s.buf, s.pos) {
                s.pos += len;
                key
            } else {
                let (key, escaped) = slow_key(s)?;
                rec.ok &= !escaped;
                key
            };
            if rec.on {
                s.skip_ws();
            }
            let at = s.pos;
            match top_slot(f, key) {
                TopSlot::Field(p) => {
                    rec.ok &= *p == Loc::Missing;
                    s.value_into(bytes, p)?;
                }
                TopSlot::Float(p, v) => {
                    rec.ok &= *p == Loc::Missing;
                    *v = s.float_into(bytes, p)?;
                }
                TopSlot::Args => {
                    rec.ok &= !seen_args;
                    seen_args = true;
                    if s.peek()? == b'{' {
                        f.args_object = true;
                        parse_args(s, f, bytes, want_head.then_some(&mut *head), rec)?;
                    } else {
                        // A non-object `args` is treated as `{}`; a later
                        // duplicate key may still supply one.
                        rec.ok = false;
                        f.args_object = false;
                        reset_args(f);
                        head.clear();
                        s.skip_value()?;
                    }
                }
                TopSlot::Skip => s.skip_value()?,
            }
            if rec.on {
                if let Some(t) = top_target(key) {
                    rec.value(at, s.pos, t);
                }
            }
            c = s.peek()?;
            s.pos += 1;
            match c {
                b',' => c = s.peek()?,
                b'}' => break,
                _ => return syntax(s.pos - 1, format!("expected ',' or '}}' in event, found {}", show(c))),
            }
        }
    }
    Ok(())
}

/// Lends the scanned fields to the column builder.
#[inline(always)]
fn push(buf: &[u8], sc: &[u8], f: &Slots, head: &str, b: &mut ColumnsBuilder) {
    let ev = RawEvent {
        ph: scalar(buf, sc, f.ph),
        cat: scalar(buf, sc, f.cat),
        name: scalar(buf, sc, f.name),
        pid: scalar(buf, sc, f.pid),
        tid: scalar(buf, sc, f.tid),
        ts: scalar(buf, sc, f.ts),
        dur: scalar(buf, sc, f.dur),
        ts_float: f.ts_float,
        dur_float: f.dur_float,
        args: ArgsFields {
            is_object: f.args_object,
            external_id: scalar(buf, sc, f.ext),
            correlation: scalar(buf, sc, f.corr),
            stream: scalar(buf, sc, f.stream),
            cuda_stream: scalar(buf, sc, f.cuda_stream),
            name: scalar(buf, sc, f.arg_name),
        },
        args_head: head,
    };
    b.push(&ev);
}

/// The shape target of a top-level key's value: `ph` and `cat` stay in the
/// shape's literal text, and `args` is read key by key.
fn top_target(key: Key) -> Option<Target> {
    Some(match key {
        Key::Ph | Key::Cat | Key::Args => return None,
        Key::Name => Target::Name,
        Key::Pid => Target::Pid,
        Key::Tid => Target::Tid,
        Key::Ts => Target::Ts,
        Key::Dur => Target::Dur,
        Key::Other => Target::Skip,
    })
}

enum TopSlot<'f> {
    Field(&'f mut Loc),
    /// A field read as a float, and where its value goes.
    Float(&'f mut Loc, &'f mut Option<f64>),
    Args,
    Skip,
}

/// The top-level keys the columns read.
#[derive(Clone, Copy)]
enum Key {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

fn key_of(key: &[u8]) -> Key {
    match key {
        b"ph" => Key::Ph,
        b"cat" => Key::Cat,
        b"name" => Key::Name,
        b"pid" => Key::Pid,
        b"tid" => Key::Tid,
        b"ts" => Key::Ts,
        b"dur" => Key::Dur,
        b"args" => Key::Args,
        _ => Key::Other,
    }
}

/// The first bytes of `text` as a little-endian word (at most 8).
const fn word(text: &[u8]) -> u64 {
    let mut w = 0u64;
    let mut i = 0;
    while i < text.len() {
        w |= (text[i] as u64) << (8 * i);
        i += 1;
    }
    w
}

/// A common key written as `"key":` at `pos` (the opening quote), read as
/// one word: the key and the bytes up to just past the colon. `None` for
/// anything else (other keys, escapes, whitespace before the colon, the
/// window's last bytes), which [`slow_key`] reads.
#[inline(always)]
fn known_key(buf: &[u8], pos: usize) -> Option<(Key, usize)> {
    const M5: u64 = (1 << 40) - 1;
    const M6: u64 = (1 << 48) - 1;
    const M7: u64 = (1 << 56) - 1;
    const PH: u64 = word(b"\"ph\":");
    const TS: u64 = word(b"\"ts\":");
    const CAT: u64 = word(b"\"cat\":");
    const PID: u64 = word(b"\"pid\":");
    const TID: u64 = word(b"\"tid\":");
    const DUR: u64 = word(b"\"dur\":");
    const NAME: u64 = word(b"\"name\":");
    const ARGS: u64 = word(b"\"args\":");
    let w = u64::from_le_bytes(*buf.get(pos..pos.checked_add(8)?)?.first_chunk::<8>()?);
    Some(match w & M5 {
        PH => (Key::Ph, 5),
        TS => (Key::Ts, 5),
        _ => match w & M6 {
            CAT => (Key::Cat, 6),
            PID => (Key::Pid, 6),
            TID => (Key::Tid, 6),
            DUR => (Key::Dur, 6),
            _ => match w & M7 {
                NAME => (Key::Name, 7),
                ARGS => (Key::Args, 7),
                _ => return None,
            },
        },
    })
}

/// Scans the key string at `s.pos` and the colon after it; also whether
/// the key had escapes.
fn slow_key(s: &mut Scanner<'_>) -> ScanResult<(Key, bool)> {
    let (ks, ke, kesc) = s.string_raw()?;
    s.expect(b':', "':'")?;
    Ok(if kesc {
        // Escaped keys are rare; decode and match the decoded form.
        let mut k = Vec::new();
        super::scan::decode_escapes(s.buf, ks, ke, &mut k)?;
        (key_of(&k), true)
    } else {
        (key_of(&s.buf[ks..ke]), false)
    })
}

#[inline(always)]
fn top_slot(f: &mut Slots, key: Key) -> TopSlot<'_> {
    TopSlot::Field(match key {
        Key::Ph => &mut f.ph,
        Key::Cat => &mut f.cat,
        Key::Name => &mut f.name,
        Key::Pid => &mut f.pid,
        Key::Tid => &mut f.tid,
        Key::Ts => return TopSlot::Float(&mut f.ts, &mut f.ts_float),
        Key::Dur => return TopSlot::Float(&mut f.dur, &mut f.dur_float),
        Key::Args => return TopSlot::Args,
        Key::Other => return TopSlot::Skip,
    })
}

fn reset_args(f: &mut Slots) {
    for l in [&mut f.ext, &mut f.corr, &mut f.stream, &mut f.cuda_stream, &mut f.arg_name] {
        *l = Loc::Missing;
    }
}

/// The `args` keys the columns read.
#[derive(Clone, Copy)]
enum ArgKey {
    Ext,
    Corr,
    Stream,
    CudaStream,
    Name,
    Other,
}

fn arg_key_of(key: &[u8]) -> ArgKey {
    match key {
        b"External id" => ArgKey::Ext,
        b"correlation" => ArgKey::Corr,
        b"stream" => ArgKey::Stream,
        b"cuda_stream" => ArgKey::CudaStream,
        b"name" => ArgKey::Name,
        _ => ArgKey::Other,
    }
}

#[inline(always)]
fn arg_slot(f: &mut Slots, key: ArgKey) -> Option<&mut Loc> {
    Some(match key {
        ArgKey::Ext => &mut f.ext,
        ArgKey::Corr => &mut f.corr,
        ArgKey::Stream => &mut f.stream,
        ArgKey::CudaStream => &mut f.cuda_stream,
        ArgKey::Name => &mut f.arg_name,
        ArgKey::Other => return None,
    })
}

/// The shape target of an `args` value.
fn arg_target(key: ArgKey) -> Target {
    match key {
        ArgKey::Ext => Target::Ext,
        ArgKey::Corr => Target::Corr,
        ArgKey::Stream => Target::Stream,
        ArgKey::CudaStream => Target::CudaStream,
        ArgKey::Name => Target::ArgName,
        ArgKey::Other => Target::Skip,
    }
}

/// A common `args` key written as `"key":` at `pos`, read as two words:
/// the key and the bytes up to just past the colon (see [`known_key`]).
/// Keys no analysis reads but profilers write on most events are known
/// too, as [`ArgKey::Other`].
#[inline(always)]
fn known_arg(buf: &[u8], pos: usize) -> Option<(ArgKey, usize)> {
    const M1: u64 = (1 << 8) - 1;
    const M4: u64 = (1 << 32) - 1;
    const M6: u64 = (1 << 48) - 1;
    const M7: u64 = (1 << 56) - 1;
    let b: &[u8; 16] = buf.get(pos..pos.checked_add(16)?)?.first_chunk::<16>()?;
    let w0 = u64::from_le_bytes(*b.first_chunk::<8>()?);
    let w1 = u64::from_le_bytes(*b.last_chunk::<8>()?);
    let k = match w0 {
        x if x == word(b"\"Externa") && w1 & M6 == word(b"l id\":") => (ArgKey::Ext, 14),
        x if x == word(b"\"correla") && w1 & M6 == word(b"tion\":") => (ArgKey::Corr, 14),
        x if x == word(b"\"Python ") => {
            if w1 & M4 == word(b"id\":") {
                (ArgKey::Other, 12)
            } else if w1 == word(b"parent i") && buf.get(pos + 16..pos + 19)? == b"d\":" {
                (ArgKey::Other, 19)
            } else if w1 == word(b"thread\":") {
                (ArgKey::Other, 16)
            } else {
                return None;
            }
        }
        x if x == word(b"\"stream\"") && w1 & M1 == word(b":") => (ArgKey::Stream, 9),
        x if x == word(b"\"cuda_st") && w1 & M6 == word(b"ream\":") => (ArgKey::CudaStream, 14),
        x if x == word(b"\"Ev Idx\"") && w1 & M1 == word(b":") => (ArgKey::Other, 9),
        x if x == word(b"\"Record ") && w1 == word(b"function") && buf.get(pos + 16..pos + 21)? == b" id\":" => {
            (ArgKey::Other, 21)
        }
        x if x & M7 == word(b"\"name\":") => (ArgKey::Name, 7),
        _ => return None,
    };
    Some(k)
}

/// Keys of an `args` object that go into the framework sample.
const HEAD_KEYS: usize = 8;

/// Parses the `args` object at `s.pos`. With `head`, also records the first
/// [`HEAD_KEYS`] keys and their string values for the framework sample.
fn parse_args(
    s: &mut Scanner<'_>,
    f: &mut Slots,
    scratch: &mut Vec<u8>,
    mut head: Option<&mut String>,
    rec: &mut Recording,
) -> ScanResult<()> {
    reset_args(f);
    if let Some(h) = head.as_deref_mut() {
        // A repeated `args` key replaces the earlier object entirely.
        h.clear();
    }
    s.pos += 1; // '{'
    let mut c = s.peek()?;
    if c == b'}' {
        s.pos += 1;
        return Ok(());
    }
    // Python keeps the last value of a duplicated key but its first position.
    let mut head_keys: Vec<(String, Option<String>)> = Vec::new();
    loop {
        if c != b'"' {
            return syntax(s.pos, format!("expected a key in args, found {}", show(c)));
        }
        // Outside the framework sample, common keys are read as words.
        let fast = if head.is_none() { known_arg(s.buf, s.pos) } else { None };
        if let Some((key, len)) = fast {
            s.pos += len;
            if rec.on {
                s.skip_ws();
            }
            let at = s.pos;
            match arg_slot(f, key) {
                Some(slot) => {
                    rec.ok &= *slot == Loc::Missing;
                    s.value_into(scratch, slot)?;
                }
                None => s.skip_value()?,
            }
            if rec.on {
                rec.value(at, s.pos, arg_target(key));
            }
        } else {
            let buf = s.buf;
            let (ks, ke, kesc) = s.string_raw()?;
            s.expect(b':', "':'")?;
            rec.ok &= !kesc;
            if rec.on {
                s.skip_ws();
            }
            let at = s.pos;
            let decoded;
            let key: &[u8] = if kesc {
                let mut k = Vec::new();
                super::scan::decode_escapes(buf, ks, ke, &mut k)?;
                decoded = k;
                &decoded
            } else {
                &buf[ks..ke]
            };
            // Only the first HEAD_KEYS distinct keys are sampled, so the
            // search stays this short however many keys the object has.
            let sampled = match head {
                Some(_) => head_keys.iter().position(|(hk, _)| hk.as_bytes() == key).or_else(|| {
                    (head_keys.len() < HEAD_KEYS).then(|| {
                        head_keys.push((String::from_utf8_lossy(key).into_owned(), None));
                        head_keys.len() - 1
                    })
                }),
                None => None,
            };
            let arg_key = arg_key_of(key);
            let v = match arg_slot(f, arg_key) {
                Some(slot) => {
                    rec.ok &= *slot == Loc::Missing;
                    s.value_into(scratch, slot)?;
                    *slot
                }
                None if sampled.is_some() => s.value(scratch)?,
                None => {
                    s.skip_value()?;
                    Loc::Compound
                }
            };
            if rec.on {
                rec.value(at, s.pos, arg_target(arg_key));
            }
            if let Some(i) = sampled {
                head_keys[i].1 = match v {
                    Loc::Str(..) | Loc::Ascii(..) | Loc::Scratch(..) => {
                        Some(String::from_utf8_lossy(loc_bytes(s.buf, scratch, v)).into_owned())
                    }
                    _ => None,
                };
            }
        }
        c = s.peek()?;
        s.pos += 1;
        match c {
            b',' => c = s.peek()?,
            b'}' => break,
            _ => return syntax(s.pos - 1, format!("expected ',' or '}}' in args, found {}", show(c))),
        }
    }
    if let Some(h) = head {
        let mut parts: Vec<&str> = Vec::new();
        for (k, v) in &head_keys {
            parts.push(k);
            if let Some(v) = v {
                parts.push(v);
            }
        }
        h.push_str(&parts.join(" "));
    }
    Ok(())
}

#[inline(always)]
fn loc_bytes<'a>(buf: &'a [u8], scratch: &'a [u8], loc: Loc) -> &'a [u8] {
    match loc {
        Loc::Str(a, b) | Loc::Ascii(a, b) | Loc::Num(a, b) => &buf[a..b],
        Loc::Scratch(a, b) => &scratch[a..b],
        _ => &[],
    }
}

/// Text of a scanned string: borrowed when valid UTF-8 (checked with an
/// ASCII fast path), else a fixed replacement marker.
#[inline(always)]
fn text(bytes: &[u8]) -> &str {
    if bytes.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    // Invalid UTF-8 (the reference would crash on it): substitute a marker
    // rather than allocate per event.
    std::str::from_utf8(bytes).unwrap_or("\u{FFFD}")
}

#[inline(always)]
fn scalar<'a>(buf: &'a [u8], scratch: &'a [u8], loc: Loc) -> Scalar<'a> {
    match loc {
        Loc::Missing => Scalar::Missing,
        Loc::Null => Scalar::Null,
        Loc::True => Scalar::Bool(true),
        Loc::False => Scalar::Bool(false),
        Loc::Compound => Scalar::Compound,
        // Number text was checked by the scanner: ASCII digits, signs and
        // the letters of `NaN` / `Infinity`.
        // SAFETY: ASCII is valid UTF-8.
        Loc::Num(a, b) => Scalar::Num(unsafe { std::str::from_utf8_unchecked(&buf[a..b]) }),
        // SAFETY: the scanner saw every byte of it below 0x80; ASCII is
        // valid UTF-8.
        Loc::Ascii(a, b) => Scalar::Str(unsafe { std::str::from_utf8_unchecked(&buf[a..b]) }),
        Loc::Str(..) | Loc::Scratch(..) => Scalar::Str(text(loc_bytes(buf, scratch, loc))),
    }
}
