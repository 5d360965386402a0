//! The triage driver: resolves the mapping and formal inputs, builds the
//! mapping kernel map, then per formal trace and stage the kernel table rows,
//! the fuse opportunities and (per stage bundle) the overlap rows. Returns a
//! [`TriageReport`] that [`crate::report`] renders.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use rayon::prelude::*;

use crate::analysis::framework::{detect_from_strings, detect_from_text, Framework, FrameworkChoice, Undetected};
use crate::analysis::fusion::{self, detect_fusion_opportunities, KeywordMatch};
use crate::analysis::kernels::{
    aggregate_by_name, categories_by_name, extract_trace_data, group_kernels_by_stage, kernel_category, total_dur,
    KernelName, KernelRule, TraceData,
};
use crate::analysis::mapping::{
    build_mapping_kernel_map, formal_stage_payloads, limit_kernel_rows, pct, rank_kernels, shared_stage_maps,
    AttributedTrace, KernelMap, MapPayload, SiteCells,
};
use crate::analysis::overlap::render_stages;
use crate::analysis::overlap::{self, BundleSource, StageBundle};
use crate::analysis::sites::SiteIndex;
use crate::analysis::stage::{parse_stage, path_stage, Stage};
use crate::analysis::stage::{RowStages, StageRule};
use crate::analysis::text::Masking;
use crate::analysis::timeline::{timeline, Caveat, Timeline, TimelineOptions};
use crate::analysis::types::{KernelEntry, StagePayload, Text};
use crate::columns::Trace;
use crate::error::{Error, Result};
use crate::input::ReadMode;
use crate::run::discover::{discover_trace_targets, resolve_framework};

use crate::report::model::*;

/// What to triage.
#[derive(Clone, Debug)]
pub enum TriageInput {
    /// One trace or profile directory that is its own mapping trace.
    Single(PathBuf),
    /// A graph-off mapping input and a graph-on formal input.
    Pair { mapping: PathBuf, formal: PathBuf },
}

/// Knobs of a triage run.
#[derive(Clone, Debug)]
pub struct TriageOptions {
    pub framework: FrameworkChoice,
    pub pid_substring: Option<String>,
    /// Kernel rows per stage before the share filter (0 = all).
    pub kernel_table_limit: usize,
    /// Overlap rows per stage (0 = all).
    pub overlap_table_limit: usize,
    /// Rows under this share (percent) are not rendered.
    pub min_share: f64,
    pub quiet: bool,
    /// User fuse-pattern files layered over the built-in registry.
    pub patterns: Vec<PathBuf>,
    /// Which hex addresses in kernel and scope names are masked.
    pub masking: Masking,
    /// How plain trace files are read (mapped, or read as a stream).
    pub read_mode: ReadMode,
    /// Whether the report keeps to the reference tool's layout.
    pub compat: Compat,
    /// Which kernels and clock the timeline reads.
    pub timeline: TimelineOptions,
    /// Whether the kernel-table and overlap steps run side by side.
    pub schedule: Schedule,
}

/// How the kernel-table and overlap steps share the machine. The report is
/// the same under every schedule; only time and peak memory differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// Side by side up to [`PARALLEL_STEPS_MAX_KERNELS`] kernels, one
    /// after the other above; a single trace's timeline beside the overlap
    /// step when both fit the memory budget (64 MB and a twentieth of the
    /// JSON), otherwise first.
    #[default]
    Auto,
    /// Side by side, the overlap stages swept in parallel, and a single
    /// trace's timeline beside them.
    Parallel,
    /// One after the other, the timeline first, and a single trace's
    /// overlap stages built, swept and analysed one at a time: the least
    /// memory.
    OneAtATime,
}

impl Default for TriageOptions {
    fn default() -> Self {
        TriageOptions {
            framework: FrameworkChoice::Auto,
            pid_substring: None,
            kernel_table_limit: 0,
            overlap_table_limit: 0,
            min_share: 1.0,
            quiet: true,
            patterns: Vec::new(),
            masking: Masking::default(),
            read_mode: ReadMode::Map,
            compat: Compat::Default,
            timeline: TimelineOptions::default(),
            schedule: Schedule::Auto,
        }
    }
}

impl TriageOptions {
    /// Which kernels the kernel table counts and how it names their
    /// categories: the reference's rule under `--compat reference`.
    pub fn kernel_rule(&self) -> KernelRule {
        match self.compat {
            Compat::Default => KernelRule::Default,
            Compat::Reference => KernelRule::Reference,
        }
    }

    /// How annotation names name a stage: the reference's rule under
    /// `--compat reference`.
    pub fn stage_rule(&self) -> StageRule {
        match self.compat {
            Compat::Default => StageRule::Default,
            Compat::Reference => StageRule::Reference,
        }
    }

    /// The framework detection settles on when nothing names one:
    /// `generic`, or SGLang under `--compat reference` as the reference does.
    pub fn undetected_framework(&self) -> Undetected {
        match self.compat {
            Compat::Default => Undetected::Generic,
            Compat::Reference => Undetected::Sglang,
        }
    }
}

/// One loaded trace and its attribution view.
struct Loaded {
    path: PathBuf,
    trace: Trace,
    /// Stage of every kernel row, shared by the kernel and overlap steps.
    stages: RowStages,
    /// The stage the trace's path names, when it is taken ([`path_stage`]).
    path_stage: Stage,
    data: TraceData,
    index: SiteIndex,
    /// The timeline, unless it is to be computed beside the overlap step.
    timeline: Option<Timeline>,
    /// Heap bytes of the trace's columns.
    bytes: usize,
}

