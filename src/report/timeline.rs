//! The markdown of the timeline: the headline (one line per stage at the
//! top of the report) and the `Timeline` section (per stage the verdict, the
//! per-GPU figures, idle time by stream and cause, launch overhead and
//! steps). Reads [`crate::analysis::timeline::Timeline`] from the report.

use crate::analysis::kernels::names::names_device_wait;
use crate::analysis::stage::Stage;
use crate::analysis::timeline::verdict::GRAPH_KERNELS_PER_LAUNCH;
use crate::analysis::timeline::Basis;
use crate::analysis::timeline::{
    Figures, HostCause, HostWaitCall, HostWorkReason, StageTimeline, StepSource, Timeline, Verdict, VerdictKind,
    EXPOSED_COMM_PCT, ONE_GAP_SHARE,
};
use crate::report::markdown::{escape_md_cell, fixed, format_ms};
use crate::report::model::{KernelTableRow, TriageReport};

/// `12.3%`, or `-` when undefined.
fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{}%", fixed(v, 1)))
}

/// A time in the unit that suits it (`12.3 µs`, `228.84 ms`), or `-`.
fn us(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), crate::report::markdown::time)
}

/// The figures of a stage, its GPUs' summed.
pub(crate) fn stage_sum(stage: &StageTimeline) -> Figures {
    let mut f = Figures::default();
    let mut comm_overlap_num = 0.0;
    for g in &stage.gpus {
        let x = &g.figures;
        f.kernels += x.kernels;
        f.window_us += x.window_us;
        f.busy_us += x.busy_us;
        f.idle_us += x.idle_us;
        f.compute_us += x.compute_us;
        f.non_compute_us += x.non_compute_us;
        f.comm_us += x.comm_us;
        f.memory_us += x.memory_us;
        f.exposed_comm_us += x.exposed_comm_us;
        f.idle_host_wait_us += x.idle_host_wait_us;
        f.idle_short_gap_us += x.idle_short_gap_us;
        f.longest_idle_gap_us = f.longest_idle_gap_us.max(x.longest_idle_gap_us);
        f.device_wait_us += x.device_wait_us;
        comm_overlap_num += x.comm_us - x.exposed_comm_us;
    }
    let share = |v: f64| (f.window_us > 0.0).then(|| 100.0 * v / f.window_us);
    f.idle_pct = share(f.idle_us);
    f.compute_pct = share(f.compute_us);
    f.non_compute_pct = share(f.non_compute_us);
    f.comm_comp_overlap_pct = (f.comm_us > 0.0).then(|| 100.0 * comm_overlap_num / f.comm_us);
    f
}

/// A stage's idle time (µs, summed over its GPUs) split into waiting for
/// the host, short gaps between kernels and other waits, from the GPUs'
/// own idle gaps ([`Figures::idle_host_wait_us`],
/// [`Figures::idle_short_gap_us`]). (The per-stream figures count each
/// stream's own gaps, so on a trace whose streams take turns they far
/// exceed the GPU's idle time and cannot be compared with it.) `f` is the
/// stage's [`stage_sum`].
pub(crate) fn idle_split(f: &Figures) -> (f64, f64, f64) {
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let idle = finite(f.idle_us).max(0.0);
    let host = finite(f.idle_host_wait_us).clamp(0.0, idle);
    let short = finite(f.idle_short_gap_us).clamp(0.0, idle - host);
    (host, short, idle - host - short)
}

/// Share of a stage's idle time from which its largest cause is named
/// alone ([`idle_cause`]).
const DOMINANT_CAUSE: f64 = 0.75;

/// What a stage's idle time went to, in words: its largest cause, or, when
/// that is under [`DOMINANT_CAUSE`] of the idle time, each cause with its
/// points of the window, largest first, leaving out those that round to 0.0
/// (`waiting for the host 5.7 points, short gaps between kernels 5.0, other
/// waits 0.2`), so that the points add up to the idle share. Idle time that
/// rounds to 0.0% of the window has no cause (`None`).
pub(crate) fn idle_cause(stage: &StageTimeline) -> Option<String> {
    let f = stage_sum(stage);
    let (host, kernel, other) = idle_split(&f);
    let idle = host + kernel + other;
    let window = f.window_us;
    let points = |us: f64| if window > 0.0 { 100.0 * us / window } else { 0.0 };
    if idle <= 0.0 || points(idle) < 0.05 {
        return None;
    }
    if stage.launch.clock_offset_us.is_some() {
        return Some("cause not judged: the CPU's and GPU's clocks look offset".into());
    }
    // Largest first; equal parts keep this order.
    let mut parts = [(host, "waiting for the host"), (kernel, "short gaps between kernels"), (other, "other waits")];
    parts.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (first, first_name) = parts[0];
    if first >= DOMINANT_CAUSE * idle {
        return Some(first_name.into());
    }
    let shown: Vec<String> = parts
        .iter()
        .filter(|(us, _)| points(*us) >= 0.05)
        .enumerate()
        .map(|(i, &(us, name))| format!("{name} {}{}", fixed(points(us), 1), if i == 0 { " points" } else { "" }))
        .collect();
    Some(shown.join(", "))
}

