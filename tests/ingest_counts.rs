//! Ingest against the real traces: `stats --json` counts per `cat` and `ph`
//! equal `../shared/traces/counts.json` for every trace, and the streaming
//! columns equal those built from a serde_json parse (single and forced
//! multi-chunk parsing).

mod common;

use std::io::Read;

use torchtriage::columns::{value::trace_from_value, Trace};
use torchtriage::ingest::{load_path, IngestOptions};

#[test]
fn stats_counts_match_counts_json_for_all_traces() {
    let Some(shared) = common::shared_dir() else { return };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shared.join("traces/counts.json")).unwrap()).unwrap();
    let traces = common::shared_traces(&shared);
    assert_eq!(traces.len(), 44, "counts.json lists 44 traces");
    let mut matched = 0;
    let mut failures = Vec::new();
    for (name, path) in &traces {
        let out = common::run(&["stats", "--json", "--quiet", path.to_str().unwrap()]);
        if !out.status.success() {
            failures.push(format!("{name}: exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr)));
            continue;
        }
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats --json is JSON");
        let want = &expected[name];
        let same = got["events"] == want["events"] && got["cat"] == want["cat"] && got["ph"] == want["ph"];
        if same {
            matched += 1;
        } else {
            failures.push(format!("{name}: got events={} cat={} ph={}", got["events"], got["cat"], got["ph"]));
        }
    }
    println!("stats counts: {matched} of {} match", traces.len());
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

/// Renders every column row with symbols resolved, for comparing traces
/// built by different interners.
fn fingerprint(t: &Trace) -> Vec<String> {
    let th = |i: u32| format!("{}/{}", t.pid_str(i), t.tid_str(i));
    let mut v = Vec::new();
    for k in t.kernels.iter() {
        v.push(format!(
            "K {} {} {} {} {} {:?} {:?} {} {:?} {:?}",
            t.s(k.name), t.s(k.cat), th(k.thread), k.ts, k.dur,
            k.stream.map(|s| t.s(s)), k.cuda_stream.map(|s| t.s(s)), k.has_stream_marker, k.external_id, k.correlation
        ));
    }
    for c in t.cpu_ops.iter() {
        v.push(format!("C {} {} {} {} {} {:?} {:?}", t.s(c.name), th(c.thread), c.ts, c.dur, c.complete, c.external_id, c.correlation));
    }
    for l in t.launches.iter() {
        v.push(format!("L {} {} {} {} {} {}", t.s(l.name), th(l.thread), l.ts, l.dur, l.complete, l.correlation));
    }
    for f in t.frames.in_trace_order() {
        v.push(format!("F {} {} {} {} {}", t.s(f.name), th(f.thread), f.ts, f.dur, f.complete));
    }
    for a in t.annotations.iter() {
        v.push(format!("A {} {} {} {} {} {:?}", t.s(a.name), th(a.thread), a.ts, a.dur, a.is_gpu, a.external_id));
    }
    for (k, n) in &t.thread_names {
        v.push(format!("T {}/{} {}", t.s(k.pid), t.s(k.tid), t.s(*n)));
    }
    let mut corr: Vec<_> = t.corr_to_ext.iter().collect();
    corr.sort();
    v.push(format!("X {corr:?}"));
    v.push(format!("S {}", t.framework_sample));
    v.push(format!("M {:?} {:?}", t.meta.top_level_keys, t.meta.distributed_info));
    v
}

fn oracle(path: &std::path::Path) -> Trace {
    let raw = std::fs::read(path).unwrap();
    let mut text = Vec::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut text).unwrap();
    } else {
        text = raw;
    }
    trace_from_value(&serde_json::from_slice(&text).unwrap())
}

#[test]
fn streaming_columns_equal_serde_json_oracle() {
    let Some(shared) = common::shared_dir() else { return };
    for (name, path) in common::shared_traces(&shared) {
        let want = fingerprint(&oracle(&path));
        for chunks in [1usize, 3] {
            let opts = IngestOptions { chunks: Some(chunks), parallel_min: Some(1) };
            let got = fingerprint(&load_path(&path, &opts).unwrap());
            assert_eq!(got.len(), want.len(), "{name} (chunks={chunks}): row count");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "{name} (chunks={chunks})");
            }
        }
    }
}
