//! The batch view as tables: the run's facts, then per stage the rank
//! table (busy, compute, overlap, exposed communication, role) with the
//! medians and the slow / waiting ranks, and the cross-rank kernel table;
//! then skipped and failed files.
//!
//! Columns dropped when a table does not fit, first to last: rank table
//! Top exposed comm kernel, Overlap, Exposed comm (%), Compute, File;
//! kernel table Category, Leads ranks, Min, Max rank, Ranks with it.

use crate::analysis::ranks::StageSummary;
use crate::error::shown;
use crate::report::batch::{error_text, file_labels, roles_lines};
use crate::report::labels::FileLabels;
use crate::report::render::BatchView;

use super::layout::{Column, Table};
use super::names::display_name;
use super::{ms, opt1, opt_ms, stage_heading, Out};

const RANK_LEGEND: &[&str] = &[crate::report::batch::RANK_COLUMNS_LEGEND];

const KERNEL_LEGEND: &[&str] = &[crate::report::batch::KERNEL_COLUMNS_LEGEND];

fn rank_table(o: &mut Out, s: &StageSummary, pct: f64, labels: &FileLabels, failed: Option<&str>) {
    let mut t = Table::new(vec![
        Column::num("Rank", 0),
        Column::name("File", 16, 5),
        Column::num("Busy (ms)", 0),
        Column::num("Compute (ms)", 2),
        Column::num("Overlap (%)", 1),
        Column::num("Exposed comm (ms)", 0),
        Column::num("Exposed comm (%)", 2),
        Column::name("Top exposed comm kernel", 20, 1),
        Column::name("Top headroom", 16, 1),
        Column::text("Role", 0),
    ]);
    for r in &s.rows {
        let f = &r.facts;
        let role = r.role_text().unwrap_or_else(|| "-".to_string());
        let top = f
            .top_exposed
            .as_ref()
            .map_or_else(|| "-".to_string(), |(k, us)| format!("{} ({} ms)", display_name(k), ms(*us)));
        let headroom = crate::report::batch::headroom_text(f, display_name);
        t.row(vec![
            r.rank.to_string(),
            super::names::visible(&labels.get(&r.file)),
            opt_ms(f.busy()),
            ms(r.compute_us),
            opt1(r.overlap_pct),
            opt_ms(f.exposed_comm()),
            opt1(r.exposed_comm_pct),
            top,
            headroom,
            role,
        ]);
    }
    o.heading("Ranks");
    o.table(&t);
    o.text(&format!(
        "Median busy {}, median compute {} ms, median exposed communication {}.",
        with_ms(s.median_busy_us),
        ms(s.median_compute_us),
        with_ms(s.median_exposed_comm_us)
    ));
    for line in roles_lines(s, pct, labels) {
        o.text(&line);
    }
    if let Some(line) = failed {
        o.text(line);
    }
    o.legend(RANK_LEGEND);
}

fn kernel_table(o: &mut Out, s: &StageSummary) {
    let mut t = Table::new(vec![
        Column::name("Kernel", super::triage::name_min(o.width), 0),
        Column::text("Category", 1),
        Column::text("Leads ranks", 2),
        Column::num("Ranks with it", 5),
        Column::num("Min (ms)", 3),
        Column::num("Median (ms)", 0),
        Column::num("Max (ms)", 0),
        Column::num("Max rank", 4),
    ]);
    for k in &s.kernels {
        let leads: Vec<String> = k.leads.iter().map(u64::to_string).collect();
        t.row(vec![
            display_name(&k.kernel),
            super::names::visible(&k.category),
            if leads.is_empty() { "-".into() } else { leads.join(", ") },
            k.present.to_string(),
            ms(k.min_us),
            ms(k.median_us),
            ms(k.max_us),
            k.max_rank.to_string(),
        ]);
    }
    o.heading("Cross-rank kernels");
    if s.kernels.is_empty() {
        o.text("No kernels.");
        return;
    }
    o.table(&t);
    o.legend(KERNEL_LEGEND);
}

/// The batch view's lines.
pub fn render(b: BatchView<'_>, width: usize) -> Vec<String> {
    let info = b.info;
    let mut o = Out::new(width);
    o.text("torchtriage batch");
    o.text(&info.source_line());
    o.text(&info.files_line());
    o.text(&format!("{}.", crate::report::batch::roles_legend(info.straggler_pct)));
    for note in crate::report::batch::notes(b.stages, info) {
        o.text(&super::names::visible(&note));
    }
    let labels = file_labels(b.stages);
    for s in b.stages {
        o.title(&stage_heading(s.stage));
        rank_table(&mut o, s, info.straggler_pct, &labels, crate::report::batch::failed_files_line(info).as_deref());
        kernel_table(&mut o, s);
    }
    if !info.skipped.is_empty() {
        o.title("Skipped files");
        for (path, why) in info.skipped {
            o.item(&format!("{}: {why}", shown(path)));
        }
    }
    if !info.failures.is_empty() {
        o.title("Failed files");
        for (path, e) in info.failures {
            o.item(&format!("{}: {}", shown(path), error_text(path, e)));
        }
    }
    o.lines
}

/// Milliseconds with their unit, or `-` for a figure not measured.
fn with_ms(us: Option<f64>) -> String {
    us.map_or_else(|| "-".to_string(), |v| format!("{} ms", ms(v)))
}
