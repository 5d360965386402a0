//! A stage's verdict: what bounds it, from its GPUs' figures summed.
//!
//! With `idle` the stage's idle share of its window, `host` the share
//! spent waiting for the host (idle gaps whose next kernel's host-side call
//! started after the gap opened) and `exposed` the share of communication
//! not overlapped by computation, the first rule that holds decides:
//! 1. no GPU events → [`VerdictKind::NoGpuKernels`];
//! 2. `idle` ≥ [`IDLE_BOUND_PCT`] and `host` ≥ [`HOST_WAIT_SHARE`] × `idle`,
//!    unless rule 3 holds too with `exposed` > `host` (the larger share of
//!    the window decides) → [`VerdictKind::CpuLaunchBound`], with its
//!    [`HostCause`]: launch overhead when no single runtime call holds
//!    [`ONE_CALL_SHARE`] of the host waits (`hipFree`, say: see
//!    [`Verdict::host_wait_call`]), no single gap holds
//!    [`ONE_GAP_SHARE`] of the idle time, the median kernel is shorter than
//!    [`LAUNCH_OVERHEAD_RATIO`] × the median launch call, the median kernel
//!    starts less than [`QUEUED_DELAY_RATIO`] median launch calls after
//!    its call ends and a call launches at most [`GRAPH_KERNELS_PER_LAUNCH`]
//!    kernels on average; other host work otherwise;
//! 3. `exposed` ≥ [`EXPOSED_COMM_PCT`] → [`VerdictKind::CommunicationBound`];
//! 4. `idle` + `waits` ≥ [`IDLE_BOUND_PCT`] → [`VerdictKind::GpuIdle`]
//!    (other waits), with `waits` the share of the window in which only
//!    device-side waits run ([`Figures::device_wait_us`]): busy by the
//!    timeline's count, but doing no work;
//! 5. the stage's steps last longer than the window and no kernel runs for
//!    ≥ [`IDLE_BOUND_PCT`] of the step time → [`VerdictKind::GpuIdle`]: the
//!    kernels fill only part of the steps (a step that launches a few
//!    kernels and then works on the host is not GPU-bound however busy
//!    the GPU is between its first and last kernel);
//! 6. otherwise [`VerdictKind::GpuBound`].
//!
//! Rule 2 is skipped when the CPU's and the GPU's clocks look offset
//! ([`LaunchStats::clock_offset_us`]): a host wait compares a launch call's
//! time with the GPU's, which two clocks cannot tell.

use rustc_hash::FxHashMap as HashMap;

use super::intervals::Sum;
use super::types::{Figures, HostCause, HostWaitCall, LaunchStats, Verdict, VerdictKind};
use crate::pysem::fcmp;

/// Idle share of the window (percent) from which a stage counts as idle.
pub const IDLE_BOUND_PCT: f64 = 20.0;
/// Part of the idle time waiting for the host from which idle is blamed on
/// launching.
pub const HOST_WAIT_SHARE: f64 = 0.5;
/// Exposed-communication share of the window (percent) from which a stage
/// is communication-bound.
pub const EXPOSED_COMM_PCT: f64 = 20.0;
/// A median kernel shorter than this many median launch calls makes host
/// waits launch overhead: one host thread issues kernels barely faster than
/// the GPU runs them.
pub const LAUNCH_OVERHEAD_RATIO: f64 = 2.0;
/// A median launch delay of this many median launch calls or more means
/// the kernels were queued ahead of the GPU: the GPU did not wait for each
/// launch, and its idle time lies in longer gaps of other host work.
pub const QUEUED_DELAY_RATIO: f64 = 10.0;
/// More kernels than this per launch call on average: the calls launch
/// graphs, which already batch the launches.
pub const GRAPH_KERNELS_PER_LAUNCH: f64 = 2.0;
/// One idle gap holding this share of a stage's idle time or more is a
/// single event (a warm-up, a synchronization, the profiler starting), not
/// the launches' steady pace.
pub const ONE_GAP_SHARE: f64 = 0.5;
/// One runtime call (by name) that the launching threads were in for this
/// share of the GPU's host waits or more is what the host was doing, not
/// launching.
pub const ONE_CALL_SHARE: f64 = 0.5;

impl Verdict {
    /// Whether rule 5 decided: the stage is idle by its steps' time alone,
    /// its window being busy enough.
    pub fn idle_outside_window(&self) -> bool {
        self.kind == VerdictKind::GpuIdle
            && !self.idle_pct.is_some_and(|i| i + self.device_wait_pct.unwrap_or(0.0) >= IDLE_BOUND_PCT)
            && self.steps_idle_pct.is_some()
    }

