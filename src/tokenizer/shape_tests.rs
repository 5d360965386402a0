//! Event shapes against the general parser: whatever an event looks like, a
//! shape either reads exactly what the general parser reads, or declines
//! and leaves the scanner where it was.

use super::event::{parse_and_learn, parse_fields, EventScratch, Slots};
use super::scan::{ScanResult, Scanner};

/// The profiler's own layout of a Python frame.
const FRAME: &str = r#"{
    "ph": "X", "cat": "python_function", "name": "threading.py(1075): _bootstrap_inner", "pid": 0, "tid": 0,
    "ts": 3676599907539.395, "dur": 287794.084,
    "args": {
      "Python parent id": 1, "Python id": 2, "Ev Idx": 22396
    }
  }"#;

/// A kernel as the profiler writes it, with every `args` field the columns read.
const KERNEL: &str = r#"{
    "ph": "X", "cat": "kernel", "name": "void at::native::elementwise_kernel<128, 4>", "pid": 0, "tid": 7,
    "ts": 3676599926300.125, "dur": 2.144,
    "args": {
      "External id": 31,
      "queued": 0, "device": 0, "context": 1,
      "stream": 7, "correlation": 98, "cuda_stream": "0x1",
      "registers per thread": 16,
      "grid": [12, 1, 1],
      "block": [128, 1, 1],
      "est. achieved occupancy %": 0
    }
  }"#;

/// The general parser's reading of `text`, and where it stopped.
fn general(text: &str) -> (ScanResult<Slots>, usize) {
    let mut scratch = EventScratch::default();
    let mut s = Scanner::new(text.as_bytes(), 0);
    let mut f = Slots::default();
    let r = parse_fields(&mut s, &mut scratch, false, &mut f).map(|()| f);
    (r, s.pos)
}

/// Shapes learned from each of `texts`, read by the general parser.
fn learned(texts: &[&str]) -> EventScratch {
    let mut scratch = EventScratch::default();
    for text in texts {
        let mut s = Scanner::new(text.as_bytes(), 0);
        let mut f = Slots::default();
        parse_and_learn(&mut s, &mut scratch, false, true, &mut f).expect("a valid event");
    }
    scratch
}

/// Reads `text` through the shapes: `Some` with the fields and the end when
/// a shape matched, `None` when they declined (checking that the scanner and
/// the decoded bytes were left as they were).
fn through_shapes(scratch: &mut EventScratch, text: &str) -> Option<(Slots, usize)> {
    let mut s = Scanner::new(text.as_bytes(), 0);
    let mut f = Slots::default();
    scratch.bytes.clear();
    if scratch.shapes.read(&mut s, &mut scratch.bytes, &mut f) {
        Some((f, s.pos))
    } else {
        assert_eq!(s.pos, 0, "a declining shape leaves the scanner at the event");
        assert!(scratch.bytes.is_empty());
        assert_eq!(f, Slots::default());
        None
    }
}

/// Checks `text` against the shapes learned from `from`: a match must equal
/// the general parser's fields, and must happen when `matches` says so.
fn check(from: &[&str], text: &str, matches: bool) {
    let mut scratch = learned(from);
    let got = through_shapes(&mut scratch, text);
    let (want, end) = general(text);
    match got {
        Some((f, pos)) => {
            assert!(matches, "a shape read an event it should have declined:\n{text}");
            let want = want.unwrap_or_else(|e| panic!("a shape read what the general parser refuses ({e:?}):\n{text}"));
            assert_eq!(f, want, "{text}");
            assert_eq!(pos, end, "{text}");
        }
        None => assert!(!matches, "no shape read the event:\n{text}"),
    }
}

