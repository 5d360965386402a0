use super::*;
use crate::analysis::framework::Framework;
use crate::analysis::timeline::StageTimeline;
use crate::analysis::timeline::{Basis, Figures, GpuTimeline, LaunchStats, Steps, Timeline, Verdict, VerdictKind};
use crate::report::model::{Compat, Frameworks, KernelTable, KernelTableRow, Mode, TriageReport};
use std::sync::Arc;

fn row(name: &str, total_us: f64, launches: u64) -> KernelTableRow {
    KernelTableRow {
        kernel: Arc::from(name),
        category: "GEMM",
        total_us,
        share_pct: 0.0,
        launches,
        max_us: total_us,
        avg_us: total_us / launches.max(1) as f64,
        location: Arc::from(Vec::<Text>::new()),
        cpu_op: Arc::from(Vec::<Text>::new()),
        rendered: true,
    }
}

fn verdict() -> Verdict {
    Verdict {
        kind: VerdictKind::GpuBound,
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

/// A report with one stage's kernel table and timeline (busy time and
/// optionally a step median).
fn report(stage: Stage, rows: Vec<KernelTableRow>, busy_us: f64, step_p50: Option<f64>) -> TriageReport {
    let total_us = rows.iter().map(|r| r.total_us).sum();
    let figures = Figures { busy_us, window_us: busy_us * 2.0, ..Figures::default() };
    let stage_tl = StageTimeline {
        stage,
        gpus: vec![GpuTimeline { pid: "0".into(), rank: None, figures }],
        launch: LaunchStats::default(),
        steps: Steps { p50_us: step_p50, ..Steps::default() },
        verdict: verdict(),
    };
    TriageReport {
        mode: Mode::SingleTrace,
        compat: Compat::Default,
        framework: Frameworks { mapping: Framework::Generic, formal: Framework::Generic },
        mapping_traces: vec![],
        formal_traces: vec![PathBuf::from("t.json")],
        model: None,
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
            stages: vec![stage_tl],
        }),
        kernel_tables: vec![KernelTable {
            trace: PathBuf::from("t.json"),
            stage,
            total_us,
            trace_total_us: total_us,
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

fn gate(threshold_pct: f64, basis: Option<GateBasis>) -> DiffOptions {
    DiffOptions { min_share: 1.0, gate: Some(GateOptions { threshold_pct, basis }) }
}

/// The first stage's gate of `diff base new --gate 5`.
fn gate_at_5(base: &TriageReport, new: &TriageReport) -> StageGate {
    diff(base, new, &gate(5.0, None)).stages[0].gate.clone().unwrap()
}

#[test]
fn same_report_has_zero_deltas_and_passes_a_zero_gate() {
    let r = with_steps(report(Stage::Decode, vec![row("a", 100.0, 2), row("b", 50.0, 1)], 150.0, None), 15, 10.0);
    let d = diff(&r, &r, &gate(0.0, None));
    assert_eq!(d.stages.len(), 1);
    let s = &d.stages[0];
    assert!(s.kernels.iter().all(|k| k.delta_us == 0.0 && k.status == KernelStatus::Changed));
    assert_eq!(s.timeline.delta.busy_us, Some(0.0));
    assert_eq!(s.timeline.delta.step_p50_us, Some(0.0));
    assert_eq!(s.gate.as_ref().map(|g| g.basis), Some(GateBasis::Step));
    assert_eq!(d.gate.tripped, Some(false));
    assert!(d.gate_failures().is_empty());
}

#[test]
fn kernels_are_matched_sorted_and_marked() {
    let base =
        report(Stage::Decode, vec![row("slow", 100.0, 4), row("gone", 30.0, 3), row("same", 50.0, 1)], 180.0, None);
    let new =
        report(Stage::Decode, vec![row("slow", 200.0, 4), row("fresh", 10.0, 5), row("same", 50.0, 1)], 260.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    let k = &d.stages[0].kernels;
    let names: Vec<&str> = k.iter().map(|k| &*k.kernel).collect();
    assert_eq!(names, ["slow", "gone", "fresh", "same"]);
    assert_eq!(k[0].delta_pct, Some(100.0));
    assert_eq!((k[0].base_count, k[0].new_count), (4, 4));
    assert_eq!(k[1].status, KernelStatus::Gone);
    assert_eq!(k[1].delta_pct, Some(-100.0));
    assert_eq!(k[2].status, KernelStatus::New);
    assert_eq!(k[2].delta_pct, None);
    assert_eq!(d.stages[0].timeline.delta.kernel_us, Some(80.0));
    // The HTML page shows no time on the side a kernel did not run on, as
    // the markdown does.
    use crate::report::render::{Rendered, Renderer};
    let Rendered::Text(html) = crate::report::html::Html.diff(&d) else { panic!("HTML is text") };
    let table = &html[html.rfind("<h3>Kernels").unwrap()..];
    for (name, status) in [("fresh", ">new<"), ("gone", ">gone<")] {
        let at = table.find(&format!(">{name}<")).unwrap_or_else(|| panic!("{name} row: {table}"));
        let html = table;
        let cells = &html[at..at + html[at..].find("</tr>").unwrap()];
        assert!(cells.contains(status) && cells.contains(">-<") && !cells.contains(">0.00 ms<"), "{cells}");
    }
}

#[test]
fn share_bar_reads_the_larger_side() {
    // `tiny` is 0.5% of BASE and 2% of NEW: kept; `dust` is under 1% on both.
    let base = report(Stage::All, vec![row("big", 995.0, 1), row("tiny", 5.0, 1)], 1000.0, None);
    let new = report(Stage::All, vec![row("big", 970.0, 1), row("tiny", 20.0, 1), row("dust", 1.0, 1)], 991.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    let names: Vec<&str> = d.stages[0].shown_kernels().map(|k| &*k.kernel).collect();
    assert_eq!(names, ["big", "tiny"]);
    assert_eq!(d.stages[0].kernels_hidden, 1);
    // The JSON keeps `dust`, marked not rendered; the text reports leave it out.
    let all: Vec<(&str, bool)> = d.stages[0].kernels.iter().map(|k| (&*k.kernel, k.rendered)).collect();
    assert_eq!(all, [("big", true), ("tiny", true), ("dust", false)]);
    assert!(!markdown(&d).contains("| dust |"));
}

#[test]
fn ties_are_ordered_by_name() {
    let base = report(Stage::All, vec![row("b", 10.0, 1), row("a", 10.0, 1)], 20.0, None);
    let new = report(Stage::All, vec![row("b", 20.0, 1), row("a", 20.0, 1)], 40.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    let names: Vec<&str> = d.stages[0].kernels.iter().map(|k| &*k.kernel).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn one_sided_stages_are_listed() {
    let base = report(Stage::Extend, vec![row("a", 10.0, 1)], 10.0, None);
    let new = report(Stage::Decode, vec![row("a", 10.0, 1)], 10.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    assert!(d.stages.is_empty());
    assert_eq!(d.only_in_base, [Stage::Extend]);
    assert_eq!(d.only_in_new, [Stage::Decode]);
    // Named as the triage report names them.
    let md = super::markdown::markdown(&d);
    assert!(md.contains("- stages only in base: extend/prefill\n"), "{md}");
}

#[test]
fn gate_trips_above_the_threshold_only() {
    let base = report(Stage::Decode, vec![row("a", 100.0, 1)], 100.0, None);
    let new = report(Stage::Decode, vec![row("a", 110.0, 1)], 110.0, None);
    // No steps: busy time, +10%.
    let d = diff(&base, &new, &gate(5.0, None));
    let g = d.stages[0].gate.as_ref().unwrap();
    assert_eq!(g.basis, GateBasis::Busy);
    assert!(g.tripped);
    assert_eq!(d.gate.tripped, Some(true));
    let lines = d.gate_failures();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("torchtriage: gate: decode: busy 100.0 µs -> 110.0 µs (+10.0%) exceeds 5%"),
        "{}",
        lines[0]
    );
    assert_eq!(diff(&base, &new, &gate(10.0, Some(GateBasis::Kernel))).gate.tripped, Some(false));
    // Faster is never a regression.
    assert_eq!(diff(&new, &base, &gate(0.0, None)).gate.tripped, Some(false));
    // Asked for steps where there are none: the stage is not gated.
    assert!(diff(&base, &new, &gate(0.0, Some(GateBasis::Step))).stages[0].gate.is_none());
}

#[test]
fn no_gate_means_null_gate_fields() {
    let r = report(Stage::All, vec![row("a", 1.0, 1)], 1.0, None);
    let d = diff(&r, &r, &DiffOptions::default());
    assert_eq!(d.gate, GateSummary::default());
    let v = serde_json::to_value(&d).unwrap();
    assert!(v["gate"]["threshold_pct"].is_null() && v["gate"]["tripped"].is_null());
    assert!(markdown(&d).contains("| a | GEMM | 1.0 µs | 1.0 µs | 0.0 µs | 0.0% | 1 → 1 | unchanged |"));
}

#[test]
fn a_kernel_that_did_not_move_is_unchanged_in_text_and_on_both_sides_in_json() {
    let r = report(Stage::All, vec![row("a", 1.0, 1)], 1.0, None);
    let d = diff(&r, &r, &DiffOptions::default());
    let k = &d.stages[0].kernels[0];
    assert_eq!((k.status, k.label()), (KernelStatus::Changed, "unchanged"));
    assert_eq!(serde_json::to_value(k).unwrap()["status"], "changed");
    // Same time, other launch count: changed.
    let n = report(Stage::All, vec![row("a", 1.0, 2)], 1.0, None);
    let d = diff(&r, &n, &DiffOptions::default());
    assert_eq!(d.stages[0].kernels[0].label(), "changed");
    assert!(markdown(&d).contains("| 1 → 2 | changed |"), "{}", markdown(&d));
}

/// `report` with `count` steps of `p50` each in its stage.
fn with_steps(mut r: TriageReport, count: u64, p50: f64) -> TriageReport {
    let stage: &mut StageTimeline = &mut r.timeline.as_mut().unwrap().stages[0];
    stage.steps.count = count;
    stage.steps.p50_us = Some(p50);
    stage.steps.mean_us = Some(p50);
    r
}

#[test]
fn the_default_gate_leaves_steps_that_end_before_their_gpu_work() {
    // Ten host-side steps of 20 µs launch 1 ms of kernels: the kernels
    // doubling does not move the steps, so the gate reads busy time.
    let base = with_steps(report(Stage::Decode, vec![row("a", 1000.0, 10)], 1000.0, None), 10, 20.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 2000.0, 10)], 2000.0, None), 10, 20.0);
    let d = diff(&base, &new, &gate(5.0, None));
    let g = d.stages[0].gate.as_ref().unwrap();
    assert_eq!((g.basis, g.tripped), (GateBasis::Busy, true));
    // Asked for, the step gate is still evaluated.
    let g = diff(&base, &new, &gate(5.0, Some(GateBasis::Step))).stages[0].gate.clone().unwrap();
    assert_eq!((g.basis, g.tripped), (GateBasis::Step, false));
    // Steps that last as long as the GPU's work are the default.
    let base = with_steps(report(Stage::Decode, vec![row("a", 1000.0, 10)], 1000.0, None), 10, 100.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 1000.0, 10)], 1000.0, None), 10, 130.0);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.basis, g.tripped), (GateBasis::Step, true));
}

