//! The timeline's options and result types: what a caller asks for
//! ([`TimelineOptions`], [`Basis`]) and the serde-serializable figures it
//! gets back ([`Timeline`] and its parts). Values are not rounded here;
//! renderers round. An undefined value (a share of an empty window, a
//! percentile of no samples) is `None`, never NaN.

use serde::{Deserialize, Serialize};

use crate::analysis::stage::Stage;

/// Which kernels and which clock the timeline is computed on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Every GPU kernel of the trace, of every process, at the trace's own
    /// float times; nothing is dropped. What users see in a trace viewer.
    #[default]
    Trace,
    /// Holistic Trace Analysis 0.5.0 as it runs by default: times rounded to
    /// whole µs (start up, end down) when any event time is fractional,
    /// events from the start of the last `ProfilerStep` on dropped, every
    /// event with an integer `args.stream` counted as a GPU event.
    Hta,
    /// As [`Basis::Hta`] without the µs rounding (HTA run with
    /// `HTA_DISABLE_NS_ROUNDING=1`).
    HtaExact,
}

/// Options of [`super::timeline`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineOptions {
    pub basis: Basis,
    /// The trace's rank; `None` reads `distributedInfo.rank` from the trace.
    pub rank: Option<u64>,
}

/// The whole timeline result of one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    pub basis: Basis,
    /// Times were rounded to whole µs (only under [`Basis::Hta`]).
    pub rounded_to_us: bool,
    /// The HTA last-step filter, when it applied (HTA bases only).
    pub step_filter: Option<StepFilter>,
    /// GPU events left out because their start or end is not a finite
    /// number.
    pub skipped_non_finite: u64,
    /// Step annotations left out of the step figures for their times
    /// ([`StepsLeftOut`]).
    pub steps_left_out: u64,
    /// Figures over every GPU event of the trace (all processes together).
    pub trace: Figures,
    /// Launch statistics over every GPU event (`kernels_per_step` over every
    /// step that launched a GPU event).
    pub launch: LaunchStats,
    /// The verdict over the whole-trace figures: `no_gpu_kernels` for a
    /// trace without GPU events.
    pub verdict: Verdict,
    /// Per stage present, in report order (extend, decode, all).
    pub stages: Vec<StageTimeline>,
}

/// HTA drops everything from the start of the last `ProfilerStep` on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepFilter {
    /// Start of the last `ProfilerStep` (on the basis clock).
    pub last_step_start_us: f64,
    /// GPU events the filter dropped.
    pub kernels_dropped: u64,
}

/// Busy, idle and kernel-class time over a set of GPU events.
///
/// The window runs from the first event's start to the last merged end;
/// busy time is the union of the events' intervals over all streams,
/// idle time the rest of the window. `compute_us`, `comm_us` and
/// `memory_us` are unions of the computation, communication and memory
/// kernels (HTA's kernel-type rule on the name); `non_compute_us` is busy
/// time not covered by computation. For a stage, the window is the stage's
/// busy time plus the idle gaps that end with one of its kernels.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// GPU events counted.
    pub kernels: u64,
    pub window_us: f64,
    pub busy_us: f64,
    pub idle_us: f64,
    pub compute_us: f64,
    pub non_compute_us: f64,
    /// Shares of the window, 0–100; `None` for an empty window.
    pub idle_pct: Option<f64>,
    pub compute_pct: Option<f64>,
    pub non_compute_pct: Option<f64>,
    pub comm_us: f64,
    pub memory_us: f64,
    /// Share of communication time that overlaps computation, 0–100;
    /// `None` without communication.
    pub comm_comp_overlap_pct: Option<f64>,
    /// Communication time not overlapped by computation.
    pub exposed_comm_us: f64,
    /// The part of `idle_us` spent waiting for the host: idle gaps whose
    /// next kernel's host-side call started after the gap opened, each up
    /// to a millisecond after that call began.
    pub idle_host_wait_us: f64,
    /// The part of `idle_us` in short gaps between kernels the GPU already
    /// had: gaps under 30 µs not waiting for the host.
    pub idle_short_gap_us: f64,
    /// The longest single idle gap; 0 without one.
    pub longest_idle_gap_us: f64,
    /// Busy time in which only device-side waits run (events named as a
    /// stream waiting for another stream or an event, such as MTIA's
    /// `event_wait`): counted busy, but no work.
    pub device_wait_us: f64,
    /// Idle time between consecutive kernels of each stream, by cause.
    pub idle_by_stream: Vec<StreamIdle>,
    /// The runtime calls (other than launches) the launching threads were
    /// in while the GPU waited for the host, the most time first; empty
    /// when the launches come from more than one process.
    pub host_wait_calls: Vec<HostWaitCall>,
}

