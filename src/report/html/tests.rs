//! Unit tests of the HTML pages: hostile names stay text, charts never
//! draw `NaN`, and empty reports render.

use std::path::PathBuf;
use std::sync::Arc;

use super::svg::{grouped_columns, hbars, paired_bars, stacked_bar, Bar, Group, Pair, Segment};
use super::*;
use crate::analysis::framework::Framework;
use crate::analysis::stage::Stage;
use crate::analysis::timeline::{
    Basis, Figures, GpuTimeline, LaunchStats, StageTimeline, Steps, StreamIdle, Timeline, Verdict, VerdictKind,
};
use crate::analysis::types::Text;
use crate::report::model::{Compat, Frameworks, KernelTable, KernelTableRow, Mode};

const HOSTILE: &str = "<script>alert(\"x\")</script> & 'quoted' <img src=x onerror=alert(1)>";

fn row(name: &str, total_us: f64) -> KernelTableRow {
    KernelTableRow {
        kernel: Arc::from(name),
        category: "GEMM",
        total_us,
        share_pct: 50.0,
        launches: 1,
        max_us: total_us,
        avg_us: total_us,
        location: Arc::from(vec![Text::from(name)]),
        cpu_op: Arc::from(Vec::<Text>::new()),
        rendered: true,
    }
}

fn verdict() -> Verdict {
    Verdict {
        kind: VerdictKind::NoGpuKernels,
        window_us: 0.0,
        idle_pct: None,
        host_wait_pct: None,
        exposed_comm_pct: None,
        kernel_p50_us: None,
        launch_p50_us: None,
        delay_p50_us: None,
        kernels_per_launch: None,
        clock_offset_us: None,
        steps_us: None,
        steps_idle_pct: None,
        host_cause: None,
        host_wait_call: None,
        longest_gap_us: 0.0,
        device_wait_pct: None,
    }
}

/// A report with one stage whose figures are all zero, and `rows`.
fn report(rows: Vec<KernelTableRow>) -> TriageReport {
    let stage = StageTimeline {
        stage: Stage::Decode,
        gpus: vec![GpuTimeline { pid: HOSTILE.into(), rank: None, figures: Figures::default() }],
        launch: LaunchStats::default(),
        steps: Steps::default(),
        verdict: verdict(),
    };
    TriageReport {
        mode: Mode::SingleTrace,
        compat: Compat::Default,
        framework: Frameworks { mapping: Framework::Generic, formal: Framework::Generic },
        mapping_traces: vec![],
        formal_traces: vec![PathBuf::from(HOSTILE)],
        model: Some(HOSTILE.into()),
        min_share: 1.0,
        timeline: Some(Timeline {
            basis: Basis::Trace,
            rounded_to_us: false,
            step_filter: None,
            skipped_non_finite: 0,
            steps_left_out: 0,
            trace: Figures::default(),
            launch: LaunchStats::default(),
            verdict: verdict(),
            stages: vec![stage],
        }),
        kernel_tables: vec![KernelTable {
            trace: PathBuf::from("t.json"),
            stage: Stage::Decode,
            total_us: 0.0,
            trace_total_us: 0.0,
            rows,
        }],
        overlap_rows: vec![],
        overlap_stats: vec![],
        fuse_rows: vec![],
        skipped_events: 0,
        skipped_by_trace: vec![],
        pid_unmatched: vec![],
        left_out: vec![],
        distributed_info: None,
        hardware: Default::default(),
        notes: vec![],
    }
}

fn text(r: Rendered) -> String {
    match r {
        Rendered::Text(t) => t,
        _ => panic!("the HTML renderer returns text"),
    }
}

/// `<script` occurrences: the page's own script only.
fn scripts(html: &str) -> usize {
    html.matches("<script").count()
}

