//! The markdown triage view: a short header, the headline and the
//! `Timeline` section ([`super::timeline`]; not under `--compat
//! reference`), then the Kernel, Overlap Opportunity and Fuse Opportunity
//! tables, each split into `#####` stage sections unless the only stage is
//! `all`. Cell formats of those three tables match the reference byte for
//! byte.

use crate::error::shown;
use std::path::PathBuf;

use crate::analysis::stage::Stage;
use crate::analysis::types::list_cell;
use crate::report::model::{Compat, KernelTableRow, Mode, TriageReport};

/// Markdown-safe table cell: `|` escaped, a newline as `<br>`, other
/// control characters (NUL, ESC, ...; tab and carriage return excepted) as
/// `\u00XX`, so a name cannot corrupt the table or the terminal, and a `<`
/// that would open an HTML tag (`FillFunctor<float>`) as `\<`, a `&` that
/// would start an entity (`&lt;`) as `\&`, and a backslash of the name
/// before any punctuation written next (`\|`, `\<`, `\*`) as `\\`, so a
/// viewer that renders the markdown shows the whole name. The
/// `<br>` that separates a list cell's entries stays a line break.
pub(crate) fn escape_md_cell(text: &str) -> String {
    escape_md(text, true)
}

/// [`escape_md_cell`], leaving `<` and `&` as they are when `html` is false:
/// the reference's tables under `--compat reference`, byte for byte.
fn escape_md(text: &str, html: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // The last character written is a backslash of the text's own, which a
    // viewer would read as escaping a punctuation character written next.
    let mut after_backslash = false;
    while let Some(c) = rest.chars().next() {
        let next = rest[c.len_utf8()..].chars().next();
        let hidden;
        let piece: &str = match c {
            '|' => "\\|",
            '\n' => "<br>",
            '\t' | '\r' => &rest[..1],
            '<' if html && rest.starts_with("<br>") => "<",
            '<' if html && next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')) => "\\<",
            '&' if html && next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#') => "\\&",
            c if crate::report::is_hidden_char(c) => {
                hidden = format!("\\u{:04x}", c as u32);
                &hidden
            }
            _ => &rest[..c.len_utf8()],
        };
        if html && after_backslash && piece.starts_with(|p: char| p.is_ascii_punctuation()) {
            out.push('\\');
        }
        out.push_str(piece);
        after_backslash = c == '\\';
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A cell of the Kernel, Overlap and Fuse tables: escaped as
/// [`escape_md_cell`], with `<` and `&` kept raw under `--compat reference`.
fn table_cell(r: &TriageReport, text: &str) -> String {
    escape_md(text, r.compat == Compat::Default)
}

/// A figure that rounds to zero, written without a sign (`0.0`, not
/// `-0.0`; `0.00 ms`, not `-0.00 ms`): a change too small to show is no
/// decrease.
pub(crate) fn unsigned_zero(text: String) -> String {
    match text.strip_prefix(['-', '+']) {
        Some(rest)
            if rest.starts_with('0')
                && rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').all(|b| b == b'0' || b == b'.') =>
        {
            rest.to_string()
        }
        _ => text,
    }
}

/// Fixed-point like Python's `f"{x:.Nf}"` (including `nan` / `inf`).
pub(crate) fn fixed(x: f64, digits: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format!("{:.*}", digits, x)
}

/// Microseconds in the unit that suits them: `812.4 µs`, `12.34 ms`,
/// `3.210 s`.
pub(crate) fn time(us: f64) -> String {
    let a = us.abs();
    if a >= 1e6 {
        format!("{} s", fixed(us / 1e6, 3))
    } else if a >= 1e3 {
        format!("{} ms", fixed(us / 1e3, 2))
    } else {
        format!("{} µs", fixed(us, 1))
    }
}

/// Microseconds as `12.34 ms`.
pub(crate) fn format_ms(us: f64) -> String {
    format!("{} ms", fixed(us / 1000.0, 2))
}

pub use crate::analysis::overlap::dependency_risk_label;

/// Groups row indexes by stage, stages in render order.
fn group_by_stage(stages: &[Stage]) -> Vec<(Stage, Vec<usize>)> {
    let mut groups: Vec<(Stage, Vec<usize>)> = Vec::new();
    for (i, &s) in stages.iter().enumerate() {
        match groups.iter_mut().find(|(g, _)| *g == s) {
            Some((_, v)) => v.push(i),
            None => groups.push((s, vec![i])),
        }
    }
    groups.sort_by_key(|(s, _)| *s);
    groups
}

/// Renders one table per stage (headed by `##### stage`), or a single
/// unheaded table when there are no rows or only the `all` stage.
fn stage_sections(stages: &[Stage], render: &dyn Fn(&[usize]) -> Vec<String>) -> Vec<String> {
    stage_sections_with(stages, &[], &|_| Vec::new(), render)
}

/// [`stage_sections`], where each stage of `empty` that `stages` lacks (a
/// stage with no row to show) gets a section of its own from
/// `render_empty`, in stage order among the others; with any such
/// section, the `all` stage is headed too.
fn stage_sections_with(
    stages: &[Stage],
    empty: &[Stage],
    render_empty: &dyn Fn(Stage) -> Vec<String>,
    render: &dyn Fn(&[usize]) -> Vec<String>,
) -> Vec<String> {
    if stages.is_empty() {
        return render(&[]);
    }
    let mut groups: Vec<(Stage, Option<Vec<usize>>)> =
        group_by_stage(stages).into_iter().map(|(s, idx)| (s, Some(idx))).collect();
    groups.extend(empty.iter().filter(|s| !stages.contains(s)).map(|&s| (s, None)));
    groups.sort_by_key(|(s, _)| *s);
    groups.dedup_by_key(|(s, _)| *s);
    if let [(Stage::All, Some(idx))] = groups.as_slice() {
        return render(idx);
    }
    let mut lines = Vec::new();
    let n = groups.len();
    for (i, (stage, idx)) in groups.iter().enumerate() {
        lines.push(format!("##### {}", stage.label()));
        match idx {
            Some(idx) => lines.extend(render(idx)),
            None => lines.extend(render_empty(*stage)),
        }
        if i + 1 != n {
            lines.push(String::new());
        }
    }
    lines
}

fn kernel_tables(r: &TriageReport) -> Vec<String> {
    let rows: Vec<(Stage, &KernelTableRow)> = r.rendered_kernel_rows().collect();
    let stages: Vec<Stage> = rows.iter().map(|(s, _)| *s).collect();
    // A stage whose rows the share bar all hid, beside stages with rows
    // shown, gets its section saying what the bar hid.
    kernel_sections(r, &rows, &stages, &sectioned_stages(r))
}

/// The stages that get a section of their own even without a row to show
/// (saying why there is none): every stage with kernels, unless the report
/// keeps to the reference's layout.
fn sectioned_stages(r: &TriageReport) -> Vec<Stage> {
    match r.compat {
        Compat::Default => r.kernel_tables.iter().map(|t| t.stage).collect(),
        Compat::Reference => Vec::new(),
    }
}

fn kernel_sections(
    r: &TriageReport,
    rows: &[(Stage, &KernelTableRow)],
    stages: &[Stage],
    hidden: &[Stage],
) -> Vec<String> {
    let render_hidden = |stage: Stage| {
        let mut lines = vec![r.no_kernel_rows_text()];
        lines.extend(hidden_rows_note(r, stage));
        lines
    };
    stage_sections_with(stages, hidden, &render_hidden, &|idx| {
        let mut lines = vec![
            "| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |".to_string(),
            "| --- | --- | ---: | ---: | ---: | --- | --- |".to_string(),
        ];
        if idx.is_empty() {
            lines.push(format!("| {} | - | - | - | - | - | - |", r.no_kernel_rows_text()));
            if r.compat == Compat::Default {
                lines.extend(all_rows_hidden_notes(r));
            }
            return lines;
        }
        for &i in idx {
            let k = rows[i].1;
            lines.push(format!(
                "| {} | {} | {} | {}% | {} | {} | {} |",
                table_cell(r, &k.kernel),
                table_cell(r, k.category),
                format_ms(k.total_us),
                fixed(k.share_pct, 1),
                k.launches,
                table_cell(r, &k.location_cell()),
                table_cell(r, &k.cpu_op_cell())
            ));
        }
        if r.compat == Compat::Default {
            lines.extend(hidden_rows_note(r, rows[idx[0]].0));
        }
        lines
    })
}

/// The line under a stage's kernel table saying what the share cut-off and
/// the row limit left out: how many kernels, and their share of the stage's
/// GPU time. None when every row is shown.
pub(crate) fn hidden_rows_note(r: &TriageReport, stage: Stage) -> Option<String> {
    let (mut hidden, mut hidden_us, mut total_us, mut all_under) = (0usize, 0.0, 0.0, true);
    for table in r.kernel_tables.iter().filter(|t| t.stage == stage) {
        total_us += table.total_us;
        for row in table.rows.iter().filter(|row| !row.rendered) {
            hidden += 1;
            hidden_us += row.total_us;
            all_under &= row.share_pct < r.min_share;
        }
    }
    if hidden == 0 {
        return None;
    }
    let share = if total_us > 0.0 { 100.0 * hidden_us / total_us } else { 0.0 };
    let why = if all_under {
        format!("below the {}% share cut-off", fixed(r.min_share, 1))
    } else {
        "past the row limit or the share cut-off".to_string()
    };
    Some(format!(
        "{hidden} more {} {why} {} {}% of this stage's GPU time ({}).",
        if hidden == 1 { "kernel" } else { "kernels" },
        if hidden == 1 { "holds" } else { "hold" },
        fixed(share, 1),
        format_ms(hidden_us)
    ))
}

/// Under a kernel table the cut-off left empty: what it hid, per stage
/// (named when the trace has stages).
fn all_rows_hidden_notes(r: &TriageReport) -> Vec<String> {
    let mut stages: Vec<Stage> = r.kernel_tables.iter().map(|t| t.stage).collect();
    stages.sort();
    stages.dedup();
    let named = stages != [Stage::All];
    stages
        .into_iter()
        .filter_map(|s| hidden_rows_note(r, s).map(|n| if named { format!("{}: {n}", s.label()) } else { n }))
        .collect()
}

/// Why a stage's overlap table is empty: the pid filter kept nothing, the
/// overlap step covered other stages (beside a trace's named stages, the
/// `all` stage of its other kernels, as the reference's overlap table
/// leaves it out), or the share bar hid its rows.
pub(crate) fn empty_overlap_text(r: &TriageReport, stage: Stage) -> String {
    match r.overlap_filtered_out() {
        Some(why) => why.to_string(),
        None if !r.overlap_stats.iter().any(|s| s.stage == stage) => {
            "The overlap step covers the trace's named stages, not this one: no overlap figures here.".to_string()
        }
        None => no_overlap_rows_text(r, Some(stage)),
    }
}

/// An overlap table (of one stage, or of all) with no row at or above the
/// share bar: how many the bar hid.
pub(crate) fn no_overlap_rows_text(r: &TriageReport, stage: Option<Stage>) -> String {
    let hidden = r.overlap_rows.iter().filter(|o| !o.rendered && stage.is_none_or(|s| s == o.stage)).count();
    let bar = fixed(r.min_share, 1);
    match hidden {
        0 => format!("No overlap rows at or above {bar}% share."),
        n => format!(
            "No overlap rows at or above {bar}% share; {n} {} below it (--min-share 0 shows them).",
            if n == 1 { "row is" } else { "rows are" }
        ),
    }
}

fn overlap_tables(r: &TriageReport) -> Vec<String> {
    let shown: Vec<_> = r.overlap_rows.iter().filter(|o| o.rendered).collect();
    let stages: Vec<Stage> = shown.iter().map(|o| o.stage).collect();
    // A stage with kernels but no overlap rows, beside stages with some,
    // gets its section saying why rather than none.
    overlap_sections(r, &shown, &stages, &sectioned_stages(r))
}

fn overlap_sections(
    r: &TriageReport,
    shown: &[&crate::report::model::OverlapRow],
    stages: &[Stage],
    empty: &[Stage],
) -> Vec<String> {
    stage_sections_with(stages, empty, &|stage| vec![empty_overlap_text(r, stage)], &|idx| {
        let mut lines = vec![
            "| Priority | Verdict | Kernel | Python scope | Formal signal | Dep risk | Recommendation |".to_string(),
            "| --- | --- | --- | --- | --- | --- | --- |".to_string(),
        ];
        if idx.is_empty() {
            if let (Some(why), Compat::Default) = (r.overlap_filtered_out(), r.compat) {
                lines.push(format!("| - | - | {why} | - | - | - | - |"));
                return lines;
            }
            let text = match r.compat {
                // The reference's words, which suit its single-trace mode.
                Compat::Reference => format!(
                    "No rows cleared the {}% reporting bar. Use mapping/formal mode for overlap attribution.",
                    fixed(r.min_share, 1)
                ),
                Compat::Default => no_overlap_rows_text(r, None),
            };
            lines.push(format!("| - | - | {text} | - | - | - | - |"));
            return lines;
        }
        for &i in idx {
            let o = &shown[i].row;
            let signal = format!(
                "{} us, share {}%, excl {}% / hid {}%",
                fixed(o.total_us, 1),
                fixed(o.share_pct, 1),
                fixed(o.exclusive_ratio * 100.0, 1),
                fixed(o.hidden_ratio * 100.0, 1)
            );
            lines.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                o.priority,
                o.verdict,
                table_cell(r, &o.kernel),
                table_cell(r, &o.python_scope),
                table_cell(r, &signal),
                dependency_risk_label(&o.dependency_signal),
                o.recommendation
            ));
        }
        lines
    })
}