#[test]
fn the_default_gate_reads_busy_time_too_where_the_gpu_idles_within_the_steps() {
    // Ten steps of 2 ms over 1.46 ms of kernels each (a host-bound run):
    // a kernel 13% slower leaves the steps as they were; busy time decides.
    let base = with_steps(report(Stage::Decode, vec![row("a", 14_600.0, 10)], 14_600.0, None), 10, 2000.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 16_500.0, 10)], 16_500.0, None), 10, 2000.0);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.basis, g.tripped), (GateBasis::Busy, true));
    // A slower host decides through the step median.
    let slower = with_steps(report(Stage::Decode, vec![row("a", 14_600.0, 10)], 14_600.0, None), 10, 2400.0);
    let g = diff(&base, &slower, &gate(5.0, None)).stages[0].gate.clone().unwrap();
    assert_eq!((g.basis, g.tripped), (GateBasis::Step, true));
    // A GPU-bound run (busy for all of its steps) reads the steps alone,
    // though busy time changes by more in percent.
    let base = with_steps(report(Stage::Decode, vec![row("a", 950.0, 10)], 950.0, None), 10, 100.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 1050.0, 10)], 1050.0, None), 10, 106.0);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.basis, g.tripped), (GateBasis::Step, true));
    assert!((g.change_pct.unwrap() - 6.0).abs() < 1e-9, "{g:?}");
}

