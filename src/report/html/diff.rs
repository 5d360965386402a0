//! The diff page: per stage a before/after chart of the kernels that
//! changed most (top [`TOP_CHANGES`] by |Δ|, base and new paired), the
//! timeline figures (base, new, Δ), then the kernel and category tables.

use std::fmt::Write;

use crate::report::diff::{DiffReport, KernelDiff, NormBasis, StageDiff, StageFigures};

use super::svg::{paired_bars, Pair};
use super::{esc, finite, legend, ms, page, signed_ms, signed_pct, Cell, Table};
use crate::report::table::names::display_name;

/// Kernels in a stage's before/after chart.
pub const TOP_CHANGES: usize = 10;

/// Kernel rows shown per stage.
pub const KERNEL_ROWS: usize = 200;

const BASE: &str = "#9aa5b1";
const NEW: &str = "#3b6fb6";

/// The rows of the timeline table: label, how to read the figure, and
/// whether it is a time (else a plain number or a percentage).
#[allow(clippy::type_complexity)]
pub const TIMELINE_ROWS: [(&str, fn(&StageFigures) -> Option<f64>, Kind); 13] = [
    ("Window", |f| f.window_us, Kind::Time),
    ("Busy", |f| f.busy_us, Kind::Time),
    ("Idle", |f| f.idle_us, Kind::Time),
    ("Idle share", |f| f.idle_pct, Kind::Pct),
    ("Compute", |f| f.compute_us, Kind::Time),
    ("Communication", |f| f.comm_us, Kind::Time),
    ("Comm/compute overlap", |f| f.comm_comp_overlap_pct, Kind::Pct),
    ("Steps", |f| f.steps, Kind::Count),
    ("Step p50", |f| f.step_p50_us, Kind::Time),
    ("Step p90", |f| f.step_p90_us, Kind::Time),
    ("Launch delay p50", |f| f.launch_delay_p50_us, Kind::Micro),
    ("Kernels per step", |f| f.kernels_per_step, Kind::Mean),
    ("Kernel time", |f| f.kernel_us, Kind::Time),
];

/// How a timeline figure is written.
#[derive(Clone, Copy)]
pub enum Kind {
    Time,
    Micro,
    Pct,
    Count,
    /// A mean count (kernels per step): always one decimal.
    Mean,
}

fn figure(x: Option<f64>, kind: Kind, signed: bool) -> String {
    let Some(v) = x.filter(|v| v.is_finite()) else { return "-".into() };
    // A figure or change that rounds to zero is shown without a sign, as
    // the markdown and the table show it.
    crate::report::markdown::unsigned_zero(match (kind, signed) {
        (Kind::Time, false) => ms(v),
        (Kind::Time, true) => signed_ms(v),
        // The unit that suits the value, as the markdown shows it.
        (Kind::Micro, false) => crate::report::markdown::time(v),
        (Kind::Micro, true) if v > 0.0 => format!("+{}", crate::report::markdown::time(v)),
        (Kind::Micro, true) => crate::report::markdown::time(v),
        (Kind::Pct, false) => format!("{v:.1}%"),
        (Kind::Pct, true) => format!("{v:+.1} pts"),
        (Kind::Mean, false) => format!("{v:.1}"),
        (Kind::Mean, true) => format!("{v:+.1}"),
        // Whole numbers (steps) as such.
        (Kind::Count, false) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        (Kind::Count, true) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:+.0}"),
        (Kind::Count, false) => format!("{v:.1}"),
        (Kind::Count, true) => format!("{v:+.1}"),
    })
}

/// A kernel's base and new time as the stage compares them: per unit when
/// normalised, else totals.
fn compared(k: &KernelDiff) -> (f64, f64, f64) {
    match &k.normalized {
        Some(p) => (p.base_us, p.new_us, p.delta_us),
        None => (k.base_us, k.new_us, k.delta_us),
    }
}

