//! Builds columns from an already-parsed `serde_json::Value`. Slow and
//! memory-hungry; it exists as an independent oracle for the streaming
//! tokenizer in tests, and for callers that already hold a parsed trace.

use serde_json::Value;

use super::{ArgsFields, ColumnsBuilder, Trace};
use crate::pysem::Scalar;

/// Holds the text of numbers so a `Scalar` can borrow it.
fn scalar<'a>(v: Option<&'a Value>, num_buf: &'a str) -> Scalar<'a> {
    match v {
        None => Scalar::Missing,
        Some(Value::Null) => Scalar::Null,
        Some(Value::Bool(b)) => Scalar::Bool(*b),
        Some(Value::Number(_)) => Scalar::Num(num_buf),
        Some(Value::String(s)) => Scalar::Str(s),
        Some(_) => Scalar::Compound,
    }
}

fn num_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Columns of a parsed trace (object with `traceEvents`, or an array).
pub fn trace_from_value(root: &Value) -> Trace {
    let mut b = ColumnsBuilder::new();
    let events: &[Value] = match root {
        Value::Object(map) => {
            let meta = b.meta_mut();
            meta.top_level_keys = map.keys().cloned().collect();
            meta.schema_version = map.get("schemaVersion").cloned();
            meta.device_properties = map.get("deviceProperties").cloned();
            meta.distributed_info = map.get("distributedInfo").cloned();
            meta.with_stack = map.get("with_stack").cloned();
            meta.base_time_nanoseconds = map.get("baseTimeNanoseconds").cloned();
            meta.trace_name = map.get("traceName").cloned();
            match map.get("traceEvents") {
                Some(Value::Array(a)) => a,
                _ => &[],
            }
        }
        Value::Array(a) => {
            b.meta_mut().top_level_array = true;
            a
        }
        _ => &[],
    };
    for ev in events {
        let Value::Object(e) = ev else { continue };
        let args_obj = match e.get("args") {
            Some(Value::Object(a)) => Some(a),
            _ => None,
        };
        let arg = |k: &str| args_obj.and_then(|a| a.get(k));
        let texts: Vec<String> = [
            e.get("ph"),
            e.get("cat"),
            e.get("name"),
            e.get("pid"),
            e.get("tid"),
            e.get("ts"),
            e.get("dur"),
            arg("External id"),
            arg("correlation"),
            arg("stream"),
            arg("cuda_stream"),
            arg("name"),
        ]
        .iter()
        .map(|v| num_text(*v))
        .collect();
        let mut head = String::new();
        if b.wants_sample() {
            if let Some(a) = args_obj {
                let mut parts: Vec<&str> = Vec::new();
                for (k, v) in a.iter().take(8) {
                    parts.push(k);
                    if let Value::String(s) = v {
                        parts.push(s);
                    }
                }
                head = parts.join(" ");
            }
        }
        let raw = super::RawEvent {
            ph: scalar(e.get("ph"), &texts[0]),
            cat: scalar(e.get("cat"), &texts[1]),
            name: scalar(e.get("name"), &texts[2]),
            pid: scalar(e.get("pid"), &texts[3]),
            tid: scalar(e.get("tid"), &texts[4]),
            ts: scalar(e.get("ts"), &texts[5]),
            dur: scalar(e.get("dur"), &texts[6]),
            ts_float: None,
            dur_float: None,
            args: ArgsFields {
                is_object: args_obj.is_some(),
                external_id: scalar(arg("External id"), &texts[7]),
                correlation: scalar(arg("correlation"), &texts[8]),
                stream: scalar(arg("stream"), &texts[9]),
                cuda_stream: scalar(arg("cuda_stream"), &texts[10]),
                name: scalar(arg("name"), &texts[11]),
            },
            args_head: &head,
        };
        b.push(&raw);
    }
    b.finish()
}
