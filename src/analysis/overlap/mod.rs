//! Multi-stream overlap analysis (the Overlap Opportunity Table): which GPU
//! kernels run exposed on the critical path and which hide under work on
//! other streams, where in Python each one was launched, how tightly it is
//! packed against its same-stream neighbours, and what to try first.
//!
//! Flow per stage: [`stage_bundles`] picks the heaviest GPU process and
//! groups its kernels by stage; [`analyze_overlap`] sweeps them to split each
//! kernel's time into exclusive and hidden parts; [`build_action_rows`]
//! aggregates per kernel, attributes Python scopes from the mapping trace
//! (plus the kernel module's map and stage payload) and ranks the rows.
//! Every function is pure over its inputs, so stages can run in parallel.

mod aggregate;
mod bundle;
mod contexts;
mod dependency;
mod detect;
mod lookup;
mod rows;
mod scopes;
mod source_map;
mod sweep;
mod sweep_lazy;

use std::sync::Arc;

pub use crate::analysis::stage::Stage;
pub use crate::analysis::text::Masking;

use crate::analysis::kernels::extract::KernelName;
use crate::analysis::types::{KernelEntry, StagePayload};
use crate::columns::Trace;

pub use bundle::{render_stages, stage_bundles, stage_bundles_with, BundleSource};
pub use dependency::dependency_risk_label;
pub use detect::{overlap_category, overlap_category_by, overlap_kernel_name};
pub use rows::{Advice, RowOptions, ShareBasis};
pub use source_map::{build_kernel_source_map, SampledSource, SourceMap, SourceSample};
pub use sweep::{analyze_overlap, analyze_overlap_in, SweepOrder};

/// One GPU kernel of the chosen process, with the time split the sweep
/// fills in (`KernelEvent` in the reference). Kept to 88 bytes, since a
/// 20 GB trace holds millions: the canonical name and category are one
/// shared [`KernelName`], the ids are read from the trace row on demand,
/// and the usual single overlapper is stored inline.
#[derive(Clone, Debug, PartialEq)]
pub struct OverlapKernel {
    pub ts: f64,
    pub dur: f64,
    /// Time with at least one kernel active on another stream.
    pub hidden_us: f64,
    /// Time with no kernel active on another stream.
    pub exclusive_us: f64,
    /// Hidden time during which a compute kernel ran on another stream.
    pub hidden_by_compute_us: f64,
    /// Canonical name and category (compute / communication / memory /
    /// elementwise / other).
    pub name: Arc<KernelName>,
    /// `args.stream`, else `args.cuda_stream`, else the thread name, else
    /// `tid=<tid>`.
    pub stream: StreamName,
    /// Hidden time per dominant overlapping kernel, in first-seen order.
    pub overlap_with: OverlapList,
    /// Position among the chosen process's kernels, in trace order.
    idx: u32,
    /// Row in `trace.kernels`, [`NO_ROW`] for a kernel built by hand.
    row: u32,
}

/// A stream's name, shared by its kernels behind a thin (8-byte) pointer.
pub type StreamName = Arc<Box<str>>;

/// The trace row of a kernel that has none.
pub const NO_ROW: u32 = u32::MAX;

impl OverlapKernel {
    pub fn new(idx: usize, row: u32, name: Arc<KernelName>, stream: StreamName, ts: f64, dur: f64) -> Self {
        OverlapKernel {
            ts,
            dur,
            hidden_us: 0.0,
            exclusive_us: 0.0,
            hidden_by_compute_us: 0.0,
            name,
            stream,
            overlap_with: OverlapList::default(),
            idx: u32::try_from(idx).unwrap_or(u32::MAX),
            row,
        }
    }

    #[inline]
    pub fn idx(&self) -> usize {
        self.idx as usize
    }

    #[inline]
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }

    #[inline]
    pub fn canonical_name(&self) -> &str {
        &self.name.canonical
    }

    #[inline]
    pub fn category(&self) -> &'static str {
        self.name.category
    }

    /// `External id`, else the one its correlation maps to.
    pub fn external_id(&self, trace: &Trace) -> Option<i64> {
        let r = self.trace_row(trace)?;
        trace.resolve_external(r.external_id, r.correlation)
    }

    pub fn correlation(&self, trace: &Trace) -> Option<i64> {
        self.trace_row(trace)?.correlation
    }

    fn trace_row(&self, trace: &Trace) -> Option<crate::columns::KernelRow> {
        let row = self.row as usize;
        (self.row != NO_ROW && row < trace.kernels.len()).then(|| trace.kernels.get(row))
    }
}