/// A runtime call the launching threads were in while the GPU waited for
/// the host: its name, how many of its calls overlapped such waits, and
/// for how long (within [`Figures::idle_host_wait_us`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostWaitCall {
    pub name: String,
    pub calls: u64,
    pub wait_us: f64,
}

/// Idle time between consecutive kernels of one stream, split by cause: the
/// next kernel's host-side call started after the previous kernel ended
/// (`host_wait_us`), else a gap under 30 µs (`kernel_wait_us`), else
/// `other_us`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StreamIdle {
    pub stream: String,
    pub host_wait_us: f64,
    pub kernel_wait_us: f64,
    pub other_us: f64,
}

/// One stage of the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageTimeline {
    pub stage: Stage,
    /// Per GPU (kernel process), in order of first kernel.
    pub gpus: Vec<GpuTimeline>,
    pub launch: LaunchStats,
    pub steps: Steps,
    pub verdict: Verdict,
}

/// Share of a stage's GPU events its steps must have launched for the steps
/// to time the stage's work rather than part of it.
pub const STEPS_LAUNCH_SHARE: f64 = 0.9;

impl StageTimeline {
    /// GPU events of the stage, over its GPUs.
    pub fn kernels(&self) -> u64 {
        self.gpus.iter().map(|g| g.figures.kernels).sum()
    }

    /// GPU events launched inside the stage's steps, when it has steps.
    pub fn kernels_launched_in_steps(&self) -> Option<f64> {
        self.launch.kernels_per_step.map(|k| (k * self.steps.count as f64).round())
    }

    /// Whether the steps launched only part of the stage's GPU events
    /// (under [`STEPS_LAUNCH_SHARE`]): they then time part of its work.
    pub fn steps_launch_part_of_the_work(&self) -> bool {
        self.kernels_launched_in_steps().is_some_and(|inside| inside < STEPS_LAUNCH_SHARE * self.kernels() as f64)
    }
}

/// The figures of one GPU (one kernel process) within a stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuTimeline {
    pub pid: String,
    pub rank: Option<u64>,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Launch overhead of a stage's kernels that match a launch call by
/// correlation. Percentiles interpolate linearly between order statistics
/// (numpy's default).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LaunchStats {
    /// Distinct launch calls behind the matched kernels.
    pub launches: u64,
    /// Kernels matched to a launch call.
    pub kernels: u64,
    /// Total duration of those launch calls.
    pub cpu_us: f64,
    /// Kernel start minus its launch call's end, at least 0.
    pub delay_p50_us: Option<f64>,
    pub delay_p90_us: Option<f64>,
    pub delay_p99_us: Option<f64>,
    /// Median matched-kernel duration.
    pub kernel_p50_us: Option<f64>,
    /// Median launch-call duration.
    pub launch_p50_us: Option<f64>,
    /// Share of matched kernels shorter than their own launch call, 0–100.
    pub short_kernel_pct: Option<f64>,
    /// GPU events launched inside the stage's steps, per step; `None`
    /// without steps.
    pub kernels_per_step: Option<f64>,
    /// How far apart the CPU's and the GPU's clocks look, over the whole
    /// trace: the smallest launch delay when no kernel starts within a
    /// millisecond of its launch call's end, or the most negative kernel
    /// start − launch start when one starts more than a millisecond before
    /// its launch call; `None` when the clocks agree. Launch delays and
    /// host waits then compare times of two clocks.
    pub clock_offset_us: Option<f64>,
}

impl LaunchStats {
    /// The launch delay percentiles (p50, p90, p99) when they were measured
    /// on one clock; `None` when the clocks look offset.
    pub fn delays_on_one_clock(&self) -> Option<[Option<f64>; 3]> {
        self.clock_offset_us.is_none().then_some([self.delay_p50_us, self.delay_p90_us, self.delay_p99_us])
    }
}

/// Which annotations delimit the steps (iterations) of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// `ProfilerStep#N`, the profiler's own step annotation.
    ProfilerStep,
    /// SGLang's batch annotations `step[DECODE bs=…]`, `step[EXTEND …]`.
    SglangStep,
    /// vLLM's model-step annotations `execute_…context_…_generation_…`.
    VllmExecute,
    /// Python frames of vLLM's model runner `…model_runner.py(N): execute_model`
    /// (traces recorded with Python stacks but without step annotations).
    VllmExecuteModelFrame,
    /// Python frames of SGLang's worker `…tp_worker.py(N): forward_batch_generation`.
    SglangForwardFrame,
}

