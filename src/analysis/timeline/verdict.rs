//! A stage's verdict: what bounds it, from its GPUs' figures summed.
//!
//! With `idle` the stage's idle share of its window, `host` the share
//! spent waiting for the host (idle gaps whose next kernel's host-side call
//! started after the gap opened) and `exposed` the share of communication
//! not overlapped by computation, the first rule that holds decides:
//! 1. no GPU events → [`VerdictKind::NoGpuKernels`];
//! 2. `idle` ≥ [`IDLE_BOUND_PCT`] and `host` ≥ [`HOST_WAIT_SHARE`] × `idle`
//!    → [`VerdictKind::CpuLaunchBound`];
//! 3. `exposed` ≥ [`EXPOSED_COMM_PCT`] → [`VerdictKind::CommunicationBound`];
//! 4. `idle` ≥ [`IDLE_BOUND_PCT`] → [`VerdictKind::GpuIdle`] (other waits);
//! 5. otherwise [`VerdictKind::GpuBound`].
//!
//! Rule 2 is skipped when the CPU's and the GPU's clocks look offset
//! ([`LaunchStats::clock_offset_us`]): a host wait compares a launch call's
//! time with the GPU's, which two clocks cannot tell.

use super::intervals::Sum;
use super::types::{Figures, LaunchStats, Verdict, VerdictKind};

/// Idle share of the window (percent) from which a stage counts as idle.
pub const IDLE_BOUND_PCT: f64 = 20.0;
/// Part of the idle time waiting for the host from which idle is blamed on
/// launching.
pub const HOST_WAIT_SHARE: f64 = 0.5;
/// Exposed-communication share of the window (percent) from which a stage
/// is communication-bound.
pub const EXPOSED_COMM_PCT: f64 = 20.0;

/// The verdict of a stage over its GPUs' figures.
pub fn decide<'a>(gpus: impl IntoIterator<Item = &'a Figures>, launch: &LaunchStats) -> Verdict {
    let (mut kernels, mut window, mut idle, mut host, mut exposed) =
        (0u64, Sum::default(), Sum::default(), Sum::default(), Sum::default());
    for f in gpus {
        kernels += f.kernels;
        window.add(f.window_us);
        idle.add(f.idle_us);
        host.add(f.idle_host_wait_us);
        exposed.add(f.exposed_comm_us);
    }
    let window = window.value();
    let pct = |x: Sum| (window > 0.0).then(|| 100.0 * x.value() / window);
    let (idle_pct, host_pct, exposed_pct) = (pct(idle), pct(host), pct(exposed));
    let (i, h, x) = (idle_pct.unwrap_or(0.0), host_pct.unwrap_or(0.0), exposed_pct.unwrap_or(0.0));
    let kind = if kernels == 0 {
        VerdictKind::NoGpuKernels
    } else if i >= IDLE_BOUND_PCT && h >= HOST_WAIT_SHARE * i && launch.clock_offset_us.is_none() {
        VerdictKind::CpuLaunchBound
    } else if x >= EXPOSED_COMM_PCT {
        VerdictKind::CommunicationBound
    } else if i >= IDLE_BOUND_PCT {
        VerdictKind::GpuIdle
    } else {
        VerdictKind::GpuBound
    };
    Verdict {
        kind,
        window_us: window,
        idle_pct,
        host_wait_pct: host_pct,
        exposed_comm_pct: exposed_pct,
        kernel_p50_us: launch.kernel_p50_us,
        launch_p50_us: launch.launch_p50_us,
        clock_offset_us: launch.clock_offset_us,
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
        decide(f, &LaunchStats::default()).kind
    }

    #[test]
    fn each_verdict_kind() {
        assert_eq!(kind(&[]), VerdictKind::NoGpuKernels);
        assert_eq!(kind(&[fig(100.0, 38.0, 31.0, 0.0)]), VerdictKind::CpuLaunchBound);
        assert_eq!(kind(&[fig(100.0, 38.0, 10.0, 25.0)]), VerdictKind::CommunicationBound);
        assert_eq!(kind(&[fig(100.0, 38.0, 10.0, 5.0)]), VerdictKind::GpuIdle);
        assert_eq!(kind(&[fig(100.0, 5.0, 5.0, 5.0)]), VerdictKind::GpuBound);
        // Launch-bound is checked before communication.
        assert_eq!(kind(&[fig(100.0, 40.0, 20.0, 50.0)]), VerdictKind::CpuLaunchBound);
    }

    #[test]
    fn thresholds_are_inclusive_and_gpus_sum() {
        assert_eq!(kind(&[fig(100.0, 20.0, 10.0, 0.0)]), VerdictKind::CpuLaunchBound);
        assert_eq!(kind(&[fig(100.0, 19.9, 19.9, 20.0)]), VerdictKind::CommunicationBound);
        // Two GPUs: 30 of 200 idle (15%) is GPU-bound although one GPU is 30% idle.
        let v = decide(&[fig(100.0, 30.0, 0.0, 0.0), fig(100.0, 0.0, 0.0, 0.0)], &LaunchStats::default());
        assert_eq!((v.kind, v.idle_pct, v.window_us), (VerdictKind::GpuBound, Some(15.0), 200.0));
    }

    #[test]
    fn offset_clocks_leave_host_waits_unjudged() {
        let offset = LaunchStats { clock_offset_us: Some(146_000.0), ..LaunchStats::default() };
        let v = decide(&[fig(100.0, 38.0, 31.0, 0.0)], &offset);
        assert_eq!((v.kind, v.clock_offset_us), (VerdictKind::GpuIdle, Some(146_000.0)));
        // Communication is judged on the GPU's clock alone.
        assert_eq!(decide(&[fig(100.0, 38.0, 31.0, 25.0)], &offset).kind, VerdictKind::CommunicationBound);
    }

    #[test]
    fn empty_window_has_no_shares() {
        let v = decide(&[fig(0.0, 0.0, 0.0, 0.0)], &LaunchStats::default());
        assert_eq!((v.kind, v.idle_pct, v.host_wait_pct), (VerdictKind::GpuBound, None, None));
    }
}
