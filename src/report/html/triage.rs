//! The triage page: header, headline, per stage the timeline as a stacked
//! bar (compute, exposed communication, copies and other kernels outside
//! both, and idle time by cause) with its legend, idle time by stream, launch overhead and
//! steps, a chart of the top kernels' shares, then the kernel, overlap and
//! fuse tables (the rows the markdown shows).

use crate::analysis::types::UNRESOLVED;
use std::fmt::Write;

use crate::analysis::framework::Framework;
use crate::analysis::stage::Stage;
use crate::analysis::timeline::StageTimeline;
use crate::report::markdown::{hidden_rows_note, overlap_terms, KERNEL_LEGEND};
use crate::report::model::{Mode, TriageReport};
use crate::report::timeline::{
    clocks_offset_mark, headline_plain, idle_split, launch_line, stage_sum, steps_line_plain, verdict_line,
};

use super::svg::{hbars, stacked_bar, Bar, Segment};
use super::{esc, finite, legend, ms, page, Cell, Table};
use crate::report::table::names::display_name;

/// Kernels in a stage's top-kernels chart.
pub const TOP_KERNELS: usize = 10;

/// Colours of the timeline parts, in drawing order.
pub const COMPUTE: &str = "#3b6fb6";
pub const COMM: &str = "#e0803a";
pub const OTHER_BUSY: &str = "#7aa6c9";
pub const HOST_WAIT: &str = "#c62828";
pub const KERNEL_WAIT: &str = "#e8a0a0";
pub const OTHER_IDLE: &str = "#b8bec5";

/// A stage's window split into parts that add up to it (µs, summed over
/// its GPUs): busy time as compute, communication no computation hides,
/// and the rest: copies and other kernels running outside both (not the
/// memory kernels' own time, much of which runs under compute); idle time as host wait and the rest split between short
/// gaps and other waits as the per-stream idle figures split it.
pub fn timeline_parts(stage: &StageTimeline) -> [(String, f64, &'static str); 6] {
    let f = stage_sum(stage);
    let compute = finite(f.compute_us).max(0.0);
    let comm = finite(f.exposed_comm_us).max(0.0);
    let rest = (finite(f.busy_us) - compute - comm).max(0.0);
    let (host, kernel_part, other_part) = idle_split(&f);
    [
        ("compute".to_string(), compute, COMPUTE),
        ("exposed communication".to_string(), comm, COMM),
        ("copies and other kernels, outside compute and communication".to_string(), rest, OTHER_BUSY),
        (format!("idle: host wait{}", clocks_offset_mark(stage)), host, HOST_WAIT),
        ("idle: kernel wait (gaps < 30 µs)".to_string(), kernel_part, KERNEL_WAIT),
        ("idle: other".to_string(), other_part, OTHER_IDLE),
    ]
}

fn timeline_section(out: &mut String, stage: &StageTimeline) {
    let f = stage_sum(stage);
    let _ = writeln!(out, "<p class=\"verdict\">{}</p>", esc(&verdict_line(stage)));
    let _ = writeln!(
        out,
        "<p class=\"meta\">Window {} over {} GPU(s), {} kernels; busy {}, idle {}</p>",
        esc(&ms(f.window_us)),
        stage.gpus.len(),
        f.kernels,
        esc(&ms(f.busy_us)),
        esc(&ms(f.idle_us))
    );
    let parts = timeline_parts(stage);
    let segments: Vec<Segment> =
        parts.iter().map(|(label, value, colour)| Segment { label, value: *value, colour }).collect();
    out.push_str(&stacked_bar(&segments, &|v| ms(v)));
    let window = finite(f.window_us);
    let entries: Vec<(&str, String, &str)> = parts
        .iter()
        .map(|(label, value, colour)| {
            let share = if window > 0.0 { format!(" ({:.1}%)", 100.0 * value / window) } else { String::new() };
            (label.as_str(), format!("{}{share}", ms(*value)), *colour)
        })
        .collect();
    out.push_str(&legend(&entries));
    let host_heading = format!("Host wait{}", clocks_offset_mark(stage));
    let mut idle = Table::new(&[
        ("GPU (pid)", false),
        ("Stream", false),
        (&host_heading, true),
        ("Kernel wait", true),
        ("Other", true),
    ]);
    for g in &stage.gpus {
        for s in &g.figures.idle_by_stream {
            idle.push(vec![
                Cell::text(g.pid.clone()),
                Cell::text(s.stream.clone()),
                Cell::num(ms(s.host_wait_us), s.host_wait_us),
                Cell::num(ms(s.kernel_wait_us), s.kernel_wait_us),
                Cell::num(ms(s.other_us), s.other_us),
            ]);
        }
    }
    let _ = writeln!(out, "<h3>Idle time by stream</h3>");
    out.push_str(&idle.html("No idle gaps between kernels."));
    let _ = writeln!(
        out,
        "<p class=\"meta\">Each stream's gaps between its own kernels: summed over streams they can exceed the idle time above, which counts only time no stream runs.</p>"
    );
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&launch_line(stage)));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&steps_line_plain(stage)));
}

