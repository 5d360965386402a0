//! The diff view as tables: the two sides and the gate, then per stage
//! present on both sides the timeline figures (base, new, Δ, Δ%), the
//! kernel rows and the category rows, each with a legend.
//!
//! Columns dropped when a table does not fit, first to last: kernel table
//! Python location, CPU op, Launches (base → new, one column), Category,
//! Δ per unit, Base; category table Launches, Δ per unit.

use std::path::PathBuf;

use crate::report::diff::{DiffReport, NormBasis, PerUnit, StageDiff, StageFigures};
use crate::report::markdown::{fixed, unsigned_zero};

use super::layout::{Column, Table};
use super::names::display_name;
use super::{list, ms, stage_heading, Out};

/// How a figure's cells are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Printed in ms.
    Time,
    /// A time printed in µs (launch delays, a few µs on one clock).
    Micro,
    /// A share, 0–100: its Δ is in points.
    Percent,
    Count,
    /// A mean count (kernels per step): always one decimal.
    Mean,
}

fn figure_rows(f: &StageFigures) -> [(&'static str, Unit, Option<f64>); 13] {
    [
        ("window (ms)", Unit::Time, f.window_us),
        ("busy (ms)", Unit::Time, f.busy_us),
        ("idle (ms)", Unit::Time, f.idle_us),
        ("idle share (%)", Unit::Percent, f.idle_pct),
        ("compute (ms)", Unit::Time, f.compute_us),
        ("communication (ms)", Unit::Time, f.comm_us),
        ("comm/compute overlap (%)", Unit::Percent, f.comm_comp_overlap_pct),
        ("steps", Unit::Count, f.steps),
        ("step p50 (ms)", Unit::Time, f.step_p50_us),
        ("step p90 (ms)", Unit::Time, f.step_p90_us),
        ("launch delay p50 (µs)", Unit::Micro, f.launch_delay_p50_us),
        ("kernels per step", Unit::Mean, f.kernels_per_step),
        ("kernel time (ms)", Unit::Time, f.kernel_us),
    ]
}

/// A time in ms: two decimals, three under a millisecond, where two would
/// round a 137 µs step and a 147 µs one to 0.14 and 0.15.
fn time_ms(us: f64) -> String {
    if us.abs() < 1000.0 {
        fixed(us / 1000.0, 3)
    } else {
        ms(us)
    }
}

fn plain(x: f64, unit: Unit) -> String {
    let text = match unit {
        Unit::Time => time_ms(x),
        Unit::Micro | Unit::Percent | Unit::Mean => fixed(x, 1),
        Unit::Count if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        Unit::Count => fixed(x, 1),
    };
    unsigned_zero(text)
}

fn signed(text: String, x: f64) -> String {
    match unsigned_zero(text) {
        text if x > 0.0 => unsigned_zero(format!("+{text}")),
        text => text,
    }
}

fn signed_ms(us: f64) -> String {
    signed(ms(us), us)
}

fn signed_pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| signed(fixed(v, 1), v))
}

fn timeline_table(o: &mut Out, s: &StageDiff) {
    let mut t = Table::new(vec![
        Column::text("Figure", 0),
        Column::num("Base", 0),
        Column::num("New", 0),
        Column::num("Δ", 0),
        Column::num("Δ (%)", 1),
    ]);
    let (base, new, delta) =
        (figure_rows(&s.timeline.base), figure_rows(&s.timeline.new), figure_rows(&s.timeline.delta));
    for ((b, n), d) in base.iter().zip(&new).zip(&delta) {
        let (label, unit, bv) = *b;
        if bv.is_none() && n.2.is_none() {
            continue;
        }
        let cell = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| plain(v, unit));
        let dv = d.2;
        let rel = match (unit, bv, dv) {
            (Unit::Percent, _, _) => "-".to_string(),
            (_, Some(b), Some(dv)) if b > 0.0 => signed_pct(Some(100.0 * dv / b)),
            _ => "-".to_string(),
        };
        t.row(vec![
            label.to_string(),
            cell(bv),
            cell(n.2),
            dv.map_or_else(|| "-".into(), |v| signed(plain(v, unit), v)),
            rel,
        ]);
    }
    o.heading("Timeline");
    o.table(&t);
    o.legend(&["Δ: new minus base in the row's unit (points for shares); Δ (%): relative to base."]);
    if let Some(note) = s.clocks_note() {
        o.text(&note);
    }
    if let Some(g) = &s.gate {
        o.text(&format!(
            "Gate on {}{}: {} -> {} ({}), {}.",
            g.basis.label(),
            g.per_label(),
            crate::report::markdown::time(g.base_us),
            crate::report::markdown::time(g.new_us),
            g.change_text(),
            if g.tripped { "tripped" } else { "passed" }
        ));
        if let Some(note) = g.work_note() {
            o.text(&note);
        }
    }
}

