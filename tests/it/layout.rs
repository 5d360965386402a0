//! The text layout of a trace never changes a result: every bundled trace,
//! rewritten with a space before each colon (which the tokenizer's
//! word-at-a-time reading of common keys does not take, so every key goes
//! through the general path) and rewritten with no whitespace at all,
//! gives the same `triage` JSON and the same `stats` as the original.

use crate::common;

use std::io::Read;
use std::path::Path;

/// `text` with every byte outside strings passed to `f(byte, out)`.
fn outside_strings(text: &[u8], mut f: impl FnMut(u8, &mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            out.push(b);
            in_string = true;
        } else {
            f(b, &mut out);
        }
    }
    out
}

fn spaced(text: &[u8]) -> Vec<u8> {
    outside_strings(text, |b, out| {
        if b == b':' {
            out.push(b' ');
        }
        out.push(b);
    })
}

fn compact(text: &[u8]) -> Vec<u8> {
    outside_strings(text, |b, out| {
        if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            out.push(b);
        }
    })
}

fn json_of(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).unwrap();
        out
    } else {
        raw
    }
}

/// stdout of `args` + the file, with the file's folder written as `DIR`.
fn report(args: &[&str], file: &Path) -> String {
    let mut all = args.to_vec();
    all.push(file.to_str().unwrap());
    let out = common::run(&all);
    assert!(out.status.success(), "{:?}: {}", all, String::from_utf8_lossy(&out.stderr));
    let dir = file.parent().unwrap().canonicalize().unwrap();
    String::from_utf8(out.stdout).unwrap().replace(dir.to_str().unwrap(), "DIR")
}

#[test]
fn layout_does_not_change_results() {
    let corpus = common::Corpus::bundled();
    let traces = corpus.traces();
    assert!(traces.len() >= 5, "bundled traces: {}", traces.len());
    let tmp = tempfile::tempdir().unwrap();
    for (name, path) in traces {
        let text = json_of(&path);
        let forms = [("original", text.clone()), ("spaced", spaced(&text)), ("compact", compact(&text))];
        let mut want: Option<(String, String)> = None;
        for (form, bytes) in forms {
            let dir = tmp.path().join(form);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("trace.json");
            std::fs::write(&file, &bytes).unwrap();
            let got = (report(&["triage", "--quiet", "--format", "json"], &file), report(&["stats"], &file));
            match &want {
                None => want = Some(got),
                Some(w) => {
                    assert!(got.0 == w.0, "{name}: triage JSON of the {form} form differs");
                    assert!(got.1 == w.1, "{name}: stats of the {form} form differ");
                }
            }
        }
    }
}

#[test]
fn the_rewrites_touch_only_the_layout() {
    let text = br#"{"a" : "x:\" y", "b": [1, 2]}"#;
    assert_eq!(spaced(text), br#"{"a"  : "x:\" y", "b" : [1, 2]}"#.to_vec());
    assert_eq!(compact(text), br#"{"a":"x:\" y","b":[1,2]}"#.to_vec());
}