impl Loaded {
    /// Loads the trace at `path`. With `may_defer` its timeline may be left
    /// for later ([`Loaded::timeline`]) when the memory budget allows.
    fn load(path: &Path, opts: &TriageOptions, may_defer: bool) -> Result<Self> {
        let masking = opts.masking;
        let trace = crate::run::progress::load_trace(path, opts.quiet, opts.read_mode)?;
        // Ingest's chunk builders and stream buffers are gone: hand their
        // pages back before the analyses allocate.
        let bytes = trace.heap_bytes();
        release_free_memory(bytes);
        crate::run::progress::phase("loaded");
        let stages = RowStages::build(&trace, opts.stage_rule());
        let path_stage = path_stage(path, &stages, opts.stage_rule());
        let timeline = if may_defer && timeline_beside_overlap(&trace, opts.schedule) {
            // Computed later, beside the overlap step, which leaves a core
            // idle much of the time.
            None
        } else {
            // Computed first, while only the columns are held: its event
            // arrays then never add to a later step's peak.
            let timeline = trace_timeline(path_stage, &trace, &stages, opts);
            // Its arrays are freed: hand their pages back before the
            // extraction allocates.
            release_free_memory(bytes);
            crate::run::progress::phase("timeline");
            Some(timeline)
        };
        let rule = opts.kernel_rule();
        let (data, index) =
            rayon::join(|| extract_trace_data(&trace, &stages, masking, rule), || SiteIndex::build(&trace));
        crate::run::progress::phase("kernels extracted, site index built");
        Ok(Loaded { path: path.to_path_buf(), trace, stages, path_stage, data, index, timeline, bytes })
    }

    /// The timeline, computed now if the load left it for later.
    fn timeline(&self, opts: &TriageOptions) -> std::borrow::Cow<'_, Timeline> {
        match &self.timeline {
            Some(t) => std::borrow::Cow::Borrowed(t),
            None => std::borrow::Cow::Owned(trace_timeline(self.path_stage, &self.trace, &self.stages, opts)),
        }
    }

    fn attributed(&self) -> AttributedTrace<'_> {
        AttributedTrace { trace: &self.trace, data: &self.data, index: &self.index, default_stage: self.path_stage }
    }
}

/// Traces, server args and framework of one input.
struct Target {
    traces: Vec<PathBuf>,
    server_args: Option<serde_json::Value>,
    framework: Framework,
}

/// An input path resolved: the canonical path, its traces, its server
/// arguments and what discovery left out.
struct ResolvedInput {
    path: PathBuf,
    traces: Vec<PathBuf>,
    /// Each trace by the path discovery found it by (a link's own name).
    found_as: Vec<PathBuf>,
    server_args: Option<serde_json::Value>,
    left_out: Option<LeftOut>,
}

fn resolve_input(path: &Path) -> Result<ResolvedInput> {
    if crate::run::discover::is_stream_path(path) {
        // Standard input or a pipe: one trace, read once, with nothing
        // beside it.
        return Ok(ResolvedInput {
            path: path.to_path_buf(),
            traces: vec![path.to_path_buf()],
            found_as: vec![path.to_path_buf()],
            server_args: None,
            left_out: None,
        });
    }
    let resolved = path.canonicalize().map_err(|e| Error::usage(format!("cannot open input: {e}")).in_file(path))?;
    let targets = discover_trace_targets(&resolved).map_err(|e| named_by(e, |p| as_given(p, &[(&resolved, path)])))?;
    let server_args = targets.server_args.or_else(|| crate::run::discover::load_server_args(&resolved));
    // Each analysed trace below the input as the path from it (a trace of
    // a subfolder chosen as the newest), else by its file name; by the name
    // it was found by, which a link to a trace elsewhere carries.
    let shown_from_input = |p: &PathBuf| match p.strip_prefix(&resolved) {
        Ok(rel) => crate::error::shown(rel),
        Err(_) => crate::error::shown(p.file_name().map_or(p.as_path(), Path::new)),
    };
    let left_out = (targets.left_out > 0 || !targets.unseen.is_empty()).then(|| LeftOut {
        input: path.to_path_buf(),
        analysed: targets.found_as.iter().map(shown_from_input).collect(),
        rank: targets.rank,
        count: targets.left_out,
        unseen: targets.unseen.iter().map(|(p, why)| format!("{} ({why})", shown_from_input(p))).collect(),
    });
    Ok(ResolvedInput { path: resolved, traces: targets.traces, found_as: targets.found_as, server_args, left_out })
}

/// `e` naming its file as `name` names it.
fn named_by(mut e: Error, name: impl Fn(&Path) -> PathBuf) -> Error {
    e.path = e.path.as_deref().map(name);
    e
}

/// `path` (a trace found below a resolved input) as the user would name it
/// from the input they gave rather than its resolved form: `bad.json` stays
/// `bad.json`, and a trace found in `ranks/` (resolved to `/abs/ranks`) is
/// `ranks/rank0.json`; `path` itself when it is below none of them.
/// `inputs` pairs each resolved input with the path as given.
fn as_given(path: &Path, inputs: &[(&Path, &Path)]) -> PathBuf {
    let given = inputs.iter().find_map(|(resolved, given)| {
        let rest = path.strip_prefix(resolved).ok()?;
        Some(if rest.as_os_str().is_empty() { given.to_path_buf() } else { given.join(rest) })
    });
    given.unwrap_or_else(|| path.to_path_buf())
}

/// `stage` if present, else `all`, else the only entry.
fn pick_stage<V>(map: &IndexMap<Stage, V>, stage: Stage) -> Option<(&Stage, &V)> {
    if let Some(kv) = map.get_key_value(&stage) {
        return Some(kv);
    }
    if let Some(kv) = map.get_key_value(&Stage::All) {
        return Some(kv);
    }
    if map.len() == 1 {
        return map.iter().next();
    }
    None
}