fn top_kernels(out: &mut String, r: &TriageReport, stage: Stage) {
    // The rows the kernel table shows: those under the share bar are
    // counted there as left out, so the chart leaves them out too.
    let mut rows: Vec<_> = r
        .kernel_tables
        .iter()
        .filter(|t| t.stage == stage)
        .flat_map(|t| t.rows.iter())
        .filter(|k| k.rendered)
        .collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
    let top: Vec<_> = rows.iter().take(TOP_KERNELS).map(|k| (display_name(&k.kernel), k.share_pct)).collect();
    let bars: Vec<Bar> = top.iter().map(|(label, value)| Bar { label, value: *value }).collect();
    let _ = writeln!(out, "<h3>Top kernels by share of GPU time</h3>");
    out.push_str(&hbars(&bars, COMPUTE, &|v| format!("{:.1}%", finite(v))));
}

/// Stages of the report in order: the timeline's, then any other stage
/// with kernel rows.
fn stages(r: &TriageReport) -> Vec<Stage> {
    let mut out: Vec<Stage> = r.shown_timeline().into_iter().flat_map(|t| t.stages.iter().map(|s| s.stage)).collect();
    for t in r.kernel_tables.iter().filter(|t| !t.rows.is_empty()) {
        if !out.contains(&t.stage) {
            out.push(t.stage);
        }
    }
    out
}

fn kernel_table(r: &TriageReport) -> Table {
    let mut t = Table::new(&[
        ("Stage", false),
        ("Kernel", false),
        ("Category", false),
        ("GPU time", true),
        ("Share", true),
        ("Launches", true),
        ("Avg", true),
        ("Max", true),
        ("Python location", false),
        ("CPU op", false),
    ]);
    for (stage, k) in r.rendered_kernel_rows() {
        t.push(vec![
            Cell::text(stage.as_str()),
            Cell::kernel(&k.kernel),
            Cell::text(k.category),
            Cell::num(ms(k.total_us), k.total_us),
            Cell::num(format!("{:.1}%", finite(k.share_pct)), k.share_pct),
            Cell::num(k.launches.to_string(), k.launches as f64),
            Cell::num(format!("{:.1} µs", finite(k.avg_us)), k.avg_us),
            Cell::num(format!("{:.1} µs", finite(k.max_us)), k.max_us),
            Cell::list(&k.location, UNRESOLVED),
            Cell::list(&k.cpu_op, "-"),
        ]);
    }
    t
}

fn overlap_table(r: &TriageReport) -> Table {
    let mut t = Table::new(&[
        ("Stage", false),
        ("Priority", false),
        ("Verdict", false),
        ("Kernel", false),
        ("Overlap category", false),
        ("GPU time", true),
        ("Share", true),
        ("Exclusive", true),
        ("Hidden", true),
        ("Python scope", false),
        ("Dependency", false),
        ("Recommendation", false),
    ]);
    for o in r.overlap_rows.iter().filter(|o| o.rendered) {
        let a = &o.row;
        t.push(vec![
            Cell::text(o.stage.as_str()),
            Cell::text(a.priority.clone()),
            Cell::text(a.verdict.clone()),
            Cell::kernel(&a.kernel),
            Cell::text(a.category.clone()),
            Cell::num(ms(a.total_us), a.total_us),
            Cell::num(format!("{:.1}%", finite(a.share_pct)), a.share_pct),
            Cell::num(format!("{:.1}%", 100.0 * finite(a.exclusive_ratio)), a.exclusive_ratio),
            Cell::num(format!("{:.1}%", 100.0 * finite(a.hidden_ratio)), a.hidden_ratio),
            Cell::name(a.python_scope.clone()),
            Cell::text(a.dependency_signal.clone()),
            Cell::name(a.recommendation.clone()),
        ]);
    }
    t
}