/// A headline's idle figure: `idle 10.9% (waiting for the host 5.7 points,
/// …)`, and for a stage whose steps last longer than its busy kernels'
/// window, the steps' idle share too (`idle 0.0% of the window but 100.0%
/// of the steps' 33.72 ms`), as its verdict reads.
pub(crate) fn idle_text(stage: &StageTimeline) -> String {
    let f = stage_sum(stage);
    let v = &stage.verdict;
    let steps = match (v.idle_outside_window(), v.steps_us) {
        (true, Some(steps)) => format!(" but {} of the steps' {}", pct(v.steps_idle_pct), format_ms(steps)),
        _ => String::new(),
    };
    match idle_cause(stage) {
        None if !steps.is_empty() => format!("idle {} of the window{steps}", pct(f.idle_pct)),
        cause => format!("idle {} ({}){steps}", pct(f.idle_pct), cause.as_deref().unwrap_or("none")),
    }
}

/// The one-line verdict of a stage, e.g. `decode: GPU idle 38.0% of the
/// window, 31.0 points of it waiting for the host → CPU launch-bound:
/// kernels about as short as their launch calls (median kernel 4.0 µs,
/// median launch 9.0 µs); fewer, larger launches (CUDA graphs, fusion) cut
/// it`.
pub fn verdict_line(stage: &StageTimeline) -> String {
    let line = verdict_text(stage);
    let line = match one_gap_note(stage) {
        Some(note) => format!("{line}; {note}"),
        None => line,
    };
    match little_work_note(stage) {
        Some(note) => format!("{line} ({note})"),
        None => line,
    }
}

/// A stage with GPU work below these (kernels, or µs of window) is too
/// small for its verdict to say much: a few copies beside the named
/// stages, a trace cut to a moment.
const FEW_KERNELS: u64 = 10;
const SHORT_WINDOW_US: f64 = 1_000.0;

/// For a stage with fewer than [`FEW_KERNELS`] kernels or a window under
/// [`SHORT_WINDOW_US`], the caution its verdict carries; `None` otherwise
/// and for a stage without kernels.
fn little_work_note(stage: &StageTimeline) -> Option<String> {
    let v = &stage.verdict;
    let kernels: u64 = stage.gpus.iter().map(|g| g.figures.kernels).sum();
    if v.kind == VerdictKind::NoGpuKernels || (kernels >= FEW_KERNELS && v.window_us >= SHORT_WINDOW_US) {
        return None;
    }
    let count = crate::report::diff::kernels_count(usize::try_from(kernels).unwrap_or(usize::MAX));
    Some(format!("judged on {count} in a {} window: too little GPU work for it to say much", format_ms(v.window_us)))
}

/// For a stage idle on other waits on its window, the note that one gap
/// holds [`ONE_GAP_SHARE`] or more of the idle time (a host-bound stage's
/// verdict says so itself).
fn one_gap_note(stage: &StageTimeline) -> Option<String> {
    let v = &stage.verdict;
    let share = v.gap_share()?;
    (v.kind == VerdictKind::GpuIdle && !v.idle_outside_window() && share >= ONE_GAP_SHARE)
        .then(|| one_gap_text(v.longest_gap_us, share))
}

/// `one gap of 522.00 ms holds 95% of the idle time: …`.
fn one_gap_text(gap_us: f64, share: f64) -> String {
    format!(
        "one gap of {} holds {}% of the idle time: look at what happened then (a warm-up, a synchronization, the profiler starting) before the steady state",
        format_ms(gap_us),
        fixed(100.0 * share, 0)
    )
}

/// The runtime call a host-bound stage's launching threads were in for
/// most of the GPU's host waits, with what usually makes a program call it.
/// The line is plain text in every format, so a name that is not a plain
/// identifier (as runtime calls are) is not quoted.
fn one_call_text(call: &HostWaitCall, share: f64, gap: Option<(f64, f64)>) -> String {
    let plain = !call.name.is_empty() && call.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let name = if plain { call.name.as_str() } else { "one runtime call" };
    let head = format!(
        "the host was in {name} for {}% of those waits ({} call{}, {})",
        fixed(100.0 * share, 0),
        call.calls,
        if call.calls == 1 { "" } else { "s" },
        format_ms(call.wait_us),
    );
    // One gap holding most of the idle time is a one-off (a warm-up's
    // first allocations, say), whatever call it was spent in.
    if let Some((gap_us, gap_share)) = gap.filter(|g| g.1 >= ONE_GAP_SHARE) {
        return format!("{head}, and {}", one_gap_text(gap_us, gap_share));
    }
    let n = call.name.to_ascii_lowercase();
    let why = if n.contains("synchronize") {
        "the host waits there for the device to finish (a .item(), .cpu() or .tolist() read, torch.cuda.synchronize()): read results less often or later"
    } else if n.contains("free") || n.contains("malloc") || n.contains("alloc") {
        "allocating and freeing memory stalls the device and the host: keep memory in PyTorch's caching allocator (no torch.cuda.empty_cache() in the loop, PYTORCH_NO_CUDA_MEMORY_CACHING unset, less memory pressure)"
    } else if n.contains("memcpy") && !n.contains("async") {
        "a synchronous copy holds the host until it is done: copy from pinned memory with non_blocking=True"
    } else if n.contains("memcpy") {
        "an asynchronous copy blocks the host when its host memory is not pinned: pin it"
    } else {
        "look at why the host makes that call between launches"
    };
    format!("{head}; {why}")
}

