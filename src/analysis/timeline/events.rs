//! The GPU events of one [`Basis`]: which kernel rows count, on which clock,
//! with the start of each event's host-side call, sorted by start.
//!
//! - `trace`: the kernel-like rows the kernel table treats as GPU kernels
//!   (`gpu_kernel_mask`), of every process, except rows of a runtime or
//!   driver category (host calls that carry a stream, such as ROCm's
//!   `hipLaunchKernel` with `stream: "0x0"`); the trace's own times.
//! - `hta` / `hta_exact`: the rows with an integer `args.stream`, whatever
//!   their category (HTA's GPU events), less HTA's last-step filter: with at
//!   least two distinct `ProfilerStep` names, everything from the last one's
//!   start on is dropped, and so is a correlated GPU event whose host-side
//!   call is missing or that late. Under `hta` times are rounded to whole µs
//!   (start up, end down) when any event time in the file is fractional.
//!   `cpu_op` rows that carry a stream (Triton launchers) are not GPU events
//!   here, unlike in HTA.
//!
//! The host side of a correlation is every correlated CPU-side row: launch
//! calls, other runtime calls, CPU ops with a correlation, and kernel-like
//! rows outside the basis's GPU set; when several share a correlation the
//! launch call wins, then other runtime calls. An event without one has no
//! host-side start (HTA's lookup of `traceEvents[0]` for such events is not
//! followed).

use rustc_hash::FxHashMap as HashMap;

use super::corr::CorrTable;
use super::intervals::KernelType;
use super::types::{Basis, StepFilter};
use crate::analysis::kernels::extract::gpu_kernel_mask_without_host_calls;
use crate::analysis::kernels::names::names_device_wait;
use crate::analysis::stage::{RowStages, Stage};
use crate::columns::{Sym, Trace};
use crate::pysem::fcmp;

/// The categories whose events HTA's per-stream idle breakdown reads.
const HTA_IDLE_CATEGORIES: [&str; 7] =
    ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"];

const STEP_NAME: &str = "ProfilerStep";

const BIT_IDLE: u8 = 0x80;
/// A device-side wait by its name (`names_device_wait`).
const BIT_WAIT: u8 = 0x10;

/// One GPU event: 40 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ev {
    pub start: f64,
    pub end: f64,
    /// Start of the host-side call behind the event (basis clock); NaN when
    /// there is none.
    pub host_ts: f64,
    /// That call's duration (µs); NaN when there is none.
    host_dur: f32,
    /// The kernel row (`trace.kernels`).
    pub row: u32,
    /// Index into [`EventSet::lanes`]: its process and stream.
    pub lane: u32,
    /// Kernel type (2 bits), stage code (2 bits), a device-side wait (bit
    /// 4), read by the per-stream idle breakdown (top bit).
    bits: u8,
}

impl Ev {
    pub(crate) fn new(start: f64, end: f64, host: HostSide, kind: KernelType, stage: Stage, in_idle: bool) -> Ev {
        let bits = kind.code() | (stage.code() << 2) | if in_idle { BIT_IDLE } else { 0 };
        let mut e = Ev { start, end, host_ts: f64::NAN, host_dur: f32::NAN, row: 0, lane: 0, bits };
        e.set_host(host);
        e
    }

    /// Sets the host-side call behind the event.
    pub(crate) fn set_host(&mut self, host: HostSide) {
        self.host_ts = host.start;
        self.host_dur = (host.end - host.start) as f32;
    }

    /// End of the host-side call behind the event; NaN without one.
    pub(crate) fn host_end(&self) -> f64 {
        self.host_ts + f64::from(self.host_dur)
    }

    pub(crate) fn kind(&self) -> KernelType {
        KernelType::from_code(self.bits & 3)
    }

    /// Marks the event a device-side wait.
    pub(crate) fn set_device_wait(&mut self) {
        self.bits |= BIT_WAIT;
    }

    /// Whether the event is a device-side wait (no work).
    pub(crate) fn device_wait(&self) -> bool {
        self.bits & BIT_WAIT != 0
    }

    pub(crate) fn stage(&self) -> Stage {
        Stage::from_code((self.bits >> 2) & 3)
    }

    /// Read by the per-stream idle breakdown.
    pub(crate) fn in_idle(&self) -> bool {
        self.bits & BIT_IDLE != 0
    }
}

