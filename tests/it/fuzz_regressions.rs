//! Inputs the fuzzer (fuzz/, see docs/fuzzing.md) found wrong, each pinned
//! with the behaviour it must have now. Every case also runs through all
//! three ingest paths (in-memory, mapped parallel chunks, stream with tiny
//! refills), which must agree.

use std::io::Read;

use torchtriage::columns::Trace;
use torchtriage::ingest::{load_bytes, load_path, load_reader, IngestOptions};
use torchtriage::Result;

/// Parses `data` every way ingest can and checks the paths agree on the
/// outcome (columns compared through `stats`-level counts and row counts).
fn all_paths(data: &[u8]) -> Result<Trace> {
    let want = load_bytes(data);
    let summary = |r: &Result<Trace>| match r {
        Ok(t) => format!(
            "ok events={} skipped={} kernels={} cpu_ops={} launches={} frames={} ann={} keys={:?}",
            t.counts.events,
            t.counts.skipped,
            t.kernels.len(),
            t.cpu_ops.len(),
            t.launches.len(),
            t.frames.len(),
            t.annotations.len(),
            t.meta.top_level_keys
        ),
        Err(e) => format!("err offset={:?} {}", e.offset, e.message),
    };
    let w = summary(&want);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(&p, data).unwrap();
    let opts = IngestOptions { chunks: Some(3), parallel_min: Some(1) };
    assert_eq!(summary(&load_path(&p, &opts)), w, "mapped path");
    for chunk in [1usize, 2, 3, 7, 64] {
        let r: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(data.to_vec()));
        assert_eq!(summary(&load_reader(r, chunk)), w, "stream path, chunk {chunk}");
    }
    want
}

/// Repeated top-level keys keep their first position, once (a Python dict).
#[test]
fn duplicate_top_level_keys_listed_once() {
    let t =
        all_paths(br#"{"a": 1, "traceEvents": [], "b": [2], "a": {"x": 3}, "schemaVersion": 1, "schemaVersion": 2}"#)
            .unwrap();
    assert_eq!(t.meta.top_level_keys, vec!["a", "traceEvents", "b", "schemaVersion"]);
    assert_eq!(t.meta.schema_version, Some(serde_json::json!(2)));
}

/// `-Infinity` split by a stream refill was rejected as an invalid number.
#[test]
fn negative_infinity_across_a_refill() {
    let t = all_paths(br#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"m","pid":1,"tid":0,"ts":-Infinity,"dur":15,"args":{"stream":7}}]}"#).unwrap();
    assert_eq!(t.kernels.len(), 1);
    assert_eq!(t.kernels.get(0).ts, f64::NEG_INFINITY);
}

/// A UTF-8 byte-order mark split by a stream refill was "not a JSON trace".
#[test]
fn byte_order_mark_across_a_refill() {
    let t = all_paths(b"\xEF\xBB\xBF[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":2}]").unwrap();
    assert_eq!(t.kernels.len(), 1);
    let e = all_paths(b"\xEF\xBB").unwrap_err();
    assert_eq!(e.offset, Some(2));
}

/// A repeated `args` object replaced the fields but appended its keys to
/// the framework sample after the first object's (Python keeps only the
/// last object).
#[test]
fn repeated_args_replace_the_sample_text() {
    let text =
        br#"[{"ph":"X","cat":"c","args":{"a":"1"},"args":{"b":"2"}},{"ph":"X","cat":"d","args":{"e":"3"},"args":7}]"#;
    let t = all_paths(text).unwrap();
    assert_eq!(t.framework_sample, " c  b 2  d ");
    let oracle = torchtriage::columns::value::trace_from_value(&serde_json::from_slice(text).unwrap());
    assert_eq!(t.framework_sample, oracle.framework_sample);
}