#[test]
fn the_default_gate_leaves_steps_that_launched_part_of_the_kernels() {
    // Steps as long as the GPU's work, but only 40 of the stage's 100
    // kernels launched inside them: they time part of the work.
    let mut base = with_steps(report(Stage::Decode, vec![row("a", 1000.0, 100)], 1000.0, None), 10, 100.0);
    let mut new = with_steps(report(Stage::Decode, vec![row("a", 2000.0, 100)], 2000.0, None), 10, 100.0);
    for r in [&mut base, &mut new] {
        let stage = &mut r.timeline.as_mut().unwrap().stages[0];
        stage.gpus[0].figures.kernels = 100;
        stage.launch.kernels_per_step = Some(4.0);
    }
    let g = gate_at_5(&base, &new);
    assert_eq!((g.basis, g.tripped), (GateBasis::Busy, true));
}

#[test]
fn steps_that_launched_part_of_the_kernels_are_not_divided_by() {
    // The same work (100 kernels, 1 ms busy), its 6 steps annotated on
    // BASE and only 5 on NEW, whose steps then launched 5 × 15 = 75 of the
    // 100 kernels: per step, NEW would read 20% slower.
    let side = |steps: u64| {
        let mut r = with_steps(report(Stage::Decode, vec![row("a", 1000.0, 100)], 1000.0, None), steps, 180.0);
        let stage = &mut r.timeline.as_mut().unwrap().stages[0];
        stage.gpus[0].figures.kernels = 100;
        stage.launch.kernels_per_step = Some(if steps == 6 { 100.0 / 6.0 } else { 15.0 });
        r
    };
    let (base, new) = (side(6), side(5));
    for basis in [None, Some(GateBasis::Busy), Some(GateBasis::Kernel)] {
        let d = diff(&base, &new, &gate(5.0, basis));
        let s = &d.stages[0];
        assert_eq!(s.normalization.basis, NormBasis::None, "{basis:?}");
        assert!(s.kernels.iter().all(|k| k.normalized.is_none()));
        let g = s.gate.as_ref().unwrap();
        assert_eq!((g.per, g.change_pct, g.tripped), (NormBasis::None, Some(0.0), false), "{basis:?}");
    }
}