/// A process's stream: indexes into [`EventSet::pids`] and
/// [`EventSet::streams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Lane {
    pub pid: u32,
    pub stream: u32,
}

impl EventSet {
    /// `e`'s process and stream.
    pub(crate) fn lane(&self, e: &Ev) -> Lane {
        self.lanes[e.lane as usize]
    }

    /// The index into [`EventSet::pids`] of `e`'s process.
    pub(crate) fn pid(&self, e: &Ev) -> u32 {
        self.lane(e).pid
    }
}

/// How a basis reads event times.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Clock {
    pub round: bool,
}

impl Clock {
    /// (start, end) of an event.
    pub(crate) fn interval(self, ts: f64, dur: f64) -> (f64, f64) {
        let end = ts + dur;
        if self.round {
            (ts.ceil(), end.floor())
        } else {
            (ts, end)
        }
    }

    /// The start of an event.
    pub(crate) fn at(self, ts: f64) -> f64 {
        if self.round {
            ts.ceil()
        } else {
            ts
        }
    }
}

/// The GPU events of a basis, sorted by (start, row).
#[derive(Clone, Debug, Default)]
pub(crate) struct EventSet {
    pub events: Vec<Ev>,
    /// Pid strings by index, in order of first appearance in the rows.
    pub pids: Vec<Sym>,
    /// Stream labels by index.
    pub streams: Vec<String>,
    /// Each (pid index, stream index) pair the events run on.
    pub lanes: Vec<Lane>,
    pub clock: Clock,
    pub filter: Option<StepFilter>,
    /// The GPU events `filter` dropped, per stage code.
    pub filtered_by_stage: [u64; 3],
    pub skipped: u64,
}

/// The host-side call behind a GPU event: its start and end on the basis
/// clock (NaN without one).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct HostSide {
    pub start: f64,
    pub end: f64,
}

impl HostSide {
    pub(crate) const NONE: HostSide = HostSide { start: f64::NAN, end: f64::NAN };
}

/// Host side per correlation, on the basis clock: the preferred call, and
/// under the HTA bases also the earliest start (16 or 24 bytes a slot).
enum HostIndex {
    Preferred(CorrTable<HostSide>),
    WithEarliest(CorrTable<(HostSide, f64)>),
}

impl HostIndex {
    fn build(trace: &Trace, gpu_row: &[bool], clock: Clock, earliest: bool) -> HostIndex {
        // Sources in preference order (later ones win): CPU ops, kernel-like
        // rows outside the GPU set, runtime calls, launch calls.
        let rows = || {
            let c = &trace.cpu_ops;
            let k = &trace.kernels;
            let r = &trace.runtime;
            let l = &trace.launches;
            let ops = (0..c.len()).filter_map(|i| c.correlation.get(i).map(|corr| (corr, c.ts[i], c.dur[i])));
            let kernels = gpu_row
                .iter()
                .enumerate()
                .filter(|(_, &gpu)| !gpu)
                .filter_map(|(i, _)| k.correlation.get(i).map(|corr| (corr, k.ts[i], k.dur[i])));
            let runtime = (0..r.len()).map(|i| (r.correlation.get(i), r.ts[i], r.dur[i]));
            let launches = (0..l.len()).map(|i| (l.correlation.get(i), l.ts[i], l.dur[i]));
            ops.chain(kernels).chain(runtime).chain(launches).map(move |(corr, ts, dur)| {
                let (start, end) = clock.interval(ts, dur);
                (corr, HostSide { start, end: end.max(start) })
            })
        };
        if !earliest {
            return HostIndex::Preferred(CorrTable::build(rows, |old: &mut HostSide, new: HostSide| *old = new));
        }
        let both = || rows().map(|(corr, side)| (corr, (side, side.start)));
        HostIndex::WithEarliest(CorrTable::build(both, |old: &mut (HostSide, f64), new: (HostSide, f64)| {
            old.0 = new.0;
            if fcmp(new.1, old.1).is_lt() {
                old.1 = new.1;
            }
        }))
    }

    /// The preferred host side of `corr`.
    fn preferred(&self, corr: i64) -> Option<HostSide> {
        match self {
            HostIndex::Preferred(t) => t.get(corr),
            HostIndex::WithEarliest(t) => t.get(corr).map(|h| h.0),
        }
    }