fn fuse_tables(r: &TriageReport) -> Vec<String> {
    let stages: Vec<Stage> = r.fuse_rows.iter().map(|f| f.stage).collect();
    stage_sections(&stages, &|idx| {
        let mut lines = vec![
            "| Pattern | Confidence | Related GPU time | Share | Evidence kernels | Current kernel Python location | Candidate fused Python path | Rationale |".to_string(),
            "| --- | --- | ---: | ---: | --- | --- | --- | --- |".to_string(),
        ];
        if idx.is_empty() {
            lines.push(
                "| No medium-confidence source-backed fusion opportunity matched this trace. | - | - | - | - | - | - | - |"
                    .to_string(),
            );
            return lines;
        }
        for &i in idx {
            let f = &r.fuse_rows[i];
            let it = f;
            lines.push(format!(
                "| {} | {} | {} | {}% | {} | {} | {} | {} |",
                table_cell(r, &it.pattern),
                table_cell(r, &it.confidence),
                format_ms(it.related_us),
                fixed(f.share_pct, 1),
                table_cell(r, &list_cell(&it.evidence, "-")),
                table_cell(r, &list_cell(&it.current_locations, "-")),
                table_cell(r, &list_cell(&it.candidate_path, "-")),
                table_cell(r, &it.rationale)
            ));
        }
        lines
    })
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
}

