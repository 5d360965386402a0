//! The triage view as tables: a short header and the headline, then per
//! stage the timeline figures (a key/value table and the verdict), the
//! kernel table, the overlap table and the fuse table, each with a legend.
//!
//! Columns dropped when a table does not fit, first to last: kernel table
//! Max, CPU op, Avg, Category, Python location, Launches; overlap table
//! Python scope, Verdict, GPU time, Dep risk, Action; fuse table Rationale,
//! Candidate path, Current location, Evidence kernels, Related GPU time.

use crate::analysis::stage::Stage;
use crate::analysis::timeline::{StageTimeline, Timeline};
use crate::analysis::types::UNRESOLVED;
use crate::report::markdown::{dependency_risk_label, fixed, overlap_terms};
use crate::report::model::{Mode, TriageReport};
use crate::report::timeline::{
    clock_offset_text, clocks_offset_mark, idle_text, stage_sum, step_source_name, steps_pace_note, top_kernel,
    verdict_line,
};

use super::layout::{Column, Table};
use super::names::{display_name, shorten_middle};
use super::{list, ms, opt1, opt_ms, stage_heading, us1, Out};

const KERNEL_LEGEND: &[&str] = &[
    "GPU time: summed kernel durations. Share: of the stage's total kernel time (all kernels of the stage summed). \
     Avg, Max: per launch. Python location: launching site (share of the kernel's launches); CPU op: launching operator.",
];

/// What the overlap table's columns mean; its verdicts, dependency risks and
/// priorities are worded as in the markdown report (`overlap_terms`).
const OVERLAP_COLUMNS: &str = "Share: the time any launch of the kernel runs, of the GPU busy time of the kernels this \
     table covers (the union over streams of the events of a kernel category, or on a stream with a kernel-like name: \
     less than the timeline's Busy when other events run on the device), so it differs from the kernel table's Share, which divides summed kernel time. Excl (exclusive): \
     share of the kernel's time no other stream's kernel overlaps; Hid (hidden): share overlapped by another stream.";

const FUSE_LEGEND: &[&str] = &[
    "Confidence: Confirmed = kernels of the pattern's own family matched its keywords directly (or every group of a \
     split match); Candidate / Possible = a weaker, partial match worth checking. Share: of the stage's total kernel time.",
];

const TIMELINE_LEGEND: &[&str] = &[
    "Window: first kernel start to last kernel end; busy: time any kernel runs (union over streams); percentages are of \
     the window. Stream idle: gaps between consecutive kernels of each stream, summed over streams (so it can exceed \
     idle, which counts only time no stream runs): host wait = the next kernel's launch call began after the previous \
     kernel ended, counted up to 1 ms after that call ended (a kernel that starts later was held on the device; \
     `--timeline-basis hta`: the whole gap); kernel wait = other gaps under 30 µs. Exposed communication: \
     communication no computation overlaps.",
];

/// Kernel names in the headline are shortened to this many characters.
const HEADLINE_NAME_CHARS: usize = 64;

fn pct_of(v: f64, of: f64) -> Option<f64> {
    (of > 0.0).then(|| 100.0 * v / of)
}

/// The stages the report covers, in report order.
fn stages(r: &TriageReport) -> Vec<Stage> {
    let mut out: Vec<Stage> = Vec::new();
    let from_timeline = r.shown_timeline().into_iter().flat_map(|t| t.stages.iter().map(|s| s.stage));
    let from_tables = r.kernel_tables.iter().map(|t| t.stage);
    let from_rows = r.overlap_rows.iter().map(|o| o.stage).chain(r.fuse_rows.iter().map(|f| f.stage));
    for s in from_timeline.chain(from_tables).chain(from_rows) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.sort();
    out
}

