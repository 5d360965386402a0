//! Fuzz target: the in-memory ingest (`load_bytes`, the tokenizer on one
//! thread). Must never panic; errors must be one line pointing inside the
//! input; when serde_json also accepts the text (plain JSON numbers of at
//! most 15 digits, no NaN/Infinity, valid UTF-8) the columns must equal
//! those built from serde_json's parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtriage::columns::value::trace_from_value;
use torchtriage::ingest::load_bytes;

#[path = "common.rs"]
mod common;

/// serde_json and Python disagree on big integers and `-0`; keep the
/// oracle comparison to number texts both read the same way.
fn numbers_are_tame(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Number(n) => {
            let s = n.to_string();
            s.len() <= 15 && !s.starts_with("-0") && (n.is_i64() || n.is_u64())
        }
        serde_json::Value::Array(a) => a.iter().all(numbers_are_tame),
        serde_json::Value::Object(m) => m.values().all(numbers_are_tame),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    match load_bytes(data) {
        Err(e) => common::check_error(&e, data.len()),
        Ok(t) => {
            common::check_trace(&t);
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
                if numbers_are_tame(&v) {
                    let want = common::fingerprint(&trace_from_value(&v));
                    assert_eq!(common::fingerprint(&t), want, "tokenizer and serde_json oracle disagree");
                }
            }
        }
    }
});