#[test]
fn kernel_time_is_divided_by_the_steps_whose_kernels_the_table_holds() {
    // Under an HTA basis the step filter leaves the last step's GPU events
    // out of the timeline: 11 of 12 steps counted on BASE, 5 of 6 on NEW,
    // the same work per step. The kernel table keeps every kernel (100 µs
    // a step); the timeline's busy time covers the steps it counts.
    let side = |steps: u64| {
        let kernel_us = 100.0 * (steps + 1) as f64;
        let mut r = with_steps(
            report(Stage::Decode, vec![row("a", kernel_us, steps + 1)], 90.0 * steps as f64, None),
            steps,
            95.0,
        );
        r.timeline.as_mut().unwrap().stages[0].steps.filtered_kernels = 1;
        r
    };
    let (base, new) = (side(11), side(5));
    let d = diff(&base, &new, &gate(5.0, Some(GateBasis::Kernel)));
    let s = &d.stages[0];
    assert_eq!(s.normalization, Normalization { basis: NormBasis::Step, base_units: Some(12.0), new_units: Some(6.0) });
    let g = s.gate.as_ref().unwrap();
    assert_eq!((g.base_us, g.new_us, g.tripped), (100.0, 100.0, false), "{g:?}");
    assert_eq!(s.kernels[0].normalized.unwrap().delta_us, 0.0);
    // Busy time is divided by the steps the timeline counts.
    let g = diff(&base, &new, &gate(5.0, Some(GateBasis::Busy))).stages[0].gate.clone().unwrap();
    assert_eq!((g.per, g.base_us, g.new_us, g.tripped), (NormBasis::Step, 90.0, 90.0, false), "{g:?}");
    assert!(
        markdown(&d).contains(
            "(base 12, new 6, counting the last step, whose GPU events HTA's step filter leaves out of the timeline)"
        ),
        "{}",
        markdown(&d)
    );
}

#[test]
fn no_kernel_in_common_is_a_share_of_zero_not_minus_zero() {
    let base = report(Stage::Decode, vec![row("a", 100.0, 2)], 100.0, None);
    let new = report(Stage::Decode, vec![row("b", 100.0, 2)], 100.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    let pct = d.stages[0].matched_base_pct.unwrap();
    assert!(pct == 0.0 && pct.is_sign_positive(), "{pct}");
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["stages"][0]["matched_base_pct"].to_string(), "0.0");
    assert!(markdown(&d).contains("Only 0.0% of base's kernel time"), "{}", markdown(&d));
}

#[test]
fn step_counts_are_written_as_whole_numbers() {
    let base = with_steps(report(Stage::Decode, vec![row("a", 1.0, 1)], 1.0, None), 6, 150.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 1.0, 1)], 1.0, None), 4, 150.0);
    let v = serde_json::to_value(diff(&base, &new, &DiffOptions::default())).unwrap();
    let t = &v["stages"][0]["timeline"];
    assert_eq!((t["base"]["steps"].as_i64(), t["new"]["steps"].as_i64()), (Some(6), Some(4)), "{t}");
    assert_eq!(t["delta"]["steps"].as_i64(), Some(-2), "{t}");
    assert!(t["base"]["step_p50_us"].is_f64());
}

