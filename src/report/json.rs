//! The report as JSON: the report model ([`crate::report::model`]) as serde
//! writes it, with `schema_version` first. Layout: `docs/json-schema.md`.

use serde::Serialize;
use serde_json::Value;

use crate::report::model::{TriageReport, SCHEMA_VERSION};

/// A report body with the schema version in front.
#[derive(Serialize)]
pub struct Versioned<'a, T: Serialize> {
    pub schema_version: u32,
    #[serde(flatten)]
    pub body: &'a T,
}

impl<'a, T: Serialize> Versioned<'a, T> {
    pub fn new(body: &'a T) -> Self {
        Versioned { schema_version: SCHEMA_VERSION, body }
    }
}

/// The report as a JSON value.
pub fn to_value(r: &TriageReport) -> Value {
    serde_json::to_value(Versioned::new(r)).unwrap_or(Value::Null)
}

/// Compact JSON text of a triage report (the same value as [`to_value`]).
pub fn compact(r: &TriageReport) -> String {
    serde_json::to_string(&Versioned::new(r)).unwrap_or_else(|_| "null".into())
}

/// Pretty-printed JSON text of any versioned report body.
pub fn pretty<T: Serialize>(body: &T) -> String {
    serde_json::to_string_pretty(&Versioned::new(body)).unwrap_or_else(|_| "{}".into())
}

/// Pretty-printed JSON text of a triage report.
pub fn render(r: &TriageReport) -> String {
    pretty(r)
}

/// [`render`]'s text and a newline, written to `out` as it is made.
pub fn write(out: &mut dyn std::io::Write, r: &TriageReport) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &Versioned::new(r))?;
    out.write_all(b"\n")
}