fn stage_section(b: &mut String, s: &StageDiff, min_share: f64) {
    let per = match s.normalization.basis {
        NormBasis::None => String::new(),
        basis => format!(" {}", basis.per()),
    };
    let _ = writeln!(b, "<h2>Stage {}</h2>", esc(s.stage.label()));
    if let Some(g) = &s.gate {
        let _ = writeln!(
            b,
            "<p class=\"verdict\">Gate ({}{}): {} → {} ({}){}</p>",
            esc(g.basis.label()),
            esc(&g.per_label()),
            esc(&ms(g.base_us)),
            esc(&ms(g.new_us)),
            esc(&g.change_text()),
            if g.tripped { " — tripped" } else { "" }
        );
        if let Some(note) = g.work_note() {
            let _ = writeln!(b, "<p>{}</p>", esc(&note));
        }
    }
    // Few kernel names in common (another GPU vendor, another library):
    // the categories tell the story, the kernels only come and go.
    let by_category = s.matched_base_pct.is_some_and(|m| m < 50.0) && !s.categories.is_empty();
    let pairs: Vec<(String, Option<f64>, Option<f64>)> = if by_category {
        let _ = writeln!(b, "<h3>Categories that changed most{}</h3>", esc(&per));
        let _ = writeln!(
            b,
            "<p class=\"note\">Only {:.1}% of base's kernel time is in kernels with the same name on both sides, so the chart compares categories.</p>",
            s.matched_base_pct.unwrap_or(0.0)
        );
        s.categories
            .iter()
            .take(TOP_CHANGES)
            .map(|c| {
                let (base, new) = c.normalized.as_ref().map_or((c.base_us, c.new_us), |p| (p.base_us, p.new_us));
                (c.category.to_string(), Some(base), Some(new))
            })
            .collect()
    } else {
        let _ = writeln!(b, "<h3>Kernels that changed most{}</h3>", esc(&per));
        let mut changed: Vec<&KernelDiff> = s.shown_kernels().collect();
        changed.sort_by(|a, c| finite(compared(c).2.abs()).total_cmp(&finite(compared(a).2.abs())));
        changed
            .iter()
            .take(TOP_CHANGES)
            .map(|k| {
                // A side the kernel did not run on shows `-`, as the table.
                let (base, new, _) = compared(k);
                (display_name(&k.kernel), (k.base_count > 0).then_some(base), (k.new_count > 0).then_some(new))
            })
            .collect()
    };
    let pairs: Vec<Pair> = pairs.iter().map(|(label, base, new)| Pair { label, base: *base, new: *new }).collect();
    b.push_str(&paired_bars(&pairs, (BASE, NEW), &|v| ms(v)));
    b.push_str(&legend(&[("base", String::from("before"), BASE), ("new", String::from("after"), NEW)]));

    let _ = writeln!(b, "<h3>Timeline</h3>");
    let mut t = Table::new(&[("Figure", false), ("Base", true), ("New", true), ("Δ", true)]);
    let tl = &s.timeline;
    for (label, get, kind) in TIMELINE_ROWS {
        t.push(vec![
            Cell::text(label),
            Cell::num(figure(get(&tl.base), kind, false), get(&tl.base).unwrap_or(f64::NAN)),
            Cell::num(figure(get(&tl.new), kind, false), get(&tl.new).unwrap_or(f64::NAN)),
            Cell::num(figure(get(&tl.delta), kind, true), get(&tl.delta).unwrap_or(f64::NAN)),
        ]);
    }
    b.push_str(&t.html("No timeline."));
    if let Some(note) = s.clocks_note() {
        let _ = writeln!(b, "<p class=\"meta\">{}</p>", esc(&note));
    }

    let _ = writeln!(b, "<h3>Kernels{}</h3>", esc(&per));
    let mut t = Table::new(&[
        ("Kernel", false),
        ("Category", false),
        ("Status", false),
        ("Base", true),
        ("New", true),
        ("Δ", true),
        ("Δ %", true),
        ("Base launches", true),
        ("New launches", true),
    ]);
    for k in s.shown_kernels().take(KERNEL_ROWS) {
        let (base, new, delta) = compared(k);
        let delta_pct = k.normalized.as_ref().map_or(k.delta_pct, |p| p.delta_pct);
        t.push(vec![
            Cell::kernel(&k.kernel),
            Cell::text(k.category),
            Cell::text(k.label()),
            side_cell(base, k.base_count),
            side_cell(new, k.new_count),
            Cell::num(signed_ms(delta), delta),
            Cell::num(signed_pct(delta_pct), delta_pct.unwrap_or(f64::NAN)),
            Cell::num(k.base_count.to_string(), k.base_count as f64),
            Cell::num(k.new_count.to_string(), k.new_count as f64),
        ]);
    }
    b.push_str(&t.html("No kernels at or above the share bar on either side."));
    let shown = s.shown_kernels().count();
    if shown > KERNEL_ROWS {
        let _ = writeln!(
            b,
            "<p class=\"note\">{} more kernel rows not shown (the JSON format lists them all).</p>",
            shown - KERNEL_ROWS
        );
    }
    if let Some(note) = crate::report::diff::hidden_kernels_note(s.kernels_hidden, min_share) {
        let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(&note));
    }

    let _ = writeln!(b, "<h3>Categories{}</h3>", esc(&per));
    let mut t = Table::new(&[("Category", false), ("Base", true), ("New", true), ("Δ", true), ("Δ %", true)]);
    for c in &s.categories {
        let (base, new, delta, pct) = match &c.normalized {
            Some(p) => (p.base_us, p.new_us, p.delta_us, p.delta_pct),
            None => (c.base_us, c.new_us, c.delta_us, c.delta_pct),
        };
        t.push(vec![
            Cell::text(c.category),
            side_cell(base, c.base_count),
            side_cell(new, c.new_count),
            Cell::num(signed_ms(delta), delta),
            Cell::num(signed_pct(pct), pct.unwrap_or(f64::NAN)),
        ]);
    }
    b.push_str(&t.html("No categories."));
}