/// Python truthiness of server args: an empty object counts as absent.
fn present(v: &Option<serde_json::Value>) -> Option<&serde_json::Value> {
    v.as_ref().filter(|v| v.as_object().is_none_or(|o| !o.is_empty()))
}

/// The model named in the server arguments, if any.
fn model_name(server_args: Option<&serde_json::Value>) -> Option<String> {
    let args = server_args?.as_object()?;
    let truthy = |v: &&serde_json::Value| match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(o) => !o.is_empty(),
        serde_json::Value::Number(n) => n.as_f64() != Some(0.0),
    };
    let v = args.get("model_path").filter(truthy).or_else(|| args.get("model").filter(truthy))?;
    Some(match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Above this many kernels (all loaded traces), the kernel and overlap steps
/// run one after the other so that the kernel events are freed before the
/// overlap records exist; below it they run side by side on the two cores.
/// Side by side they hold about 45 bytes more per kernel at once: on the
/// 1 GB synthetic trace (300,000 kernels) a peak of 129 MB instead of
/// 116 MB, for 66 ms less. Below this the extra stays under 5 MB.
pub const PARALLEL_STEPS_MAX_KERNELS: usize = 100_000;

/// Likewise above this many kernel names (over the formal stage payloads):
/// the kernel table and the overlap source map each hold a few hundred
/// bytes per name, so with many names the two steps run one after the
/// other too. (300,000 distinct names in a 113 MB trace: side by side,
/// 4.1 s and 391 MB; one after the other, 5.1 s and 340 MB.)
const PARALLEL_STEPS_MAX_NAMES: usize = 400_000;

/// The peak memory a run aims to stay under: 64 MB and a twentieth of
/// the JSON it reads.
fn memory_budget(json_bytes: u64) -> u64 {
    64_000_000 + json_bytes / 20
}

/// What the timeline and the overlap step hold at once, per kernel row,
/// when they run side by side: the overlap step's records (about 95 bytes
/// a kernel) and the timeline's event and launch arrays (52 to 59). Measured
/// as the growth of the peak over the columns on the 1 GB tiled H100 trace,
/// the 1 GB synthetic trace and the 2.2 GB overlapping-frames trace.
const BESIDE_BYTES_PER_KERNEL: u64 = 170;

/// The process's own memory beside the columns and the steps' arrays
/// (code, stacks, ingest's buffers not yet handed back).
const BASE_BYTES: u64 = 8_000_000;

/// Whether a trace's timeline runs beside its overlap step: always when the
/// steps run side by side, never when they run one at a time, and by
/// default when the columns and both steps' arrays fit the memory budget.
/// Beside the overlap step, which keeps one core busy much of its time, the
/// timeline costs little wall time; first, it adds nothing to the peak.
fn timeline_beside_overlap(trace: &Trace, schedule: Schedule) -> bool {
    match schedule {
        Schedule::Parallel => true,
        Schedule::OneAtATime => false,
        Schedule::Auto => fits_beside(trace.heap_bytes() as u64, trace.kernels.len() as u64, trace.json_bytes),
    }
}

/// Whether columns of `heap` bytes and the arrays of `kernels` kernel rows
/// fit the memory budget of `json_bytes` of JSON.
fn fits_beside(heap: u64, kernels: u64, json_bytes: u64) -> bool {
    let need = heap.saturating_add(BASE_BYTES).saturating_add(kernels.saturating_mul(BESIDE_BYTES_PER_KERNEL));
    need <= memory_budget(json_bytes)
}

/// Traces whose columns take less than this are too small for a trim to
/// matter.
const TRIM_MIN_BYTES: usize = 32 << 20;

/// Hands freed heap pages back to the OS after a trace of `bytes` column
/// bytes. glibc keeps large freed blocks in its arenas once its mmap
/// threshold has adapted upward, so without this the peak RSS of the kernel
/// step would carry into the overlap step. Small traces skip it: a trim
/// walks the whole heap, and a batch of thousands of small files would pay
/// for it once per file over a growing heap.
fn release_free_memory(bytes: usize) {
    if bytes < TRIM_MIN_BYTES {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns unused pages of the allocator's own
    // arenas; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs the triage.
pub fn run_triage(input: &TriageInput, opts: &TriageOptions) -> Result<TriageReport> {
    // The pattern files first: a bad one fails before any trace is read.
    let mut registry = crate::analysis::fusion::Registry::builtin();
    for file in &opts.patterns {
        registry = registry.with_user_file(file)?;
    }
    let (single, mapping_path, formal_path) = match input {
        TriageInput::Single(p) => (true, p.clone(), p.clone()),
        TriageInput::Pair { mapping, formal } => (false, mapping.clone(), formal.clone()),
    };
    let ResolvedInput {
        path: mapping_resolved,
        traces: mapping_traces,
        found_as: mapping_found_as,
        server_args: mapping_args,
        left_out: mapping_left_out,
    } = resolve_input(&mapping_path)?;
    let (formal_resolved, formal_traces, formal_found_as, formal_args, formal_left_out) = if single {
        (mapping_resolved.clone(), mapping_traces.clone(), Vec::new(), mapping_args.clone(), None)
    } else {
        let r = resolve_input(&formal_path)?;
        (r.path, r.traces, r.found_as, r.server_args, r.left_out)
    };
    // Each trace by the name discovery found it by, for messages: a link
    // in a rank folder to a trace elsewhere is named as the link.
    let found_as: std::collections::HashMap<PathBuf, PathBuf> = mapping_traces
        .iter()
        .cloned()
        .zip(mapping_found_as)
        .chain(formal_traces.iter().cloned().zip(formal_found_as))
        .collect();

    // Load each distinct trace once. A single trace's timeline may wait
    // for the overlap step; with several, each is computed as it loads.
    let mut distinct: Vec<&PathBuf> = Vec::new();
    for p in mapping_traces.iter().chain(formal_traces.iter()) {
        if !distinct.contains(&p) {
            distinct.push(p);
        }
    }
    let named: [(&Path, &Path); 2] = [(&mapping_resolved, &mapping_path), (&formal_resolved, &formal_path)];
    let as_given = |p: &Path| as_given(found_as.get(p).map_or(p, PathBuf::as_path), &named);
    let mut loaded: Vec<Loaded> = Vec::new();
    for p in &distinct {
        let trace = Loaded::load(p, opts, distinct.len() == 1).map_err(|e| named_by(e, as_given))?;
        loaded.push(trace);
    }
    let find = |p: &Path| loaded.iter().find(|l| l.path == p);
    let sample_hint = |p: &Path| -> Option<Framework> {
        match find(p) {
            Some(l) => detect_from_text(&l.trace.framework_sample),
            None => crate::run::progress::framework_sample(p).and_then(|s| detect_from_text(&s)),
        }
    };
    // The framework the loaded traces' strings name (their Python frames
    // beyond the sample), for an input no hint names.
    let strings_hint = |traces: &[PathBuf]| -> Option<Framework> {
        traces.iter().find_map(|p| find(p).and_then(|l| detect_from_strings(l.trace.strings.iter())))
    };
    // A directory's framework is read first from the traces the run reads;
    // the reference reads only the first traces found in it.
    let reference = opts.compat == Compat::Reference;
    let (mapping_read, formal_read) =
        if reference { (&[][..], &[][..]) } else { (&mapping_traces[..], &formal_traces[..]) };
    let mapping = Target {
        framework: resolve_framework(
            opts.framework,
            &mapping_resolved,
            mapping_args.as_ref(),
            mapping_read,
            &sample_hint,
            &|| strings_hint(&mapping_traces),
            opts.undetected_framework(),
        ),
        traces: mapping_traces,
        server_args: mapping_args,
    };
    let formal = if single {
        Target {
            traces: mapping.traces.clone(),
            server_args: mapping.server_args.clone(),
            framework: mapping.framework,
        }
    } else {
        Target {
            framework: resolve_framework(
                opts.framework,
                &formal_resolved,
                formal_args.as_ref(),
                formal_read,
                &sample_hint,
                &|| strings_hint(&formal_traces),
                opts.undetected_framework(),
            ),
            traces: formal_traces,
            server_args: formal_args,
        }
    };

    let mapping_views: Vec<AttributedTrace<'_>> =
        mapping.traces.iter().filter_map(|p| find(p)).map(Loaded::attributed).collect();
    // The mapping kernel map and the formal stage payloads (kernel sites
    // per stage, which the kernel rows read trace by trace and the overlap
    // rows the last one per stage) are independent: build them side by side,
    // unless a trace that is its own mapping trace makes them the same
    // payloads, built once.
    let shared = match mapping_views.as_slice() {
        [view] if single => shared_stage_maps(view, mapping.framework),
        _ => None,
    };
    let (kernel_map, per_trace) = match shared {
        Some((map, payloads)) => (map, vec![payloads]),
        None => rayon::join(
            || build_mapping_kernel_map(&mapping_views, mapping.framework),
            || -> Vec<Vec<(Stage, Arc<MapPayload>)>> {
                formal
                    .traces
                    .par_iter()
                    .map(|p| match find(p) {
                        Some(l) if !l.data.kernels.is_empty() => formal_stage_payloads(&l.attributed())
                            .into_iter()
                            .map(|(stage, payload)| (stage, Arc::new(MapPayload::new(payload))))
                            .collect(),
                        _ => Vec::new(),
                    })
                    .collect()
            },
        ),
    };
    crate::run::progress::phase("kernel map and stage payloads built");
    // Python truthiness: an empty object counts as absent.
    let server_args = present(&formal.server_args).or_else(|| present(&mapping.server_args));

    // The first formal trace's metadata: its job and its hardware.
    let first_meta = formal.traces.first().and_then(|p| find(p)).map(|l| &l.trace.meta);
    let mut report = TriageReport {
        mode: if single { Mode::SingleTrace } else { Mode::MappingFormal },
        compat: opts.compat,
        framework: Frameworks { mapping: mapping.framework, formal: formal.framework },
        mapping_traces: mapping.traces.clone(),
        formal_traces: formal.traces.clone(),
        model: model_name(server_args),
        min_share: opts.min_share,
        timeline: None,
        kernel_tables: Vec::new(),
        overlap_rows: Vec::new(),
        overlap_stats: Vec::new(),
        fuse_rows: Vec::new(),
        left_out: mapping_left_out.into_iter().chain(formal_left_out).collect(),
        skipped_events: loaded.iter().map(|l| l.trace.counts.skipped).sum(),
        skipped_by_trace: loaded
            .iter()
            .filter(|l| l.trace.counts.skipped > 0)
            .map(|l| (as_given(&l.path), l.trace.counts.skipped))
            .collect(),
        pid_unmatched: match opts.pid_substring.as_deref() {
            Some(sub) => loaded
                .iter()
                .filter(|l| !crate::analysis::stage::kernel_pid_contains(&l.trace, sub))
                .map(|l| as_given(&l.path))
                .collect(),
            None => Vec::new(),
        },
        distributed_info: first_meta.and_then(|m| m.distributed_info.clone()),
        hardware: first_meta.map_or_else(Default::default, |m| {
            crate::analysis::hardware::Hardware::of(m.device_properties.as_ref(), m.distributed_info.as_ref())
        }),
        notes: Vec::new(),
    };

    let mut payloads: IndexMap<Stage, &StagePayload> = IndexMap::new();
    for (stage, payload) in per_trace.iter().flatten() {
        payloads.insert(*stage, &payload.payload);
    }
    let kernels: usize = loaded.iter().map(|l| l.data.kernels.len()).sum();
    let bytes: usize = loaded.iter().map(|l| l.bytes).sum();
    let names: usize = per_trace.iter().flatten().map(|(_, payload)| payload.payload.len()).sum();
    // Site attribution is done: free its indexes (frames by thread, CPU ops
    // and launches by id) before the overlap step builds its records.
    drop(mapping_views);
    for l in &mut loaded {
        l.index = SiteIndex::default();
    }
    release_free_memory(bytes);
    let find = |p: &Path| loaded.iter().find(|l| l.path == p);
    let side_by_side = match opts.schedule {
        Schedule::Auto => kernels <= PARALLEL_STEPS_MAX_KERNELS && names <= PARALLEL_STEPS_MAX_NAMES,
        Schedule::Parallel => true,
        Schedule::OneAtATime => false,
    };
    if side_by_side {
        // The kernel rows need only the kernel events, which are small next
        // to the overlap records: run the two steps side by side.
        let (timeline, (kernel_part, overlap_part)) = rayon::join(
            || merged_timeline(formal.traces.iter().filter_map(|p| find(p)).map(|l| l.timeline(opts))),
            || {
                rayon::join(
                    || kernel_and_fuse_rows(&formal, &find, &per_trace, &kernel_map, server_args, &registry, opts),
                    || overlap_rows(&mapping, &formal, &find, &kernel_map, &payloads, opts, true),
                )
            },
        );
        report.timeline = timeline;
        kernel_part?.fill(&mut report);
        overlap_part.fill(&mut report);
    } else {
        kernel_and_fuse_rows(&formal, &find, &per_trace, &kernel_map, server_args, &registry, opts)?.fill(&mut report);
        // Free the kernel events too before the overlap step.
        for l in &mut loaded {
            l.data = TraceData::default();
        }
        release_free_memory(bytes);
        crate::run::progress::phase("kernel and fuse rows");
        let find = |p: &Path| loaded.iter().find(|l| l.path == p);
        let (timeline, overlap_part) = rayon::join(
            || merged_timeline(formal.traces.iter().filter_map(|p| find(p)).map(|l| l.timeline(opts))),
            || overlap_rows(&mapping, &formal, &find, &kernel_map, &payloads, opts, false),
        );
        report.timeline = timeline;
        overlap_part.fill(&mut report);
    }
    // GPU events each trace's timeline left out, the trace named as given.
    let non_finite: Vec<(PathBuf, u64)> = match &formal.traces[..] {
        [one] => vec![(as_given(one), report.timeline.as_ref().map_or(0, |t| t.skipped_non_finite))],
        several => several
            .iter()
            .filter_map(|p| loaded.iter().find(|l| &l.path == p))
            .map(|l| (as_given(&l.path), l.timeline.as_ref().map_or(0, |t| t.skipped_non_finite)))
            .collect(),
    };
    // Each trace's timestamp farthest from zero, for the warning that a
    // double holds it only coarsely.
    let clocks: Vec<(PathBuf, f64)> = loaded
        .iter()
        .map(|l| {
            let c = &l.trace.counts;
            let (lo, hi) = (c.min_ts.unwrap_or(0.0), c.max_end.unwrap_or(0.0));
            (as_given(&l.path), if lo.abs() > hi.abs() { lo } else { hi })
        })
        .collect();
    // Why an analysed trace's timeline may not describe its run.
    let caveats: Vec<(PathBuf, Caveat)> = formal
        .traces
        .iter()
        .filter_map(|p| loaded.iter().find(|l| &l.path == p))
        .flat_map(|l| crate::analysis::timeline::caveats(&l.trace).into_iter().map(|c| (as_given(&l.path), c)))
        .collect();
    report.notes = report.make_notes(opts.pid_substring.as_deref(), &non_finite, &clocks, &caveats);
    crate::run::progress::phase("overlap rows");
    Ok(report)
}

/// The timeline of one trace. A trace whose path names its stage is that
/// stage throughout, as in the kernel table.
fn trace_timeline(path_stage: Stage, trace: &Trace, stages: &RowStages, opts: &TriageOptions) -> Timeline {
    if path_stage == Stage::All {
        timeline(trace, stages, &opts.timeline)
    } else {
        timeline(trace, &RowStages::uniform(trace.kernels.len(), path_stage), &opts.timeline)
    }
}

/// The timeline of the formal traces: the first trace's, with the stages
/// of later traces (a profile directory with one trace per stage) that it
/// lacks appended in stage order.
fn merged_timeline<'a>(mut timelines: impl Iterator<Item = std::borrow::Cow<'a, Timeline>>) -> Option<Timeline> {
    let mut out = timelines.next()?.into_owned();
    for t in timelines {
        // Every trace's GPU events that no timeline could place.
        out.skipped_non_finite += t.skipped_non_finite;
        out.steps_left_out += t.steps_left_out;
        for stage in &t.stages {
            if !out.stages.iter().any(|s| s.stage == stage.stage) {
                out.stages.push(stage.clone());
            }
        }
    }
    out.stages.sort_by_key(|s| s.stage);
    Some(out)
}

/// What the kernel step adds to the report.
#[derive(Default)]
struct KernelPart {
    kernel_tables: Vec<KernelTable>,
    fuse_rows: Vec<FuseRow>,
}

impl KernelPart {
    fn fill(self, report: &mut TriageReport) {
        report.kernel_tables = self.kernel_tables;
        report.fuse_rows = self.fuse_rows;
    }
}

/// What the overlap step adds to the report.
#[derive(Default)]
struct OverlapPart {
    overlap_rows: Vec<OverlapRow>,
    overlap_stats: Vec<OverlapStageStats>,
}

impl OverlapPart {
    /// Appends one stage's totals and rows; ratios are clamped to 1 unless
    /// the run reproduces the reference tool.
    fn push(&mut self, totals: OverlapStageStats, mut rows: Vec<OverlapRow>, compat: Compat) {
        if compat == Compat::Default {
            rows.iter_mut().for_each(|r| clamp_ratios(&mut r.row));
        }
        self.overlap_stats.push(totals);
        self.overlap_rows.extend(rows);
    }

    fn fill(self, report: &mut TriageReport) {
        report.overlap_rows = self.overlap_rows;
        report.overlap_stats = self.overlap_stats;
    }
}

/// A kernel table row as the fuse matcher reads it: the report row's cells
/// and the kernel-map entry, borrowed.
struct FuseView<'a> {
    row: &'a KernelTableRow,
    entry: Option<&'a KernelEntry>,
}

impl fusion::FuseRow for FuseView<'_> {
    type Cell = Text;

    fn name(&self) -> &str {
        &self.row.kernel
    }

    fn total_us(&self) -> f64 {
        self.row.total_us
    }

    fn location(&self) -> &[Text] {
        &self.row.location
    }

    fn cpu_op(&self) -> &[Text] {
        &self.row.cpu_op
    }

    fn entry(&self) -> Option<&KernelEntry> {
        self.entry
    }
}