#[test]
fn the_framework_is_named_as_in_the_other_formats() {
    let mut r = report(vec![row("k", 10.0)]);
    r.framework.formal = Framework::Vllm;
    let html = text(Html.triage(&r));
    assert!(html.contains(&format!("Trace: {} (vLLM)</p>", super::esc(HOSTILE))), "{html}");
    // A mapping-formal run names both sides, as markdown and the table do:
    // the overlap table's Python scopes come from the mapping traces.
    r.mode = Mode::MappingFormal;
    r.mapping_traces = vec![PathBuf::from("graph_off.json")];
    r.framework.mapping = Framework::Sglang;
    let html = text(Html.triage(&r));
    assert!(html.contains("Mapping trace: graph_off.json (SGLang)</p>"), "{html}");
    assert!(html.contains(&format!("Formal trace: {} (vLLM)</p>", super::esc(HOSTILE))), "{html}");
    assert!(!html.contains("<p class=\"meta\">Trace: "), "{html}");
}

#[test]
fn the_kernels_left_out_are_counted_as_in_markdown() {
    let mut small = row("small", 2.0);
    small.rendered = false;
    small.share_pct = 0.5;
    let mut r = report(vec![row("big", 98.0), small]);
    r.kernel_tables[0].total_us = 100.0;
    let html = text(Html.triage(&r));
    assert!(html.contains("decode: 1 more kernel below the 1.0% share cut-off holds 2.0% of this stage"), "{html}");
    // Nor does the chart of top kernels show it.
    let chart = html.split("Top kernels by share of GPU time").nth(1).expect("the chart");
    let chart = &chart[..chart.find("</svg>").expect("the chart's end")];
    assert!(chart.contains("big") && !chart.contains("small"), "{chart}");
    // Every row shown: no such line.
    assert!(!text(Html.triage(&report(vec![row("big", 98.0)]))).contains("more kernel"));
}

#[test]
fn a_diffs_whole_numbers_and_kernel_time_are_shown() {
    let mut r = report(vec![row("k", 10.0)]);
    r.timeline.as_mut().unwrap().stages[0].steps.count = 6;
    r.timeline.as_mut().unwrap().stages[0].steps.mean_us = Some(1.0);
    let d = crate::report::diff::diff(&r, &r, &Default::default());
    let html = text(Html.diff(&d));
    let cells = |label: &str| {
        let at = html.find(&format!(">{label}<")).unwrap_or_else(|| panic!("{label} row: {html}"));
        html[at..html[at..].find("</tr>").map_or(html.len(), |e| at + e)].to_string()
    };
    assert!(cells("Steps").contains(">6<") && !cells("Steps").contains("6.0"), "{}", cells("Steps"));
    assert!(cells("Kernel time").contains("ms"), "{}", cells("Kernel time"));
}