#[test]
fn events_written_alike_are_read_as_the_general_parser_reads_them() {
    for (from, text) in [
        (FRAME, FRAME.to_string()),
        (FRAME, FRAME.replace("threading.py(1075): _bootstrap_inner", "a")),
        // Non-ASCII and escaped names: borrowed and decoded text.
        (FRAME, FRAME.replace("threading.py(1075)", "caf\u{e9}.py(1)")),
        (FRAME, FRAME.replace("threading.py(1075)", r#"say \"hi\" \u00e9"#)),
        // Values of other kinds in the same places.
        (FRAME, FRAME.replace(r#""pid": 0"#, r#""pid": "host 0""#)),
        // Whitespace before a value is skipped by the value's own scan.
        (FRAME, FRAME.replace(r#""pid": 0"#, r#""pid":  0"#)),
        (FRAME, FRAME.replace(r#""tid": 0"#, r#""tid": -12345678901"#)),
        (FRAME, FRAME.replace("3676599907539.395", "3676599907539")),
        (FRAME, FRAME.replace("3676599907539.395", "3.6e12")),
        (FRAME, FRAME.replace("287794.084", "null")),
        (FRAME, FRAME.replace("287794.084", r#""12""#)),
        (FRAME, FRAME.replace(r#""Python parent id": 1"#, r#""Python parent id": null"#)),
        (FRAME, FRAME.replace(r#""Python id": 2"#, r#""Python id": 123456789012"#)),
        (FRAME, FRAME.replace(r#""Python id": 2"#, r#""Python id": {"a": [1, "}"]}"#)),
        (KERNEL, KERNEL.to_string()),
        (KERNEL, KERNEL.replace(r#""stream": 7"#, r#""stream": "7""#)),
        (KERNEL, KERNEL.replace(r#""correlation": 98"#, r#""correlation": -1"#)),
        (KERNEL, KERNEL.replace(r#""cuda_stream": "0x1""#, r#""cuda_stream": null"#)),
        (KERNEL, KERNEL.replace("[12, 1, 1]", "[120000, 1]")),
    ] {
        check(&[from], &text, true);
    }
}

#[test]
fn events_written_otherwise_go_to_the_general_parser() {
    for (from, text) in [
        (FRAME, FRAME.replace(r#""ph": "X", "cat": "python_function""#, r#""cat": "python_function", "ph": "X""#)),
        (FRAME, FRAME.replace(r#""cat": "python_function""#, r#""cat": "cpu_op""#)),
        (FRAME, FRAME.replace(r#", "dur": 287794.084"#, "")),
        (FRAME, FRAME.replace(r#", "dur": 287794.084"#, r#", "dur": 287794.084, "dur": 1"#)),
        (FRAME, FRAME.replace(r#", "tid": 0"#, r#", "tid": 0, "extra": true"#)),
        (FRAME, FRAME.replace(r#""Python id""#, r#""Python \u0069d""#)),
        (
            FRAME,
            FRAME.replace(
                "\"args\": {\n      \"Python parent id\": 1, \"Python id\": 2, \"Ev Idx\": 22396\n    }",
                "\"args\": {}",
            ),
        ),
        (FRAME, FRAME.replace("\n  }", " }")),
        // Malformed: the general parser's error is the one reported.
        (FRAME, FRAME.replace("287794.084,", "287794.084 ,,")),
        (FRAME, FRAME.replace("287794.084", "2877.94.084")),
        (FRAME, FRAME.replace(r#""Ev Idx": 22396"#, r#""Ev Idx": nul"#)),
        (FRAME, FRAME.replace(r#""Ev Idx": 22396"#, r#""Ev Idx": 22396x"#)),
        (FRAME, FRAME.replace("_bootstrap_inner", r#"bad \q escape"#)),
        (KERNEL, KERNEL.replace("[12, 1, 1]", "[12, 1, 1")),
    ] {
        check(&[from], &text, false);
    }
}

#[test]
fn an_event_cut_short_is_never_read_by_a_shape() {
    let mut scratch = learned(&[FRAME, KERNEL]);
    for text in [FRAME, KERNEL] {
        for cut in 0..text.len() {
            assert!(through_shapes(&mut scratch, &text[..cut]).is_none(), "cut at {cut}");
        }
        assert!(through_shapes(&mut scratch, text).is_some());
    }
}

#[test]
fn ph_and_cat_after_values_are_placed_in_the_event_read() {
    let from =
        r#"{"name": "thread_name", "ph": "M", "pid": 7, "tid": 8, "cat": "__metadata", "args": {"name": "main"}}"#;
    for name in ["thread_name", "process_name", "x"] {
        for pid in ["7", "123456", "\"p\""] {
            let text = from.replace("thread_name", name).replace("7", pid);
            check(&[from], &text, true);
        }
    }
}

#[test]
fn events_the_general_parser_reads_unusually_teach_no_shape() {
    for text in [
        FRAME.replace(r#""pid": 0"#, r#""pid": 0, "pid": 1"#),
        FRAME.replace(r#""name""#, r#""n\u0061me""#),
        FRAME
            .replace(r#""Python id": 2"#, r#""Python id": 2, "Python id": 3"#)
            .replace(r#""Ev Idx""#, r#""stream": 1, "stream""#),
        r#"{"ph": "X", "cat": "kernel", "args": null, "args": {"stream": 1}}"#.to_string(),
        r#"{"ph": 1, "cat": "kernel", "ts": 1, "dur": 1}"#.to_string(),
        r#"{"ph": "X", "cat": "ker\u006eel", "ts": 1, "dur": 1}"#.to_string(),
    ] {
        let scratch = learned(&[&text]);
        assert_eq!(scratch.shapes.len(), 0, "{text}");
    }
}

#[test]
fn a_trace_of_many_shapes_keeps_learning_the_ones_it_meets() {
    // Nine kinds of event, more than the shapes kept: after a run of misses
    // the next miss is learned, so a kind met again is read by a shape.
    let kinds: Vec<String> = (0..9).map(|k| FRAME.replace("python_function", &format!("kind{k}"))).collect();
    let mut scratch = EventScratch::default();
    let mut read = 0;
    for round in 0..200 {
        let text = &kinds[if round < 100 { round % 9 } else { 8 }];
        let mut s = Scanner::new(text.as_bytes(), 0);
        let mut f = Slots::default();
        scratch.bytes.clear();
        if scratch.shapes.read(&mut s, &mut scratch.bytes, &mut f) {
            read += 1;
            assert_eq!(f, general(text).0.unwrap());
            continue;
        }
        let mut s = Scanner::new(text.as_bytes(), 0);
        let learn = scratch.shapes.wants();
        let mut f = Slots::default();
        parse_and_learn(&mut s, &mut scratch, false, learn, &mut f).unwrap();
    }
    assert!(read >= 150, "{read} of 200 events read by a shape");
}