    /// Whether device-side waits count in the idle rule: rule 4 holds with
    /// them and would not without.
    pub fn idle_by_device_waits(&self) -> bool {
        self.kind == VerdictKind::GpuIdle
            && !self.idle_outside_window()
            && self.idle_pct.is_some_and(|i| i < IDLE_BOUND_PCT)
    }
}

/// The verdict of a stage over its GPUs' figures, with `steps_us` the
/// stage's steps' durations summed (`None` without steps).
pub fn decide<'a>(gpus: impl IntoIterator<Item = &'a Figures>, launch: &LaunchStats, steps_us: Option<f64>) -> Verdict {
    let (mut kernels, mut window, mut idle, mut host, mut exposed, mut waits) =
        (0u64, Sum::default(), Sum::default(), Sum::default(), Sum::default(), Sum::default());
    let mut longest_gap_us: f64 = 0.0;
    let mut calls: HashMap<&str, (Sum, u64)> = HashMap::default();
    for f in gpus {
        for c in &f.host_wait_calls {
            let entry = calls.entry(c.name.as_str()).or_default();
            entry.0.add(c.wait_us);
            entry.1 += c.calls;
        }
        longest_gap_us = longest_gap_us.max(f.longest_idle_gap_us);
        kernels += f.kernels;
        window.add(f.window_us);
        idle.add(f.idle_us);
        host.add(f.idle_host_wait_us);
        exposed.add(f.exposed_comm_us);
        waits.add(f.device_wait_us);
    }
    let window = window.value();
    let pct = |x: Sum| (window > 0.0).then(|| 100.0 * x.value() / window);
    let (idle_pct, host_pct, exposed_pct, waits_pct) = (pct(idle), pct(host), pct(exposed), pct(waits));
    let (i, h, x) = (idle_pct.unwrap_or(0.0), host_pct.unwrap_or(0.0), exposed_pct.unwrap_or(0.0));
    // Only a step time longer than the windows adds idle time: with several
    // GPUs behind one process's steps the windows' sum exceeds it.
    let steps_us = steps_us.filter(|&s| s.is_finite() && s > window);
    let steps_idle_pct = steps_us.map(|s| 100.0 * (idle.value() + s - window) / s);
    let host_bound = i >= IDLE_BOUND_PCT && h >= HOST_WAIT_SHARE * i && launch.clock_offset_us.is_none();
    let comm_bound = x >= EXPOSED_COMM_PCT;
    let kind = if kernels == 0 {
        VerdictKind::NoGpuKernels
    } else if host_bound && !(comm_bound && x > h) {
        VerdictKind::CpuLaunchBound
    } else if comm_bound {
        VerdictKind::CommunicationBound
    } else if i + waits_pct.unwrap_or(0.0) >= IDLE_BOUND_PCT || steps_idle_pct.is_some_and(|p| p >= IDLE_BOUND_PCT) {
        VerdictKind::GpuIdle
    } else {
        VerdictKind::GpuBound
    };
    let host_wait_call = calls
        .into_iter()
        .map(|(name, (wait, calls))| HostWaitCall { name: name.to_string(), calls, wait_us: wait.value() })
        .max_by(|a, b| fcmp(a.wait_us, b.wait_us).then_with(|| b.name.cmp(&a.name)));
    let mut v = Verdict {
        kind,
        window_us: window,
        idle_pct,
        host_wait_pct: host_pct,
        exposed_comm_pct: exposed_pct,
        kernel_p50_us: launch.kernel_p50_us,
        launch_p50_us: launch.launch_p50_us,
        delay_p50_us: launch.delays_on_one_clock().and_then(|d| d[0]),
        kernels_per_launch: (launch.launches > 0).then(|| launch.kernels as f64 / launch.launches as f64),
        clock_offset_us: launch.clock_offset_us,
        steps_us,
        steps_idle_pct,
        host_cause: None,
        longest_gap_us,
        device_wait_pct: waits_pct,
        host_wait_call,
    };
    // What keeps the host, from the verdict's own figures.
    if kind == VerdictKind::CpuLaunchBound {
        v.host_cause = v.host_figures().map(|f| match host_work_reason(f, v.gap_share(), v.call_share()) {
            None => HostCause::LaunchOverhead,
            Some(_) => HostCause::HostWork,
        });
    }
    v
}

