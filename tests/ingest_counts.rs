//! Ingest against the real traces: `stats --json` counts per `cat` and `ph`
//! equal `traces/counts.json` for every trace (of `tests/data` and of
//! `../shared`), and the streaming columns equal those built from a
//! serde_json parse (single and forced multi-chunk parsing). One trial per
//! trace; those over `../shared` are reported ignored when it is missing,
//! and fail under `CI=true` (tests/common/mod.rs).

mod common;

use std::io::Read;
use std::path::Path;

use common::Corpus;
use libtest_mimic::{Failed, Trial};
use torchtriage::columns::{value::trace_from_value, Trace};
use torchtriage::ingest::{load_path, IngestOptions};

/// `counts.json` covers the corpus: the full set lists its 44 traces; the
/// bundled one lists exactly the files under `tests/data/traces`.
fn check_listing(corpus: &Corpus) -> Result<(), Failed> {
    let listed: Vec<String> = corpus.traces().into_iter().map(|(name, _)| name).collect();
    if corpus.label == "shared" {
        assert_eq!(listed.len(), 44, "counts.json lists 44 traces");
        return Ok(());
    }
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.file_name().is_some_and(|n| n != "counts.json") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut present = Vec::new();
    walk(&corpus.traces_dir(), &corpus.traces_dir(), &mut present);
    present.sort();
    assert!(!present.is_empty(), "no traces under {}", corpus.traces_dir().display());
    assert_eq!(listed, present, "counts.json must list exactly the files under {}", corpus.traces_dir().display());
    Ok(())
}

fn check_stats_counts(name: &str, path: &Path, want: &serde_json::Value) -> Result<(), Failed> {
    let out = common::run(&["stats", "--json", "--quiet", path.to_str().unwrap()]);
    if !out.status.success() {
        return Err(format!("{name}: exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr)).into());
    }
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats --json is JSON");
    let same = got["events"] == want["events"] && got["cat"] == want["cat"] && got["ph"] == want["ph"];
    if same {
        Ok(())
    } else {
        Err(format!(
            "{name}: got events={} cat={} ph={}\nwant events={} cat={} ph={}",
            got["events"], got["cat"], got["ph"], want["events"], want["cat"], want["ph"]
        )
        .into())
    }
}

fn counts_trials(corpus: &Corpus) -> Vec<Trial> {
    let expected = corpus.counts();
    let whole = corpus.clone();
    let mut trials = vec![Trial::test(corpus.name("counts", "(listing)"), move || check_listing(&whole))];
    for (name, path) in corpus.traces() {
        let want = expected[&name].clone();
        trials.push(Trial::test(corpus.name("counts", &name), move || check_stats_counts(&name, &path, &want)));
    }
    trials
}

/// Renders every column row with symbols resolved, for comparing traces
/// built by different interners.
fn fingerprint(t: &Trace) -> Vec<String> {
    let th = |i: u32| format!("{}/{}", t.pid_str(i), t.tid_str(i));
    let mut v = Vec::new();
    for k in t.kernels.iter() {
        v.push(format!(
            "K {} {} {} {} {} {:?} {:?} {} {:?} {:?} {}",
            t.s(k.name),
            t.s(k.cat),
            th(k.thread),
            k.ts,
            k.dur,
            k.stream.map(|s| t.s(s)),
            k.cuda_stream.map(|s| t.s(s)),
            k.has_stream_marker,
            k.external_id,
            k.correlation,
            k.stream_int
        ));
    }
    for c in t.cpu_ops.iter() {
        v.push(format!(
            "C {} {} {} {} {} {:?} {:?}",
            t.s(c.name),
            th(c.thread),
            c.ts,
            c.dur,
            c.complete,
            c.external_id,
            c.correlation
        ));
    }
    for l in t.launches.iter() {
        v.push(format!("L {} {} {} {} {} {}", t.s(l.name), th(l.thread), l.ts, l.dur, l.complete, l.correlation));
    }
    for r in t.runtime.iter() {
        v.push(format!("R {} {} {} {}", t.s(r.name), r.ts, r.dur, r.correlation));
    }
    for m in t.step_marks.iter() {
        v.push(format!("P {} {} {}", t.s(m.name), m.ts, m.dur));
    }
    v.push(format!("TS {} {}", t.counts.ts_fractional, t.counts.ts_text));
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

fn check_streaming(name: &str, path: &Path) -> Result<(), Failed> {
    let want = fingerprint(&oracle(path));
    for chunks in [1usize, 3] {
        let opts = IngestOptions { chunks: Some(chunks), parallel_min: Some(1) };
        let got = fingerprint(&load_path(path, &opts).unwrap());
        assert_eq!(got.len(), want.len(), "{name} (chunks={chunks}): row count");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{name} (chunks={chunks})");
        }
    }
    Ok(())
}

fn streaming_trials(corpus: &Corpus) -> Vec<Trial> {
    corpus
        .traces()
        .into_iter()
        .map(|(name, path)| Trial::test(corpus.name("streaming", &name), move || check_streaming(&name, &path)))
        .collect()
}

fn main() {
    let mut trials = common::over_corpora("counts", counts_trials);
    trials.extend(common::over_corpora("streaming", streaming_trials));
    common::run_trials(trials);
}
