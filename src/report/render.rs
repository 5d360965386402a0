//! One trait over the output formats: every renderer turns each report
//! (triage, batch, diff) into [`Rendered`] output. The formats are a closed
//! set ([`Format`]); [`renderer`] picks the implementation. Renderers are
//! pure: the commands layer decides where the output goes.

use std::io::Write;

use crate::analysis::ranks::StageSummary;
use crate::report::batch::RunInfo;
use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown tables (for agents and PR comments); `triage`'s keeps the
    /// reference tool's layout.
    Markdown,
    /// Versioned JSON (`docs/json-schema.md`).
    Json,
    /// Aligned columns that fit the terminal.
    Table,
    /// One self-contained HTML file with charts.
    Html,
    /// One CSV file per table, in a directory.
    Csv,
}

impl Format {
    /// The format a file name's extension names (`report.html`), if any.
    pub fn from_extension(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            "html" | "htm" => Some(Format::Html),
            "txt" => Some(Format::Table),
            _ => None,
        }
    }

    /// Whether the output is a directory of files rather than one stream.
    pub fn is_directory(self) -> bool {
        self == Format::Csv
    }
}

/// Writes a report to a sink as it is made.
pub type StreamFn<'a> = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<()> + 'a>;

/// What a renderer produced.
pub enum Rendered<'a> {
    /// The whole text.
    Text(String),
    /// Text written as it is made (a large JSON report is not built as one
    /// string first).
    Stream(StreamFn<'a>),
    /// Named files (CSV: one per table), in order.
    Files(Vec<(&'static str, String)>),
}

/// A batch's cross-rank summary and the facts about its run.
#[derive(Clone, Copy)]
pub struct BatchView<'a> {
    pub stages: &'a [StageSummary],
    pub info: &'a RunInfo<'a>,
}

/// Settings of the renderers that have any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// Terminal width in columns, for the table format.
    pub width: usize,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { width: 120 }
    }
}

/// One output format of every report.
pub trait Renderer {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a>;
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static>;
    fn diff(&self, d: &DiffReport) -> Rendered<'static>;
}

/// The markdown layout.
pub struct Markdown;

impl Renderer for Markdown {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Text(format!("{}\n", crate::report::markdown::render(r)))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Text(crate::report::batch::markdown(b.stages, b.info))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Text(crate::report::diff::markdown(d))
    }
}

/// Versioned JSON.
pub struct Json;

impl Renderer for Json {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Stream(Box::new(move |out| crate::report::json::write(out, r)))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Text(crate::report::batch::json(b.stages, b.info))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Text(crate::report::json::pretty(d))
    }
}

/// The renderer of a format.
pub fn renderer(format: Format, opts: RenderOptions) -> Box<dyn Renderer> {
    match format {
        Format::Markdown => Box::new(Markdown),
        Format::Json => Box::new(Json),
        Format::Table => Box::new(crate::report::table::Table { width: opts.width }),
        Format::Html => Box::new(crate::report::html::Html),
        Format::Csv => Box::new(crate::report::csv::Csv),
    }
}