#[test]
fn kernels_per_step_reads_alike_on_both_sides() {
    // A mean: one decimal on both sides, whole or not.
    let with_kps = |r: TriageReport, k: f64| {
        let mut r = with_steps(r, 10, 150.0);
        r.timeline.as_mut().unwrap().stages[0].launch.kernels_per_step = Some(k);
        r
    };
    let base = with_kps(report(Stage::Decode, vec![row("a", 1.0, 1)], 1.0, None), 1381.8);
    let new = with_kps(report(Stage::Decode, vec![row("a", 1.0, 1)], 1.0, None), 1291.0);
    let d = diff(&base, &new, &DiffOptions::default());
    let md = markdown(&d);
    assert!(md.contains("| kernels per step | 1381.8 | 1291.0 | -90.8 (-6.6%) |"), "{md}");
    use crate::report::render::{Rendered, Renderer};
    let Rendered::Text(table) = crate::report::table::Table { width: 120 }.diff(&d) else { panic!("text") };
    assert!(table.contains("1381.8") && table.contains("1291.0"), "{table}");
}

#[test]
fn different_step_counts_are_compared_per_step() {
    // NEW ran twice the steps: `steady` doubles in total but not per step;
    // `slower` is 1.5x per step.
    let base = with_steps(
        report(Stage::Decode, vec![row("steady", 600.0, 6), row("slower", 300.0, 6)], 900.0, None),
        6,
        150.0,
    );
    let new = with_steps(
        report(Stage::Decode, vec![row("steady", 1200.0, 12), row("slower", 900.0, 12)], 2100.0, None),
        12,
        175.0,
    );
    let d = diff(&base, &new, &gate(10.0, Some(GateBasis::Kernel)));
    let s = &d.stages[0];
    assert_eq!(s.normalization, Normalization { basis: NormBasis::Step, base_units: Some(6.0), new_units: Some(12.0) });
    let names: Vec<&str> = s.kernels.iter().map(|k| &*k.kernel).collect();
    // Ranked by the change per step, not by the total (steady: +600 total).
    assert_eq!(names, ["slower", "steady"]);
    let slower = s.kernels[0].normalized.unwrap();
    assert_eq!((slower.base_us, slower.new_us, slower.delta_us), (50.0, 75.0, 25.0));
    assert_eq!(slower.delta_pct, Some(50.0));
    assert_eq!((slower.base_count, slower.new_count), (1.0, 1.0));
    assert_eq!(s.kernels[1].normalized.unwrap().delta_us, 0.0);
    assert_eq!(s.kernels[1].delta_us, 600.0);
    // Kernel time per step: 150 -> 175 (+16.7%), over the 10% bar.
    let g = s.gate.as_ref().unwrap();
    assert_eq!((g.per, g.base_us, g.new_us), (NormBasis::Step, 150.0, 175.0));
    assert!(g.tripped);
    assert!(d.gate_failures()[0].contains("kernel per step 150.0 µs -> 175.0 µs (+16.7%)"), "{:?}", d.gate_failures());
    let md = markdown(&d);
    assert!(md.contains("different numbers of steps (base 6, new 12)"), "{md}");
    assert!(md.contains("| Δ per step | Δ% per step |"), "{md}");
}

#[test]
fn equal_step_counts_need_no_normalisation() {
    let base = with_steps(report(Stage::Decode, vec![row("a", 100.0, 2)], 100.0, None), 4, 25.0);
    let new = with_steps(report(Stage::Decode, vec![row("a", 200.0, 2)], 200.0, None), 4, 50.0);
    let d = diff(&base, &new, &DiffOptions::default());
    assert_eq!(d.stages[0].normalization.basis, NormBasis::None);
    assert!(d.stages[0].kernels[0].normalized.is_none());
    assert!(!markdown(&d).contains("per step |"));
}