/// Per dominant overlapper (by canonical name): hidden time, first-seen
/// order. The first entry is inline: most hidden kernels have one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OverlapList {
    first: Option<Overlapper>,
    // Boxed so that the rare second and later entries cost 8 bytes, not
    // 24, in every kernel.
    #[allow(clippy::box_collection)]
    rest: Option<Box<Vec<Overlapper>>>,
}

/// One dominant overlapper and the hidden time under it.
type Overlapper = (Arc<KernelName>, f64);

impl OverlapList {
    /// Adds `segment` to `name`'s entry, appending one if needed.
    pub fn add(&mut self, name: &Arc<KernelName>, segment: f64) {
        let same = |n: &Arc<KernelName>| Arc::ptr_eq(n, name) || n.canonical == name.canonical;
        match &mut self.first {
            None => {
                self.first = Some((name.clone(), segment));
                return;
            }
            Some((n, v)) if same(n) => {
                *v += segment;
                return;
            }
            Some(_) => {}
        }
        let rest = self.rest.get_or_insert_with(Default::default);
        match rest.iter_mut().find(|(n, _)| same(n)) {
            Some((_, v)) => *v += segment,
            None => {
                rest.reserve_exact(1);
                rest.push((name.clone(), segment));
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.entries().map(|(n, v)| (&*n.canonical, v))
    }

    /// The overlappers' name records and hidden times, first-seen order.
    pub fn entries(&self) -> impl Iterator<Item = (&Arc<KernelName>, f64)> {
        self.first.iter().chain(self.rest.iter().flat_map(|r| r.iter())).map(|(n, v)| (n, *v))
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

/// Totals of one sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OverlapStats {
    /// Time with at least one kernel active.
    pub total_busy_us: f64,
    /// Time with kernels active on two or more streams.
    pub overlap_us: f64,
    pub max_concurrent_streams: usize,
}

/// One row of the overlap opportunity table, before the driver's 1% cut.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ActionRow {
    pub priority: String,
    pub verdict: String,
    pub kernel: String,
    pub category: String,
    pub total_us: f64,
    pub share_pct: f64,
    pub exclusive_ratio: f64,
    pub hidden_ratio: f64,
    pub python_scope: String,
    pub launch_op: String,
    pub mapping_ratio: f64,
    pub dependency_signal: String,
    pub prev_neighbor: String,
    pub next_neighbor: String,
    pub recommendation: String,
    pub suggestion: String,
    pub representative_idx: usize,
}

/// The kernels of one stage of one trace (`TraceBundle` in the reference).
#[derive(Clone, Debug)]
pub struct StageBundle<'t> {
    /// `<label_prefix>-<stage>`.
    pub label: String,
    pub trace: &'t Trace,
    pub events: Vec<OverlapKernel>,
    /// The process whose kernels were kept.
    pub pid: Option<String>,
    /// How kernel and scope names were masked.
    pub masking: Masking,
}

/// Aggregates the analysed `formal` kernels, builds the kernel → Python
/// scope source map from the `mapping` bundle (the kernel map lookup fills
/// in where the trace itself has no scope), merges the formal stage payload
/// into it, and ranks the action rows. `formal.events` must have been
/// through [`analyze_overlap`]; `stats` is that sweep's result. Returns all
/// rows (the driver drops those under 1% share).
pub fn build_action_rows(
    formal: &StageBundle,
    mapping: &StageBundle,
    stage: Stage,
    stats: &OverlapStats,
    kernel_map_lookup: &dyn Fn(Stage, &str) -> Option<KernelEntry>,
    formal_stage_payload: Option<&StagePayload>,
    opts: RowOptions,
) -> Vec<ActionRow> {
    // The source map first: its working tables are gone before the
    // aggregates exist.
    let source_map = build_kernel_source_map(mapping, kernel_map_lookup, stage, formal_stage_payload);
    action_rows_from(formal, &source_map, stats, opts)
}

/// [`build_action_rows`] with the source map already built.
pub fn action_rows_from(
    formal: &StageBundle,
    source_map: &SourceMap,
    stats: &OverlapStats,
    opts: RowOptions,
) -> Vec<ActionRow> {
    let aggregates = aggregate::aggregate_events(&formal.events);
    rows::build_action_rows(&aggregates, source_map, &formal.events, stats.total_busy_us, opts)
}

#[cfg(test)]
mod tests {
    use super::source_map::SourceStats;
    use super::*;
    use crate::analysis::types::Text;
    use crate::columns::value::trace_from_value;
    use serde_json::json;