fn fuse_table(r: &TriageReport) -> Table {
    let mut t = Table::new(&[
        ("Stage", false),
        ("Pattern", false),
        ("Status", false),
        ("Confidence", false),
        ("Related time", true),
        ("Share", true),
        ("Evidence", false),
        ("Current locations", false),
        ("Candidate path", false),
        ("Rationale", false),
    ]);
    for f in &r.fuse_rows {
        t.push(vec![
            Cell::text(f.stage.as_str()),
            Cell::name(f.pattern.clone()),
            Cell::text(f.status.clone()),
            Cell::text(f.confidence.clone()),
            Cell::num(ms(f.related_us), f.related_us),
            Cell::num(format!("{:.1}%", finite(f.share_pct)), f.share_pct),
            Cell::list(&f.evidence, "-"),
            Cell::list(&f.current_locations, "-"),
            Cell::list(&f.candidate_path, "-"),
            Cell::name(f.rationale.clone()),
        ]);
    }
    t
}

/// The triage page.
pub fn render(r: &TriageReport) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>torchtriage report</h1>");
    let mut traces = |label: &str, paths: &[std::path::PathBuf], framework: Framework| {
        for p in paths {
            let _ = writeln!(
                b,
                "<p class=\"meta\">{label}: {} ({})</p>",
                esc(&p.display().to_string()),
                framework.display_name()
            );
        }
    };
    if r.mode == Mode::SingleTrace {
        traces("Trace", &r.formal_traces, r.framework.formal);
    } else {
        // The overlap table's Python scopes come from the mapping traces.
        traces("Mapping trace", &r.mapping_traces, r.framework.mapping);
        traces("Formal trace", &r.formal_traces, r.framework.formal);
    }
    if let Some(model) = &r.model {
        let _ = writeln!(b, "<p class=\"meta\">Model: {}</p>", esc(model));
    }
    let _ = writeln!(b, "<p class=\"meta\">Rows under {:.1}% share hidden</p>", r.min_share);
    // What the command line says on stderr (traces of a directory left
    // out, events skipped): a page passed on has no stderr beside it.
    for note in &r.notes {
        let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(note));
    }
    if let Some(t) = r.shown_timeline() {
        let lines = headline_plain(r, t);
        b.push_str("<div class=\"headline\"><ul>");
        for line in lines.iter().skip(1) {
            let _ = write!(b, "<li>{}</li>", esc(line.trim_start_matches("- ")));
        }
        b.push_str("</ul></div>\n");
    }
    for stage in stages(r) {
        let _ = writeln!(b, "<h2>Stage {}</h2>", esc(stage.label()));
        if let Some(st) = r.shown_timeline().and_then(|t| t.stages.iter().find(|s| s.stage == stage)) {
            timeline_section(&mut b, st);
        }
        if r.kernel_tables.iter().any(|t| t.stage == stage && !t.rows.is_empty()) {
            top_kernels(&mut b, r, stage);
        }
    }
    let terms = |b: &mut String, text: &str| {
        if !r.has_no_kernels() {
            let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(text));
        }
    };
    let _ = writeln!(b, "<h2>Kernels</h2>");
    b.push_str(&kernel_table(r).html(&r.no_kernel_rows_text()));
    for stage in r.kernel_tables.iter().map(|t| t.stage).collect::<indexmap::IndexSet<_>>() {
        if let Some(note) = hidden_rows_note(r, stage) {
            let _ = writeln!(b, "<p class=\"meta\">{}: {}</p>", esc(stage.label()), esc(&note));
        }
    }
    terms(&mut b, KERNEL_LEGEND);
    let _ = writeln!(b, "<h2>Overlap opportunities</h2>");
    let empty =
        r.overlap_filtered_out().map_or_else(|| crate::report::markdown::no_overlap_rows_text(r, None), str::to_string);
    b.push_str(&overlap_table(r).html(&empty));
    terms(
        &mut b,
        &format!(
            "Share: the time any launch of the kernel runs, of the GPU busy time of the kernels this table covers (the \
             union over streams of the events of a kernel category, or on a stream with a kernel-like name: less than \
             the timeline's Busy when other events run on the device), so it differs from the Kernels table's Share, which divides summed kernel time. Exclusive: share of its time no \
             other stream's kernel overlaps; Hidden: share overlapped by another stream. Overlap category: the overlap \
             analysis's coarse class of the kernel (the reference tool's), which can differ from the Kernels table's \
             Category (a GEMM the overlap analysis calls elementwise). {}",
            overlap_terms("Dependency")
        ),
    );
    let _ = writeln!(b, "<h2>Fuse opportunities</h2>");
    b.push_str(&fuse_table(r).html("No fusion opportunities at or above the share bar."));
    let _ = writeln!(
        b,
        "<p class=\"note\">Click a column header to sort. Long names are shortened; hover for the full text.</p>"
    );
    page(&super::title("torchtriage report", r.formal_traces.first().map(|p| p.as_path())), &b)
}