/// How often a launch-bound stage's host makes a launch call (its window
/// over the launch calls behind its matched kernels), and whether the call
/// is most of that time or the host's work between calls is: `, the host
/// making a launch call every 110.0 µs, mostly work between the calls
/// (Python, framework dispatch)`.
fn launch_pace(stage: &StageTimeline) -> String {
    let (v, l) = (&stage.verdict, &stage.launch);
    if l.launches == 0 || v.window_us <= 0.0 {
        return String::new();
    }
    let pace = v.window_us / l.launches as f64;
    let beside = match v.launch_p50_us {
        Some(call) if pace >= 2.0 * call => ", mostly work between the calls (Python, framework dispatch)",
        _ => "",
    };
    format!(", the host making a launch call every {}{beside}", us(Some(pace)))
}

/// For a launch-bound stage whose exposed communication passes its own bar
/// too (the host waits being the larger share), that it comes next.
fn comm_next(v: &Verdict) -> String {
    match v.exposed_comm_pct.filter(|&x| x >= EXPOSED_COMM_PCT) {
        Some(x) => format!("; communication that no computation hides, {} of the window, comes next", pct(Some(x))),
        None => String::new(),
    }
}

fn verdict_text(stage: &StageTimeline) -> String {
    let v = &stage.verdict;
    let name = stage.stage.label();
    let idle = pct(v.idle_pct);
    let host = v.host_wait_pct.map_or_else(|| "-".to_string(), |h| fixed(h, 1));
    match v.kind {
        VerdictKind::NoGpuKernels => format!("{name}: no GPU kernels"),
        VerdictKind::CpuLaunchBound => {
            let medians = format!("median kernel {}, median launch {}", us(v.kernel_p50_us), us(v.launch_p50_us));
            let waits = format!("{name}: GPU idle {idle} of the window, {host} points of it waiting for the host");
            let host_work = |why: String| {
                format!("{waits} → host-bound: {why}, so the host is busy elsewhere between launches (synchronization, scheduling, data loading, Python)")
            };
            let line = match (v.host_cause, v.host_work_reason()) {
                (Some(HostCause::LaunchOverhead), _) => format!(
                    "{waits} → CPU launch-bound: kernels about as short as their launch calls ({medians}){}; fewer, larger launches (CUDA graphs, torch.compile, fusion) cut it",
                    launch_pace(stage)
                ),
                (Some(HostCause::HostWork), Some(HostWorkReason::OneCall)) => match &v.host_wait_call {
                    Some(call) => format!("{waits} → host-bound: {}", one_call_text(call, v.call_share().unwrap_or(0.0), v.gap_share().map(|g| (v.longest_gap_us, g)))),
                    None => host_work("one runtime call holds most of the waits".to_string()),
                },
                (Some(HostCause::HostWork), Some(HostWorkReason::OneGap)) => {
                    format!("{waits} → host-bound: {}", one_gap_text(v.longest_gap_us, v.gap_share().unwrap_or(0.0)))
                }
                (Some(HostCause::HostWork), Some(HostWorkReason::GraphLaunches)) => host_work(format!(
                    "the calls already launch graphs ({} kernels a call; {medians})",
                    v.kernels_per_launch.map_or_else(|| "-".to_string(), |k| fixed(k, 1))
                )),
                (Some(HostCause::HostWork), Some(HostWorkReason::QueuedKernels)) => format!(
                    "{waits} → host-bound: the host launches in bursts that queue kernels ahead of the GPU (median launch delay {}; {medians}) and leaves it waiting between bursts while it works elsewhere (synchronization, scheduling, data loading, Python)",
                    us(v.delay_p50_us)
                ),
                (Some(HostCause::HostWork), _) => {
                    host_work(format!("launch calls are short beside the kernels ({medians})"))
                }
                (None, _) => format!("{waits} → CPU launch-bound ({medians})"),
            };
            line + &comm_next(v)
        }
        VerdictKind::CommunicationBound => format!(
            "{name}: {} of the window is communication that no computation hides → communication-bound (GPU idle {idle}); a collective's kernel runs until the last rank joins it, so part of that may be waiting for a slower rank: a batch over the job's traces (torchtriage batch DIR) names the rank the others wait on",
            pct(v.exposed_comm_pct)
        ),
        VerdictKind::GpuIdle if v.idle_outside_window() => format!(
            "{name}: GPU idle {idle} of the window but {} of the steps' time: the kernels' window is {} of {} of steps → GPU idle outside the kernels' window (host work, or waits, before the first kernel or after the last)",
            pct(v.steps_idle_pct),
            format_ms(v.window_us),
            v.steps_us.map_or_else(|| "-".to_string(), format_ms),
        ),
        VerdictKind::GpuIdle if v.idle_by_device_waits() => format!(
            "{name}: GPU idle {idle} of the window and busy with nothing but device-side waits {} more (a stream held until another stream or an event gets there) → GPU idle on waits between streams: look at what the waiting streams wait for",
            pct(v.device_wait_pct)
        ),
        VerdictKind::GpuIdle => match v.clock_offset_us {
            Some(offset) => format!(
                "{name}: GPU idle {idle} of the window → GPU idle; waits for the host not judged: {}",
                clock_offset_text(offset)
            ),
            None => format!(
                "{name}: GPU idle {idle} of the window, {host} points of it waiting for the host → GPU idle on other waits (synchronization, data, the previous kernel)"
            ),
        },
        VerdictKind::GpuBound => match v.device_wait_pct.filter(|&w| w >= WAITS_NOTED_PCT) {
            Some(w) => format!(
                "{name}: GPU busy, idle {idle} of the window and {} more with nothing but device-side waits running → GPU-bound: the kernels themselves are the time to cut, the waits aside",
                pct(Some(w))
            ),
            None => {
                format!("{name}: GPU busy, idle {idle} of the window → GPU-bound: the kernels themselves are the time to cut")
            }
        },
    }
}

