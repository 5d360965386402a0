//! The diff as markdown: a summary, then per stage a timeline table, a
//! kernel table and a category table.

use crate::error::shown;
use std::path::PathBuf;

use super::*;
pub(super) use crate::report::markdown::time;
use crate::report::markdown::{escape_md_cell, fixed};

/// How a figure is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Time,
    /// A share, 0–100; its change is in points.
    Percent,
    Count,
    /// A mean count (kernels per step): always one decimal, so that the two
    /// sides read alike.
    Mean,
}

/// The figures in display order: (label, unit, value).
type FigureRow = (&'static str, Unit, Option<f64>);

fn figure_rows(f: &StageFigures) -> [FigureRow; 13] {
    [
        ("window", Unit::Time, f.window_us),
        ("busy", Unit::Time, f.busy_us),
        ("idle", Unit::Time, f.idle_us),
        ("idle share", Unit::Percent, f.idle_pct),
        ("compute", Unit::Time, f.compute_us),
        ("communication", Unit::Time, f.comm_us),
        ("comm/compute overlap", Unit::Percent, f.comm_comp_overlap_pct),
        ("steps", Unit::Count, f.steps),
        ("step p50", Unit::Time, f.step_p50_us),
        ("step p90", Unit::Time, f.step_p90_us),
        ("launch delay p50", Unit::Time, f.launch_delay_p50_us),
        ("kernels per step", Unit::Mean, f.kernels_per_step),
        ("kernel time", Unit::Time, f.kernel_us),
    ]
}

/// `text` with a `+` when `x` is positive; a change that rounds to zero
/// shows no sign (`0.0 µs`, not `-0.0 µs`).
fn signed(text: String, x: f64) -> String {
    let zero = !text.bytes().any(|b| (b'1'..=b'9').contains(&b));
    match text.strip_prefix('-') {
        Some(rest) if zero => rest.to_string(),
        _ if x > 0.0 && !zero => format!("+{text}"),
        _ => text,
    }
}

pub(super) fn signed_pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| signed(format!("{}%", fixed(v, 1)), v))
}

/// A count: whole numbers as such, else one decimal.
fn count(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fixed(x, 1)
    }
}

fn cell(x: Option<f64>, unit: Unit) -> String {
    match (x, unit) {
        (None, _) => "-".into(),
        (Some(v), Unit::Time) => time(v),
        (Some(v), Unit::Percent) => format!("{}%", fixed(v, 1)),
        (Some(v), Unit::Count) => count(v),
        (Some(v), Unit::Mean) => fixed(v, 1),
    }
}

fn delta_cell(base: Option<f64>, delta: Option<f64>, unit: Unit) -> String {
    let Some(d) = delta else { return "-".into() };
    let with_pct = |abs: String| match base {
        Some(b) if b > 0.0 => format!("{abs} ({})", signed_pct(Some(100.0 * d / b))),
        _ => abs,
    };
    match unit {
        Unit::Time => with_pct(signed(time(d), d)),
        Unit::Percent => format!("{} pt", signed(fixed(d, 1), d)),
        Unit::Count => with_pct(signed(count(d), d)),
        Unit::Mean => with_pct(signed(fixed(d, 1), d)),
    }
}

/// A kernel's time on one side, `-` when it did not run there.
fn side_time(us: f64, count: f64) -> String {
    if count == 0.0 && us == 0.0 {
        "-".into()
    } else {
        time(us)
    }
}