fn header(o: &mut Out, r: &TriageReport) {
    o.text("torchtriage triage");
    let paths = |p: &[std::path::PathBuf]| p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if r.mode == Mode::SingleTrace {
        o.text(&format!("Trace: {} ({})", paths(&r.formal_traces), r.framework.formal.display_name()));
    } else {
        o.text(&format!("Mapping traces: {} ({})", paths(&r.mapping_traces), r.framework.mapping.display_name()));
        o.text(&format!("Formal traces: {} ({})", paths(&r.formal_traces), r.framework.formal.display_name()));
    }
    if let Some(model) = &r.model {
        o.text(&format!("Model: {model}"));
    }
    for note in &r.notes {
        o.text(&super::names::visible(note));
    }
}

fn headline(o: &mut Out, r: &TriageReport, t: &Timeline) {
    o.title("Headline");
    if t.stages.is_empty() {
        o.item(&crate::report::timeline::no_kernels_headline(t));
        return;
    }
    for stage in &t.stages {
        let f = stage_sum(stage);
        let top = top_kernel(r, stage.stage)
            .map_or_else(|| "-".to_string(), |top| top.text(|n| shorten_middle(&display_name(n), HEADLINE_NAME_CHARS)));
        let pct = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{}%", fixed(v, 1)));
        o.item(&format!(
            "{}: window {} ms, GPU busy {}, {}, comm/compute overlap {}, top kernel {}",
            stage.stage.label(),
            ms(f.window_us),
            pct(pct_of(f.busy_us, f.window_us)),
            idle_text(stage),
            pct(f.comm_comp_overlap_pct),
            top
        ));
    }
    if let Some(note) = crate::report::timeline::basis_note(t) {
        o.item(&note);
    }
}

fn timeline_table(o: &mut Out, stage: &StageTimeline) {
    let f = stage_sum(stage);
    let (mut host, mut kernel, mut other) = (0.0, 0.0, 0.0);
    for s in stage.gpus.iter().flat_map(|g| &g.figures.idle_by_stream) {
        host += s.host_wait_us;
        kernel += s.kernel_wait_us;
        other += s.other_us;
    }
    let l = &stage.launch;
    let s = &stage.steps;
    let mut t = Table::new(vec![Column::text("Figure", 0), Column::num("Value", 0)]);
    let mut add = |k: &str, v: String| t.row(vec![k.to_string(), v]);
    add("GPUs", stage.gpus.len().to_string());
    add("kernels", f.kernels.to_string());
    add("window (ms)", ms(f.window_us));
    add("busy (ms)", ms(f.busy_us));
    add("busy (%)", opt1(pct_of(f.busy_us, f.window_us)));
    add("idle (ms)", ms(f.idle_us));
    add("idle (%)", opt1(f.idle_pct));
    // The stage's own figure; the stream rows below sum each stream's gaps,
    // which overlap when several streams idle at once.
    add(&format!("idle, waiting for the host{} (ms)", clocks_offset_mark(stage)), ms(f.idle_host_wait_us));
    if let Some(call) = &stage.verdict.host_wait_call {
        add(&format!("  of it in {}{} (ms)", call.name, clocks_offset_mark(stage)), ms(call.wait_us));
    }
    // Shown where it is a tenth of a percent of the window or more.
    if f.device_wait_us >= 0.001 * f.window_us && f.device_wait_us > 0.0 {
        add("busy, device waits only (ms)", ms(f.device_wait_us));
    }
    add(&format!("stream idle, host wait{} (ms)", clocks_offset_mark(stage)), ms(host));
    add("stream idle, kernel wait (ms)", ms(kernel));
    add("stream idle, other (ms)", ms(other));
    add("compute (ms)", ms(f.compute_us));
    add("compute (%)", opt1(f.compute_pct));
    add("communication (ms)", ms(f.comm_us));
    add("exposed communication (ms)", ms(f.exposed_comm_us));
    add("comm/compute overlap (%)", opt1(f.comm_comp_overlap_pct));
    add("steps", s.count.to_string());
    add("step mean (ms)", opt_ms(s.mean_us));
    add("step p50 (ms)", opt_ms(s.p50_us));
    add("step p90 (ms)", opt_ms(s.p90_us));
    add("step max (ms)", opt_ms(s.max_us));
    add("launch calls", l.launches.to_string());
    add("kernels matched to a launch", l.kernels.to_string());
    add("launch CPU time (ms)", ms(l.cpu_us));
    // Delays across two clocks are not shown (the line under the table says why).
    let [p50, p90, p99] = l.delays_on_one_clock().unwrap_or_default();
    add("launch delay p50 (µs)", opt1(p50));
    add("launch delay p90 (µs)", opt1(p90));
    add("launch delay p99 (µs)", opt1(p99));
    add("median kernel (µs)", opt1(l.kernel_p50_us));
    add("median launch call (µs)", opt1(l.launch_p50_us));
    add("kernels shorter than launch (%)", opt1(l.short_kernel_pct));
    add("kernels per step", opt1(l.kernels_per_step));
    add("CPU/GPU clock offset (ms)", opt_ms(l.clock_offset_us));
    o.table(&t);
    if let Some(note) = crate::report::timeline::graph_launch_note(stage) {
        o.text(&format!("Launch: {note}."));
    }
    if let Some(offset) = l.clock_offset_us {
        o.text(&format!("Clocks: {}.", clock_offset_text(offset)));
    }
    match s.source {
        Some(src) if s.count > 0 => {
            let pace = steps_pace_note(stage).map_or_else(String::new, |n| format!("; {n}"));
            let idle = crate::report::timeline::without_gpu_work_note(s).map_or_else(String::new, |n| format!("; {n}"));
            o.text(&format!("Steps from {}{pace}{idle}.", step_source_name(src)));
        }
        // None in this stage, or none found at all: as the other formats say it.
        _ => o.text(&format!("{}.", crate::report::timeline::steps_line_plain(stage))),
    }
    o.text(&format!("Verdict: {}", verdict_line(stage)));
    o.legend(TIMELINE_LEGEND);
}