/// Busy time with nothing but device-side waits running, as a share of the
/// window, from which a GPU-bound verdict names it.
const WAITS_NOTED_PCT: f64 = 1.0;

/// A stage's top kernel for the headline: the largest row of the kernel
/// table that is not a device-side wait (a stream waiting is no work to
/// cut), and the largest wait when one ranked above it.
pub(crate) struct TopKernel<'a> {
    pub name: &'a str,
    pub share_pct: f64,
    /// A device-side wait with more kernel time than `name`.
    pub wait_above: Option<(&'a str, f64)>,
}

/// The top kernel of a stage in the kernel table.
pub(crate) fn top_kernel(r: &TriageReport, stage: Stage) -> Option<TopKernel<'_>> {
    // Each table's rows are ranked by GPU time, largest first.
    let tables = || r.kernel_tables.iter().filter(move |t| t.stage == stage);
    let by_time = |a: &&KernelTableRow, b: &&KernelTableRow| a.total_us.total_cmp(&b.total_us);
    let work = tables().filter_map(|t| t.rows.iter().find(|row| !names_device_wait(&row.kernel))).max_by(by_time);
    let first = tables().filter_map(|t| t.rows.first()).max_by(by_time)?;
    let (top, wait_above) = match work {
        Some(top) if names_device_wait(&first.kernel) => (top, Some(first)),
        Some(top) => (top, None),
        None => (first, None),
    };
    Some(TopKernel {
        name: &top.kernel,
        share_pct: top.share_pct,
        wait_above: wait_above.map(|w| (&*w.kernel, w.share_pct)),
    })
}

impl TopKernel<'_> {
    /// `merge (31.8%; event_wait, 43.4%, is a device-side wait, not work)`,
    /// each name shown by `show`.
    pub(crate) fn text(&self, show: impl Fn(&str) -> String) -> String {
        match self.wait_above {
            Some((wait, wait_share)) => format!(
                "{} ({}%; {}, {}%, is a device-side wait, not work)",
                show(self.name),
                fixed(self.share_pct, 1),
                show(wait),
                fixed(wait_share, 1)
            ),
            None => format!("{} ({}%)", show(self.name), fixed(self.share_pct, 1)),
        }
    }
}

/// Kernel names in the headline are cut to this many characters.
const HEADLINE_NAME_CHARS: usize = 60;

fn short_name(name: &str) -> String {
    if name.chars().count() <= HEADLINE_NAME_CHARS {
        return name.to_string();
    }
    let head: String = name.chars().take(HEADLINE_NAME_CHARS - 1).collect();
    format!("{head}…")
}

/// One line per stage: window, busy and idle share (with the idle time's
/// main cause), communication/computation overlap and the top kernel, its
/// name escaped for a markdown table cell.
pub fn headline(r: &TriageReport, t: &Timeline) -> Vec<String> {
    headline_with(r, t, |n| escape_md_cell(&short_name(n)))
}

/// [`headline`] with the top kernel's name as plain text (shortened), for
/// a renderer that escapes the whole line itself.
pub fn headline_plain(r: &TriageReport, t: &Timeline) -> Vec<String> {
    headline_with(r, t, short_name)
}

fn headline_with(r: &TriageReport, t: &Timeline, name: impl Fn(&str) -> String) -> Vec<String> {
    let mut lines = vec!["Headline".to_string()];
    if t.stages.is_empty() {
        lines.push(format!("- {}", no_kernels_headline(t)));
        return lines;
    }
    for stage in &t.stages {
        let f = stage_sum(stage);
        let busy = (f.window_us > 0.0).then(|| 100.0 * f.busy_us / f.window_us);
        let top = top_kernel(r, stage.stage).map_or_else(|| "-".to_string(), |top| top.text(&name));
        lines.push(format!(
            "- {}: window {}, GPU busy {}, {}, comm/compute overlap {}, top kernel {}",
            stage.stage.label(),
            format_ms(f.window_us),
            pct(busy),
            idle_text(stage),
            pct(f.comm_comp_overlap_pct),
            top
        ));
    }
    lines.extend(basis_note(t).map(|n| format!("- {n}")));
    lines
}

/// What a timeline on one of HTA's bases counts differently from the
/// trace as a viewer shows it (rounded times, the events from the last
/// `ProfilerStep` on left out), so that a report made with
/// `--timeline-basis hta` cannot pass for a default one; `None` on the
/// trace's own basis.
pub(crate) fn basis_note(t: &Timeline) -> Option<String> {
    let name = match t.basis {
        Basis::Trace => return None,
        Basis::Hta => "hta",
        Basis::HtaExact => "hta-exact",
    };
    let mut parts = Vec::new();
    if t.rounded_to_us {
        parts.push("times rounded to whole µs".to_string());
    }
    if let Some(f) = t.step_filter.as_ref().filter(|f| f.kernels_dropped > 0) {
        parts.push(format!(
            "{} GPU {} from the last ProfilerStep's start on left out",
            f.kernels_dropped,
            if f.kernels_dropped == 1 { "event" } else { "events" }
        ));
    }
    let how = if parts.is_empty() { String::new() } else { format!(": {}", parts.join("; ")) };
    Some(format!(
        "timeline basis {name} (Holistic Trace Analysis' figures){how}; the kernel, overlap and fuse tables cover every kernel"
    ))
}