/// Kernel table rows (and fuse rows) of every formal trace and stage.
/// `per_trace` holds each formal trace's stage payloads; a stage a trace
/// lacks falls back to an earlier trace's payload.
fn kernel_and_fuse_rows<'a>(
    formal: &Target,
    find: &(dyn Fn(&Path) -> Option<&'a Loaded> + Sync),
    per_trace: &[Vec<(Stage, Arc<MapPayload>)>],
    kernel_map: &KernelMap,
    server_args: Option<&serde_json::Value>,
    registry: &crate::analysis::fusion::Registry,
    opts: &TriageOptions,
) -> Result<KernelPart> {
    let mut report = KernelPart::default();
    let mut payloads: IndexMap<Stage, &StagePayload> = IndexMap::new();
    for (path, trace_payloads) in formal.traces.iter().zip(per_trace) {
        let Some(l) = find(path) else { continue };
        let view = l.attributed();
        if view.data.kernels.is_empty() {
            continue;
        }
        for (stage, payload) in trace_payloads {
            payloads.insert(*stage, &payload.payload);
        }
        let trace_total = total_dur(view.trace, &view.data.kernels);
        let mut groups = group_kernels_by_stage(&view.data.kernels, view.default_stage);
        groups.sort_by_key(|(s, _)| *s);
        for (stage, kernels) in groups {
            if kernels.is_empty() {
                continue;
            }
            let total = total_dur(view.trace, kernels.iter().copied());
            // The reference drops an unannotated `all` stage under the share
            // bar whole; the default report keeps its table (rows hidden),
            // so the JSON and CSV hold every stage and the views say what
            // the bar hid.
            if opts.compat == Compat::Reference
                && stage == Stage::All
                && view.default_stage == Stage::All
                && pct(total, trace_total) < opts.min_share
            {
                continue;
            }
            let stats = aggregate_by_name(view.trace, kernels.iter().copied());
            let categories = categories_by_name(kernels.iter().copied());
            let empty = StagePayload::default();
            let local = payloads.get(&stage).copied().unwrap_or(&empty);
            let ranked = rank_kernels(stage, &stats, &categories, local, Some(kernel_map));
            drop((stats, categories));
            let shown = limit_kernel_rows(&ranked, opts.kernel_table_limit).len();
            let mut cells = SiteCells::default();
            let (rows, entries): (Vec<KernelTableRow>, Vec<Option<&KernelEntry>>) = ranked
                .into_iter()
                .enumerate()
                .map(|(i, k)| {
                    let (location, cpu_op) = cells.summary(k.entry);
                    let share_pct = pct(k.aggregate.total_us, total);
                    let row = KernelTableRow {
                        share_pct,
                        rendered: i < shown && share_pct >= opts.min_share,
                        total_us: k.aggregate.total_us,
                        launches: k.aggregate.count,
                        max_us: k.aggregate.max_us,
                        avg_us: k.aggregate.avg_us(),
                        // The stage payload's text of the name when it has one.
                        kernel: local
                            .get_key_value(k.name)
                            .map_or_else(|| cells.text(k.name), |(name, _)| name.clone()),
                        category: k.category,
                        location,
                        cpu_op,
                    };
                    (row, k.entry)
                })
                .unzip();
            let views: Vec<FuseView> = rows.iter().zip(entries).map(|(row, entry)| FuseView { row, entry }).collect();
            let keywords =
                if opts.compat == Compat::Reference { KeywordMatch::Substring } else { KeywordMatch::Tokens };
            for item in
                detect_fusion_opportunities(registry, &views, total, server_args, Some(formal.framework), keywords)
            {
                let share = pct(item.related_us, total);
                if share < opts.min_share {
                    continue;
                }
                report.fuse_rows.push(FuseRow::new(stage, share, item));
            }
            drop(views);
            report.kernel_tables.push(KernelTable {
                trace: path.clone(),
                stage,
                total_us: total,
                trace_total_us: trace_total,
                rows,
            });
        }
    }
    Ok(report)
}