#[test]
fn different_windows_without_steps_are_also_given_per_ms() {
    // Windows 2 ms and 4 ms (twice busy): per ms, `a` did not change, but
    // the ranking and the gate keep the totals.
    let base = report(Stage::All, vec![row("a", 1000.0, 10), row("b", 10.0, 1)], 1000.0, None);
    let new = report(Stage::All, vec![row("a", 2000.0, 20), row("b", 40.0, 1)], 2000.0, None);
    let d = diff(&base, &new, &gate(50.0, None));
    let s = &d.stages[0];
    assert_eq!(
        s.normalization,
        Normalization { basis: NormBasis::WindowMs, base_units: Some(2.0), new_units: Some(4.0) }
    );
    assert_eq!(&*s.kernels[0].kernel, "a");
    let a = s.kernels[0].normalized.unwrap();
    assert_eq!((a.base_us, a.new_us, a.delta_us), (500.0, 500.0, 0.0));
    // `a`, nearly all of BASE's kernel time, launched twice as often: the
    // new capture holds twice the work, and the gate compares it per
    // BASE's work (busy 2000 / 2 against 1000).
    let g = s.gate.as_ref().unwrap();
    assert_eq!((g.basis, g.per, g.work_ratio), (GateBasis::Busy, NormBasis::None, Some(2.0)));
    assert_eq!((g.base_us, g.new_us, g.change_pct), (1000.0, 1000.0, Some(0.0)));
    assert!(!g.tripped);
    assert!(d.gate_failures().is_empty());
    let md = markdown(&d);
    assert!(md.contains("Gate on busy per base's work: 1.00 ms -> 1.00 ms (0.0%), passed."), "{md}");
    assert!(md.contains("new launched the kernels both ran 2.00× as often"), "{md}");
    // The note on the spans leaves what the gate compares to the gate line.
    assert!(md.contains("rows stay ranked by their total change (the gate line says what the gate compares)."), "{md}");
    assert!(!md.contains("gate compares totals"), "{md}");
}

#[test]
fn a_side_that_skipped_events_leaves_the_gate_not_evaluated() {
    // NEW lost most of its kernels to unusable times: it looks faster, and
    // the gate must not pass it.
    let base = report(Stage::All, vec![row("a", 1000.0, 10)], 1000.0, None);
    let mut new = report(Stage::All, vec![row("a", 100.0, 1)], 100.0, None);
    new.skipped_events = 9;
    let d = diff(&base, &new, &gate(5.0, None));
    assert_eq!(d.gate.tripped, None);
    assert!(d.stages[0].gate.is_none());
    let why = "new left out 9 events for unusable times, so the figures compared lack them; each side's notes (its warnings) say which";
    assert_eq!(d.gate.not_evaluated.as_deref(), Some(why));
    assert_eq!(d.gate_failures(), [format!("torchtriage: gate: not evaluated: {why}")]);
    assert!(markdown(&d).contains(&format!("gate: not evaluated ({why})")), "{}", markdown(&d));
    // Without a gate, nothing is said of it here (the sides' warnings are).
    assert!(diff(&base, &new, &DiffOptions::default()).gate_failures().is_empty());
}

#[test]
fn a_longer_capture_of_slower_work_trips_the_gate_per_base_work() {
    // Twice the launches and 2.4 times the busy time: 20% slower for the
    // same work.
    let base = report(Stage::All, vec![row("a", 1000.0, 10)], 1000.0, None);
    let new = report(Stage::All, vec![row("a", 2400.0, 20)], 2400.0, None);
    let d = diff(&base, &new, &gate(10.0, None));
    let g = d.stages[0].gate.as_ref().unwrap();
    assert_eq!((g.work_ratio, g.new_us), (Some(2.0), 1200.0));
    assert!(g.tripped);
    let lines = d.gate_failures();
    assert_eq!(
        lines,
        ["torchtriage: gate: all: busy per base's work 1.00 ms -> 1.20 ms (+20.0%) exceeds 10% (new launched the kernels both ran 2.00× as often, without steps to divide by)"]
    );
}

#[test]
fn the_same_launches_over_a_longer_window_compare_totals() {
    // The same kernels launched as often, twice as slow: a real
    // regression, which also lengthens the window.
    let base = report(Stage::All, vec![row("a", 1000.0, 10), row("b", 500.0, 5)], 1500.0, None);
    let new = report(Stage::All, vec![row("a", 2000.0, 10), row("b", 1000.0, 5)], 3000.0, None);
    let d = diff(&base, &new, &gate(10.0, None));
    let s = &d.stages[0];
    assert_eq!(s.normalization.basis, NormBasis::WindowMs);
    let g = s.gate.as_ref().unwrap();
    assert_eq!((g.work_ratio, g.base_us, g.new_us), (None, 1500.0, 3000.0));
    assert!(g.tripped);
    assert!(!markdown(&d).contains("per base's work"));
}