    /// (preferred host side, earliest start) of `corr`; the earliest is the
    /// preferred one's start when the index was built without it.
    fn get(&self, corr: i64) -> Option<(HostSide, f64)> {
        match self {
            HostIndex::Preferred(t) => t.get(corr).map(|side| (side, side.start)),
            HostIndex::WithEarliest(t) => t.get(corr),
        }
    }
}

/// HTA's last-step bound: the latest start among `ProfilerStep` rows, when
/// there are at least two distinct such names.
fn last_step_start(trace: &Trace, clock: Clock) -> Option<f64> {
    let mut names: Vec<Sym> = Vec::new();
    let mut is_step: HashMap<Sym, bool> = HashMap::default();
    let mut last = f64::NEG_INFINITY;
    let a = &trace.annotations;
    let rows = (0..a.len()).map(|i| (a.name[i], a.ts[i])).chain((0..trace.step_marks.len()).map(|i| {
        let m = &trace.step_marks;
        (m.name[i], m.ts[i])
    }));
    for (name, ts) in rows {
        if !*is_step.entry(name).or_insert_with(|| trace.s(name).contains(STEP_NAME)) {
            continue;
        }
        if !names.contains(&name) {
            names.push(name);
        }
        let ts = clock.at(ts);
        if ts > last {
            last = ts;
        }
    }
    (names.len() >= 2).then_some(last)
}