    #[test]
    fn rows_from_a_small_trace() {
        let ev = |name: &str, cat: &str, tid: u32, ts: f64, dur: f64, args: serde_json::Value| json!({"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": tid, "ts": ts, "dur": dur, "args": args});
        let trace = trace_from_value(&json!({"traceEvents": [
            ev("/site-packages/vllm/model.py(10): forward", "python_function", 1, 0.0, 100.0, json!({})),
            ev("threading.py(5): run", "python_function", 1, 0.0, 200.0, json!({})),
            ev("aten::mm", "cpu_op", 1, 10.0, 5.0, json!({"External id": 1})),
            ev("nccl_allreduce", "kernel", 7, 20.0, 50.0, json!({"stream": 7, "External id": 1})),
            ev("void gemm(int)", "kernel", 8, 100.0, 10.0, json!({"stream": 8, "External id": 2})),
        ]}));
        let mut formal = stage_bundles(&trace, Stage::All, "formal", None, Masking::WordStart);
        let mapping = stage_bundles(&trace, Stage::All, "mapping", None, Masking::WordStart);
        let (stage, bundle) = &mut formal[0];
        let stats = analyze_overlap(&mut bundle.events);
        assert_eq!(stats, OverlapStats { total_busy_us: 60.0, overlap_us: 0.0, max_concurrent_streams: 1 });
        let rows_with = |advice| {
            let opts = RowOptions { advice, ..RowOptions::default() };
            build_action_rows(bundle, &mapping[0].1, *stage, &stats, &|_, _| None, None, opts)
        };
        let rows = rows_with(Advice::Reference);
        let got: Vec<(&str, &str, &str, &str, &str)> = rows
            .iter()
            .map(|r| (&*r.priority, &*r.kernel, &*r.python_scope, &*r.launch_op, &*r.recommendation))
            .collect();
        assert_eq!(
            got,
            vec![
                ("P1", "nccl_allreduce", "vllm/model.py(10): forward", "aten::mm", "try overlap"),
                ("P1", "void gemm", "vllm/model.py(10): forward", "time-window fallback", "try fusion"),
            ]
        );
        // Advised by category, the exposed GEMM is deferred to the kernel
        // table rather than sent to fusion.
        let by_category = rows_with(Advice::ByCategory);
        let advice: Vec<(&str, &str)> = by_category.iter().map(|r| (&*r.priority, &*r.recommendation)).collect();
        assert_eq!(advice, [("P1", "try overlap"), ("P3", "defer")]);
        assert_eq!(rows[0].dependency_signal, "serial risk low");
        assert_eq!(rows[0].share_pct, 50.0 / 60.0 * 100.0);
        assert_eq!(rows[1].prev_neighbor, "none");
    }

    #[test]
    fn a_share_counts_the_time_a_kernel_runs() {
        // Launches of one copy kernel run side by side on two streams:
        // 30 µs of launches in the 20 µs the stage is busy.
        let copy = |tid: u32, ts: f64, dur: f64| json!({"ph": "X", "name": "Memcpy DtoD", "cat": "gpu_memcpy", "pid": 0, "tid": tid, "ts": ts, "dur": dur, "args": {"stream": tid}});
        let trace = trace_from_value(&json!({"traceEvents": [
            copy(7, 0.0, 10.0), copy(8, 5.0, 10.0), copy(7, 10.0, 10.0),
        ]}));
        let (stage, mut bundle) = stage_bundles(&trace, Stage::All, "formal", None, Masking::WordStart).remove(0);
        let stats = analyze_overlap(&mut bundle.events);
        assert_eq!(stats.total_busy_us, 20.0);
        let share = |basis| {
            let rows = build_action_rows(
                &bundle,
                &bundle,
                stage,
                &stats,
                &|_, _| None,
                None,
                RowOptions { share: basis, table_limit: 0, ..RowOptions::default() },
            );
            rows.iter().map(|r| (r.kernel.clone(), r.total_us, r.share_pct)).collect::<Vec<_>>()
        };
        assert_eq!(share(ShareBasis::Running), [("Memcpy DtoD".to_string(), 30.0, 100.0)]);
        assert_eq!(share(ShareBasis::Summed), [("Memcpy DtoD".to_string(), 30.0, 150.0)]);
    }

    #[test]
    fn union_of_spans() {
        let mut spans = vec![(5.0, 9.0), (0.0, 2.0), (1.0, 3.0), (9.0, 10.0), (4.0, 4.0), (f64::NAN, 1.0)];
        spans.sort_by(|a: &(f64, f64), b| a.0.total_cmp(&b.0));
        assert_eq!(rows::union_length(spans.into_iter()), Some(8.0));
        // Launches that only touch end to start never overlap.
        assert_eq!(rows::union_length([(0.0, 2.0), (2.0, 3.0)].into_iter()), None);
        assert_eq!(rows::union_length(std::iter::empty()), None);
    }

