//! The terminal table format: aligned columns that fit the terminal width
//! ([`layout`]), long names shortened in the middle and mangled names
//! demangled ([`names`]), one unit per column, and a legend under each
//! table. The triage (`triage`), batch (`batch`) and diff (`diff`)
//! views; this module holds what they share.

mod batch;
mod diff;
pub mod layout;
pub mod names;
mod triage;

use crate::report::diff::DiffReport;
use crate::report::markdown::fixed;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};

/// Renders for a terminal `width` columns wide.
pub struct Table {
    pub width: usize,
}

/// Narrowest layout the renderer attempts; narrower terminals get lines
/// this long.
pub(crate) const MIN_WIDTH: usize = 40;

impl Table {
    fn width(&self) -> usize {
        self.width.max(MIN_WIDTH)
    }
}

impl Renderer for Table {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Text(finish(triage::render(r, self.width())))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Text(finish(batch::render(b, self.width())))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Text(finish(diff::render(d, self.width())))
    }
}

/// The lines joined, trailing blank lines dropped, one final newline.
fn finish(lines: Vec<String>) -> String {
    let mut text = lines.join("\n").trim_end().to_string();
    text.push('\n');
    text
}

/// Output being built: prose wrapped to the width, tables fitted to it.
pub(crate) struct Out {
    pub width: usize,
    pub lines: Vec<String>,
}

impl Out {
    pub fn new(width: usize) -> Out {
        Out { width, lines: Vec::new() }
    }
    /// A prose line, word-wrapped (continuations indented two spaces).
    pub fn text(&mut self, text: &str) {
        self.lines.extend(layout::wrap(&names::visible(text), self.width, "  "));
    }
    /// A list item (`- `), wrapped under its text.
    pub fn item(&mut self, text: &str) {
        let wrapped = layout::wrap(&format!("- {}", names::visible(text)), self.width, "  ");
        self.lines.extend(wrapped);
    }
    pub fn blank(&mut self) {
        if self.lines.last().is_some_and(|l| !l.is_empty()) {
            self.lines.push(String::new());
        }
    }
    /// A section title, underlined.
    pub fn title(&mut self, text: &str) {
        self.blank();
        let text = names::shorten_middle(&names::visible(text), self.width);
        let rule = "═".repeat(names::columns(&text));
        self.lines.push(text);
        self.lines.push(rule);
    }
    /// A sub-section heading.
    pub fn heading(&mut self, text: &str) {
        self.blank();
        self.lines.push(names::shorten_middle(&names::visible(text), self.width));
    }
    pub fn table(&mut self, t: &layout::Table) {
        self.lines.extend(t.render(self.width));
    }
    /// The legend under a table: each entry a wrapped line.
    pub fn legend(&mut self, entries: &[&str]) {
        for e in entries {
            self.lines.extend(layout::wrap(e, self.width, "  "));
        }
    }
}

/// Microseconds as milliseconds with two decimals (no unit).
pub(crate) fn ms(us: f64) -> String {
    fixed(us / 1000.0, 2)
}

/// Microseconds with one decimal (no unit).
pub(crate) fn us1(us: f64) -> String {
    fixed(us, 1)
}

/// One decimal, or `-` when undefined.
pub(crate) fn opt1(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| fixed(v, 1))
}

/// Milliseconds, or `-` when undefined.
pub(crate) fn opt_ms(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), ms)
}

/// A list cell: one item per line, `empty` when there are none.
pub(crate) fn list<S: AsRef<str>>(items: &[S], empty: &str) -> Vec<String> {
    if items.is_empty() {
        vec![empty.to_string()]
    } else {
        items.iter().map(|s| names::visible(s.as_ref())).collect()
    }
}

/// Whether the report's stages need headings (anything but `all` alone).
pub(crate) fn stage_heading(stage: crate::analysis::stage::Stage) -> String {
    format!("Stage: {}", stage.label())
}
#[cfg(test)]
mod tests;