/// The header's list of traces, escaped as a cell is outside `--compat
/// reference` (a `<` in a folder's name opens no tag).
fn header_paths(r: &TriageReport, paths: &[PathBuf]) -> String {
    escape_md(&join_paths(paths), r.compat == Compat::Default)
}

/// What the kernel table's terms mean.
pub(crate) const KERNEL_LEGEND: &str = "Share: of the stage's total kernel time (all its kernels' durations summed). \
     Python location: the launching site, with its share of the kernel's launches (unresolved: no Python frame found); \
     CPU op: the launching operator.";

/// Which kernels the overlap table holds, and what its verdicts,
/// dependency risks and priorities mean, with `dep` the name of the
/// dependency column.
pub(crate) fn overlap_terms(dep: &str) -> String {
    format!(
        "Rows: per stage, up to five kernels of 5 µs or more with at least 45% of their time exposed (communication, copies \
         and elementwise work first; compute, such as GEMMs and attention, which the others overlap with, only after \
         them), then up to five copies and elementwise kernels of 5 µs or more with at least 65% already hidden; listed by priority. \
         Verdict: headroom = mostly exposed, worth overlapping or fusing; low-roi-hidden = already hidden. {dep}: whether \
         the neighbouring kernels on its stream depend on it (high: a tight neighbour from the same scope or launch; \
         unclear: a tight unmapped neighbour; low: none). Priority: P1 (act first) to P5 (skip)."
    )
}