/// Overlap rows: per rendered stage, the formal stage bundle analysed
/// against the mapping bundle of the same (or the `all`) stage.
fn overlap_rows<'a>(
    mapping: &Target,
    formal: &Target,
    find: &(dyn Fn(&Path) -> Option<&'a Loaded> + Sync),
    kernel_map: &KernelMap,
    payloads: &IndexMap<Stage, &StagePayload>,
    opts: &TriageOptions,
    parallel_sweeps: bool,
) -> OverlapPart {
    let mut report = OverlapPart::default();
    // With one input (mapping == formal) the formal bundles serve as the
    // mapping bundles too: the source map reads only what the sweep leaves
    // untouched (names, times, ids).
    let shared = mapping.traces == formal.traces;
    if let ([path], true, false) = (formal.traces.as_slice(), shared, parallel_sweeps) {
        // One large trace: its stages are built, swept and analysed one
        // at a time, so that only one stage's records exist at once.
        let Some(l) = find(path) else { return report };
        let pid = opts.pid_substring.as_deref();
        let Some(mut source) =
            BundleSource::new(&l.trace, &l.stages, pid, l.path_stage, opts.masking, opts.kernel_rule())
        else {
            return report;
        };
        let mut stages = render_stages(source.sizes());
        if stages.is_empty() && source.sizes().contains_key(&Stage::All) {
            stages.push(Stage::All);
        }
        crate::run::progress::phase("overlap bundles");
        for stage in stages {
            let mut bundle = source.bundle(stage, "formal");
            // The source map reads a per-name sample of the kernels, none
            // of what the sweep fills in: it is built from a copy of the
            // sample while the sweep runs. A sample larger than an eighth
            // of the kernels is not copied: the map is then built from the
            // kernels themselves while they are sorted for the sweep.
            let most = bundle.events.len() / 8;
            let (order, early) = rayon::join(
                || overlap::SweepOrder::new(&bundle.events),
                || {
                    with_source_inputs(stage, kernel_map, payloads, |lookup, payload| {
                        overlap::SourceSample::of_at_most(&bundle, most, lookup, stage, payload)
                    })
                },
            );
            let (stats, source_map) = match early {
                overlap::SampledSource::Copied(sample) => rayon::join(
                    || overlap::analyze_overlap_in(order, &mut bundle.events),
                    || {
                        with_source_inputs(stage, kernel_map, payloads, |lookup, payload| {
                            sample.source_map(lookup, stage, payload)
                        })
                    },
                ),
                overlap::SampledSource::Built(source_map) => {
                    (overlap::analyze_overlap_in(order, &mut bundle.events), source_map)
                }
            };
            let (totals, rows) = overlap_stage(&bundle, &source_map, stage, &stats, opts);
            report.push(totals, rows, opts.compat);
        }
        crate::run::progress::phase("overlap sweeps");
        return report;
    }
    // Overlap: stage bundles of the mapping and formal traces.
    let bundle_map = |paths: &[PathBuf], prefix: &str| -> IndexMap<Stage, StageBundle<'_>> {
        let mut ordered: Vec<&PathBuf> = paths.iter().collect();
        ordered.sort_by(|a, b| parse_stage(a).cmp(&parse_stage(b)).then_with(|| a.file_name().cmp(&b.file_name())));
        let mut out: IndexMap<Stage, StageBundle<'_>> = IndexMap::new();
        for p in ordered {
            let Some(l) = find(p) else { continue };
            for (stage, bundle) in overlap::stage_bundles_with(
                &l.trace,
                &l.stages,
                l.path_stage,
                prefix,
                opts.pid_substring.as_deref(),
                opts.masking,
                opts.kernel_rule(),
            ) {
                out.entry(stage).or_insert(bundle);
            }
        }
        out
    };
    let mut formal_bundles = bundle_map(&formal.traces, "formal");
    let mapping_bundles = if shared { IndexMap::new() } else { bundle_map(&mapping.traces, "mapping") };
    crate::run::progress::phase("overlap bundles");
    // Every rendered stage is a key of the formal bundles; keep those that
    // have a mapping bundle. Each stage is swept, then analysed, on its own
    // rayon task (the sweeps one after the other on a large trace).
    let wanted: Vec<Stage> = render_stages(&formal_bundles)
        .into_iter()
        .filter(|stage| pick_stage(if shared { &formal_bundles } else { &mapping_bundles }, *stage).is_some())
        .collect();
    let stages: Vec<_> = formal_bundles.iter_mut().filter(|(key, _)| wanted.contains(key)).collect();
    let sweep = |(key, bundle): (&Stage, &mut StageBundle<'_>)| (*key, overlap::analyze_overlap(&mut bundle.events));
    // On a large trace the stages are swept one after the other, so that
    // only one stage's sweep state (about 30 bytes a kernel) exists at once.
    let mut swept: Vec<(Stage, overlap::OverlapStats)> = if parallel_sweeps {
        stages.into_par_iter().map(sweep).collect()
    } else {
        stages.into_iter().map(sweep).collect()
    };
    swept.sort_by_key(|(key, _)| wanted.iter().position(|w| w == key));
    crate::run::progress::phase("overlap sweeps");
    let mapping_bundles = if shared { &formal_bundles } else { &mapping_bundles };
    let per_stage: Vec<(OverlapStageStats, Vec<OverlapRow>)> = swept
        .into_par_iter()
        .filter_map(|(stage, stats)| {
            let (_, mapping_bundle) = pick_stage(mapping_bundles, stage)?;
            let formal_bundle = formal_bundles.get(&stage)?;
            let source_map = with_source_inputs(stage, kernel_map, payloads, |lookup, payload| {
                overlap::build_kernel_source_map(mapping_bundle, lookup, stage, payload)
            });
            Some(overlap_stage(formal_bundle, &source_map, stage, &stats, opts))
        })
        .collect();
    for (totals, rows) in per_stage {
        report.push(totals, rows, opts.compat);
    }
    report
}