#[test]
fn escapes_every_special_character() {
    assert_eq!(esc("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    assert_eq!(esc("plain µs"), "plain µs");
}

#[test]
fn hostile_kernel_names_stay_text() {
    let long = format!("{HOSTILE}{}", "x".repeat(200));
    let html = text(Html.triage(&report(vec![row(HOSTILE, 10.0), row(&long, 5.0)])));
    assert_eq!(scripts(&html), 1, "only the page's own script element");
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    // The long name is shortened in the cell with the full name on hover.
    assert!(html.contains(&format!("title=\"{}\"", esc(&long))));
}

#[test]
fn charts_stay_finite_with_missing_or_zero_figures() {
    let fmt = |v: f64| ms(v);
    let charts = [
        stacked_bar(&[Segment { label: "a", value: 0.0, colour: "#000" }], &fmt),
        stacked_bar(&[Segment { label: "a", value: f64::NAN, colour: "#000" }], &fmt),
        stacked_bar(&[], &fmt),
        hbars(&[Bar { label: HOSTILE, value: f64::NAN }, Bar { label: "b", value: 0.0 }], "#000", &fmt),
        hbars(&[], "#000", &fmt),
        paired_bars(&[Pair { label: "k", base: Some(0.0), new: Some(f64::INFINITY) }], ("#000", "#111"), &fmt),
        paired_bars(&[Pair { label: "k", base: None, new: Some(f64::NAN) }], ("#000", "#111"), &fmt),
        grouped_columns(
            &[Group {
                label: "rank 0".into(),
                hover: "rank 0".into(),
                mark: Some("slow"),
                values: vec![Some(f64::NAN), Some(0.0), None],
            }],
            &[("busy", "#000"), ("idle", "#111"), ("comm", "#222")],
            &fmt,
        ),
        grouped_columns(&[], &[], &fmt),
    ];
    for svg in &charts {
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(scripts(svg), 0);
    }
    let page = text(Html.triage(&report(vec![row("k", 0.0)])));
    let body = &page[page.find("</head>").expect("head")..];
    assert!(!body.contains("NaN"));
}

#[test]
fn empty_reports_render() {
    let mut r = report(vec![]);
    r.timeline = None;
    r.kernel_tables.clear();
    let html = text(Html.triage(&r));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(CSP));
    assert!(!html.contains("<svg"));
    assert!(html.contains("No GPU kernels in this trace."));
    assert!(!html.contains("<tbody>"));

    let d = crate::report::diff::diff(&report(vec![]), &report(vec![]), &Default::default());
    let html = text(Html.diff(&d));
    assert!(html.contains("</html>") && !html[html.find("</head>").expect("head")..].contains("NaN"));

    let dir = PathBuf::from(HOSTILE);
    let info = crate::report::batch::RunInfo {
        source: crate::report::batch::Source::Batch { dir: &dir, file: false, jobs: 1, at_once: 1, budget: 1 << 30 },
        files: 0,
        straggler_pct: 10.0,
        failures: &[],
        skipped: &[],
        world_sizes: vec![],
        file_notes: Vec::new(),
        skip_notes: Vec::new(),
        incomplete: None,
        ranks: Vec::new(),
        copies: Vec::new(),
    };
    let html = text(Html.batch(BatchView { stages: &[], info: &info }));
    assert_eq!(scripts(&html), 1);
    assert!(html.contains("</html>"));
}

#[test]
fn a_failed_file_is_named_once() {
    let dir = PathBuf::from("/ranks");
    let bad = PathBuf::from("/ranks/worker2.pt.trace.json");
    let e = crate::Error::usage("byte 300000: unexpected end of input").in_file(&bad);
    let failures = [(bad.as_path(), &e)];
    let info = crate::report::batch::RunInfo {
        source: crate::report::batch::Source::Batch { dir: &dir, file: false, jobs: 1, at_once: 1, budget: 1 << 30 },
        files: 1,
        straggler_pct: 10.0,
        failures: &failures,
        skipped: &[],
        world_sizes: vec![],
        file_notes: Vec::new(),
        skip_notes: Vec::new(),
        incomplete: None,
        ranks: Vec::new(),
        copies: Vec::new(),
    };
    let html = text(Html.batch(BatchView { stages: &[], info: &info }));
    assert_eq!(html.matches("worker2.pt.trace.json").count(), 1, "{html}");
    assert!(html.contains("<li>/ranks/worker2.pt.trace.json: byte 300000: unexpected end of input</li>"), "{html}");
}

#[test]
fn no_request_can_leave_the_page() {
    let mut r = report(vec![row("k", 10.0)]);
    r.formal_traces = vec![PathBuf::from("t.json")];
    r.model = None;
    r.timeline.as_mut().expect("timeline").stages[0].gpus[0].pid = "0".into();
    let html = text(Html.triage(&r));
    for attr in ["src=", "href=", "http://", "https://"] {
        assert!(!html.contains(attr), "{attr}");
    }
}

/// A stage of one GPU with these figures.
fn one_gpu_stage(figures: Figures) -> StageTimeline {
    StageTimeline {
        stage: Stage::All,
        gpus: vec![GpuTimeline { pid: "0".into(), rank: None, figures }],
        launch: LaunchStats::default(),
        steps: Steps::default(),
        verdict: verdict(),
    }
}

#[test]
fn the_timeline_bar_names_only_what_it_measures() {
    // Memory kernels mostly under compute: 40 ms of them, 4.5 ms of busy
    // time outside compute. The bar shows the 4.5 ms, not as memory.
    let figures = Figures {
        kernels: 10,
        window_us: 450.0,
        busy_us: 424.5,
        compute_us: 420.0,
        memory_us: 40.0,
        idle_us: 25.5,
        ..Figures::default()
    };
    let stage = one_gpu_stage(figures);
    let parts = super::triage::timeline_parts(&stage);
    assert!(parts.iter().all(|(label, ..)| !label.contains("memory")), "{parts:?}");
    let rest = parts.iter().find(|(label, ..)| label.starts_with("copies")).expect("the rest of busy time");
    assert!((rest.1 - 4.5).abs() < 1e-9, "{parts:?}");
    assert!((parts.iter().map(|p| p.1).sum::<f64>() - 450.0).abs() < 1e-9, "{parts:?}");
}

#[test]
fn the_idle_cause_is_the_gpus_not_its_streams() {
    // Streams that take turns: each waits long for the host while another
    // runs, but the GPU itself waits for the host 0.4 of its 25 idle µs,
    // and 2 in short gaps.
    let stream = |name: &str, host_wait_us, kernel_wait_us, other_us| StreamIdle {
        stream: name.into(),
        host_wait_us,
        kernel_wait_us,
        other_us,
    };
    let figures = Figures {
        kernels: 10,
        window_us: 450.0,
        busy_us: 425.0,
        compute_us: 425.0,
        idle_us: 25.0,
        idle_host_wait_us: 0.4,
        idle_short_gap_us: 2.0,
        idle_by_stream: vec![stream("7", 300.0, 5.0, 40.0), stream("8", 500.0, 1.0, 20.0)],
        ..Figures::default()
    };
    let stage = one_gpu_stage(figures.clone());
    assert_eq!(crate::report::timeline::idle_cause(&stage).as_deref(), Some("other waits"));
    // Two causes near each other: both are named, with their points of the
    // window, rather than the larger one for all of the idle time.
    let close = Figures {
        window_us: 1000.0,
        busy_us: 891.0,
        idle_us: 109.0,
        idle_host_wait_us: 57.0,
        idle_short_gap_us: 50.0,
        idle_by_stream: vec![stream("7", 57.0, 50.0, 2.0)],
        ..figures
    };
    assert_eq!(
        crate::report::timeline::idle_cause(&one_gpu_stage(close.clone())).as_deref(),
        Some("waiting for the host 5.7 points, short gaps between kernels 5.0, other waits 0.2")
    );
    // Idle time that rounds to 0.0% of the window has no cause.
    let tiny =
        Figures { window_us: 100_000.0, busy_us: 99_996.0, idle_us: 4.0, idle_host_wait_us: 0.0, ..close.clone() };
    assert_eq!(crate::report::timeline::idle_cause(&one_gpu_stage(tiny)), None);
    let parts = super::triage::timeline_parts(&stage);
    let part = |prefix: &str| parts.iter().find(|(label, ..)| label.starts_with(prefix)).unwrap().1;
    assert!((part("idle: host wait") - 0.4).abs() < 1e-9, "{parts:?}");
    assert!((part("idle: kernel wait") - 2.0).abs() < 1e-9, "{parts:?}");
    assert!((part("idle: other") - 22.6).abs() < 1e-9, "{parts:?}");
}

#[test]
fn value_axes_reach_past_the_largest_value_in_round_steps() {
    use super::svg::axis_ticks;
    assert_eq!(axis_ticks(9.3), vec![0.0, 5.0, 10.0]);
    assert_eq!(axis_ticks(12_000.0), vec![0.0, 5_000.0, 10_000.0, 15_000.0]);
    assert_eq!(axis_ticks(1.0), vec![0.0, 0.5, 1.0]);
    assert_eq!(axis_ticks(0.0), vec![0.0]);
    assert_eq!(axis_ticks(f64::NAN), vec![0.0]);
    // The batch chart labels its ticks.
    let svg = grouped_columns(
        &[Group {
            label: "rank 0".into(),
            hover: "rank 0".into(),
            mark: None,
            values: vec![Some(12_000.0), Some(3_000.0)],
        }],
        &[("busy", "#000"), ("idle", "#111")],
        &|v| ms(v),
    );
    for label in ["0.00 ms", "5.00 ms", "10.00 ms", "15.00 ms"] {
        assert!(svg.contains(&format!(">{label}</text>")), "{label}: {svg}");
    }
}

#[test]
fn kernels_alike_up_to_the_cut_keep_apart_in_charts_and_tables() {
    let a = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    let b = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
    let svg = hbars(&[Bar { label: a, value: 1.0 }, Bar { label: b, value: 2.0 }], "#000", &|v| ms(v));
    let shown = |svg: &str| -> Vec<String> {
        svg.split("text-anchor=\"end\">").skip(1).map(|s| s[..s.find('<').unwrap()].to_string()).collect()
    };
    let labels = shown(&svg);
    assert_eq!(labels.len(), 2);
    assert_ne!(labels[0], labels[1], "{labels:?}");
    assert!(labels.iter().all(|l| l.chars().count() <= 48), "{labels:?}");
    let pairs = paired_bars(
        &[Pair { label: a, base: Some(1000.0), new: None }, Pair { label: b, base: None, new: Some(1000.0) }],
        ("#000", "#111"),
        &|v| ms(v),
    );
    let labels = shown(&pairs);
    assert_ne!(labels[0], labels[1], "{labels:?}");
    // A side a kernel did not run on is `-`, as in the table, not 0.00 ms.
    assert!(pairs.contains("base 1.00 ms, new -") && pairs.contains("base -, new 1.00 ms"), "{pairs}");
    // A table's cells likewise; a mangled kernel is shown demangled, its
    // name as the trace gives it on hover.
    let mangled = "_ZN5aiter24add_rmsnorm_quant_kernelIfLi64ELi8EEEvPfS1_";
    let mut t = Table::new(&[("Kernel", false)]);
    for name in [a, b, mangled] {
        t.push(vec![Cell::kernel(name)]);
    }
    let html = t.html("none");
    let cells: Vec<&str> = html.split("<td class=\"name\"").skip(1).collect();
    let text = |cell: &str| cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()].to_string();
    assert_ne!(text(cells[0]), text(cells[1]), "{html}");
    assert!(text(cells[2]).starts_with("aiter::add_rmsnorm_quant_kernel"), "{html}");
    assert!(cells[2].contains(&format!("title=\"{mangled}\"")), "{html}");
}