fn figures_table(stage: &StageTimeline) -> Vec<String> {
    let mut lines = vec![
        "| GPU (pid) | Rank | Kernels | Window | Busy | Idle | Compute | Non-compute | Communication | Comm/compute overlap |"
            .to_string(),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |".to_string(),
    ];
    for g in &stage.gpus {
        let f = &g.figures;
        let busy = (f.window_us > 0.0).then(|| 100.0 * f.busy_us / f.window_us);
        lines.push(format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape_md_cell(&g.pid),
            g.rank.map_or_else(|| "-".to_string(), |r| r.to_string()),
            f.kernels,
            format_ms(f.window_us),
            pct(busy),
            pct(f.idle_pct),
            pct(f.compute_pct),
            pct(f.non_compute_pct),
            format_ms(f.comm_us),
            pct(f.comm_comp_overlap_pct)
        ));
    }
    lines
}

/// The words that mark every host-wait figure when the CPU's and GPU's
/// clocks look offset, since a host wait then compares two clocks. Every
/// renderer labels the figure with this mark, so they cannot disagree.
pub(crate) fn clocks_offset_mark(stage: &StageTimeline) -> &'static str {
    if stage.launch.clock_offset_us.is_some() {
        " (clocks offset)"
    } else {
        ""
    }
}

fn idle_table(stage: &StageTimeline) -> Vec<String> {
    let mut lines = vec![
        format!("| GPU (pid) | Stream | Host wait{} | Kernel wait | Other |", clocks_offset_mark(stage)),
        "| --- | --- | ---: | ---: | ---: |".to_string(),
    ];
    for g in &stage.gpus {
        for s in &g.figures.idle_by_stream {
            lines.push(format!(
                "| {} | {} | {} | {} | {} |",
                escape_md_cell(&g.pid),
                escape_md_cell(&s.stream),
                format_ms(s.host_wait_us),
                format_ms(s.kernel_wait_us),
                format_ms(s.other_us)
            ));
        }
    }
    lines
}

pub(crate) fn step_source_name(s: StepSource) -> &'static str {
    match s {
        StepSource::ProfilerStep => "ProfilerStep annotations",
        StepSource::SglangStep => "SGLang step[...] annotations",
        StepSource::VllmExecute => "vLLM execute_... annotations",
        StepSource::VllmExecuteModelFrame => "vLLM model-runner execute_model frames",
        StepSource::SglangForwardFrame => "SGLang forward_batch_generation frames",
    }
}

/// Why launch delays and host waits cannot be trusted when the CPU's and
/// the GPU's clocks look `offset_us` apart.
pub(crate) fn clock_offset_text(offset_us: f64) -> String {
    let shown = format_ms(offset_us.abs());
    if offset_us > 0.0 {
        format!("the CPU's and GPU's clocks look offset (no kernel starts sooner than {shown} after its launch call ends), so launch delays and host waits compare two clocks")
    } else {
        format!("the CPU's and GPU's clocks look offset (a kernel starts {shown} before its launch call), so launch delays and host waits compare two clocks")
    }
}

/// What the launch figures of a stage whose calls launch graphs compare
/// (`graph launches, 46.2 kernels a call: …`); `None` for one kernel a
/// call. A call that launches a graph starts many kernels: each is compared
/// with that one call, so long delays and a high short-kernel share say
/// nothing of per-kernel launch overhead.
pub(crate) fn graph_launch_note(stage: &StageTimeline) -> Option<String> {
    let per_call = stage.verdict.kernels_per_launch.filter(|&k| k > GRAPH_KERNELS_PER_LAUNCH)?;
    Some(format!(
        "graph launches, {} kernels a call: delays and the share shorter than their launch call compare each kernel with its graph's call",
        fixed(per_call, 1)
    ))
}

/// The launch-overhead line of a stage.
pub(crate) fn launch_line(stage: &StageTimeline) -> String {
    let l = &stage.launch;
    if l.kernels == 0 {
        return "Launch: no kernel matched a launch call (no runtime events, or CUDA graphs)".into();
    }
    // Delays across two clocks are not shown.
    let delays = match l.clock_offset_us {
        Some(offset) => format!("launch delay not shown: {}", clock_offset_text(offset)),
        None => {
            format!("launch delay p50 {} / p90 {} / p99 {}", us(l.delay_p50_us), us(l.delay_p90_us), us(l.delay_p99_us))
        }
    };
    let graphs = graph_launch_note(stage).map_or_else(String::new, |note| format!(" ({note})"));
    format!(
        "Launch: {} launch calls for the {} kernels matched to them{graphs}, {} of CPU time in the calls; {delays}; median kernel {}, median launch call {}; {} of kernels shorter than their launch call; {} kernels per step",
        l.launches,
        l.kernels,
        format_ms(l.cpu_us),
        us(l.kernel_p50_us),
        us(l.launch_p50_us),
        pct(l.short_kernel_pct),
        l.kernels_per_step.map_or_else(|| "-".to_string(), |k| fixed(k, 1))
    )
}