/// Calls `build` with what a stage's source map reads besides its
/// kernels: the kernel map's lookup and the formal stage payload.
fn with_source_inputs<R>(
    stage: Stage,
    kernel_map: &KernelMap,
    payloads: &IndexMap<Stage, &StagePayload>,
    build: impl FnOnce(&dyn Fn(Stage, &str) -> Option<KernelEntry>, Option<&StagePayload>) -> R,
) -> R {
    let lookup = |stage: Stage, name: &str| kernel_map.lookup(stage, name).cloned();
    build(&lookup, pick_stage(payloads, stage).map(|(_, p)| *p))
}

/// The totals and rows of one swept stage.
fn overlap_stage(
    formal_bundle: &StageBundle<'_>,
    source_map: &overlap::SourceMap,
    stage: Stage,
    stats: &overlap::OverlapStats,
    opts: &TriageOptions,
) -> (OverlapStageStats, Vec<OverlapRow>) {
    let totals = OverlapStageStats {
        bundle: formal_bundle.label.clone(),
        stage,
        total_busy_us: stats.total_busy_us,
        overlap_us: stats.overlap_us,
        max_concurrent_streams: stats.max_concurrent_streams,
        exclusive_comm_by_kernel: exclusive_comm_by_kernel(&formal_bundle.events, opts.kernel_rule()),
    };
    // Every row is kept; the table limit, like the kernel table's, only
    // decides which are rendered (the first `limit`, at or above the bar).
    let (share, advice) = match opts.compat {
        Compat::Default => (overlap::ShareBasis::Running, overlap::Advice::ByCategory),
        Compat::Reference => (overlap::ShareBasis::Summed, overlap::Advice::Reference),
    };
    let mut rows = overlap::action_rows_from(
        formal_bundle,
        source_map,
        stats,
        overlap::RowOptions { share, advice, table_limit: 0 },
    );
    if opts.compat == Compat::Default {
        // The legend's order: P1 (act first) before P2, and so on; within a
        // priority, the reference's order (weighted exclusive time). The
        // reference lists its two picks one after the other.
        rows.sort_by(|a, b| a.priority.cmp(&b.priority));
    }
    let shown = match opts.overlap_table_limit {
        0 => usize::MAX,
        n => n,
    };
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            let rendered = i < shown && row.share_pct >= opts.min_share;
            OverlapRow { stage, row, rendered }
        })
        .collect();
    (totals, rows)
}