    #[test]
    fn a_sample_taken_before_the_sweep_gives_the_bundles_source_map() {
        let ev = |name: &str, cat: &str, tid: u32, ts: f64, dur: f64, args: serde_json::Value| json!({"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": tid, "ts": ts, "dur": dur, "args": args});
        let mut events = vec![
            ev("/site-packages/vllm/model.py(10): forward", "python_function", 1, 0.0, 400.0, json!({})),
            ev("aten::mm", "cpu_op", 1, 10.0, 5.0, json!({"External id": 1})),
            ev("aten::add", "cpu_op", 1, 30.0, 5.0, json!({"External id": 2})),
        ];
        // More launches of one name than the sample keeps, on two streams.
        for i in 0..40u32 {
            let (name, ext) = if i % 3 == 0 { ("void gemm(int)", 1) } else { ("nccl_allreduce", 2) };
            let stream = 7 + i % 2;
            events.push(ev(
                name,
                "kernel",
                stream,
                20.0 + 7.0 * f64::from(i),
                9.0,
                json!({"stream": stream, "External id": ext}),
            ));
        }
        let trace = trace_from_value(&json!({ "traceEvents": events }));
        let lookup = |_: Stage, name: &str| {
            (name == "void gemm").then(|| KernelEntry { best_location: "m.py:3 f".into(), ..Default::default() })
        };
        let (stage, mut bundle) = stage_bundles(&trace, Stage::All, "f", None, Masking::WordStart).remove(0);
        let want: Vec<(Text, SourceStats)> =
            build_kernel_source_map(&bundle, &lookup, stage, None).into_iter().collect();
        assert_eq!(want.len(), 2);
        let SampledSource::Built(built) = SourceSample::of_at_most(&bundle, 29, &lookup, stage, None) else {
            panic!("14 + 16 launches are sampled: more than 29 copied")
        };
        assert_eq!(built.into_iter().collect::<Vec<_>>(), want);
        let SampledSource::Copied(sample) = SourceSample::of_at_most(&bundle, 30, &lookup, stage, None) else {
            panic!("no sample of 30 kernels")
        };
        analyze_overlap(&mut bundle.events);
        let got: Vec<(Text, SourceStats)> = sample.source_map(&lookup, stage, None).into_iter().collect();
        assert_eq!(got, want);
    }

    #[test]
    fn overlap_kernels_stay_small() {
        // Millions of them exist at once on a 20 GB trace.
        assert!(std::mem::size_of::<OverlapKernel>() <= 88, "{}", std::mem::size_of::<OverlapKernel>());
    }

    #[test]
    fn odd_values_do_not_panic() {
        let k = |name: &str, ts: serde_json::Value, dur: serde_json::Value, stream: u32| {
            json!({"ph": "X", "name": name, "cat": "kernel", "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                   "args": {"stream": stream, "External id": 1, "correlation": 1}})
        };
        let trace = trace_from_value(&json!({"traceEvents": [
            k("", json!("nan"), json!(5.0), 1),
            k("void a(", json!(1.0), json!("inf"), 2),
            k("memset 0x", json!(1e300), json!(1e300), 1),
            k("x", json!(-0.0), json!(1e-300), 2),
            k("copy", json!(3.0), json!(2.0), 3),
            {"ph": "X", "name": "p.py(1): f", "cat": "python_function", "pid": 0, "tid": 9, "ts": "nan", "dur": 1.0},
            {"ph": "X", "name": "aten::x", "cat": "cpu_op", "pid": 0, "tid": 9, "ts": 0.0, "dur": 1.0,
             "args": {"External id": 1}},
        ]}));
        for (stage, mut bundle) in stage_bundles(&trace, Stage::All, "f", None, Masking::WordStart) {
            let stats = analyze_overlap(&mut bundle.events);
            let entry = KernelEntry { best_location: " loc ".into(), ..Default::default() };
            let lookup = move |_: Stage, _: &str| Some(entry.clone());
            for share in [ShareBasis::Running, ShareBasis::Summed] {
                let rows = build_action_rows(
                    &bundle,
                    &bundle,
                    stage,
                    &stats,
                    &lookup,
                    None,
                    RowOptions { share, table_limit: 3, ..RowOptions::default() },
                );
                assert!(rows.len() <= 3);
            }
        }
    }
}