/// The per-unit columns' headers (`Δ per step (ms)`), when the stage is
/// normalised.
fn per_headers(s: &StageDiff) -> Option<(String, String)> {
    let per = s.normalization.basis.per();
    (!per.is_empty()).then(|| (format!("Δ {per} (ms)"), format!("Δ {per} (%)")))
}

fn per_cells(p: &Option<PerUnit>) -> [String; 2] {
    match p {
        Some(p) => [signed_ms(p.delta_us), signed_pct(p.delta_pct)],
        None => ["-".into(), "-".into()],
    }
}

/// A side's time, `-` when the kernel did not run there.
fn side(us: f64, count: u64) -> String {
    if count == 0 && us == 0.0 {
        "-".into()
    } else {
        ms(us)
    }
}

fn kernel_table(o: &mut Out, s: &StageDiff, min_share: f64) {
    let per = per_headers(s);
    let mut cols = vec![
        Column::name("Kernel", super::triage::name_min(o.width), 0),
        Column::text("Category", 4),
        Column::num("Base (ms)", 6),
        Column::num("New (ms)", 0),
        Column::num("Δ (ms)", 0),
        Column::num("Δ (%)", 0),
        // One column, so a narrow terminal drops both sides' counts or
        // neither.
        Column::num("Launches", 3),
    ];
    if let Some((a, b)) = &per {
        cols.push(Column::num(a, 5));
        cols.push(Column::num(b, 5));
    }
    cols.push(Column::text("Status", 0));
    cols.push(Column::name("CPU op", 12, 2));
    cols.push(Column::location("Python location", 20, 1));
    let mut t = Table::new(cols);
    for k in s.shown_kernels() {
        let mut cells = vec![
            vec![display_name(&k.kernel)],
            vec![k.category.to_string()],
            vec![side(k.base_us, k.base_count)],
            vec![side(k.new_us, k.new_count)],
            vec![signed_ms(k.delta_us)],
            vec![signed_pct(k.delta_pct)],
            vec![format!("{} → {}", k.base_count, k.new_count)],
        ];
        if per.is_some() {
            cells.extend(per_cells(&k.normalized).map(|c| vec![c]));
        }
        cells.push(vec![k.label().to_string()]);
        cells.push(list(&k.cpu_op, "-"));
        cells.push(list(&k.location, "-"));
        t.row_lines(cells);
    }
    o.heading("Kernels");
    if s.shown_kernels().next().is_none() {
        o.text(&format!("No kernel at or above {}% of the stage's kernel time on either side.", fixed(min_share, 1)));
    } else {
        o.table(&t);
    }
    if let Some(note) = crate::report::diff::hidden_kernels_note(s.kernels_hidden, min_share) {
        o.text(&note);
    }
    o.legend(&[
        "Kernels are matched by canonical name: changed = on both sides, new = only in new, gone = only in base. \
         Δ (%): relative to base.",
    ]);
}