#[test]
fn a_dominant_kernel_launched_more_often_alone_is_more_work_not_a_longer_capture() {
    // The GEMM (60% of BASE's time) launched twice as often, the rest as
    // often: 60% more busy time for the same capture, which must trip the
    // gate rather than be divided away as twice the work.
    let base =
        report(Stage::All, vec![row("gemm", 300.0, 5), row("add", 100.0, 5), row("nccl", 100.0, 5)], 500.0, None);
    let new =
        report(Stage::All, vec![row("gemm", 600.0, 10), row("add", 100.0, 5), row("nccl", 100.0, 5)], 800.0, None);
    let d = diff(&base, &new, &gate(5.0, None));
    let g = d.stages[0].gate.as_ref().unwrap();
    assert_eq!((g.work_ratio, g.base_us, g.new_us), (None, 500.0, 800.0));
    assert_eq!(g.uneven_launches, Some(UnevenLaunches { ratio: 2.0, agreeing_pct: 60.0 }));
    assert!(g.tripped);
    assert_eq!(
        d.gate_failures(),
        ["torchtriage: gate: all: busy 500.0 µs -> 800.0 µs (+60.0%) exceeds 5% (as captured: the kernels' launch counts changed unevenly, without steps to divide by)"]
    );
    let md = markdown(&d);
    assert!(md.contains("kernels holding 60% of base's time (of those both ran) were launched 2.00× as often, the rest otherwise, so the gate compares busy time as captured."), "{md}");
    // Every kernel launched twice as often within 10%: a longer capture.
    let base =
        report(Stage::All, vec![row("gemm", 300.0, 10), row("add", 100.0, 10), row("nccl", 100.0, 10)], 500.0, None);
    let new =
        report(Stage::All, vec![row("gemm", 600.0, 20), row("add", 210.0, 21), row("nccl", 200.0, 20)], 1010.0, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.work_ratio, g.uneven_launches), (Some(2.0), None));
    assert!(!g.tripped);
    // Kernels holding 90% of the time agree: the ratio stands; 80% do not.
    let base = report(Stage::All, vec![row("gemm", 450.0, 5), row("add", 50.0, 5)], 500.0, None);
    let new = report(Stage::All, vec![row("gemm", 900.0, 10), row("add", 50.0, 5)], 950.0, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.work_ratio, g.uneven_launches), (Some(2.0), None));
    let base = report(Stage::All, vec![row("gemm", 400.0, 5), row("add", 100.0, 5)], 500.0, None);
    let new = report(Stage::All, vec![row("gemm", 800.0, 10), row("add", 100.0, 5)], 900.0, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.work_ratio, g.uneven_launches), (None, Some(UnevenLaunches { ratio: 2.0, agreeing_pct: 80.0 })));
    assert!(g.tripped);
    // The bounds hold as written whatever the rounding: 22 launches of 10
    // are 10% off a median of 2, and 6.3 µs of 7.0 are 90%.
    let base = report(Stage::All, vec![row("g", 600.0, 10), row("a", 200.0, 10), row("b", 200.0, 10)], 1000.0, None);
    let new = report(Stage::All, vec![row("g", 1200.0, 20), row("a", 400.0, 22), row("b", 400.0, 18)], 2000.0, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.work_ratio, g.uneven_launches), (Some(2.0), None));
    let base = report(Stage::All, vec![row("g", 6.3, 10), row("a", 0.7, 10)], 7.0, None);
    let new = report(Stage::All, vec![row("g", 12.6, 20), row("a", 0.7, 10)], 13.3, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.work_ratio, g.uneven_launches), (Some(2.0), None));
    // A share just under the bar is written rounded down, never as the bar.
    let base = report(Stage::All, vec![row("g", 89.6, 10), row("a", 10.4, 10)], 100.0, None);
    let new = report(Stage::All, vec![row("g", 179.2, 20), row("a", 10.4, 10)], 189.6, None);
    let g = gate_at_5(&base, &new);
    assert!(g.work_note().unwrap().contains("kernels holding 89% of base's time"), "{:?}", g.work_note());
}

#[test]
fn launch_ratios_are_weighted_by_base_time_and_need_matched_kernels() {
    // `big` (launched as often) holds most of BASE's time: the same work,
    // whatever `small` did.
    let base = report(Stage::All, vec![row("big", 900.0, 10), row("small", 100.0, 10)], 1000.0, None);
    let new = report(Stage::All, vec![row("big", 900.0, 10), row("small", 300.0, 30)], 1200.0, None);
    let d = diff(&base, &new, &gate(10.0, Some(GateBasis::Kernel)));
    let g = d.stages[0].gate.as_ref().unwrap();
    assert_eq!((g.work_ratio, g.new_us), (None, 1200.0));
    // Kernels both ran hold under half of BASE's time: no ratio.
    let base = report(Stage::All, vec![row("old", 900.0, 10), row("kept", 100.0, 10)], 1000.0, None);
    let new = report(Stage::All, vec![row("fused", 900.0, 5), row("kept", 200.0, 20)], 1100.0, None);
    let d = diff(&base, &new, &gate(10.0, None));
    assert_eq!(d.stages[0].gate.as_ref().unwrap().work_ratio, None);
}

