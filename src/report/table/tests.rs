//! Tests of the whole views on synthetic reports: every line within the
//! width, names demangled, no markdown left over, a legend under tables.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::analysis::framework::Framework;
use crate::analysis::overlap::ActionRow;
use crate::analysis::ranks::{summarize, RankFacts, RankSource, StageFacts};
use crate::analysis::stage::Stage;
use crate::analysis::timeline::{
    Basis, Figures, GpuTimeline, LaunchStats, StageTimeline, StepSource, Steps, StreamIdle, Timeline, Verdict,
    VerdictKind,
};
use crate::analysis::types::Text;
use crate::report::batch::{RunInfo, Source};
use crate::report::diff::{diff, DiffOptions, GateOptions};
use crate::report::model::{Compat, Frameworks, FuseRow, KernelTable, KernelTableRow, Mode, OverlapRow, TriageReport};
use crate::report::render::{BatchView, Rendered, Renderer};

use super::Table;

const MANGLED: &str =
    "_ZN4vllm18act_and_mul_kernelIN3c108BFloat16ETnPFT_RKS3_EXadL_ZNS_11silu_kernelIS2_EES3_S5_EELb1EEEvPS3_PS4_i";
const LONG: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";

fn texts(items: &[&str]) -> Arc<[Text]> {
    items.iter().map(|s| Text::from(*s)).collect::<Vec<_>>().into()
}

fn row(name: &str, total_us: f64, share_pct: f64) -> KernelTableRow {
    KernelTableRow {
        kernel: Text::from(name),
        category: "gemm",
        total_us,
        share_pct,
        launches: 100,
        max_us: total_us / 50.0,
        avg_us: total_us / 100.0,
        location: texts(&[
            "vllm/torch_compile_cache/db0608ac70/rank_0_0/inductor_cache/lh/clhgqu2gv7w2e24fzbbu3va62n7angekzqkh7ialfve3f.py:428 call (site share 95%)",
            "vllm/model_executor/models/llama.py:343 forward (site share 5%)",
        ]),
        cpu_op: texts(&["aten::mm", "vllm::all_reduce"]),
        rendered: share_pct >= 1.0,
    }
}