fn category_table(o: &mut Out, s: &StageDiff) {
    let per = per_headers(s);
    let mut cols = vec![
        Column::text("Category", 0),
        Column::num("Base (ms)", 0),
        Column::num("New (ms)", 0),
        Column::num("Δ (ms)", 0),
        Column::num("Δ (%)", 0),
        Column::num("Launches", 1),
    ];
    if let Some((a, b)) = &per {
        cols.push(Column::num(a, 2));
        cols.push(Column::num(b, 2));
    }
    let mut t = Table::new(cols);
    for c in &s.categories {
        let mut cells = vec![
            c.category.to_string(),
            side(c.base_us, c.base_count),
            side(c.new_us, c.new_count),
            signed_ms(c.delta_us),
            signed_pct(c.delta_pct),
            format!("{} → {}", c.base_count, c.new_count),
        ];
        if per.is_some() {
            cells.extend(per_cells(&c.normalized));
        }
        t.row(cells);
    }
    o.heading("Categories");
    o.table(&t);
    o.legend(&[
        "Every kernel of a category summed, whatever its share: this compares sides whose kernel names differ \
         (another GPU vendor, another library).",
    ]);
}

fn normalization_note(s: &StageDiff) -> Option<String> {
    let n = &s.normalization;
    let (b, nw) = (n.base_units?, n.new_units?);
    match n.basis {
        NormBasis::None => None,
        NormBasis::Step => Some(format!(
            "The sides cover different numbers of steps (base {}, new {}{}): changes are given per step as well, and \
             kernels ranked by it.",
            plain(b, Unit::Count),
            plain(nw, Unit::Count),
            s.kernel_steps_note()
        )),
        NormBasis::WindowMs => Some(format!(
            "The sides cover different spans (base window {} ms, new {} ms) and do not both have steps that launched their kernels: changes are given per ms \
             of window as well.",
            fixed(b, 2),
            fixed(nw, 2)
        )),
    }
}

/// Below this share of base's kernel time matched by name, the category
/// table comes first.
const FEW_MATCHED_PCT: f64 = 50.0;

/// The diff view's lines.
pub fn render(d: &DiffReport, width: usize) -> Vec<String> {
    let mut o = Out::new(width);
    let paths = |p: &[PathBuf]| p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    o.text("torchtriage diff");
    o.text(&format!("Base: {}", paths(&d.base_traces)));
    o.text(&format!("New: {}", paths(&d.new_traces)));
    if !d.only_in_base.is_empty() {
        o.text(&format!("Stages only in base: {}", crate::report::diff::stage_labels(&d.only_in_base)));
    }
    if !d.only_in_new.is_empty() {
        o.text(&format!("Stages only in new: {}", crate::report::diff::stage_labels(&d.only_in_new)));
    }
    for note in &d.notes {
        o.text(&super::names::visible(note));
    }
    if let (Some(t), Some(b), Some(outcome)) = (d.gate.threshold_pct, d.gate.basis, d.gate_outcome()) {
        o.text(&format!("Gate: {outcome} (basis {b}, threshold {t}%)"));
    }
    if d.stages.is_empty() {
        o.text("No stage is present on both sides.");
    }
    for s in &d.stages {
        o.title(&stage_heading(s.stage));
        timeline_table(&mut o, s);
        if let Some(note) = normalization_note(s) {
            o.blank();
            o.text(&note);
        }
        let few = s.matched_base_pct.is_some_and(|m| m < FEW_MATCHED_PCT) && !s.categories.is_empty();
        if few {
            o.blank();
            o.text(&format!(
                "Only {}% of base's kernel time is in kernels with the same name on both sides: compare by category first.",
                fixed(s.matched_base_pct.unwrap_or(0.0), 1)
            ));
            category_table(&mut o, s);
            kernel_table(&mut o, s, d.min_share);
        } else {
            kernel_table(&mut o, s, d.min_share);
            if !s.categories.is_empty() {
                category_table(&mut o, s);
            }
        }
    }
    o.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_that_rounds_to_zero_has_no_sign() {
        assert_eq!(plain(-0.01, Unit::Percent), "0.0");
        assert_eq!(plain(-0.2, Unit::Percent), "-0.2");
        assert_eq!(signed(fixed(-0.01, 1), -0.01), "0.0");
        assert_eq!(signed(fixed(0.01, 1), 0.01), "0.0");
        assert_eq!(signed(fixed(0.3, 1), 0.3), "+0.3");
        assert_eq!(signed_ms(-1.0), "0.00");
        assert_eq!(signed_ms(-1500.0), "-1.50");
    }
}