/// The diff page.
pub fn render(d: &DiffReport) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>torchtriage diff</h1>");
    for p in &d.base_traces {
        let _ = writeln!(b, "<p class=\"meta\">Base: {}</p>", esc(&p.display().to_string()));
    }
    for p in &d.new_traces {
        let _ = writeln!(b, "<p class=\"meta\">New: {}</p>", esc(&p.display().to_string()));
    }
    for note in &d.notes {
        let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(note));
    }
    for (what, stages) in [("base", &d.only_in_base), ("new", &d.only_in_new)] {
        if !stages.is_empty() {
            let names = crate::report::diff::stage_labels(stages);
            let _ = writeln!(b, "<p class=\"note\">Stages only in {what}: {}</p>", esc(&names));
        }
    }
    if let (Some(t), Some(outcome)) = (d.gate.threshold_pct, d.gate_outcome()) {
        // As the markdown report says it: the outcome, the figure compared
        // and the threshold.
        let basis = d.gate.basis.map(|b| format!("basis {b}, ")).unwrap_or_default();
        let _ = writeln!(b, "<p class=\"verdict\">Gate: {} ({basis}threshold {t}%)</p>", esc(&outcome));
    }
    for s in &d.stages {
        stage_section(&mut b, s, d.min_share);
    }
    if d.stages.is_empty() {
        let _ = writeln!(b, "<p class=\"note\">No stage on both sides.</p>");
    }
    page(&super::title("torchtriage diff", d.new_traces.first().map(|p| p.as_path())), &b)
}

/// A kernel's time on one side, `-` when it did not run there (a `new` or
/// `gone` kernel), as the markdown shows it.
/// A side's time, or `-` (and no sort key) when the kernel or category
/// did not run on that side.
fn side_cell(us: f64, count: u64) -> Cell {
    if count == 0 && us == 0.0 {
        Cell::num("-", f64::NAN)
    } else {
        Cell::num(ms(us), us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_that_round_to_zero_have_no_sign() {
        assert_eq!(figure(Some(-0.00053), Kind::Pct, true), "0.0 pts");
        assert_eq!(figure(Some(0.01), Kind::Mean, true), "0.0");
        assert_eq!(figure(Some(-0.04), Kind::Count, true), "0.0");
        assert_eq!(figure(Some(-0.2), Kind::Pct, true), "-0.2 pts");
        assert_eq!(figure(Some(1.0), Kind::Count, true), "+1");
        assert_eq!(figure(Some(-0.0), Kind::Pct, false), "0.0%");
    }
}