#[test]
fn a_chart_of_many_ranks_scrolls_instead_of_shrinking() {
    let series = [("busy", "#000"), ("compute", "#111"), ("idle", "#222"), ("comm", "#333")];
    let ranks = |count: u64| -> Vec<Group<'static>> {
        (0..count)
            .map(|r| Group {
                label: format!("rank {r}"),
                hover: format!("rank {r} (worker{r}.json)"),
                mark: None,
                values: vec![Some(1.0); 4],
            })
            .collect()
    };
    // Eight ranks fit the page; sixty-four keep their size in a scrolling box.
    let few = grouped_columns(&ranks(8), &series, &|v| ms(v));
    assert!(few.starts_with("<svg ") && !few.contains("class=\"wide\""), "{few}");
    let many = grouped_columns(&ranks(64), &series, &|v| ms(v));
    assert!(many.starts_with("<div class=\"wrap\"><svg ") && many.ends_with("</svg></div>\n"));
    assert!(many.contains(" class=\"wide\">"));
    // Labels under the columns stay short; the hover text names the file.
    assert!(many.contains(">rank 63</text>") && many.contains("<title>rank 63 (worker63.json) busy: "), "{many}");
}

#[test]
fn a_page_s_title_names_its_input() {
    use super::title;
    assert_eq!(
        title("torchtriage report", Some(std::path::Path::new("/x/rank0.json.gz"))),
        "rank0.json.gz — torchtriage report"
    );
    assert_eq!(title("torchtriage batch", Some(std::path::Path::new("job/"))), "job — torchtriage batch");
    assert_eq!(title("torchtriage batch", None), "torchtriage batch");
}
