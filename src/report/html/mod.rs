//! The HTML format: one self-contained file (no network requests, no
//! external scripts, fonts or images) with SVG charts and sortable tables.
//! This module owns the page skeleton (Content-Security-Policy, inline CSS
//! and JS from `assets/`), HTML escaping, number formatting and the table
//! builder; the charts are in [`svg`], the three reports in `triage`,
//! `batch` and `diff`.
//!
//! At load the page's script sets `data-svg-count` and `data-table-rows` on
//! `<body>`, and appends script errors and blocked requests to
//! `data-errors` and `data-blocked`, so a headless browser can check it.

mod batch;
mod diff;
pub mod svg;
mod triage;

use std::fmt::Write;

use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};
use crate::report::table::names::{shorten_apart, shorten_middle};

/// The HTML renderer.
pub struct Html;

impl Renderer for Html {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Text(triage::render(r))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Text(batch::render(b))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Text(diff::render(d))
    }
}

const CSS: &str = include_str!("assets/page.css");
const JS: &str = include_str!("assets/page.js");

/// Blocks every request the page could make; inline style and script only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

/// Cells longer than this many characters are shortened (full text on hover).
pub const CELL_CHARS: usize = 80;

/// Text escaped for HTML content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if crate::report::is_hidden_char(c) && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A finite number, or 0.
pub fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// Microseconds as `12.34 ms`.
pub fn ms(us: f64) -> String {
    format!("{:.2} ms", finite(us) / 1000.0)
}

/// A percentage with one decimal, or `-`.
pub fn pct(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.1}%"),
        _ => "-".into(),
    }
}

/// A signed change in milliseconds (`+1.20 ms`).
pub fn signed_ms(us: f64) -> String {
    crate::report::markdown::unsigned_zero(format!("{:+.2} ms", finite(us) / 1000.0))
}

/// A signed percentage (`+4.0%`), or `-`.
pub fn signed_pct(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => crate::report::markdown::unsigned_zero(format!("{v:+.1}%")),
        _ => "-".into(),
    }
}

/// One table cell.
pub enum Cell {
    /// Plain text.
    Text(String),
    /// A formatted number and its sort key; none for a figure not measured,
    /// which sorts after every number either way.
    Num(String, Option<f64>),
    /// A name: shown in a monospace font and shortened, the full text (or
    /// the given title: a kernel's raw name) on hover.
    Name(String, Option<String>),
    /// A list's entries, each on a line of its own and shortened alone,
    /// the whole list on hover.
    List(Vec<String>),
}

impl Cell {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell::Text(text.into())
    }
    /// A formatted number sorted by `value`; a value that is not finite
    /// (a figure one side lacks) sorts after every number.
    pub fn num(text: impl Into<String>, value: f64) -> Cell {
        Cell::Num(text.into(), value.is_finite().then_some(value))
    }
    /// A name (kernel, pattern, location): shortened, with the full text in
    /// the `title` attribute.
    pub fn name(text: impl Into<String>) -> Cell {
        Cell::Name(text.into(), None)
    }
    /// A list (Python locations, evidence kernels): one entry a line, each
    /// shortened on its own, so a cut never runs two entries together;
    /// `none` when the list is empty.
    pub fn list<S: AsRef<str>>(items: &[S], none: &str) -> Cell {
        match items {
            [] => Cell::name(none),
            [one] => Cell::name(one.as_ref()),
            many => Cell::List(many.iter().map(|s| s.as_ref().to_string()).collect()),
        }
    }
    /// A kernel's name as the table view shows it (demangled), with the
    /// name as the trace gives it on hover.
    pub fn kernel(raw: &str) -> Cell {
        let shown = crate::report::table::names::display_name(raw);
        let title = (shown != raw).then(|| raw.to_string());
        Cell::Name(shown, title)
    }
}

/// A sortable table: headers (name, numeric) and rows of cells.
pub struct Table {
    pub headers: Vec<(String, bool)>,
    pub rows: Vec<Vec<Cell>>,
    /// Class names of each row (e.g. `slow`), empty for none.
    pub row_class: Vec<&'static str>,
}

impl Table {
    pub fn new(headers: &[(&str, bool)]) -> Table {
        Table {
            headers: headers.iter().map(|&(h, numeric)| (h.to_string(), numeric)).collect(),
            rows: Vec::new(),
            row_class: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
        self.row_class.push("");
    }

    /// The table, or `empty` as a note when it has no rows.
    pub fn html(&self, empty: &str) -> String {
        if self.rows.is_empty() {
            return format!("<p class=\"note\">{}</p>\n", esc(empty));
        }
        let mut out = String::from("<div class=\"wrap\"><table class=\"sortable\"><thead><tr>");
        for (h, numeric) in &self.headers {
            let class = if *numeric { " class=\"num\"" } else { "" };
            let _ = write!(out, "<th{class}>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        // Each name column's cells shortened alike: two names that differ
        // only past the cut are cut where they differ.
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let short: Vec<Vec<String>> = (0..columns)
            .map(|c| {
                let cells: Vec<&str> = self
                    .rows
                    .iter()
                    .map(|r| match r.get(c) {
                        Some(Cell::Name(text, _)) => text.as_str(),
                        _ => "",
                    })
                    .collect();
                shorten_apart(&cells, CELL_CHARS)
            })
            .collect();
        for (i, (row, class)) in self.rows.iter().zip(&self.row_class).enumerate() {
            if class.is_empty() {
                out.push_str("<tr>");
            } else {
                let _ = write!(out, "<tr class=\"{class}\">");
            }
            for (c, cell) in row.iter().enumerate() {
                let _ = match cell {
                    Cell::Text(text) => write!(out, "<td>{}</td>", esc(text)),
                    Cell::Num(text, Some(v)) => write!(out, "<td class=\"num\" data-v=\"{v}\">{}</td>", esc(text)),
                    Cell::Num(text, None) => write!(out, "<td class=\"num\" data-v=\"\">{}</td>", esc(text)),
                    Cell::Name(text, title) => {
                        let short = &short[c][i];
                        match title.as_deref().or((short != text).then_some(text.as_str())) {
                            None => write!(out, "<td class=\"name\">{}</td>", esc(text)),
                            Some(title) => write!(
                                out,
                                "<td class=\"name\" data-v=\"{}\" title=\"{}\">{}</td>",
                                esc(text),
                                esc(title),
                                esc(short)
                            ),
                        }
                    }
                    Cell::List(lines) => {
                        let shown: Vec<String> = lines.iter().map(|l| esc(&shorten_middle(l, CELL_CHARS))).collect();
                        write!(
                            out,
                            "<td class=\"name\" title=\"{}\">{}</td>",
                            esc(&lines.join("\n")),
                            shown.join("<br>")
                        )
                    }
                };
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
        out
    }
}

/// A legend: (label, value text, colour) per entry.
pub fn legend(entries: &[(&str, String, &str)]) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (label, value, colour) in entries {
        let _ = write!(
            out,
            "<li><span class=\"sw\" style=\"background:{colour}\"></span>{}: {}</li>",
            esc(label),
            esc(value)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// The whole page around `body` (already HTML).
/// The page's title: `what` and the file name of its first input, so that
/// browser tabs of several reports tell them apart.
pub fn title(what: &str, first: Option<&std::path::Path>) -> String {
    match first.and_then(|p| p.file_name()) {
        Some(name) => format!("{} — {what}", name.to_string_lossy()),
        None => what.to_string(),
    }
}

pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{CSS}</style>\n<script>\n{JS}</script>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests;