/// `distributedInfo.rank` of the trace, when it is a non-negative integer.
pub fn trace_rank(trace: &Trace) -> Option<u64> {
    match trace.meta.distributed_info.as_ref()?.get("rank")? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Which kernel rows are GPU events of `basis`.
fn gpu_rows(trace: &Trace, basis: Basis) -> Vec<bool> {
    let k = &trace.kernels;
    match basis {
        Basis::Trace => gpu_kernel_mask_without_host_calls(trace),
        Basis::Hta | Basis::HtaExact => (0..k.len()).map(|i| k.stream_int(i) != -1).collect(),
    }
}

/// Builds the GPU events of `basis`, sorted by (start, row).
pub(crate) fn build(trace: &Trace, stages: &RowStages, basis: Basis) -> EventSet {
    use rayon::prelude::*;
    let k = &trace.kernels;
    let gpu = gpu_rows(trace, basis);
    let hta = basis != Basis::Trace;
    let clock = Clock { round: basis == Basis::Hta && trace.counts.ts_fractional && !trace.counts.ts_text };
    let mut set = if hta {
        // HTA's step filter reads the host side while it collects.
        let host = HostIndex::build(trace, &gpu, clock, true);
        collect(trace, stages, &gpu, clock, true, Some(&host), last_step_start(trace, clock))
    } else {
        // The host-side starts are looked up after, in parallel.
        let (host, mut set) = rayon::join(
            || HostIndex::build(trace, &gpu, clock, false),
            || collect(trace, stages, &gpu, clock, false, None, None),
        );
        set.events.par_iter_mut().for_each(|e| {
            let corr = k.correlation.get(e.row as usize);
            e.set_host(corr.and_then(|c| host.preferred(c)).unwrap_or(HostSide::NONE));
        });
        set
    };
    set.events.par_sort_unstable_by(|a, b| fcmp(a.start, b.start).then(a.row.cmp(&b.row)));
    set
}

/// The GPU events of the `gpu` rows in row order, read as the HTA bases
/// read them when `hta`; host-side starts from `host` (NaN without it),
/// less HTA's step filter when `last` is given.
fn collect(
    trace: &Trace,
    stages: &RowStages,
    gpu: &[bool],
    clock: Clock,
    hta: bool,
    host: Option<&HostIndex>,
    last: Option<f64>,
) -> EventSet {
    let k = &trace.kernels;
    let mut set = EventSet { clock, ..EventSet::default() };
    // Per symbol: kernel type code + 1 with the wait bit, and idle-category
    // flag + 1 (0: not looked at yet).
    let mut kinds: Vec<u8> = vec![0; trace.strings.len()];
    let mut idle_cat: Vec<u8> = vec![0; trace.strings.len()];
    let mut pid_of_thread: Vec<u32> = vec![u32::MAX; trace.threads.len()];
    let mut pid_index: HashMap<Sym, u32> = HashMap::default();
    let mut stream_index: HashMap<u64, u32> = HashMap::default();
    let mut lane_index: HashMap<Lane, u32> = HashMap::default();
    let mut dropped = 0u64;
    set.events.reserve_exact(gpu.iter().filter(|&&g| g).count());
    for (row, _) in gpu.iter().enumerate().filter(|(_, &g)| g) {
        let (start, end) = clock.interval(k.ts[row], k.dur[row]);
        if !start.is_finite() || !end.is_finite() {
            set.skipped += 1;
            continue;
        }
        let corr = k.correlation.get(row);
        let hosted = host.and_then(|h| corr.and_then(|c| h.get(c)));
        let mut host_side = hosted.map_or(HostSide::NONE, |h| h.0);
        if let Some(last) = last {
            let gpu_like = k.stream_int(row) >= 0 && corr.is_some_and(|c| c >= 0);
            let keep = if gpu_like { hosted.is_some_and(|h| h.1 < last) } else { start < last };
            if !keep {
                dropped += 1;
                set.filtered_by_stage[stages.get(row).code() as usize] += 1;
                continue;
            }
            if !(host_side.start < last) {
                host_side = HostSide::NONE;
            }
        }
        let name = k.name[row];
        let (kind, wait) = match kinds.get(name as usize).copied() {
            Some(0) | None => {
                let text = trace.s(name);
                let kind = if hta { KernelType::of(text) } else { KernelType::of_trace(text) };
                let wait = names_device_wait(text);
                if let Some(slot) = kinds.get_mut(name as usize) {
                    *slot = (kind.code() + 1) | if wait { BIT_WAIT } else { 0 };
                }
                (kind, wait)
            }
            Some(code) => (KernelType::from_code((code & !BIT_WAIT) - 1), code & BIT_WAIT != 0),
        };
        let in_idle = !hta || {
            let cat = k.cat(row);
            match idle_cat.get(cat as usize).copied() {
                Some(0) | None => {
                    let idle = HTA_IDLE_CATEGORIES.contains(&trace.s(cat));
                    if let Some(slot) = idle_cat.get_mut(cat as usize) {
                        *slot = idle as u8 + 1;
                    }
                    idle
                }
                Some(flag) => flag == 2,
            }
        };
        let mut ev = Ev::new(start, end, host_side, kind, stages.get(row), in_idle);
        ev.row = row as u32;
        if wait {
            ev.set_device_wait();
        }
        let thread = k.thread(row) as usize;
        if pid_of_thread[thread] == u32::MAX {
            let pid = trace.threads[thread].pid;
            let next = pid_index.len() as u32;
            pid_of_thread[thread] = *pid_index.entry(pid).or_insert_with(|| {
                set.pids.push(pid);
                next
            });
        }
        let pid = pid_of_thread[thread];
        let key = stream_key(trace, row, hta);
        let next = stream_index.len() as u32;
        let stream = *stream_index.entry(key).or_insert_with(|| {
            set.streams.push(stream_label(trace, key));
            next
        });
        let lane = Lane { pid, stream };
        let next = lane_index.len() as u32;
        ev.lane = *lane_index.entry(lane).or_insert_with(|| {
            set.lanes.push(lane);
            next
        });
        set.events.push(ev);
    }
    if let Some(last) = last {
        set.filter = Some(StepFilter { last_step_start_us: last, kernels_dropped: dropped });
    }
    set
}

/// A stream's identity: HTA's integer stream under the HTA bases;
/// otherwise the stream's text (stream 0 included), else the `cuda_stream`
/// text.
fn stream_key(trace: &Trace, row: usize, hta: bool) -> u64 {
    let k = &trace.kernels;
    let int = k.stream_int(row);
    if hta {
        return int as u32 as u64;
    }
    if let Some(s) = k.stream(row) {
        return (1 << 32) | s as u64;
    }
    if int >= 0 {
        return int as u64;
    }
    match k.cuda_stream(row) {
        Some(s) => (2 << 32) | s as u64,
        None => 3 << 32,
    }
}

fn stream_label(trace: &Trace, key: u64) -> String {
    let low = key as u32;
    match key >> 32 {
        0 => (low as i32).to_string(),
        1 | 2 => trace.s(low).to_string(),
        _ => "none".to_string(),
    }
}
