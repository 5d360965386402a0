//! Fuzz target: hostile *values* in otherwise valid traces, through the
//! whole triage. The input picks one of a few real traces and a list of
//! mutations, each (event, field, value): a time, duration, id, stream,
//! name or kind set to NaN, an infinity, a huge, negative or fractional
//! number, a numeric string, null, a bool, an object or an array. The
//! mutated trace is triaged (markdown and JSON rendered); it must never
//! panic, and an error must be one line.
#![no_main]

use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use torchtriage::run::triage::{run_triage, TriageInput, TriageOptions};

/// Real traces to mutate: cut-down seeds and one whole small trace.
fn bases() -> &'static [Value] {
    static BASES: OnceLock<Vec<Value>> = OnceLock::new();
    BASES.get_or_init(|| {
        let cut: [&[u8]; 3] = [
            include_bytes!("../seeds/seed-25-tracelens_inference_sglang_decode_sglang_Qwen3-8B_decode.jso.json"),
            include_bytes!("../seeds/seed-27-tracelens_inference_vllm_decode_full_graph_execution.json.gz.json"),
            include_bytes!("../seeds/seed-06-hta_critical_path_cuda_event_sync_multi_stream_event_sync_tr.json"),
        ];
        let whole: &[u8] =
            include_bytes!("../../tests/data/traces/tracelens/inference/vllm_decode_full/graph_execution.json.gz");
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(whole).read_to_end(&mut text).expect("gzip seed");
        cut.iter().chain([&text[..]].iter()).map(|b| serde_json::from_slice(b).expect("seed is JSON")).collect()
    })
}

const FIELDS: [&str; 16] = [
    "ts",
    "dur",
    "pid",
    "tid",
    "name",
    "cat",
    "ph",
    "args.correlation",
    "args.External id",
    "args.stream",
    "args.device",
    "args.Python id",
    "args.Python parent id",
    "args.cuda_stream",
    "args.Sequence number",
    "args",
];

/// Sentinels written as numbers, then replaced by literals serde_json
/// cannot write.
const LITERALS: [(f64, &str); 4] =
    [(-7_777_777.25, "NaN"), (-7_777_777.5, "Infinity"), (-7_777_777.75, "-Infinity"), (-7_777_778.25, "-0.0")];

fn value(k: u8, ev: &Value) -> Value {
    match k % 24 {
        0..=3 => Value::from(LITERALS[(k % 4) as usize].0),
        4 => Value::from(1e308),
        5 => Value::from(-1e308),
        6 => Value::from(1e20),
        7 => Value::from(-1),
        8 => Value::from(0),
        9 => Value::from(0.5),
        10 => Value::from(9_007_199_254_740_993u64),
        11 => Value::from(u64::MAX),
        12 => Value::from(i64::MIN),
        13 => Value::from("nan"),
        14 => Value::from("12"),
        15 => Value::from(""),
        16 => Value::Null,
        17 => Value::from(true),
        18 => serde_json::json!({}),
        19 => serde_json::json!([1, "x"]),
        20 => Value::from("x".repeat(300)),
        // The value of another event's field: a time moved, an id shared.
        21 => ev.get("ts").cloned().unwrap_or(Value::Null),
        22 => Value::from(ev.get("ts").and_then(Value::as_f64).unwrap_or(0.0) + 1e-9),
        _ => Value::from("kernel"),
    }
}

fn set(ev: &mut Value, field: &str, v: Value) {
    let Some(obj) = ev.as_object_mut() else { return };
    match field.strip_prefix("args.") {
        Some(key) => {
            let args = obj.entry("args").or_insert_with(|| serde_json::json!({}));
            if let Some(a) = args.as_object_mut() {
                a.insert(key.to_string(), v);
            }
        }
        None => {
            obj.insert(field.to_string(), v);
        }
    }
}

fn temp() -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    dir.join(format!("tt-fuzz-values-{}.json", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, muts)) = data.split_first() else { return };
    let bases = bases();
    let mut trace = bases[pick as usize % bases.len()].clone();
    let Some(events) = trace.get_mut("traceEvents").and_then(Value::as_array_mut) else { return };
    if events.is_empty() {
        return;
    }
    let n = events.len();
    for m in muts.chunks_exact(5).take(64) {
        let at = u16::from_le_bytes([m[0], m[1]]) as usize % n;
        let field = FIELDS[m[2] as usize % FIELDS.len()];
        let other = events[u16::from_le_bytes([m[4], m[1]]) as usize % n].clone();
        let v = value(m[3], &other);
        // A high bit spreads the mutation over every event of that kind.
        if m[2] & 0x80 != 0 {
            let cat = events[at].get("cat").cloned();
            for e in events.iter_mut().filter(|e| e.get("cat") == cat.as_ref()) {
                set(e, field, v.clone());
            }
        } else {
            set(&mut events[at], field, v);
        }
    }
    let mut text = trace.to_string();
    for (mark, literal) in LITERALS {
        text = text.replace(&mark.to_string(), literal);
    }
    let path = temp();
    std::fs::write(&path, &text).expect("write temp trace");
    let result = run_triage(&TriageInput::Single(path.clone()), &TriageOptions::default());
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(report) => {
            let _ = torchtriage::report::markdown::render(&report);
            let _ = torchtriage::report::json::render(&report);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