/// What the overlap table's terms mean.
fn overlap_legend() -> String {
    format!(
        "Formal signal: the kernel's GPU time; share: the time any launch of it runs, of the GPU busy time of the kernels this table \
         covers (the union over streams of the events of a kernel category, or on a stream with a kernel-like name: \
         less than the timeline's Busy when other events run on the device), so it differs from the kernel table's Share, which divides summed kernel time; excl \
         (exclusive): share of its time no other stream's kernel overlaps; hid (hidden): share overlapped by another \
         stream. {}",
        overlap_terms("Dep risk")
    )
}

/// The whole triage view, without a trailing newline.
pub fn render(r: &TriageReport) -> String {
    let mut lines = vec!["Triage View".to_string()];
    if r.mode == Mode::SingleTrace {
        lines.push("Mode: single-trace".into());
        lines.push(format!("Framework: {}", r.framework.formal.display_name()));
        lines.push(format!("Input traces: {}", header_paths(r, &r.formal_traces)));
    } else {
        lines.push("Mode: mapping-formal".into());
        if r.framework.mapping == r.framework.formal {
            lines.push(format!("Framework: {}", r.framework.formal.display_name()));
        } else {
            lines.push(format!("Mapping framework: {}", r.framework.mapping.display_name()));
            lines.push(format!("Formal framework: {}", r.framework.formal.display_name()));
        }
        lines.push(format!("Mapping traces: {}", header_paths(r, &r.mapping_traces)));
        lines.push(format!("Formal traces: {}", header_paths(r, &r.formal_traces)));
    }
    if let Some(model) = &r.model {
        lines.push(format!("Model: {model}"));
    }
    // What the run left out or could not read, as stderr said it: a report
    // kept in a file says it too.
    if r.compat == Compat::Default {
        lines.extend(r.notes.iter().map(|n| escape_md_cell(n)));
    }
    lines.push(String::new());
    if let (Compat::Default, Some(t)) = (r.compat, &r.timeline) {
        lines.extend(super::timeline::headline(r, t));
        lines.push(String::new());
        lines.push("Timeline".into());
        lines.extend(super::timeline::section(t));
        lines.push(String::new());
    }
    // The reference's sections are its own; the default report says what
    // their terms mean.
    let legend = |lines: &mut Vec<String>, text: &str| {
        if r.compat == Compat::Default && !r.has_no_kernels() {
            lines.push(String::new());
            lines.push(text.to_string());
        }
    };
    lines.push("Kernel Table".into());
    lines.extend(kernel_tables(r));
    legend(&mut lines, KERNEL_LEGEND);
    lines.push(String::new());
    lines.push("Overlap Opportunity Table".into());
    lines.extend(overlap_tables(r));
    legend(&mut lines, &overlap_legend());
    lines.push(String::new());
    lines.push("Fuse Opportunity Table".into());
    lines.extend(fuse_tables(r));
    lines.join("\n").trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_cells_are_shown_escaped() {
        assert_eq!(escape_md_cell("a|b\nc\td\0e\u{1b}[31m\u{7f}"), "a\\|b<br>c\td\\u0000e\\u001b[31m\\u007f");
        // A C1 control (CSI) and a right-to-left override: escaped, so the
        // line neither drives the terminal nor reads backwards.
        assert_eq!(escape_md_cell("k\u{9b}31m\u{202e}exe"), "k\\u009b31m\\u202eexe");
        assert_eq!(escape_md_cell("a\u{2028}b\u{200b}c\u{feff}"), "a\\u2028b\\u200bc\\ufeff");
    }

    #[test]
    fn a_less_than_that_would_open_a_tag_is_escaped() {
        let name = "FillFunctor<float>, Kernel<4, c10::Half> a < b </x> <!-- <?";
        assert_eq!(escape_md_cell(name), "FillFunctor\\<float>, Kernel<4, c10::Half> a < b \\</x> \\<!-- \\<?");
        assert_eq!(escape_md(name, false), name);
        // A list cell's own line breaks stay; a backslash before a tag and
        // an entity are escaped too.
        assert_eq!(escape_md_cell("a.py:1 f<br>b.py:2 g"), "a.py:1 f<br>b.py:2 g");
        assert_eq!(escape_md_cell("back\\slash\\<k> &lt; a & b"), "back\\slash\\\\\\<k> \\&lt; a & b");
        // A backslash of the name before punctuation written next is
        // doubled, so that a viewer shows it instead of reading an escape.
        assert_eq!(escape_md_cell("e\\|f"), "e\\\\\\|f");
        assert_eq!(escape_md_cell("a\\*b\\c\\"), "a\\\\*b\\c\\");
        assert_eq!(escape_md_cell("a\\\\|"), "a\\\\\\\\\\|");
        assert_eq!(escape_md_cell("x\\\n"), "x\\\\<br>");
        assert_eq!(escape_md("e\\|f", false), "e\\\\|f", "the reference's cells stay as they were");
    }

    #[test]
    fn a_figure_that_rounds_to_zero_has_no_sign() {
        for (text, want) in [
            ("-0.0", "0.0"),
            ("+0.00 ms", "0.00 ms"),
            ("-0.00 ms", "0.00 ms"),
            ("+0.0%", "0.0%"),
            ("-0.1", "-0.1"),
            ("+10.00 ms", "+10.00 ms"),
            ("-", "-"),
        ] {
            assert_eq!(unsigned_zero(text.to_string()), want, "{text}");
        }
        assert_eq!(crate::report::html::signed_ms(-2.0), "0.00 ms");
        assert_eq!(crate::report::html::signed_ms(-20.0), "-0.02 ms");
        assert_eq!(crate::report::html::signed_pct(Some(-0.01)), "0.0%");
    }

    #[test]
    fn cells_and_numbers() {
        assert_eq!(escape_md_cell("a|b\nc"), "a\\|b<br>c");
        assert_eq!(format_ms(130655.0), "130.66 ms");
        assert_eq!(fixed(0.25, 1), "0.2");
        assert_eq!(fixed(f64::NAN, 1), "nan");
        assert_eq!(Stage::Extend.label(), "extend/prefill");
        assert_eq!(dependency_risk_label("both-side serial risk"), "high");
    }

    #[test]
    fn sections_group_and_order() {
        let stages = [Stage::All, Stage::Decode, Stage::All];
        let out = stage_sections(&stages, &|idx| vec![format!("{idx:?}")]);
        assert_eq!(out, vec!["##### decode", "[1]", "", "##### all", "[0, 2]"]);
        let out = stage_sections(&[Stage::All], &|idx| vec![format!("{idx:?}")]);
        assert_eq!(out, vec!["[0]"]);
        // A stage with nothing to show, before the `all` stage: both headed,
        // in stage order.
        let empty = |s: Stage| vec![format!("none in {}", s.label())];
        let out =
            stage_sections_with(&[Stage::All], &[Stage::Decode, Stage::All], &empty, &|idx| vec![format!("{idx:?}")]);
        assert_eq!(out, vec!["##### decode", "none in decode", "", "##### all", "[0]"]);
    }
}