/// The first entry of a list, with how many more there are.
fn first_of(list: &[Text]) -> String {
    match list {
        [] => "-".into(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (+{} more)", rest.len()),
    }
}

/// The sentence that says what a stage's kernel times are per.
fn normalization_note(s: &StageDiff) -> Option<String> {
    let n = &s.normalization;
    let (b, nw) = (n.base_units?, n.new_units?);
    Some(match n.basis {
        NormBasis::None => return None,
        NormBasis::Step => format!(
            "The sides cover different numbers of steps (base {}, new {}{}): the tables give each change per step as well, and rank kernels by it (the gate line says what the gate compares).",
            count(b),
            count(nw),
            s.kernel_steps_note()
        ),
        NormBasis::WindowMs => format!(
            "The sides cover different spans (base window {}, new {}) and do not both have steps that launched their kernels to divide by: the tables give each change per ms of window as well. A slower kernel also lengthens the window, so rows stay ranked by their total change (the gate line says what the gate compares).",
            time(b * 1e3),
            time(nw * 1e3)
        ),
    })
}

/// A row's cells: base, new, Δ, Δ%, launches, and with a normalisation
/// the change per unit.
fn row_cells(raw: (f64, f64, f64, Option<f64>, u64, u64), normalized: &Option<PerUnit>, with_per: bool) -> String {
    let (base_us, new_us, delta_us, delta_pct, base_count, new_count) = raw;
    let mut cells = format!(
        "{} | {} | {} | {} | {base_count} → {new_count}",
        side_time(base_us, base_count as f64),
        side_time(new_us, new_count as f64),
        signed(time(delta_us), delta_us),
        signed_pct(delta_pct),
    );
    if with_per {
        match normalized {
            Some(p) => {
                cells.push_str(&format!(" | {} | {}", signed(time(p.delta_us), p.delta_us), signed_pct(p.delta_pct)))
            }
            None => cells.push_str(" | - | -"),
        }
    }
    cells
}

fn timeline_table(out: &mut Vec<String>, s: &StageDiff) {
    out.push("| figure | base | new | Δ |".into());
    out.push("| --- | ---: | ---: | ---: |".into());
    let rows = |f| figure_rows(f);
    let (base, new, delta) = (rows(&s.timeline.base), rows(&s.timeline.new), rows(&s.timeline.delta));
    for ((b, n), dl) in base.iter().zip(&new).zip(&delta) {
        let (label, unit, bv) = *b;
        if bv.is_none() && n.2.is_none() {
            continue;
        }
        out.push(format!("| {label} | {} | {} | {} |", cell(bv, unit), cell(n.2, unit), delta_cell(bv, dl.2, unit)));
    }
    if let Some(note) = s.clocks_note() {
        out.push(String::new());
        out.push(note);
    }
    if let Some(g) = &s.gate {
        let verdict = if g.tripped { "tripped" } else { "passed" };
        out.push(String::new());
        out.push(format!(
            "Gate on {}{}: {} -> {} ({}), {verdict}.{}",
            g.basis.label(),
            g.per_label(),
            time(g.base_us),
            time(g.new_us),
            g.change_text(),
            g.work_note().map_or_else(String::new, |n| format!(" {n}"))
        ));
    }
}

/// Whether a stage's tables carry per-unit columns, with their header
/// cells (` Δ per step | Δ% per step |`) and rule; empty when not.
fn per_columns(s: &StageDiff) -> (bool, String, &'static str) {
    let per = s.normalization.basis.per();
    if per.is_empty() {
        (false, String::new(), "")
    } else {
        (true, format!(" Δ {per} | Δ% {per} |"), " ---: | ---: |")
    }
}

fn kernel_table(out: &mut Vec<String>, s: &StageDiff, min_share: f64) {
    let (with_per, per_head, per_rule) = per_columns(s);
    out.push(format!(
        "| kernel | category | base | new | Δ | Δ% | launches base → new |{per_head} status | CPU op | Python location |"
    ));
    out.push(format!("| --- | --- | ---: | ---: | ---: | ---: | ---: |{per_rule} --- | --- | --- |"));
    for k in s.shown_kernels() {
        let raw = (k.base_us, k.new_us, k.delta_us, k.delta_pct, k.base_count, k.new_count);
        out.push(format!(
            "| {} | {} | {} | {} | {} | {} |",
            escape_md_cell(&k.kernel),
            escape_md_cell(k.category),
            row_cells(raw, &k.normalized, with_per),
            k.label(),
            escape_md_cell(&first_of(&k.cpu_op)),
            escape_md_cell(&first_of(&k.location))
        ));
    }
    if let Some(note) = crate::report::diff::hidden_kernels_note(s.kernels_hidden, min_share) {
        out.push(String::new());
        out.push(note);
    }
}

fn category_table(out: &mut Vec<String>, s: &StageDiff) {
    let (with_per, per_head, per_rule) = per_columns(s);
    out.push(format!("| category | base | new | Δ | Δ% | launches base → new |{per_head}"));
    out.push(format!("| --- | ---: | ---: | ---: | ---: | ---: |{per_rule}"));
    for c in &s.categories {
        let raw = (c.base_us, c.new_us, c.delta_us, c.delta_pct, c.base_count, c.new_count);
        out.push(format!("| {} | {} |", escape_md_cell(c.category), row_cells(raw, &c.normalized, with_per)));
    }
}

/// Below this share of BASE's kernel time matched by name, the category
/// table comes first.
const FEW_MATCHED_PCT: f64 = 50.0;

/// The diff as markdown: per stage a timeline table, a kernel table and a
/// category table.
pub fn markdown(d: &DiffReport) -> String {
    let mut out = vec!["# torchtriage diff".to_string(), String::new()];
    let paths = |p: &[PathBuf]| p.iter().map(|p| format!("`{}`", shown(p))).collect::<Vec<_>>().join(", ");
    out.push(format!("- base: {}", paths(&d.base_traces)));
    out.push(format!("- new: {}", paths(&d.new_traces)));
    if !d.only_in_base.is_empty() {
        out.push(format!("- stages only in base: {}", super::stage_labels(&d.only_in_base)));
    }
    if !d.only_in_new.is_empty() {
        out.push(format!("- stages only in new: {}", super::stage_labels(&d.only_in_new)));
    }
    for note in &d.notes {
        out.push(format!("- {}", escape_md_cell(note)));
    }
    if let (Some(t), Some(b), Some(outcome)) = (d.gate.threshold_pct, d.gate.basis, d.gate_outcome()) {
        out.push(format!("- gate: {outcome} (basis {b}, threshold {t}%)"));
    }
    if d.stages.is_empty() {
        out.push(String::new());
        out.push("No stage is present on both sides.".into());
    }
    for s in &d.stages {
        out.push(String::new());
        out.push(format!("## Stage {}", s.stage.label()));
        out.push(String::new());
        timeline_table(&mut out, s);
        out.push(String::new());
        if let Some(note) = normalization_note(s) {
            out.push(note);
            out.push(String::new());
        }
        let few_matched = s.matched_base_pct.is_some_and(|m| m < FEW_MATCHED_PCT);
        if few_matched && !s.categories.is_empty() {
            out.push(format!(
                "Only {}% of base's kernel time is in kernels with the same name on both sides: compare by category first.",
                fixed(s.matched_base_pct.unwrap_or(0.0), 1)
            ));
            out.push(String::new());
            category_table(&mut out, s);
            out.push(String::new());
            kernel_table(&mut out, s, d.min_share);
        } else {
            kernel_table(&mut out, s, d.min_share);
            if !s.categories.is_empty() {
                out.push(String::new());
                category_table(&mut out, s);
            }
        }
    }
    out.push(String::new());
    out.push("Kernels are matched by canonical name; a kernel on one side only is `new` or `gone`. The category table sums every kernel of a category, so it compares sides whose kernel names differ (another GPU vendor, another library). Δ% is relative to base; shares are in points.".into());
    out.push(String::new());
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_that_round_to_zero_have_no_sign() {
        assert_eq!(delta_cell(Some(5.0), Some(-0.01), Unit::Time), "0.0 µs (-0.2%)");
        assert_eq!(delta_cell(None, Some(-0.01), Unit::Percent), "0.0 pt");
        assert_eq!(delta_cell(None, Some(0.01), Unit::Percent), "0.0 pt");
        assert_eq!(delta_cell(None, Some(0.06), Unit::Percent), "+0.1 pt");
        assert_eq!(delta_cell(None, Some(-1.25), Unit::Time), "-1.2 µs");
        assert_eq!(signed_pct(Some(-0.001)), "0.0%");
    }
}
