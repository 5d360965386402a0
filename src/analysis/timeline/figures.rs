//! Busy / idle / kernel-class figures of a set of GPU events, overall and
//! per stage, in one pass over the events in start order, plus the
//! per-stream idle breakdown in a second pass.
//!
//! Overall, the window is first start to last merged end and idle time is
//! the window less busy time (HTA's temporal breakdown). Per stage, each
//! idle gap of the set's timeline (between merged busy groups of all
//! stages) goes to the stage of the kernel that ends it, and the stage's
//! window is its own busy time plus those gaps, so the stages of a trace
//! share its window instead of each counting the others' kernels as idle.
//! Computation / communication overlap is inclusion–exclusion over unions:
//! `comm + compute − (comm ∪ compute)`.
//!
//! A gap waits for the host when its next kernel's host-side call started
//! after the gap opened, up to [`LAUNCHED_WITHIN_US`] after that call ended:
//! a kernel that starts later than that sat on the device behind other work
//! (a stream waiting for an event, a copy) once the host had issued it, and
//! the rest of its gap is other idle time. A gap under [`KERNEL_WAIT_US`]
//! that does not wait for the host is a short gap between kernels.
//!
//! Per stream, each gap between consecutive kernels is host wait when the
//! later kernel's host-side call started after the earlier one ended, else
//! kernel wait below [`KERNEL_WAIT_US`], else other. Under the HTA bases the
//! previous kernel is the previous row, negative gaps count and a host wait
//! is the whole gap (HTA's arithmetic); under the trace basis it is the
//! latest end so far, only positive gaps count, and a host wait ends
//! [`LAUNCHED_WITHIN_US`] after the call ended, as for the whole GPU.

use rustc_hash::FxHashMap as HashMap;

use super::events::{Ev, EventSet};
use super::hostcalls::HostCalls;
use super::intervals::{KernelType, Sum, Union};
use super::types::{Figures, StreamIdle};

/// A gap between two kernels of a stream shorter than this is kernel wait
/// (HTA's `consecutive_kernel_delay`, compared with trace times in µs).
pub const KERNEL_WAIT_US: f64 = 30.0;

/// A kernel issued to an idle GPU starts within this time (µs) of the end
/// of its host-side call: the launch latency is tens of µs (the same bound
/// tells offset clocks apart, `launch::CLOCK_OFFSET_US`). Idle time past it
/// is not the host's: the kernel was issued and something on the device
/// held it.
pub const LAUNCHED_WITHIN_US: f64 = 1000.0;

/// The part of a gap from `prev_end` to `e.start` that waits for the host,
/// `e`'s host-side call having started after `prev_end`.
fn host_part(prev_end: f64, e: &Ev) -> f64 {
    let issued = e.host_end().max(e.host_ts) + LAUNCHED_WITHIN_US;
    e.start.min(issued) - prev_end
}

#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    kernels: u64,
    all: Union,
    compute: Union,
    comm: Union,
    memory: Union,
    comm_or_compute: Union,
    /// Every event but the device-side waits.
    work: Union,
    idle: Sum,
    host_wait: Sum,
    short_gap: Sum,
    longest_gap: f64,
}

impl Acc {
    fn push(&mut self, e: &Ev) {
        self.kernels += 1;
        self.all.push(e.start, e.end);
        if !e.device_wait() {
            self.work.push(e.start, e.end);
        }
        match e.kind() {
            KernelType::Computation => {
                self.compute.push(e.start, e.end);
                self.comm_or_compute.push(e.start, e.end);
            }
            KernelType::Communication => {
                self.comm.push(e.start, e.end);
                self.comm_or_compute.push(e.start, e.end);
            }
            // A kernel that rounding to whole µs leaves no time (its end
            // before its start) copies nothing in that time: no negative
            // memory time.
            KernelType::Memory if e.end >= e.start => {
                self.memory.push(e.start, e.end);
            }
            KernelType::Memory => {}
            KernelType::Other => {}
        }
    }