fn verdict() -> Verdict {
    Verdict {
        kind: VerdictKind::CpuLaunchBound,
        window_us: 2000.0,
        idle_pct: Some(38.0),
        host_wait_pct: Some(31.0),
        exposed_comm_pct: Some(2.0),
        kernel_p50_us: Some(4.0),
        launch_p50_us: Some(9.0),
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

fn report() -> TriageReport {
    let stage = Stage::Decode;
    let rows = vec![row(MANGLED, 600.0, 60.0), row(LONG, 390.0, 39.0), row("tiny", 10.0, 0.5)];
    let figures = Figures {
        kernels: 300,
        window_us: 2000.0,
        busy_us: 1240.0,
        idle_us: 760.0,
        compute_us: 1000.0,
        idle_pct: Some(38.0),
        compute_pct: Some(50.0),
        comm_us: 100.0,
        exposed_comm_us: 40.0,
        idle_by_stream: vec![StreamIdle {
            stream: "7".into(),
            host_wait_us: 600.0,
            kernel_wait_us: 100.0,
            other_us: 60.0,
        }],
        ..Figures::default()
    };
    let steps = Steps { source: Some(StepSource::ProfilerStep), count: 4, p50_us: Some(500.0), ..Steps::default() };
    let st = StageTimeline {
        stage,
        gpus: vec![GpuTimeline { pid: "0".into(), rank: Some(0), figures: figures.clone() }],
        launch: LaunchStats { launches: 300, kernels: 300, delay_p50_us: Some(12.0), ..LaunchStats::default() },
        steps,
        verdict: verdict(),
    };
    let action = ActionRow {
        priority: "P1".into(),
        verdict: "headroom".into(),
        kernel: LONG.into(),
        category: "gemm".into(),
        total_us: 390.0,
        share_pct: 31.5,
        exclusive_ratio: 0.9,
        hidden_ratio: 0.1,
        python_scope: "vllm/model_executor/layers/linear.py(512): forward".into(),
        launch_op: "aten::mm".into(),
        mapping_ratio: 1.0,
        dependency_signal: "serial risk low".into(),
        prev_neighbor: "-".into(),
        next_neighbor: "-".into(),
        recommendation: "try fusion".into(),
        suggestion: "-".into(),
        representative_idx: 0,
    };
    let fuse = FuseRow {
        stage,
        pattern: "silu_and_mul_fused_with_a_very_long_pattern_name_indeed".into(),
        status: "mainline direct".into(),
        confidence: "Confirmed".into(),
        related_us: 600.0,
        share_pct: 60.0,
        evidence: vec![format!("{MANGLED} (60.0%)")],
        current_locations: vec!["vllm/model_executor/layers/activation.py:85 forward_cuda".into()],
        candidate_path: vec!["vllm/model_executor/layers/fused_moe/fused_moe.py:1200 fused_experts".into()],
        rationale: "The activation and the multiply run as one kernel already; a fused GEMM epilogue would save a pass over memory.".into(),
    };
    TriageReport {
        mode: Mode::SingleTrace,
        compat: Compat::Default,
        framework: Frameworks { mapping: Framework::Generic, formal: Framework::Generic },
        mapping_traces: vec![],
        formal_traces: vec![PathBuf::from(
            "/some/rather/long/directory/name/for/the/trace/file/trace.pt.trace.json.gz",
        )],
        model: None,
        min_share: 1.0,
        timeline: Some(Timeline {
            basis: Basis::Trace,
            rounded_to_us: false,
            step_filter: None,
            skipped_non_finite: 0,
            steps_left_out: 0,
            trace: figures,
            launch: LaunchStats::default(),
            verdict: verdict(),
            stages: vec![st],
        }),
        kernel_tables: vec![KernelTable {
            trace: PathBuf::from("t.json"),
            stage,
            total_us: 1000.0,
            trace_total_us: 1000.0,
            rows,
        }],
        overlap_rows: vec![OverlapRow { stage, row: action, rendered: true }],
        overlap_stats: vec![],
        fuse_rows: vec![fuse],
        skipped_events: 0,
        skipped_by_trace: vec![],
        pid_unmatched: vec![],
        left_out: vec![],
        distributed_info: None,
        hardware: Default::default(),
        notes: vec![],
    }
}

fn text(r: Rendered<'_>) -> String {
    match r {
        Rendered::Text(t) => t,
        _ => panic!("the table format renders text"),
    }
}

fn check_width(out: &str, width: usize) {
    for line in out.lines() {
        assert!(line.chars().count() <= width, "{width}: {} chars: {line}", line.chars().count());
    }
    assert!(!out.contains("<br>") && !out.contains("| ---"), "{out}");
}

const WIDTHS: [usize; 4] = [60, 80, 120, 200];

#[test]
fn triage_fits_every_width() {
    let r = report();
    for width in WIDTHS {
        let out = text(Table { width }.triage(&r));
        check_width(&out, width);
        assert!(out.contains("Share (%)"), "{out}");
        assert!(out.contains("vllm::act_and_mul"), "{width}: {out}");
        assert!(out.contains("(exclusive)") && out.contains("Confirmed ="), "{out}");
        assert!(!out.contains(MANGLED));
    }
    let wide = text(Table { width: 200 }.triage(&r));
    // One location per line: the second is a continuation line.
    assert!(wide.lines().any(|l| l.starts_with(' ') && l.contains("llama.py:343")), "{wide}");
    assert!(wide.contains("CPU op") && wide.contains("Max (µs)"), "{wide}");
    // Without the `void ` of every CUDA kernel's signature.
    assert!(wide.contains("vllm::act_and_mul_kernel<c10") && !wide.contains("void vllm"), "{wide}");
    // The fuse table's evidence too, its share kept.
    assert!(!wide.contains("_ZN4vllm"), "{wide}");
    assert!(wide.contains("(60.0%)"), "{wide}");
    let narrow = text(Table { width: 60 }.triage(&r));
    let header = narrow.lines().find(|l| l.starts_with("Kernel ")).expect("kernel table");
    assert!(!header.contains("Max (µs)"), "lower-priority columns go first: {narrow}");
    assert!(narrow.contains("Left out at 60 columns: "), "the columns left out are named: {narrow}");
    // The overlap table keeps its action over the exclusive and hidden shares.
    let overlap = narrow.lines().find(|l| l.starts_with("Priority ")).expect("overlap table");
    assert!(overlap.contains("Action") && !overlap.contains("Hid"), "{narrow}");
    assert_eq!(narrow, text(Table { width: 60 }.triage(&r)), "stable");
}

#[test]
fn diff_fits_every_width() {
    let r = report();
    let d = diff(&r, &r, &DiffOptions { min_share: 1.0, gate: Some(GateOptions { threshold_pct: 5.0, basis: None }) });
    for width in WIDTHS {
        let out = text(Table { width }.diff(&d));
        check_width(&out, width);
        assert!(out.contains("Δ (%)") && out.contains("Gate on"), "{out}");
        assert!(out.contains("matched by canonical name"), "{out}");
        // Both sides' launch counts are shown together or not at all.
        let kernels = out.split("Kernels").nth(1).unwrap_or_default();
        let header = kernels.lines().find(|l| l.contains("Kernel")).unwrap_or_default();
        assert!(!header.contains("Launches base") && !header.contains("Launches new"), "{header}");
        if header.contains("Launches") {
            assert!(kernels.contains(" → "), "{kernels}");
        }
    }
}

fn facts(rank: u64, compute: f64, exposed: f64) -> RankFacts {
    RankFacts {
        file: PathBuf::from(format!("worker{rank}_step_12.1694128201545.pt.trace.json.gz")),
        rank,
        rank_source: RankSource::FileName,
        world_size: None,
        distributed_rank: None,
        stages: vec![StageFacts {
            stage: Stage::All,
            bundle: "formal-all".into(),
            busy_us: compute + exposed,
            overlap_us: 10.0,
            exposed_comm_us: exposed,
            top_exposed: Some((
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)".into(),
                exposed,
            )),
            top_headroom: None,
            kernels: vec![
                (Text::from(LONG), "gemm", compute),
                (Text::from("ncclKernel_AllReduce"), "communication", exposed),
            ],
            gpu_time_us: compute + exposed,
            idle_us: None,
            steps: None,
        }],
    }
}

#[test]
fn batch_fits_every_width() {
    let all = [facts(0, 1000.0, 500.0), facts(1, 1500.0, 400.0), facts(2, 1000.0, 900.0)];
    let refs: Vec<&RankFacts> = all.iter().collect();
    let stages = summarize(&refs, 10.0);
    let failures: Vec<(&Path, &crate::error::Error)> = Vec::new();
    let info = RunInfo {
        source: Source::Batch { dir: Path::new("/runs/job"), file: false, jobs: 2, at_once: 2, budget: 1 << 30 },
        files: 3,
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
    for width in WIDTHS {
        let out = text(Table { width }.batch(BatchView { stages: &stages, info: &info }));
        check_width(&out, width);
        assert!(out.contains("Busy (ms)") && out.contains("slow"), "{out}");
        assert!(out.contains("Leads ranks:"), "{out}");
        let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("top headroom: the first headroom row"), "{out}");
    }
}

#[test]
fn a_stage_without_overlap_figures_or_steps_says_so() {
    let mut r = report();
    r.overlap_rows.clear();
    let stage = r.timeline.as_mut().unwrap();
    // The trace's steps were found, none in this stage.
    stage.stages[0].steps = Steps { source: Some(StepSource::ProfilerStep), count: 0, ..Steps::default() };
    let out = text(Table { width: 120 }.triage(&r));
    assert!(out.contains("Steps: none in this stage (ProfilerStep"), "{out}");
    assert!(!out.contains("Steps from"), "{out}");
    // No overlap sweep covered the stage: no reporting bar was applied.
    assert!(out.contains("The overlap step covers the trace's named stages, not this one"), "{out}");
    assert!(!out.contains("at or above"), "{out}");
    // A sweep whose rows all fell under the bar says that.
    r.overlap_stats.push(crate::report::model::OverlapStageStats {
        bundle: "formal-decode".into(),
        stage: Stage::Decode,
        total_busy_us: 1000.0,
        overlap_us: 0.0,
        max_concurrent_streams: 1,
        exclusive_comm_by_kernel: vec![],
    });
    let out = text(Table { width: 120 }.triage(&r));
    assert!(out.contains("No overlap rows at or above 1.0% share."), "{out}");
}