/// For a stage whose steps take less than half the time its kernels span
/// on one GPU, why: the clocks look offset; the steps launched only part of
/// the stage's kernels (under nine in ten), so they time part of its work;
/// else the step time is the host's pace, the GPU running behind the host.
pub(crate) fn steps_pace_note(stage: &StageTimeline) -> Option<String> {
    let steps = stage.steps.total_us()?;
    let window = stage.gpus.iter().map(|g| g.figures.window_us).filter(|w| w.is_finite()).fold(0.0, f64::max);
    if !(steps > 0.0 && 2.0 * steps < window) {
        return None;
    }
    let span = format!(
        "the steps take {} on the host while the stage's kernels span {} on the GPU",
        format_ms(steps),
        format_ms(window)
    );
    let kernels = stage.kernels();
    let inside = stage.kernels_launched_in_steps().filter(|_| stage.steps_launch_part_of_the_work());
    Some(if stage.launch.clock_offset_us.is_some() {
        format!("{span}, so the step time is the host's pace, not the GPU's (the clocks look offset)")
    } else if let Some(inside) = inside {
        format!(
            "{span}, and only {inside:.0} of the stage's {kernels} kernels were launched inside them: the steps time part of the stage's work, not all of it"
        )
    } else {
        format!("{span}, so the step time is the host's pace, not the GPU's: the GPU runs behind the host")
    })
}

/// The steps line of a stage, step names escaped for markdown.
pub(crate) fn steps_line(stage: &StageTimeline) -> String {
    steps_line_with(stage, escape_md_cell)
}

/// [`steps_line`] with the step names as they are, for a renderer that
/// escapes the whole line itself.
pub(crate) fn steps_line_plain(stage: &StageTimeline) -> String {
    steps_line_with(stage, str::to_string)
}

fn steps_line_with(stage: &StageTimeline, name: impl Fn(&str) -> String) -> String {
    let s = &stage.steps;
    let Some(source) = s.source else {
        return "Steps: none found (no ProfilerStep, SGLang or vLLM step annotations)".into();
    };
    let idle = without_gpu_work_note(s).map_or_else(String::new, |n| format!("; {n}"));
    if s.count == 0 {
        return format!("Steps: none in this stage ({}){idle}", step_source_name(source));
    }
    let slowest: Vec<String> = s
        .slowest
        .iter()
        .map(|x| format!("{} at ts {} ({})", name(&x.name), fixed(x.start_us, 3), format_ms(x.dur_us)))
        .collect();
    let pace = steps_pace_note(stage).map_or_else(String::new, |n| format!("; {n}"));
    format!(
        "Steps ({}): {}, mean {}, p50 {}, p90 {}, max {}; slowest: {}{pace}{idle}",
        step_source_name(source),
        s.count,
        s.mean_us.map_or_else(|| "-".to_string(), format_ms),
        s.p50_us.map_or_else(|| "-".to_string(), format_ms),
        s.p90_us.map_or_else(|| "-".to_string(), format_ms),
        s.max_us.map_or_else(|| "-".to_string(), format_ms),
        slowest.join(", ")
    )
}

/// What the steps line says of the steps that launched no GPU work, which
/// no stage counts (`more` after the stage's own steps); `None` when every
/// step launched some.
pub(crate) fn without_gpu_work_note(s: &crate::analysis::timeline::Steps) -> Option<String> {
    let more = if s.count > 0 { " more" } else { "" };
    match s.without_gpu_work {
        0 => None,
        1 => Some(format!("1{more} step launched no GPU work, so no stage counts it")),
        n => Some(format!("{n}{more} steps launched no GPU work, so no stage counts them")),
    }
}

/// The headline of a timeline without GPU kernels: none in the trace, or
/// none whose times it could place (the kernel table still lists those).
pub fn no_kernels_headline(t: &Timeline) -> String {
    match t.skipped_non_finite {
        0 => "no GPU kernels in this trace: nothing ran on a GPU, or the profiler did not record it".into(),
        n => format!(
            "no GPU kernel with times the timeline can place: {n} GPU {} a start or end that is not a finite number",
            if n == 1 { "event has" } else { "events have" }
        ),
    }
}