    /// Figures with the given window and idle time.
    fn figures(&self, window: f64, idle: f64) -> Figures {
        let busy = self.all.total();
        let compute = self.compute.total();
        let comm = self.comm.total();
        let overlap = (comm + compute - self.comm_or_compute.total()).max(0.0);
        let pct = |x: f64| (window > 0.0).then(|| 100.0 * (x / window));
        // Below 0 only where µs rounding (the `hta` basis) counts a kernel
        // that ends before it starts as negative busy time, and HTA raises:
        // no busy time is then outside computation. Computation stays the
        // union of its kernels, HTA's kernel-type figure.
        let non_compute = (window - compute - idle).max(0.0);
        Figures {
            kernels: self.kernels,
            window_us: window,
            busy_us: busy,
            idle_us: idle,
            compute_us: compute,
            non_compute_us: non_compute,
            idle_pct: pct(idle),
            compute_pct: pct(compute),
            non_compute_pct: pct(non_compute),
            comm_us: comm,
            memory_us: self.memory.total(),
            comm_comp_overlap_pct: (comm > 0.0).then(|| 100.0 * (overlap / comm)),
            exposed_comm_us: (comm - overlap).max(0.0),
            idle_host_wait_us: self.host_wait.value(),
            idle_short_gap_us: self.short_gap.value(),
            longest_idle_gap_us: self.longest_gap,
            device_wait_us: (busy - self.work.total()).max(0.0),
            idle_by_stream: Vec::new(),
            host_wait_calls: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct StreamAcc {
    seen: bool,
    host: Sum,
    kernel: Sum,
    other: Sum,
}

impl StreamAcc {
    fn add(&mut self, category: usize, gap: f64) {
        match category {
            0 => self.host.add(gap),
            1 => self.kernel.add(gap),
            _ => self.other.add(gap),
        }
    }

    fn row(&self, stream: String) -> StreamIdle {
        StreamIdle {
            stream,
            host_wait_us: self.host.value(),
            kernel_wait_us: self.kernel.value(),
            other_us: self.other.value(),
        }
    }
}

/// How the per-stream breakdown reads a set of events.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct IdleRule {
    /// HTA's arithmetic: previous row's end, negative gaps counted, only
    /// events of HTA's idle categories.
    pub hta: bool,
    /// Streams of different processes are different streams (labelled
    /// `pid:stream`).
    pub by_pid: bool,
}

/// Overall figures and figures per stage code (`None` for a stage without
/// events) of `events`, which must be in start order, with the `calls` the
/// host was in while they waited for it.
pub(crate) fn compute<'a>(
    set: &EventSet,
    pid_label: &dyn Fn(u32) -> String,
    events: impl Iterator<Item = &'a Ev> + Clone,
    rule: IdleRule,
    calls: &HostCalls,
) -> (Figures, [Option<Figures>; 3]) {
    let mut overall = Acc::default();
    let mut stage = [Acc::default(); 3];
    let mut whole = Union::default();
    let mut overall_calls = calls.sweep();
    let mut stage_calls = [calls.sweep(), calls.sweep(), calls.sweep()];
    for e in events.clone() {
        let s = e.stage().code() as usize;
        overall.push(e);
        stage[s].push(e);
        if let Some(prev_end) = whole.push(e.start, e.end) {
            let gap = e.start - prev_end;
            overall.idle.add(gap);
            stage[s].idle.add(gap);
            if gap > overall.longest_gap {
                overall.longest_gap = gap;
            }
            if gap > stage[s].longest_gap {
                stage[s].longest_gap = gap;
            }
            if e.host_ts > prev_end {
                let host = host_part(prev_end, e);
                overall.host_wait.add(host);
                stage[s].host_wait.add(host);
                // What the host did before it got to the next kernel's
                // call: after that call began, the GPU waits on the call
                // itself or on other work (a stream waiting for another),
                // not on what the host does meanwhile.
                let issued = e.start.min(e.host_ts);
                overall_calls.gap(prev_end, issued);
                stage_calls[s].gap(prev_end, issued);
            } else if gap < KERNEL_WAIT_US {
                overall.short_gap.add(gap);
                stage[s].short_gap.add(gap);
            }
        }
    }
    let window = whole.span();
    let mut all = overall.figures(window, window - whole.total());
    all.host_wait_calls = overall_calls.rows();
    let mut per: [Option<Figures>; 3] = [None, None, None];
    for (i, acc) in stage.iter().enumerate() {
        if acc.kernels > 0 {
            let idle = acc.idle.value();
            let mut fig = acc.figures(acc.all.total() + idle, idle);
            fig.host_wait_calls = stage_calls[i].rows();
            per[i] = Some(fig);
        }
    }

    // Per stream: slots in order of first appearance.
    let mut slot_of: HashMap<u64, usize> = HashMap::default();
    let mut keys: Vec<u64> = Vec::new();
    let mut prev_end: Vec<f64> = Vec::new();
    let mut accs: Vec<[StreamAcc; 4]> = Vec::new();
    for e in events.filter(|e| !rule.hta || e.in_idle()) {
        let lane = set.lane(e);
        let key = if rule.by_pid { ((lane.pid as u64) << 32) | lane.stream as u64 } else { lane.stream as u64 };
        let slot = *slot_of.entry(key).or_insert_with(|| {
            keys.push(key);
            prev_end.push(f64::NAN);
            accs.push([StreamAcc::default(); 4]);
            keys.len() - 1
        });
        let s = e.stage().code() as usize;
        let acc = &mut accs[slot];
        acc[3].seen = true;
        acc[s].seen = true;
        let prev = prev_end[slot];
        if !prev.is_nan() {
            let gap = e.start - prev;
            let host = e.host_ts > prev;
            let category = if host {
                0
            } else if gap < KERNEL_WAIT_US {
                1
            } else {
                2
            };
            if rule.hta {
                acc[3].add(category, gap);
                acc[s].add(category, gap);
            } else if gap > 0.0 {
                // Past the host's part, a host wait's gap is other idle time.
                let counted = if host { host_part(prev, e) } else { gap };
                acc[3].add(category, counted);
                acc[s].add(category, counted);
                if counted < gap {
                    acc[3].add(2, gap - counted);
                    acc[s].add(2, gap - counted);
                }
            }
        }
        prev_end[slot] = if rule.hta || prev.is_nan() { e.end } else { prev.max(e.end) };
    }
    let label = |key: u64| {
        let stream = &set.streams[(key & 0xffff_ffff) as usize];
        if rule.by_pid {
            format!("{}:{stream}", pid_label((key >> 32) as u32))
        } else {
            stream.clone()
        }
    };
    for (slot, &key) in keys.iter().enumerate() {
        all.idle_by_stream.push(accs[slot][3].row(label(key)));
        for (i, fig) in per.iter_mut().enumerate() {
            if let Some(fig) = fig {
                if accs[slot][i].seen {
                    fig.idle_by_stream.push(accs[slot][i].row(label(key)));
                }
            }
        }
    }
    (all, per)
}