/// Exclusive and hidden time over total time are fractions, but summing
/// many microsecond intervals in floating point can put a part a hair above
/// its whole (1.000137 on a real trace): shown as at most 1 unless the run
/// reproduces the reference tool.
fn clamp_ratios(row: &mut crate::analysis::overlap::ActionRow) {
    row.exclusive_ratio = row.exclusive_ratio.clamp(0.0, 1.0);
    row.hidden_ratio = row.hidden_ratio.clamp(0.0, 1.0);
}

/// Exclusive time of the communication kernels summed per (canonical name,
/// category), first-seen order. A kernel is communication by the kernel
/// table's category under `rule` (not the overlap table's coarser one), so
/// that a batch's exposed communication and compute split the kernels as
/// `triage` does. Each distinct name is classified once.
fn exclusive_comm_by_kernel(events: &[overlap::OverlapKernel], rule: KernelRule) -> Vec<(String, &'static str, f64)> {
    // Per shared name (its address): whether it is communication.
    let mut is_comm: rustc_hash::FxHashMap<*const KernelName, bool> = Default::default();
    let mut sums: IndexMap<&str, f64> = IndexMap::new();
    for e in events {
        let comm = *is_comm
            .entry(Arc::as_ptr(&e.name))
            .or_insert_with(|| kernel_category(e.canonical_name(), rule) == "communication");
        if comm {
            *sums.entry(e.canonical_name()).or_insert(0.0) += e.exclusive_us;
        }
    }
    sums.into_iter().map(|(n, us)| (n.to_string(), "communication", us)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_waits_for_the_overlap_step_only_within_the_budget() {
        // Columns, kernel rows and JSON bytes of the 1 GB tiled H100 trace,
        // the 1 GB synthetic trace and the 2.2 GB overlapping-frames trace,
        // whose peaks beside the overlap step were 111.5, 102.5 and 203.4 MB
        // against budgets of 120.1, 117.7 and 174.1 MB.
        assert!(fits_beside(48_242_408, 317_814, 1_122_152_233));
        assert!(fits_beside(45_913_040, 307_808, 1_073_754_361));
        assert!(!fits_beside(96_287_490, 629_705, 2_202_025_396));
        // A small trace always fits; a huge count cannot overflow.
        assert!(fits_beside(0, 0, 0));
        assert!(!fits_beside(u64::MAX, u64::MAX, u64::MAX));
    }

    #[test]
    fn stage_picking() {
        let mut m: IndexMap<Stage, u8> = IndexMap::new();
        m.insert(Stage::Decode, 1);
        assert_eq!(pick_stage(&m, Stage::Extend).map(|(k, _)| *k), Some(Stage::Decode));
        m.insert(Stage::All, 2);
        assert_eq!(pick_stage(&m, Stage::Extend).map(|(k, _)| *k), Some(Stage::All));
        assert_eq!(render_stages(&m), vec![Stage::Decode]);
    }

    #[test]
    fn model_from_args() {
        let v = serde_json::json!({"model_path": "", "model": "m"});
        assert_eq!(model_name(Some(&v)).as_deref(), Some("m"));
        assert_eq!(model_name(None), None);
    }
}