/// Why the GPU's waits for the host are not launch overhead, if they are
/// not: checked in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostWorkReason {
    /// One runtime call holds [`ONE_CALL_SHARE`] of the host waits or more
    /// ([`Verdict::host_wait_call`]).
    OneCall,
    /// One idle gap holds [`ONE_GAP_SHARE`] of the idle time or more.
    OneGap,
    /// The calls launch graphs ([`GRAPH_KERNELS_PER_LAUNCH`]).
    GraphLaunches,
    /// The median kernel is queued ahead of the GPU
    /// ([`QUEUED_DELAY_RATIO`]).
    QueuedKernels,
    /// The median kernel is long beside the median launch call
    /// ([`LAUNCH_OVERHEAD_RATIO`]).
    LongKernels,
}

/// The launch figures [`host_work_reason`] reads.
#[derive(Clone, Copy, Debug)]
pub struct HostFigures {
    pub kernel_p50: f64,
    pub launch_p50: f64,
    /// `None` when not measured on one clock.
    pub delay_p50: Option<f64>,
    /// Kernels per launch call.
    pub per_launch: Option<f64>,
}

/// The longest gap's share of the idle time, when there is idle time.
fn gap_share(longest_gap_us: f64, idle_us: f64) -> Option<f64> {
    (idle_us > 0.0).then(|| longest_gap_us / idle_us)
}

/// [`HostWorkReason`] from the launch figures, the longest idle gap's
/// share of the idle time and the top runtime call's share of the host
/// waits; `None` for launch overhead.
pub fn host_work_reason(h: HostFigures, gap_share: Option<f64>, call_share: Option<f64>) -> Option<HostWorkReason> {
    let HostFigures { kernel_p50, launch_p50, delay_p50, per_launch } = h;
    if call_share.is_some_and(|c| c >= ONE_CALL_SHARE) {
        Some(HostWorkReason::OneCall)
    } else if gap_share.is_some_and(|g| g >= ONE_GAP_SHARE) {
        Some(HostWorkReason::OneGap)
    } else if per_launch.is_some_and(|k| k > GRAPH_KERNELS_PER_LAUNCH) {
        Some(HostWorkReason::GraphLaunches)
    } else if delay_p50.is_some_and(|d| d >= QUEUED_DELAY_RATIO * launch_p50) {
        Some(HostWorkReason::QueuedKernels)
    } else if kernel_p50 >= LAUNCH_OVERHEAD_RATIO * launch_p50 {
        Some(HostWorkReason::LongKernels)
    } else {
        None
    }
}

impl Verdict {
    /// Why a [`HostCause::HostWork`] stage's waits are not launch overhead.
    pub fn host_work_reason(&self) -> Option<HostWorkReason> {
        if self.host_cause != Some(HostCause::HostWork) {
            return None;
        }
        host_work_reason(self.host_figures()?, self.gap_share(), self.call_share())
    }

    /// The top runtime call's share of the stage's host waits.
    pub fn call_share(&self) -> Option<f64> {
        let host_us = self.host_wait_pct? * self.window_us / 100.0;
        let call = self.host_wait_call.as_ref()?;
        (host_us > 0.0).then(|| call.wait_us / host_us)
    }

    /// The launch figures that decide the host cause; `None` without
    /// matched launches.
    fn host_figures(&self) -> Option<HostFigures> {
        Some(HostFigures {
            kernel_p50: self.kernel_p50_us?,
            launch_p50: self.launch_p50_us?,
            delay_p50: self.delay_p50_us,
            per_launch: self.kernels_per_launch,
        })
    }