#[test]
fn categories_sum_every_kernel_and_match_across_names() {
    // Different GEMM names on the two sides: no kernel matches, the
    // category does; `dust` is under the share bar but counted.
    let cat = |name: &str, category: &'static str, us: f64| KernelTableRow { category, ..row(name, us, 1) };
    let base = report(Stage::All, vec![cat("sm90_gemm", "gemm", 900.0), cat("dust", "memory", 1.0)], 901.0, None);
    let new = report(Stage::All, vec![cat("Cijk_gemm", "gemm", 1200.0), cat("dust", "memory", 2.0)], 1202.0, None);
    let d = diff(&base, &new, &DiffOptions::default());
    let s = &d.stages[0];
    let statuses: Vec<_> = s.shown_kernels().map(|k| k.status).collect();
    assert_eq!(statuses, [KernelStatus::New, KernelStatus::Gone]);
    let cats: Vec<(&str, f64, f64)> = s.categories.iter().map(|c| (c.category, c.base_us, c.new_us)).collect();
    assert_eq!(cats, [("gemm", 900.0, 1200.0), ("memory", 1.0, 2.0)]);
    assert_eq!(s.categories[0].delta_pct, Some(100.0 / 3.0));
    assert!(markdown(&d).contains("| gemm | 900.0 µs | 1.20 ms | +300.0 µs | +33.3% | 1 → 1 |"));
}

#[test]
fn location_and_cpu_op_come_from_new_else_base() {
    let list = |v: &[&str]| Arc::from(v.iter().map(|s| Arc::from(*s)).collect::<Vec<Text>>());
    let mut b = row("k", 10.0, 1);
    b.location = list(&["model.py(10): forward"]);
    b.cpu_op = list(&["aten::mm"]);
    let mut n = row("k", 20.0, 1);
    n.cpu_op = list(&["aten::addmm", "aten::mm"]);
    let d = diff(
        &report(Stage::All, vec![b], 10.0, None),
        &report(Stage::All, vec![n], 20.0, None),
        &DiffOptions::default(),
    );
    let k = &d.stages[0].kernels[0];
    assert_eq!(&*k.location, &*list(&["model.py(10): forward"]));
    assert_eq!(&*k.cpu_op, &*list(&["aten::addmm", "aten::mm"]));
    let md = markdown(&d);
    assert!(md.contains("| changed | aten::addmm (+1 more) | model.py(10): forward |"), "{md}");
}

#[test]
fn one_hidden_kernel_is_one_kernel() {
    assert_eq!(crate::report::diff::kernels_count(1), "1 kernel");
    assert_eq!(crate::report::diff::kernels_count(0), "0 kernels");
    assert_eq!(crate::report::diff::kernels_count(7), "7 kernels");
}

#[test]
fn a_change_just_past_the_threshold_is_written_past_it() {
    // 5.02% over a 5% gate trips; "+5.0%" would read as not exceeding it.
    let base = report(Stage::All, vec![row("a", 1000.0, 10)], 1000.0, None);
    let new = report(Stage::All, vec![row("a", 1050.2, 10)], 1050.2, None);
    let d = diff(&base, &new, &gate(5.0, None));
    assert_eq!(d.gate_failures(), ["torchtriage: gate: all: busy 1.00 ms -> 1.05 ms (+5.02%) exceeds 5%"]);
    assert!(markdown(&d).contains("(+5.02%), tripped."), "{}", markdown(&d));
    // Exactly at the threshold passes, and one decimal says so.
    let new = report(Stage::All, vec![row("a", 1050.0, 10)], 1050.0, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.tripped, g.change_text()), (false, "+5.0%".to_string()));
    // 0.04% trips a 0% gate: "0.0%" would read as no change.
    let new = report(Stage::All, vec![row("a", 1000.4, 10)], 1000.4, None);
    let g = diff(&base, &new, &gate(0.0, None)).stages[0].gate.clone().unwrap();
    assert_eq!((g.tripped, g.change_text()), (true, "+0.04%".to_string()));
    // 5.00004% over a 5% gate.
    let new = report(Stage::All, vec![row("a", 1050.0004, 10)], 1050.0004, None);
    let g = gate_at_5(&base, &new);
    assert_eq!((g.tripped, g.change_text()), (true, "+5.00004%".to_string()));
}
