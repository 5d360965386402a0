//! The CSV format: one file per table (`kernels.csv`, `overlap.csv`,
//! `fuse.csv`, `timeline.csv`, `ranks.csv`, ...), RFC 4180 quoting, numbers
//! unformatted (µs, as in the JSON), a header row (the same columns whatever
//! the rows hold, and on a file with no rows). Each file's rows are the
//! JSON report's rows of that table (`tables` says which), flattened:
//! nested objects become dotted columns (`normalized.delta_us`), lists of
//! text one entry per line in one cell, `null` an empty cell.

mod tables;

use serde_json::{Map, Value};

use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};

pub struct Csv;

/// Every file a CSV report of any command writes.
pub const FILE_NAMES: &[&str] = &[
    "kernels.csv",
    "overlap.csv",
    "overlap_stats.csv",
    "fuse.csv",
    "timeline.csv",
    "idle.csv",
    "stages.csv",
    "ranks.csv",
    "failures.csv",
    "skipped.csv",
    "categories.csv",
    "gate.csv",
    "notes.csv",
];

impl Renderer for Csv {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        // What an HTA basis leaves out, as the headline says it.
        let basis = r.timeline.as_ref().and_then(crate::report::timeline::basis_note);
        Rendered::Files(tables::triage(&crate::report::json::to_value(r), basis.as_deref()))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        let text = crate::report::batch::json(b.stages, b.info);
        Rendered::Files(tables::batch(&serde_json::from_str(&text).unwrap_or(Value::Null)))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Files(tables::diff(&serde_json::to_value(d).unwrap_or(Value::Null)))
    }
}

/// A table being built: the file's declared columns first, then any other
/// column in first-seen order; rows of cells.
#[derive(Default)]
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<(usize, String)>>,
}

impl Table {
    /// A table whose header starts with `columns`, whatever its rows hold,
    /// so a file has the same columns from run to run and a header when it
    /// has no rows.
    fn with_columns(columns: &[&str]) -> Self {
        Table { columns: columns.iter().map(|c| c.to_string()).collect(), rows: Vec::new() }
    }

    /// An object written as dotted columns (`normalized.base_us`) that is
    /// `null` in this row: its columns stay empty, with no column of its own.
    fn has_children(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c.len() > name.len() && c.starts_with(name) && c.as_bytes()[name.len()] == b'.')
    }

    fn column(&mut self, name: &str) -> usize {
        match self.columns.iter().position(|c| c == name) {
            Some(i) => i,
            None => {
                self.columns.push(name.to_string());
                self.columns.len() - 1
            }
        }
    }

    /// Adds a row: `context` cells (the parent's keys, such as the stage)
    /// first, then `object` flattened, leaving out the keys in `skip`.
    fn push(&mut self, context: &[(&str, &Value)], object: &Value, skip: &[&str]) {
        let mut row = Vec::new();
        for (k, v) in context {
            let i = self.column(k);
            row.push((i, cell(v)));
        }
        if let Value::Object(map) = object {
            self.flatten("", map, skip, &mut row);
        }
        self.rows.push(row);
    }

    fn flatten(&mut self, prefix: &str, map: &Map<String, Value>, skip: &[&str], row: &mut Vec<(usize, String)>) {
        for (k, v) in map {
            if prefix.is_empty() && skip.contains(&k.as_str()) {
                continue;
            }
            let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                Value::Object(inner) => self.flatten(&name, inner, &[], row),
                Value::Null if self.has_children(&name) => {}
                _ => {
                    let i = self.column(&name);
                    let text = cell(v);
                    row.push((i, if v.is_number() { text } else { defused(text) }));
                }
            }
        }
    }

    /// The CSV text: a header row, then the rows (a cell a row lacks is
    /// empty), CRLF line ends as RFC 4180 has them.
    fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
            let mut first = true;
            for c in cells {
                if !first {
                    out.push(',');
                }
                first = false;
                quote_into(out, c);
            }
            out.push_str("\r\n");
        };
        line(&mut out, &mut self.columns.iter().map(String::as_str));
        for row in &self.rows {
            let mut cells = vec![""; self.columns.len()];
            for (i, v) in row {
                cells[*i] = v;
            }
            line(&mut out, &mut cells.into_iter());
        }
        out
    }
}

