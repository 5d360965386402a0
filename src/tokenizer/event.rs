//! One event object: scans `{ ... }`, records where the fields the columns
//! need are, skips everything else without allocating, and lends the result
//! to the column builder as a [`RawEvent`].

use super::scan::{show, syntax, Loc, ScanResult, Scanner};
use crate::columns::{ArgsFields, ColumnsBuilder, RawEvent};
use crate::pysem::Scalar;

/// Field slots of one event, as scanned.
#[derive(Default)]
struct Slots {
    ph: Loc,
    cat: Loc,
    name: Loc,
    pid: Loc,
    tid: Loc,
    ts: Loc,
    dur: Loc,
    args_object: bool,
    ext: Loc,
    corr: Loc,
    py_id: Loc,
    py_parent: Loc,
    stream: Loc,
    cuda_stream: Loc,
    arg_name: Loc,
}

/// Reusable per-thread buffers for event parsing.
#[derive(Default)]
pub struct EventScratch {
    bytes: Vec<u8>,
    head: String,
}

/// Parses the event object at `s.pos` and pushes it into `b`. On success
/// `s.pos` is just past the closing brace.
pub fn parse_event(s: &mut Scanner<'_>, b: &mut ColumnsBuilder, scratch: &mut EventScratch) -> ScanResult<()> {
    let first = s.peek()?;
    if first != b'{' {
        return syntax(s.pos, format!("event is not an object (found {})", show(first)));
    }
    s.pos += 1;
    scratch.bytes.clear();
    scratch.head.clear();
    let want_head = b.wants_sample();
    let mut f = Slots::default();
    let mut c = s.peek()?;
    if c == b'}' {
        s.pos += 1;
    } else {
        loop {
            if c != b'"' {
                return syntax(s.pos, format!("expected a key, found {}", show(c)));
            }
            let (ks, ke, kesc) = s.string_raw()?;
            s.expect(b':', "':'")?;
            let key: &[u8] = &s.buf[ks..ke];
            let slot = if kesc {
                // Escaped keys are rare; decode and match the decoded form.
                let mut k = Vec::new();
                super::scan::decode_escapes(s.buf, ks, ke, &mut k)?;
                top_slot(&mut f, &k)
            } else {
                top_slot(&mut f, key)
            };
            match slot {
                TopSlot::Field(p) => s.value_into(&mut scratch.bytes, p)?,
                TopSlot::Args => {
                    if s.peek()? == b'{' {
                        f.args_object = true;
                        parse_args(s, &mut f, &mut scratch.bytes, want_head.then_some(&mut scratch.head))?;
                    } else {
                        // A non-object `args` is treated as `{}`; a later
                        // duplicate key may still supply one.
                        f.args_object = false;
                        reset_args(&mut f);
                        scratch.head.clear();
                        s.skip_value()?;
                    }
                }
                TopSlot::Skip => s.skip_value()?,
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
    let buf = s.buf;
    let sc = &scratch.bytes;
    let ev = RawEvent {
        ph: scalar(buf, sc, f.ph),
        cat: scalar(buf, sc, f.cat),
        name: scalar(buf, sc, f.name),
        pid: scalar(buf, sc, f.pid),
        tid: scalar(buf, sc, f.tid),
        ts: scalar(buf, sc, f.ts),
        dur: scalar(buf, sc, f.dur),
        args: ArgsFields {
            is_object: f.args_object,
            external_id: scalar(buf, sc, f.ext),
            correlation: scalar(buf, sc, f.corr),
            python_id: scalar(buf, sc, f.py_id),
            python_parent_id: scalar(buf, sc, f.py_parent),
            stream: scalar(buf, sc, f.stream),
            cuda_stream: scalar(buf, sc, f.cuda_stream),
            name: scalar(buf, sc, f.arg_name),
        },
        args_head: &scratch.head,
    };
    b.push(&ev);
    Ok(())
}

enum TopSlot<'f> {
    Field(&'f mut Loc),
    Args,
    Skip,
}

fn top_slot<'f>(f: &'f mut Slots, key: &[u8]) -> TopSlot<'f> {
    TopSlot::Field(match key {
        b"ph" => &mut f.ph,
        b"cat" => &mut f.cat,
        b"name" => &mut f.name,
        b"pid" => &mut f.pid,
        b"tid" => &mut f.tid,
        b"ts" => &mut f.ts,
        b"dur" => &mut f.dur,
        b"args" => return TopSlot::Args,
        _ => return TopSlot::Skip,
    })
}

fn reset_args(f: &mut Slots) {
    for l in
        [&mut f.ext, &mut f.corr, &mut f.py_id, &mut f.py_parent, &mut f.stream, &mut f.cuda_stream, &mut f.arg_name]
    {
        *l = Loc::Missing;
    }
}

fn args_slot<'f>(f: &'f mut Slots, key: &[u8]) -> Option<&'f mut Loc> {
    Some(match key {
        b"External id" => &mut f.ext,
        b"correlation" => &mut f.corr,
        b"Python id" => &mut f.py_id,
        b"Python parent id" => &mut f.py_parent,
        b"stream" => &mut f.stream,
        b"cuda_stream" => &mut f.cuda_stream,
        b"name" => &mut f.arg_name,
        _ => return None,
    })
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
        let buf = s.buf;
        let (ks, ke, kesc) = s.string_raw()?;
        s.expect(b':', "':'")?;
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
        let v = match args_slot(f, key) {
            Some(slot) => {
                s.value_into(scratch, slot)?;
                *slot
            }
            None if sampled.is_some() => s.value(scratch)?,
            None => {
                s.skip_value()?;
                Loc::Compound
            }
        };
        if let Some(i) = sampled {
            head_keys[i].1 = match v {
                Loc::Str(..) | Loc::Scratch(..) => {
                    Some(String::from_utf8_lossy(loc_bytes(s.buf, scratch, v)).into_owned())
                }
                _ => None,
            };
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
        Loc::Str(a, b) | Loc::Num(a, b) => &buf[a..b],
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
        // Number text was checked by the scanner: ASCII digits and signs.
        Loc::Num(a, b) => Scalar::Num(text(&buf[a..b])),
        Loc::Str(..) | Loc::Scratch(..) => Scalar::Str(text(loc_bytes(buf, scratch, loc))),
    }
}