    /// The longest idle gap's share of the stage's idle time.
    pub fn gap_share(&self) -> Option<f64> {
        gap_share(self.longest_gap_us, self.idle_pct? * self.window_us / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(window: f64, idle: f64, host: f64, exposed: f64) -> Figures {
        Figures {
            kernels: 10,
            window_us: window,
            idle_us: idle,
            idle_host_wait_us: host,
            exposed_comm_us: exposed,
            ..Figures::default()
        }
    }

    fn kind(f: &[Figures]) -> VerdictKind {
        decide(f, &LaunchStats::default(), None).kind
    }

    #[test]
    fn each_verdict_kind() {
        assert_eq!(kind(&[]), VerdictKind::NoGpuKernels);
        assert_eq!(kind(&[fig(100.0, 38.0, 31.0, 0.0)]), VerdictKind::CpuLaunchBound);
        assert_eq!(kind(&[fig(100.0, 38.0, 10.0, 25.0)]), VerdictKind::CommunicationBound);
        assert_eq!(kind(&[fig(100.0, 38.0, 10.0, 5.0)]), VerdictKind::GpuIdle);
        assert_eq!(kind(&[fig(100.0, 5.0, 5.0, 5.0)]), VerdictKind::GpuBound);
        // Both host waits and exposed communication over their bars: the
        // larger share of the window decides.
        assert_eq!(kind(&[fig(100.0, 40.0, 20.0, 50.0)]), VerdictKind::CommunicationBound);
        assert_eq!(kind(&[fig(100.0, 60.0, 40.0, 30.0)]), VerdictKind::CpuLaunchBound);
    }

    #[test]
    fn thresholds_are_inclusive_and_gpus_sum() {
        assert_eq!(kind(&[fig(100.0, 20.0, 10.0, 0.0)]), VerdictKind::CpuLaunchBound);
        assert_eq!(kind(&[fig(100.0, 19.9, 19.9, 20.0)]), VerdictKind::CommunicationBound);
        // Two GPUs: 30 of 200 idle (15%) is GPU-bound although one GPU is 30% idle.
        let v = decide(&[fig(100.0, 30.0, 0.0, 0.0), fig(100.0, 0.0, 0.0, 0.0)], &LaunchStats::default(), None);
        assert_eq!((v.kind, v.idle_pct, v.window_us), (VerdictKind::GpuBound, Some(15.0), 200.0));
    }

    #[test]
    fn offset_clocks_leave_host_waits_unjudged() {
        let offset = LaunchStats { clock_offset_us: Some(146_000.0), ..LaunchStats::default() };
        let v = decide(&[fig(100.0, 38.0, 31.0, 0.0)], &offset, None);
        assert_eq!((v.kind, v.clock_offset_us), (VerdictKind::GpuIdle, Some(146_000.0)));
        // Communication is judged on the GPU's clock alone.
        assert_eq!(decide(&[fig(100.0, 38.0, 31.0, 25.0)], &offset, None).kind, VerdictKind::CommunicationBound);
    }

    #[test]
    fn steps_longer_than_the_window_count_their_idle_time() {
        let launch = LaunchStats::default();
        // 11 µs of kernels in a 33.7 ms step: not GPU-bound.
        let v = decide(&[fig(11.0, 0.0, 0.0, 0.0)], &launch, Some(33_716.8));
        assert_eq!((v.kind, v.steps_us), (VerdictKind::GpuIdle, Some(33_716.8)));
        assert!(v.steps_idle_pct.is_some_and(|p| p > 99.9), "{v:?}");
        assert!(v.idle_outside_window());
        // The window's own figures are unchanged.
        assert_eq!((v.window_us, v.idle_pct), (11.0, Some(0.0)));
        // Steps 10 % longer than a busy window: still GPU-bound.
        let v = decide(&[fig(100.0, 5.0, 0.0, 0.0)], &launch, Some(110.0));
        assert_eq!(v.kind, VerdictKind::GpuBound);
        assert!(v.steps_idle_pct.is_some_and(|p| (p - 100.0 * 15.0 / 110.0).abs() < 1e-9), "{v:?}");
        // Steps shorter than the windows (several GPUs behind one process)
        // change nothing.
        let v = decide(&[fig(100.0, 5.0, 0.0, 0.0), fig(100.0, 0.0, 0.0, 0.0)], &launch, Some(150.0));
        assert_eq!((v.kind, v.steps_us, v.steps_idle_pct), (VerdictKind::GpuBound, None, None));
        // Host waits inside the window still decide first.
        assert_eq!(decide(&[fig(100.0, 38.0, 31.0, 0.0)], &launch, Some(1000.0)).kind, VerdictKind::CpuLaunchBound);
        // Idle in its own window: rule 4, not rule 5.
        assert!(!decide(&[fig(100.0, 38.0, 10.0, 0.0)], &launch, Some(1000.0)).idle_outside_window());
    }

    #[test]
    fn host_waits_are_launch_overhead_only_when_kernels_are_as_short_as_launches() {
        let with = |kernel: f64, call: f64| LaunchStats {
            launches: 10,
            kernels: 10,
            kernel_p50_us: Some(kernel),
            launch_p50_us: Some(call),
            delay_p50_us: Some(3.0),
            ..LaunchStats::default()
        };
        let cause = |launch: &LaunchStats| decide(&[fig(100.0, 38.0, 31.0, 0.0)], launch, None).host_cause;
        // vLLM decode: 6 µs kernels behind 5 µs launch calls.
        assert_eq!(cause(&with(6.0, 5.0)), Some(HostCause::LaunchOverhead));
        // A ResNet training step: 194 µs kernels behind 9 µs calls, and
        // seconds-long gaps in which the host does something else.
        assert_eq!(cause(&with(194.0, 9.0)), Some(HostCause::HostWork));
        assert_eq!(cause(&with(10.0, 5.0)), Some(HostCause::HostWork));
        assert_eq!(cause(&LaunchStats::default()), None);
        let reason = |launch: &LaunchStats| decide(&[fig(100.0, 38.0, 31.0, 0.0)], launch, None).host_work_reason();
        assert_eq!(reason(&with(194.0, 9.0)), Some(HostWorkReason::LongKernels));
        // Short kernels queued milliseconds ahead of the GPU (an MI300X
        // vLLM trace: 5.8 µs kernels, 5.7 µs calls, a median delay of
        // 3.3 ms): the GPU waits in longer gaps of other host work.
        let queued = LaunchStats { delay_p50_us: Some(3293.0), ..with(5.8, 5.7) };
        assert_eq!(cause(&queued), Some(HostCause::HostWork));
        assert_eq!(reason(&queued), Some(HostWorkReason::QueuedKernels));
        // Under ten launch calls of delay is no queue.
        assert_eq!(cause(&LaunchStats { delay_p50_us: Some(56.0), ..with(5.8, 5.7) }), Some(HostCause::LaunchOverhead));
        // On two clocks the delay is not judged (nor are host waits).
        let figures = HostFigures { kernel_p50: 5.8, launch_p50: 5.7, delay_p50: None, per_launch: Some(1.0) };
        assert_eq!(host_work_reason(figures, None, None), None);
        // One gap holding half the idle time is no launches' pace.
        assert_eq!(host_work_reason(figures, Some(0.49), None), None);
        assert_eq!(host_work_reason(figures, Some(0.5), None), Some(HostWorkReason::OneGap));
        let mut one_gap = fig(100.0, 38.0, 31.0, 0.0);
        one_gap.longest_idle_gap_us = 20.0;
        let v = decide(&[one_gap], &with(6.0, 5.0), None);
        assert_eq!((v.host_cause, v.host_work_reason()), (Some(HostCause::HostWork), Some(HostWorkReason::OneGap)));
        let offset = LaunchStats { clock_offset_us: Some(-5000.0), ..queued.clone() };
        assert_eq!(decide(&[fig(100.0, 38.0, 31.0, 0.0)], &offset, None).delay_p50_us, None);
        // Graph launches (555 kernels from 12 calls) already batch the
        // launches: CUDA graphs are no advice for them.
        let graphs = LaunchStats { launches: 12, kernels: 555, ..with(5.2, 7.9) };
        assert_eq!(cause(&graphs), Some(HostCause::HostWork));
        assert_eq!(reason(&graphs), Some(HostWorkReason::GraphLaunches));
        assert_eq!(reason(&with(6.0, 5.0)), None);
        // One runtime call (hipFree) holding half the host waits or more is
        // the host's work, whatever the launch figures, and comes first.
        assert_eq!(host_work_reason(figures, Some(0.9), Some(0.49)), Some(HostWorkReason::OneGap));
        assert_eq!(host_work_reason(figures, Some(0.9), Some(0.5)), Some(HostWorkReason::OneCall));
        let mut in_free = fig(100.0, 38.0, 31.0, 0.0);
        let call = |wait_us: f64| HostWaitCall { name: "hipFree".into(), calls: 3, wait_us };
        in_free.host_wait_calls = vec![call(20.0), HostWaitCall { name: "hipMalloc".into(), ..call(1.0) }];
        let mut other_gpu = in_free.clone();
        other_gpu.host_wait_calls = vec![HostWaitCall { name: "hipMalloc".into(), ..call(30.0) }];
        // Summed over GPUs by name: hipMalloc 31 of 62 µs of host waits.
        let v = decide(&[in_free.clone(), other_gpu], &with(6.0, 5.0), None);
        assert_eq!(v.host_wait_call, Some(HostWaitCall { name: "hipMalloc".into(), calls: 6, wait_us: 31.0 }));
        assert_eq!(v.host_work_reason(), Some(HostWorkReason::OneCall));
        let v = decide(&[in_free], &with(6.0, 5.0), None);
        assert_eq!((v.host_cause, v.host_work_reason()), (Some(HostCause::HostWork), Some(HostWorkReason::OneCall)));
        // Only a host-bound stage has a cause.
        assert_eq!(decide(&[fig(100.0, 5.0, 5.0, 0.0)], &with(6.0, 5.0), None).host_cause, None);
    }

    #[test]
    fn empty_window_has_no_shares() {
        let v = decide(&[fig(0.0, 0.0, 0.0, 0.0)], &LaunchStats::default(), None);
        assert_eq!((v.kind, v.idle_pct, v.host_wait_pct), (VerdictKind::GpuBound, None, None));
    }
}