/// Step annotations of one rule that no step was made of, for their times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepsLeftOut {
    /// The rule whose annotations they are.
    pub source: StepSource,
    /// Annotations left out.
    pub left_out: u64,
    /// Steps the rule made of its other annotations (0: the steps, if any,
    /// come from a later rule).
    pub kept: u64,
}

/// The steps of one stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Steps {
    /// The rule the trace's steps were found by; `None` when it has none.
    pub source: Option<StepSource>,
    pub count: u64,
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub max_us: Option<f64>,
    /// Up to three longest steps, longest first.
    pub slowest: Vec<SlowStep>,
    /// Steps of the same rule that launched no GPU event (one the
    /// profiler's end cut, one of host work only): they belong to no stage,
    /// so no stage counts them. The same trace-wide number in every stage.
    pub without_gpu_work: u64,
    /// The stage's GPU events HTA's step filter dropped (those of the last
    /// step, and after it): the kernel table holds them, while the steps
    /// (which launched them) do not count their step.
    #[serde(skip)]
    pub filtered_kernels: u64,
}

impl Steps {
    /// The steps' durations summed; `None` without steps.
    pub fn total_us(&self) -> Option<f64> {
        self.mean_us.map(|m| m * self.count as f64).filter(|t| t.is_finite())
    }
}

/// One step, located on the trace's own clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SlowStep {
    pub name: String,
    /// The step's `ts` as written in the trace.
    pub start_us: f64,
    pub dur_us: f64,
}

/// What bounds a stage, by the rule in the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    CpuLaunchBound,
    CommunicationBound,
    GpuIdle,
    GpuBound,
    NoGpuKernels,
}

/// What the host does while a [`VerdictKind::CpuLaunchBound`] stage's GPU
/// waits for it, from the stage's median kernel and launch call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostCause {
    /// Each kernel is launched on its own, is about as short as its
    /// launch call (the median kernel under twice the median launch call),
    /// and starts right after it (no queue of work on the GPU): the host's
    /// per-kernel work (Python, dispatch, the launch call) paces the GPU,
    /// and fewer, larger launches (CUDA graphs, fusion) cut it.
    LaunchOverhead,
    /// The launch calls are short beside the kernels, the kernels were
    /// queued well ahead of the GPU, or the calls already launch graphs:
    /// the GPU's waits are the host's other work between launches
    /// (synchronization, scheduling, data loading, Python).
    HostWork,
}

/// A stage's verdict and the numbers that decided it (sums over the
/// stage's GPUs; shares of their summed windows, 0–100).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub window_us: f64,
    pub idle_pct: Option<f64>,
    /// Idle time waiting for the host, as a share of the window (points of
    /// `idle_pct`).
    pub host_wait_pct: Option<f64>,
    pub exposed_comm_pct: Option<f64>,
    pub kernel_p50_us: Option<f64>,
    pub launch_p50_us: Option<f64>,
    /// The median launch delay ([`LaunchStats::delay_p50_us`]); `None`
    /// when the clocks look offset.
    pub delay_p50_us: Option<f64>,
    /// Kernels per launch call ([`LaunchStats::kernels`] over
    /// [`LaunchStats::launches`]): above 1 when a call launches a graph.
    pub kernels_per_launch: Option<f64>,
    /// The trace's apparent clock offset ([`LaunchStats::clock_offset_us`]):
    /// when set, host waits were not judged.
    pub clock_offset_us: Option<f64>,
    /// The stage's step time (its steps' durations summed) when it is
    /// longer than the summed windows: kernels ran in only part of the
    /// steps. `None` without steps or when the windows cover them.
    pub steps_us: Option<f64>,
    /// Share of `steps_us` no kernel ran, 0–100: the windows' idle time
    /// plus the step time outside them.
    pub steps_idle_pct: Option<f64>,
    /// For [`VerdictKind::CpuLaunchBound`], what keeps the host: `None`
    /// for another kind, or without matched launches.
    pub host_cause: Option<HostCause>,
    /// The longest single idle gap of the stage's GPUs; 0 without one.
    pub longest_gap_us: f64,
    /// Busy time in which only device-side waits ran
    /// ([`Figures::device_wait_us`]), as a share of the window.
    pub device_wait_pct: Option<f64>,
    /// The runtime call the launching threads spent the most of the GPU's
    /// host waits in, summed over the stage's GPUs
    /// ([`Figures::host_wait_calls`]); `None` without one.
    pub host_wait_call: Option<HostWaitCall>,
}