/// A text cell a spreadsheet would run as a formula (one starting with
/// `=`, `@`, a tab or a carriage return, or with `+` or `-` not followed by
/// a number), with a `'` in front, which spreadsheets show as text and do
/// not display: a kernel name comes from the trace, and a trace from anyone.
fn defused(text: String) -> String {
    let risky = match text.as_bytes().first() {
        Some(b'=' | b'@' | b'\t' | b'\r') => true,
        // A signed number (`-0.5`, `+12.5%`) is a number to a spreadsheet
        // too; `-inf` or `-x` is a formula.
        Some(b'+' | b'-') => {
            let digits = text.as_bytes().get(1).is_some_and(|b| b.is_ascii_digit() || *b == b'.');
            text.len() > 1 && !(digits && text.trim_end_matches('%').parse::<f64>().is_ok())
        }
        _ => false,
    };
    if risky {
        format!("'{text}")
    } else {
        text
    }
}

/// A JSON value as a cell: strings as they are, numbers as JSON writes
/// them, `null` empty, a list of scalars one per line, anything else its
/// JSON text.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            items.iter().map(cell).collect::<Vec<_>>().join("\n")
        }
        // A list of records (a stage's slowest steps): one per line, its
        // fields as `key=value` separated by `; `.
        Value::Array(items) if items.iter().all(flat_record) => items
            .iter()
            .filter_map(Value::as_object)
            .map(|o| o.iter().map(|(k, v)| format!("{k}={}", cell(v))).collect::<Vec<_>>().join("; "))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// An object whose values are all scalars.
fn flat_record(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.values().all(|x| !x.is_array() && !x.is_object()))
}

/// Appends `field`, quoted when it holds a comma, quote, CR or LF (quotes
/// doubled).
fn quote_into(out: &mut String, field: &str) {
    if field.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoting_follows_rfc_4180() {
        let mut t = Table::default();
        t.push(
            &[("stage", &json!("decode"))],
            &json!({"name": "a, \"b\"", "us": 1.5, "l": ["x", "y"], "n": null}),
            &[],
        );
        assert_eq!(t.render(), "stage,name,us,l,n\r\ndecode,\"a, \"\"b\"\"\",1.5,\"x\ny\",\r\n");
    }

    #[test]
    fn a_text_cell_a_spreadsheet_would_run_is_kept_as_text() {
        let mut t = Table::default();
        let row = json!({
            "name": "=HYPERLINK(\"http://x\")", "at": "@SUM(A1)", "plus": "+cmd|' /C calc'!A0",
            "minus": "-2+3", "inf": "-inf", "tab": "\tx", "change": "+12.5%", "neg": "-0.5", "dash": "-", "n": -3,
            "kernel": "void gemm<float>", "list": ["=1+1", "x"],
        });
        t.push(&[], &row, &[]);
        let text = t.render();
        let cells = text.split("\r\n").nth(1).unwrap();
        let want = r#""'=HYPERLINK(""http://x"")",'@SUM(A1),'+cmd|' /C calc'!A0,'-2+3,'-inf,'<TAB>x,+12.5%,-0.5,-,-3,"#
            .replace("<TAB>", "\t");
        assert_eq!(cells, format!("{want}void gemm<float>,\"'=1+1\nx\""));
    }

    #[test]
    fn a_list_of_records_is_one_record_a_line() {
        let v =
            serde_json::json!([{"name": "ProfilerStep#1", "dur_us": 12.5}, {"name": "ProfilerStep#2", "dur_us": 3}]);
        assert_eq!(cell(&v), "name=ProfilerStep#1; dur_us=12.5\nname=ProfilerStep#2; dur_us=3");
        // Deeper nesting stays JSON.
        let deep = serde_json::json!([{"a": [1]}]);
        assert_eq!(cell(&deep), r#"[{"a":[1]}]"#);
    }

    #[test]
    fn nested_objects_become_dotted_columns_and_missing_cells_are_empty() {
        let mut t = Table::default();
        t.push(&[], &json!({"a": 1, "n": {"x": 2, "y": null}}), &[]);
        t.push(&[], &json!({"a": 3, "n": null, "z": true}), &["skip"]);
        // A null object leaves its dotted cells empty, with no column of its own.
        assert_eq!(t.render(), "a,n.x,n.y,z\r\n1,2,,\r\n3,,,true\r\n");
    }

    #[test]
    fn declared_columns_come_first_and_head_an_empty_table() {
        assert_eq!(Table::with_columns(&["a", "n.x"]).render(), "a,n.x\r\n");
        let mut t = Table::with_columns(&["a", "n.x", "n.y"]);
        t.push(&[], &json!({"n": null, "extra": 1, "a": 2}), &[]);
        assert_eq!(t.render(), "a,n.x,n.y,extra\r\n2,,,1\r\n");
    }
}