/// The narrowest a kernel name column shrinks to before other columns
/// go: a third of the width, at least 24 characters.
pub(crate) fn name_min(width: usize) -> usize {
    (width / 3).max(24)
}

fn kernel_table(o: &mut Out, r: &TriageReport, stage: Stage) {
    let mut t = Table::new(vec![
        Column::name("Kernel", name_min(o.width), 0),
        Column::text("Category", 3),
        Column::num("GPU time (ms)", 0),
        Column::num("Share (%)", 0),
        Column::num("Launches", 5),
        Column::num("Avg (µs)", 2),
        Column::num("Max (µs)", 1),
        Column::location("Python location", 20, 4),
        Column::name("CPU op", 12, 1),
    ]);
    let mut shown = 0;
    for table in r.kernel_tables.iter().filter(|t| t.stage == stage) {
        for k in table.rows.iter().filter(|k| k.rendered) {
            shown += 1;
            t.row_lines(vec![
                vec![display_name(&k.kernel)],
                vec![k.category.to_string()],
                vec![ms(k.total_us)],
                vec![fixed(k.share_pct, 1)],
                vec![k.launches.to_string()],
                vec![us1(k.avg_us)],
                vec![us1(k.max_us)],
                list(&k.location, UNRESOLVED),
                list(&k.cpu_op, "-"),
            ]);
        }
    }
    o.heading("Kernels");
    if shown == 0 {
        o.text(&format!("No kernel rows at or above {}% share.", fixed(r.min_share, 1)));
    } else {
        o.table(&t);
    }
    if let Some(note) = crate::report::markdown::hidden_rows_note(r, stage) {
        o.text(&note);
    }
    if shown > 0 {
        o.legend(KERNEL_LEGEND);
    }
}