/// The `Timeline` section's lines (without its title).
pub fn section(t: &Timeline) -> Vec<String> {
    if t.stages.is_empty() {
        let line = if t.skipped_non_finite == 0 {
            "No GPU kernels in this trace."
        } else {
            "No GPU kernel with finite times in this trace."
        };
        return vec![line.into()];
    }
    let mut lines = Vec::new();
    let n = t.stages.len();
    for (i, stage) in t.stages.iter().enumerate() {
        lines.push(format!("##### {}", stage.stage.label()));
        lines.push(verdict_line(stage));
        lines.push(String::new());
        lines.extend(figures_table(stage));
        lines.push(String::new());
        lines.extend(idle_table(stage));
        lines.push(String::new());
        lines.push(launch_line(stage));
        lines.push(steps_line(stage));
        if i + 1 != n {
            lines.push(String::new());
        }
    }
    lines.push(String::new());
    lines.push(
        "Window: first kernel start to last kernel end. Busy: time any kernel runs (union over streams). Communication: \
         kernels whose name names a collective or a communication library (nccl, all_reduce, cross_device_reduce, \
         deepep, …) or lies in DeepEP's namespace (deep_ep::, dpsk::ep::), or under `--timeline-basis hta` HTA's rule (names \
         holding nccl and Kernel); compute: the other kernels but copies, memsets and \
         syncs. Both are unions over streams. Comm/compute overlap: \
         share of communication time that computation runs beside. Host wait: idle gaps on a stream whose next \
         kernel's launch call began after the previous kernel ended, up to 1 ms after that call ended (a kernel \
         that starts later was held on the device; `--timeline-basis hta`: the whole gap); kernel wait: other \
         gaps under 30 µs. Each \
         stream's idle figures count that stream's own gaps, so summed over streams they can exceed the stage's idle \
         time, which counts only time no stream runs."
            .to_string(),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::timeline::verdict::decide;
    use crate::analysis::timeline::{GpuTimeline, LaunchStats, Steps};

    #[test]
    fn steps_without_gpu_work_are_more_only_after_a_stage_s_own() {
        let steps = |count, without_gpu_work| Steps { count, without_gpu_work, ..Steps::default() };
        assert_eq!(without_gpu_work_note(&steps(3, 0)), None);
        let note = without_gpu_work_note(&steps(3, 1));
        assert_eq!(note.as_deref(), Some("1 more step launched no GPU work, so no stage counts it"));
        let note = without_gpu_work_note(&steps(0, 2));
        assert_eq!(note.as_deref(), Some("2 steps launched no GPU work, so no stage counts them"));
    }

    fn stage(figures: Figures, launch: LaunchStats, steps_us: Option<f64>) -> StageTimeline {
        let verdict = decide([&figures], &launch, steps_us);
        StageTimeline {
            stage: Stage::Decode,
            gpus: vec![GpuTimeline { pid: "0".into(), rank: None, figures }],
            launch,
            steps: Steps::default(),
            verdict,
        }
    }

    fn figures(window_us: f64, idle_us: f64, host_us: f64, exposed_us: f64) -> Figures {
        Figures {
            kernels: 768,
            window_us,
            busy_us: window_us - idle_us,
            idle_us,
            idle_host_wait_us: host_us,
            exposed_comm_us: exposed_us,
            ..Figures::default()
        }
    }

    #[test]
    fn a_verdict_on_little_gpu_work_says_so() {
        // Two copies in 12.9 µs, busy throughout: GPU-bound, on next to
        // nothing.
        let tiny = stage(Figures { kernels: 2, ..figures(12.9, 0.0, 0.0, 0.0) }, LaunchStats::default(), None);
        let line = verdict_line(&tiny);
        assert!(
            line.ends_with(
                "GPU-bound: the kernels themselves are the time to cut (judged on 2 kernels in a 0.01 ms window: too little GPU work for it to say much)"
            ),
            "{line}"
        );
        // Many kernels, or a long window with a few: no such caution.
        let busy = stage(figures(84_480.0, 0.0, 0.0, 0.0), LaunchStats::default(), None);
        assert!(!verdict_line(&busy).contains("too little"));
        let few = stage(Figures { kernels: 9, ..figures(84_480.0, 0.0, 0.0, 0.0) }, LaunchStats::default(), None);
        assert!(verdict_line(&few).contains("judged on 9 kernels in a 84.48 ms window"), "{}", verdict_line(&few));
    }

    #[test]
    fn launch_bound_verdicts_say_how_often_the_host_launches_and_what_comes_next() {
        // Eager decode: 6.3 µs kernels behind 6.9 µs calls, one call every
        // 110 µs: most of the host's time between calls is not the call.
        let launch = LaunchStats {
            launches: 768,
            kernels: 768,
            cpu_us: 5_840.0,
            kernel_p50_us: Some(6.3),
            launch_p50_us: Some(6.9),
            delay_p50_us: Some(3.1),
            ..LaunchStats::default()
        };
        let eager = stage(figures(84_480.0, 72_900.0, 72_500.0, 0.0), launch.clone(), None);
        assert_eq!(eager.verdict.host_cause, Some(HostCause::LaunchOverhead));
        let line = verdict_line(&eager);
        assert!(line.contains("the host making a launch call every 110.0 µs, mostly work between the calls"), "{line}");
        assert!(!line.contains("comes next"), "{line}");
        let launches = launch_line(&eager);
        assert!(
            launches.starts_with(
                "Launch: 768 launch calls for the 768 kernels matched to them, 5.84 ms of CPU time in the calls;"
            ),
            "{launches}"
        );
        assert!(!launches.contains("graph launches"), "{launches}");
        // 555 kernels from 12 graph launches: the figures are said to
        // compare each kernel with its graph's call.
        let graphs = stage(
            figures(84_480.0, 72_900.0, 72_500.0, 0.0),
            LaunchStats { launches: 12, kernels: 555, ..launch.clone() },
            None,
        );
        assert!(
            launch_line(&graphs).starts_with("Launch: 12 launch calls for the 555 kernels matched to them (graph launches, 46.2 kernels a call: delays and the share shorter than their launch call compare each kernel with its graph's call), "),
            "{}",
            launch_line(&graphs)
        );
        // A call every 9 µs, 6.9 of them in the call: the calls are the time.
        let tight = stage(figures(768.0 * 9.0, 2_000.0, 1_800.0, 0.0), launch.clone(), None);
        let line = verdict_line(&tight);
        assert!(line.contains("the host making a launch call every 9.0 µs;"), "{line}");
        // Exposed communication past its own bar, under the host waits.
        let both = stage(figures(84_480.0, 60_000.0, 50_000.0, 30_000.0), launch, None);
        let line = verdict_line(&both);
        assert!(line.ends_with("; communication that no computation hides, 35.5% of the window, comes next"), "{line}");
    }

    #[test]
    fn a_host_bound_verdict_names_the_call_the_host_waited_in() {
        // A ResNet training step on ROCm: the launching thread in hipFree
        // for 2,998 of the GPU's 3,032 ms of host waits.
        let launch = LaunchStats {
            launches: 2360,
            kernels: 2360,
            kernel_p50_us: Some(51.8),
            launch_p50_us: Some(3.1),
            ..LaunchStats::default()
        };
        let call = |name: &str| HostWaitCall { name: name.into(), calls: 1298, wait_us: 2_998_043.7 };
        let with_call = |name: &str| {
            let mut f = figures(3_391_350.0, 3_032_300.0, 3_032_270.0, 0.0);
            f.host_wait_calls = vec![call(name)];
            stage(f, launch.clone(), None)
        };
        let line = verdict_line(&with_call("hipFree"));
        assert!(
            line.contains("→ host-bound: the host was in hipFree for 99% of those waits (1298 calls, 2998.04 ms); allocating and freeing memory"),
            "{line}"
        );
        let line = verdict_line(&with_call("cudaStreamSynchronize"));
        assert!(line.contains("in cudaStreamSynchronize for 99%") && line.contains(".item()"), "{line}");
        // A name that is not a plain identifier is not quoted into the line.
        let line = verdict_line(&with_call("a|b <c>"));
        assert!(line.contains("was in one runtime call for 99%") && !line.contains('|'), "{line}");
        // One gap holding most of the idle time is a one-off: its advice,
        // not the call's (AlexNet's warm-up: cudaFree in a 10 s gap).
        let mut warm_up = with_call("cudaFree");
        warm_up.gpus[0].figures.longest_idle_gap_us = 2_500_000.0;
        warm_up.verdict = decide([&warm_up.gpus[0].figures], &warm_up.launch, None);
        let line = verdict_line(&warm_up);
        assert!(line.contains("in cudaFree for 99% of those waits (1298 calls, 2998.04 ms), and one gap of 2500.00 ms holds 82% of the idle time: look at what happened then"), "{line}");
        assert!(!line.contains("caching allocator"), "{line}");
        // Under half the waits, the launch figures decide as before.
        let mut f = figures(3_391_350.0, 3_032_300.0, 3_032_270.0, 0.0);
        f.host_wait_calls = vec![HostWaitCall { wait_us: 1_000_000.0, ..call("hipFree") }];
        let line = verdict_line(&stage(f, launch, None));
        assert!(line.contains("launch calls are short beside the kernels") && !line.contains("hipFree"), "{line}");
    }

    #[test]
    fn steps_much_shorter_than_the_gpu_window_are_the_hosts_pace() {
        let with_steps = |window_us: f64, step_us: f64| {
            let mut st = stage(figures(window_us, 0.0, 0.0, 0.0), LaunchStats::default(), None);
            st.steps =
                Steps { source: Some(StepSource::VllmExecute), count: 1, mean_us: Some(step_us), ..Steps::default() };
            st
        };
        // One 26.35 ms step whose kernels run for 156.47 ms on the GPU.
        let behind = with_steps(156_470.0, 26_350.0);
        let note = steps_pace_note(&behind).unwrap();
        assert!(
            note.starts_with("the steps take 26.35 ms on the host while the stage's kernels span 156.47 ms"),
            "{note}"
        );
        assert!(steps_line(&behind).ends_with(&format!("; {note}")));
        assert!(
            note.ends_with("so the step time is the host's pace, not the GPU's: the GPU runs behind the host"),
            "{note}"
        );
        // Clocks that look offset are named as the likelier cause.
        let mut offset = with_steps(156_470.0, 26_350.0);
        offset.launch.clock_offset_us = Some(146_000.0);
        let note = steps_pace_note(&offset).unwrap();
        assert!(note.ends_with("(the clocks look offset)"), "{note}");
        // Steps that launched 46 of the stage's 85 kernels time part of
        // its work; with all of them inside, the GPU is behind.
        let partial = |per_step: f64| {
            let mut st = with_steps(4_130.0, 21.5);
            st.steps.count = 46;
            st.gpus[0].figures.kernels = 85;
            st.launch.kernels_per_step = Some(per_step);
            steps_pace_note(&st).unwrap()
        };
        assert!(
            partial(1.0).ends_with(
                "and only 46 of the stage's 85 kernels were launched inside them: the steps time part of the stage's work, not all of it"
            ),
            "{}",
            partial(1.0)
        );
        assert!(partial(85.0 / 46.0).ends_with("the GPU runs behind the host"), "{}", partial(85.0 / 46.0));
        // Steps as long as half the window or more: no note.
        assert_eq!(steps_pace_note(&with_steps(100.0, 50.0)), None);
        assert_eq!(steps_pace_note(&with_steps(100.0, 120.0)), None);
    }

    #[test]
    fn a_headline_names_the_steps_idle_time_its_verdict_reads() {
        // 11 µs of kernels in a 33.7 ms step.
        let short = stage(figures(11.0, 0.0, 0.0, 0.0), LaunchStats::default(), Some(33_716.8));
        assert!(short.verdict.idle_outside_window());
        assert_eq!(idle_text(&short), "idle 0.0% of the window but 100.0% of the steps' 33.72 ms");
        let busy = stage(figures(100.0, 5.0, 0.0, 0.0), LaunchStats::default(), Some(101.0));
        assert_eq!(idle_text(&busy), "idle 5.0% (other waits)");
    }
}
