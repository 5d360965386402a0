//! The batch page: per stage a grouped column chart of every rank's busy
//! time, compute and exposed communication, with the likely slow rank
//! marked in red, then the rank table and the cross-rank kernel table
//! (its first [`KERNEL_ROWS`] rows).

use std::fmt::Write;

use crate::analysis::ranks::{median, Role};
use crate::report::render::BatchView;

use super::svg::{grouped_columns, Group};
use super::{esc, finite, legend, ms, page, Cell, Table};

/// Cross-rank kernel rows shown per stage.
pub const KERNEL_ROWS: usize = 50;

const SERIES: [(&str, &str); 4] =
    [("busy", "#3b6fb6"), ("compute", "#7aa6c9"), ("idle", "#c9c9c9"), ("exposed communication", "#e0803a")];

/// The batch page.
pub fn render(v: BatchView<'_>) -> String {
    let info = v.info;
    let labels = crate::report::batch::file_labels(v.stages);
    let mut b = String::new();
    let _ = writeln!(b, "<h1>torchtriage batch</h1>");
    let _ = writeln!(b, "<p class=\"meta\">{}</p>", esc(&info.source_line()));
    let _ = writeln!(
        b,
        "<p class=\"meta\">Files: {} triaged, {} failed</p>",
        info.files.saturating_sub(info.failures.len()),
        info.failures.len()
    );
    let _ = writeln!(b, "<p class=\"meta\">{}</p>", esc(&crate::report::batch::roles_legend(info.straggler_pct)));
    for note in crate::report::batch::notes(v.stages, info) {
        let _ = writeln!(b, "<p class=\"meta\">{}</p>", esc(note.strip_prefix("warning: ").unwrap_or(&note)));
    }
    for s in v.stages {
        let _ = writeln!(b, "<h2>Stage {}</h2>", esc(s.stage.label()));
        let failed = crate::report::batch::failed_files_line(info);
        for line in crate::report::batch::roles_lines(s, info.straggler_pct, &labels).into_iter().chain(failed) {
            let _ = writeln!(b, "<p class=\"verdict\">{}</p>", esc(&line));
        }
        // Ranks held by more than one file are told apart on hover.
        let shared = |rank: u64| s.rows.iter().filter(|r| r.rank == rank).count() > 1;
        let groups: Vec<Group> = s
            .rows
            .iter()
            .map(|r| Group {
                label: format!("rank {}", r.rank),
                hover: if shared(r.rank) {
                    format!("rank {} ({})", r.rank, labels.get(&r.file))
                } else {
                    format!("rank {}", r.rank)
                },
                mark: match r.role {
                    Some(Role::Slow) => Some("slow"),
                    _ => None,
                },
                // A figure not measured draws no column.
                values: vec![r.facts.busy(), Some(r.compute_us), r.facts.idle_us, r.facts.exposed_comm()],
            })
            .collect();
        b.push_str(&grouped_columns(&groups, &SERIES, &|v| ms(v)));
        let entries: Vec<(&str, String, &str)> = vec![
            (SERIES[0].0, format!("median {}", opt_ms(s.median_busy_us)), SERIES[0].1),
            (SERIES[1].0, format!("median {}", ms(s.median_compute_us)), SERIES[1].1),
            (
                SERIES[2].0,
                {
                    let idle: Vec<f64> = s.rows.iter().filter_map(|r| r.facts.idle_us).collect();
                    format!("median {}", opt_ms((!idle.is_empty()).then(|| median(&idle))))
                },
                SERIES[2].1,
            ),
            (SERIES[3].0, format!("median {}", opt_ms(s.median_exposed_comm_us)), SERIES[3].1),
        ];
        b.push_str(&legend(&entries));

        let _ = writeln!(b, "<h3>Ranks</h3>");
        let mut t = Table::new(&[
            ("Rank", true),
            ("File", false),
            ("Busy", true),
            ("Compute", true),
            ("Overlap", true),
            ("Exposed comm", true),
            ("Exposed comm %", true),
            ("Top exposed comm kernel", false),
            ("Top headroom", false),
            ("Role", false),
        ]);
        for r in &s.rows {
            let f = &r.facts;
            let role = r.role_text().unwrap_or_default();
            t.push(vec![
                Cell::num(r.rank.to_string(), r.rank as f64),
                Cell::name(labels.get(&r.file)),
                opt_cell(f.busy(), ms),
                Cell::num(ms(r.compute_us), r.compute_us),
                opt_cell(r.overlap_pct, |p| format!("{:.1}%", finite(p))),
                opt_cell(f.exposed_comm(), ms),
                opt_cell(r.exposed_comm_pct, |p| format!("{:.1}%", finite(p))),
                Cell::name(
                    f.top_exposed.as_ref().map_or_else(|| "-".to_string(), |(k, us)| format!("{k} ({})", ms(*us))),
                ),
                Cell::name(crate::report::batch::headroom_text(f, str::to_string)),
                Cell::text(role),
            ]);
            if r.role == Some(Role::Slow) {
                *t.row_class.last_mut().expect("row just pushed") = "slow";
            }
        }
        b.push_str(&t.html("No ranks."));
        let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(crate::report::batch::RANK_COLUMNS_LEGEND));

        let _ = writeln!(b, "<h3>Cross-rank kernels</h3>");
        let mut t = Table::new(&[
            ("Kernel", false),
            ("Category", false),
            ("Leads ranks", false),
            ("Ranks with it", true),
            ("Min", true),
            ("Median", true),
            ("Max", true),
            ("Max rank", true),
        ]);
        for k in s.kernels.iter().take(KERNEL_ROWS) {
            let leads: Vec<String> = k.leads.iter().map(u64::to_string).collect();
            t.push(vec![
                Cell::kernel(&k.kernel),
                Cell::text(k.category.clone()),
                Cell::text(leads.join(", ")),
                Cell::num(k.present.to_string(), k.present as f64),
                Cell::num(ms(k.min_us), k.min_us),
                Cell::num(ms(k.median_us), k.median_us),
                Cell::num(ms(k.max_us), k.max_us),
                Cell::num(k.max_rank.to_string(), k.max_rank as f64),
            ]);
        }
        b.push_str(&t.html("No kernels."));
        if s.kernels.len() > KERNEL_ROWS {
            let _ = writeln!(
                b,
                "<p class=\"note\">{} more kernels not shown (the JSON format lists them all).</p>",
                s.kernels.len() - KERNEL_ROWS
            );
        }
        if !s.kernels.is_empty() {
            let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(crate::report::batch::KERNEL_COLUMNS_LEGEND));
        }
    }
    if !info.failures.is_empty() || !info.skipped.is_empty() {
        let _ = writeln!(b, "<h2>Files left out</h2><ul>");
        for (path, e) in info.failures {
            let why = crate::report::batch::error_text(path, e);
            let _ = writeln!(b, "<li>{}: {}</li>", esc(&path.display().to_string()), esc(&why));
        }
        for (path, why) in info.skipped {
            let _ = writeln!(b, "<li>{}: {}</li>", esc(&path.display().to_string()), esc(why.as_str()));
        }
        b.push_str("</ul>\n");
    }
    let first = match info.source {
        crate::report::batch::Source::Batch { dir, .. } => Some(dir),
        crate::report::batch::Source::Merge { inputs } => inputs.first().map(|p| p.as_path()),
    };
    page(&super::title("torchtriage batch", first), &b)
}

/// `-` for a figure not measured.
fn opt_ms(us: Option<f64>) -> String {
    us.map_or_else(|| "-".to_string(), ms)
}

/// A number cell, or `-` for a figure not measured.
fn opt_cell(value: Option<f64>, text: impl Fn(f64) -> String) -> Cell {
    match value {
        Some(v) => Cell::num(text(v), v),
        None => Cell::num("-", f64::NAN),
    }
}