fn overlap_table(o: &mut Out, r: &TriageReport, stage: Stage) {
    let mut t = Table::new(vec![
        Column::text("Priority", 0),
        Column::text("Verdict", 3),
        Column::name("Kernel", name_min(o.width), 0),
        Column::num("GPU time (ms)", 4),
        Column::num("Share (%)", 0),
        // Hid is 100 − Excl, and the action says what they mean.
        Column::num("Excl (%)", 2),
        Column::num("Hid (%)", 2),
        Column::text("Dep risk", 5),
        Column::text("Action", 6),
        Column::location("Python scope", 16, 1),
    ]);
    let mut any = false;
    for row in r.overlap_rows.iter().filter(|x| x.stage == stage && x.rendered) {
        any = true;
        let x = &row.row;
        t.row(vec![
            x.priority.clone(),
            x.verdict.clone(),
            display_name(&x.kernel),
            ms(x.total_us),
            fixed(x.share_pct, 1),
            fixed(x.exclusive_ratio * 100.0, 1),
            fixed(x.hidden_ratio * 100.0, 1),
            dependency_risk_label(&x.dependency_signal).to_string(),
            x.recommendation.clone(),
            super::names::visible(&x.python_scope),
        ]);
    }
    o.heading("Overlap opportunities");
    if !any {
        o.text(&crate::report::markdown::empty_overlap_text(r, stage));
        return;
    }
    o.table(&t);
    o.legend(&[OVERLAP_COLUMNS, &overlap_terms("Dep risk")]);
}

/// Prose cut into lines of about this many characters for a table cell.
const PROSE_CELL: usize = 40;

fn fuse_table(o: &mut Out, r: &TriageReport, stage: Stage) {
    let mut t = Table::new(vec![
        Column::name("Pattern", 24, 0),
        Column::text("Confidence", 0),
        Column::num("Related GPU time (ms)", 5),
        Column::num("Share (%)", 0),
        Column::name("Evidence kernels", 20, 4),
        Column::location("Current location", 20, 3),
        Column::location("Candidate path", 20, 2),
        Column::text("Rationale", 1),
    ]);
    let mut any = false;
    for f in r.fuse_rows.iter().filter(|f| f.stage == stage) {
        any = true;
        let evidence: Vec<String> = f.evidence.iter().map(|e| evidence_name(e)).collect();
        t.row_lines(vec![
            vec![super::names::visible(&f.pattern)],
            vec![f.confidence.clone()],
            vec![ms(f.related_us)],
            vec![fixed(f.share_pct, 1)],
            list(&evidence, "-"),
            list(&f.current_locations, "-"),
            list(&f.candidate_path, "-"),
            super::layout::wrap(&f.rationale, PROSE_CELL, ""),
        ]);
    }
    o.heading("Fuse opportunities");
    if !any {
        o.text("No medium-confidence source-backed fusion opportunity matched this trace.");
        return;
    }
    o.table(&t);
    o.legend(FUSE_LEGEND);
}

/// The triage view's lines.
pub fn render(r: &TriageReport, width: usize) -> Vec<String> {
    let mut o = Out::new(width);
    header(&mut o, r);
    if let Some(t) = r.shown_timeline() {
        headline(&mut o, r, t);
    }
    for stage in stages(r) {
        o.title(&stage_heading(stage));
        if let Some(st) = r.shown_timeline().and_then(|t| t.stages.iter().find(|s| s.stage == stage)) {
            o.heading("Timeline");
            timeline_table(&mut o, st);
        }
        kernel_table(&mut o, r, stage);
        overlap_table(&mut o, r, stage);
        fuse_table(&mut o, r, stage);
    }
    o.lines
}

/// An evidence entry (`kernel (12.3%)`) with its kernel shown as the
/// kernel table shows it, the share kept.
fn evidence_name(entry: &str) -> String {
    let share = entry
        .rfind(" (")
        .filter(|&i| entry[i + 2..].strip_suffix("%)").is_some_and(|n| !n.is_empty() && n.parse::<f64>().is_ok()));
    match share {
        Some(i) => format!("{}{}", display_name(&entry[..i]), &entry[i..]),
        None => display_name(entry),
    }
}
