//! Shared checks for the fuzz targets: error-shape invariants and a
//! symbol-resolved fingerprint of a `Trace` for comparing ingest paths.
#![allow(dead_code)]

use torchtriage::columns::Trace;
use torchtriage::{Error, ErrorKind};

/// Every error is one line, bad-input, and points inside the input.
pub fn check_error(e: &Error, len: usize) {
    let line = e.to_string();
    assert!(!line.contains('\n'), "multi-line error: {line:?}");
    assert_eq!(e.kind, ErrorKind::BadInput, "{line}");
    if let Some(o) = e.offset {
        assert!(o <= len as u64, "offset {o} past the end ({len}): {line}");
    }
}

/// Internal consistency of a successful ingest.
pub fn check_trace(t: &Trace) {
    let c = &t.counts;
    assert_eq!(c.by_ph.values().sum::<u64>(), c.events);
    assert_eq!(c.by_cat.values().sum::<u64>(), c.events);
    assert!(c.skipped <= c.events);
    for k in t.kernels.iter() {
        assert!((k.thread as usize) < t.threads.len());
        let _ = t.s(k.name);
    }
}

/// Every column row with symbols resolved.
pub fn fingerprint(t: &Trace) -> Vec<String> {
    let th = |i: u32| format!("{}/{}", t.pid_str(i), t.tid_str(i));
    let mut v = Vec::new();
    for k in t.kernels.iter() {
        v.push(format!(
            "K {} {} {} {:?} {:?} {:?} {:?} {} {:?} {:?}",
            t.s(k.name), t.s(k.cat), th(k.thread), k.ts, k.dur,
            k.stream.map(|s| t.s(s)), k.cuda_stream.map(|s| t.s(s)), k.has_stream_marker, k.external_id, k.correlation
        ));
    }
    for c in t.cpu_ops.iter() {
        v.push(format!("C {} {} {:?} {:?} {} {:?} {:?}", t.s(c.name), th(c.thread), c.ts, c.dur, c.complete, c.external_id, c.correlation));
    }
    for l in t.launches.iter() {
        v.push(format!("L {} {} {:?} {:?} {} {}", t.s(l.name), th(l.thread), l.ts, l.dur, l.complete, l.correlation));
    }
    for f in t.frames.in_trace_order() {
        v.push(format!("F {} {} {:?} {:?} {}", t.s(f.name), th(f.thread), f.ts, f.dur, f.complete));
    }
    for a in t.annotations.iter() {
        v.push(format!("A {} {} {:?} {:?} {} {:?}", t.s(a.name), th(a.thread), a.ts, a.dur, a.is_gpu, a.external_id));
    }
    for (k, n) in &t.thread_names {
        v.push(format!("T {}/{} {}", t.s(k.pid), t.s(k.tid), t.s(*n)));
    }
    for (k, n) in &t.process_names {
        v.push(format!("P {} {}", t.s(*k), t.s(*n)));
    }
    let threads: Vec<String> = t.threads.iter().map(|k| format!("{}/{}", t.s(k.pid), t.s(k.tid))).collect();
    v.push(format!("H {threads:?}"));
    let mut corr: Vec<_> = t.corr_to_ext.iter().collect();
    corr.sort();
    v.push(format!("X {corr:?}"));
    v.push(format!("S {}", t.framework_sample));
    let c = &t.counts;
    let by = |m: &torchtriage::columns::FxIndexMap<u32, u64>| -> String { m.iter().map(|(k, n)| format!("{}={n}", t.s(*k))).collect::<Vec<_>>().join(",") };
    v.push(format!("N {} {} {:?} {:?} ph[{}] cat[{}]", c.events, c.skipped, c.min_ts, c.max_end, by(&c.by_ph), by(&c.by_cat)));
    let m = &t.meta;
    v.push(format!(
        "M {:?} {} {:?} {:?} {:?} {:?} {:?} {:?}",
        m.top_level_keys, m.top_level_array, m.schema_version, m.device_properties, m.distributed_info,
        m.with_stack, m.base_time_nanoseconds, m.trace_name
    ));
    v
}
