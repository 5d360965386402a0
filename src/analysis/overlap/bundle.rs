//! From a trace to per-stage bundles: pick the heaviest GPU process
//! (preferring a `TP00` one unless a pid filter is given), turn its kernel
//! rows into [`OverlapKernel`]s with stream, stage and External id
//! resolved, and group them by stage in render order.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use indexmap::IndexMap;

use super::detect::{is_kernel_event, overlap_category_by, overlap_kernel_name};
use super::Masking;
use super::{OverlapKernel, StageBundle, StreamName};
use crate::analysis::kernels::extract::KernelName;
use crate::analysis::kernels::names::KernelRule;
use crate::analysis::stage::{select_heaviest_pid, RowStages, Stage, StageRule};
use crate::analysis::types::Text;
use crate::columns::{Sym, ThreadIdx, Trace};

/// The chosen process's kernel rows (trace order) and that process's pid.
fn chosen_rows(trace: &Trace, pid_substring: Option<&str>) -> Option<(Vec<u32>, String)> {
    let k = &trace.kernels;
    // The detector reads only the name, category and stream marker: decide
    // once per distinct triple.
    let mut verdicts: HashMap<(Sym, Sym, bool), bool> = HashMap::default();
    let kernel_rows: Vec<u32> = (0..k.len())
        .filter(|&i| {
            *verdicts
                .entry((k.name[i], k.cat(i), k.has_stream_marker(i)))
                .or_insert_with(|| is_kernel_event(trace, &k.get(i)))
        })
        .map(|i| i as u32)
        .collect();
    let filter_given = pid_substring.is_some_and(|s| !s.is_empty());
    let preferred: &[&str] = if filter_given { &[] } else { &["TP00"] };
    let chosen = select_heaviest_pid(
        kernel_rows.iter().map(|&i| (trace.pid_str(k.thread(i as usize)), k.dur[i as usize])),
        pid_substring,
        preferred,
    )?;
    let mut is_chosen: HashMap<ThreadIdx, bool> = HashMap::default();
    // A kernel whose start or end is no finite number (`1e999`, `NaN`) has
    // no place in time: it is left out, as the timeline leaves it out,
    // rather than stretching its stage's busy time to infinity.
    let placed = |i: usize| k.ts[i].is_finite() && (k.ts[i] + k.dur[i]).is_finite();
    let rows = kernel_rows
        .into_iter()
        .filter(|&i| {
            let thread = k.thread(i as usize);
            placed(i as usize) && *is_chosen.entry(thread).or_insert_with(|| trace.pid_str(thread) == chosen)
        })
        .collect();
    Some((rows, chosen))
}

/// Turns kernel rows into [`OverlapKernel`]s, caching per-name and
/// per-stream strings.
struct EventBuilder<'t, 's> {
    trace: &'t Trace,
    stages: &'s RowStages,
    /// Per raw name; equal (canonical, category) pairs share one value.
    names: HashMap<Sym, Arc<KernelName>>,
    shared: HashMap<(Text, &'static str), Arc<KernelName>>,
    /// Per thread: the stream name used when args carry none.
    threads: HashMap<ThreadIdx, StreamName>,
    streams: HashMap<Sym, StreamName>,
    masking: Masking,
    /// How a kernel's coarse category is named ([`overlap_category_by`]).
    rule: KernelRule,
}

impl<'t, 's> EventBuilder<'t, 's> {
    fn new(trace: &'t Trace, stages: &'s RowStages, masking: Masking, rule: KernelRule) -> Self {
        EventBuilder {
            trace,
            stages,
            masking,
            rule,
            names: HashMap::default(),
            shared: HashMap::default(),
            threads: HashMap::default(),
            streams: HashMap::default(),
        }
    }

    fn stage(&self, row: usize) -> Stage {
        self.stages.get(row)
    }

    /// Works out the name records of `rows` (first-seen order of their raw
    /// names), the canonical names and categories in parallel: a trace can
    /// have hundreds of thousands of names.
    fn prepare_names(&mut self, rows: &[u32]) {
        use rayon::prelude::*;
        let trace = self.trace;
        let mut seen: rustc_hash::FxHashSet<Sym> = Default::default();
        let raw_names: Vec<Sym> = rows
            .iter()
            .map(|&row| trace.kernels.name[row as usize])
            .filter(|sym| !self.names.contains_key(sym) && seen.insert(*sym))
            .collect();
        drop(seen);
        let (masking, rule) = (self.masking, self.rule);
        let derived: Vec<(String, &'static str)> = raw_names
            .par_iter()
            .map(|&sym| {
                let raw = trace.s(sym);
                (overlap_kernel_name(raw, masking), overlap_category_by(raw, rule))
            })
            .collect();
        for (sym, (canonical, category)) in raw_names.into_iter().zip(derived) {
            let record = self
                .shared
                .entry((Text::from(canonical), category))
                .or_insert_with_key(|k| Arc::new(KernelName { canonical: k.0.clone(), category: k.1 }))
                .clone();
            self.names.insert(sym, record);
        }
    }

    fn build(&mut self, idx: usize, row: usize) -> OverlapKernel {
        let trace = self.trace;
        let r = trace.kernels.get(row);
        let stream = match r.stream.or(r.cuda_stream) {
            Some(sym) => self.streams.entry(sym).or_insert_with(|| Arc::new(Box::from(trace.s(sym)))).clone(),
            None => self
                .threads
                .entry(r.thread)
                .or_insert_with(|| {
                    let key = trace.thread(r.thread);
                    match trace.thread_names.get(&key) {
                        Some(&n) => Arc::new(Box::from(trace.s(n))),
                        None => Arc::new(format!("tid={}", trace.s(key.tid)).into_boxed_str()),
                    }
                })
                .clone(),
        };
        let shared = &mut self.shared;
        let (masking, rule) = (self.masking, self.rule);
        let name = self
            .names
            .entry(r.name)
            .or_insert_with(|| {
                let raw = trace.s(r.name);
                let key = (Text::from(overlap_kernel_name(raw, masking)), overlap_category_by(raw, rule));
                shared
                    .entry(key)
                    .or_insert_with_key(|k| Arc::new(KernelName { canonical: k.0.clone(), category: k.1 }))
                    .clone()
            })
            .clone();
        OverlapKernel::new(idx, row as u32, name, stream, r.ts, r.dur)
    }
}

/// The chosen process's kernels in trace order, and that process's pid.
#[cfg(test)]
pub fn extract_kernel_events(trace: &Trace, pid_substring: Option<&str>) -> (Vec<OverlapKernel>, Option<String>) {
    let Some((rows, chosen)) = chosen_rows(trace, pid_substring) else {
        return (Vec::new(), None);
    };
    let stages = RowStages::build(trace, StageRule::Reference);
    let mut builder = EventBuilder::new(trace, &stages, Masking::WordStart, KernelRule::Reference);
    builder.prepare_names(&rows);
    let events = rows.iter().enumerate().map(|(idx, &row)| builder.build(idx, row as usize)).collect();
    (events, Some(chosen))
}

/// The chosen process's kernel rows, ready to be turned into one stage's
/// [`OverlapKernel`]s at a time: a large trace then holds one stage's
/// records, not every stage's. A trace whose file name fixes a stage puts
/// everything there, otherwise each kernel keeps its resolved stage.
pub struct BundleSource<'t, 's> {
    builder: EventBuilder<'t, 's>,
    /// The chosen process's kernel rows, trace order.
    rows: Vec<u32>,
    /// Kernels per stage, stages in first-seen order.
    sizes: IndexMap<Stage, usize>,
    default_stage: Stage,
    pid: String,
}

impl<'t, 's> BundleSource<'t, 's> {
    /// `None` when the trace has no GPU kernels (or none of a process the
    /// pid filter names).
    pub fn new(
        trace: &'t Trace,
        stages: &'s RowStages,
        pid_substring: Option<&str>,
        default_stage: Stage,
        masking: Masking,
        rule: KernelRule,
    ) -> Option<Self> {
        let (rows, pid) = chosen_rows(trace, pid_substring)?;
        let mut builder = EventBuilder::new(trace, stages, masking, rule);
        builder.prepare_names(&rows);
        // Every row's name is prepared: the table that made equal names
        // share one record is not needed again.
        builder.shared = HashMap::default();
        let mut source = BundleSource { builder, rows, sizes: IndexMap::new(), default_stage, pid };
        for i in 0..source.rows.len() {
            *source.sizes.entry(source.stage_of(i)).or_insert(0) += 1;
        }
        Some(source)
    }

    fn stage_of(&self, i: usize) -> Stage {
        if self.default_stage != Stage::All {
            self.default_stage
        } else {
            self.builder.stage(self.rows[i] as usize)
        }
    }

    /// Kernels per stage, stages in first-seen order.
    pub fn sizes(&self) -> &IndexMap<Stage, usize> {
        &self.sizes
    }

    /// `stage`'s kernels in trace order (sized first and filled directly).
    pub fn events(&mut self, stage: Stage) -> Vec<OverlapKernel> {
        let mut out = Vec::with_capacity(self.sizes.get(&stage).copied().unwrap_or(0));
        for idx in 0..self.rows.len() {
            if self.stage_of(idx) == stage {
                let row = self.rows[idx] as usize;
                out.push(self.builder.build(idx, row));
            }
        }
        out
    }

    /// `stage`'s bundle, labelled `<label_prefix>-<stage>`.
    pub fn bundle(&mut self, stage: Stage, label_prefix: &str) -> StageBundle<'t> {
        let events = self.events(stage);
        StageBundle {
            label: format!("{label_prefix}-{stage}"),
            trace: self.builder.trace,
            events,
            pid: Some(self.pid.clone()),
            masking: self.builder.masking,
        }
    }
}

/// The stages to report, in order: `all` only when it is the only stage.
pub fn render_stages<V>(groups: &IndexMap<Stage, V>) -> Vec<Stage> {
    let only_all = groups.keys().all(|s| *s == Stage::All);
    let mut stages: Vec<Stage> = groups.keys().filter(|s| only_all || **s != Stage::All).copied().collect();
    stages.sort();
    stages
}

/// The reference's per-file bundle map: the chosen process's kernels split
/// by stage (annotation names read by the reference's rule), one bundle per rendered stage (kernels resolved to `all` are
/// dropped when any named stage exists), in render order, the kernels'
/// categories by the reference's rule. Empty when the trace has no GPU
/// kernels.
pub fn stage_bundles<'t>(
    trace: &'t Trace,
    default_stage: Stage,
    label_prefix: &str,
    pid_substring: Option<&str>,
    masking: Masking,
) -> Vec<(Stage, StageBundle<'t>)> {
    stage_bundles_with(
        trace,
        &RowStages::build(trace, StageRule::Reference),
        default_stage,
        label_prefix,
        pid_substring,
        masking,
        KernelRule::Reference,
    )
}

/// [`stage_bundles`] with the kernel rows' stages already resolved and the
/// kernels' categories by `rule` ([`crate::analysis::overlap::overlap_category_by`]).
pub fn stage_bundles_with<'t>(
    trace: &'t Trace,
    stages: &RowStages,
    default_stage: Stage,
    label_prefix: &str,
    pid_substring: Option<&str>,
    masking: Masking,
    rule: KernelRule,
) -> Vec<(Stage, StageBundle<'t>)> {
    let Some(mut source) = BundleSource::new(trace, stages, pid_substring, default_stage, masking, rule) else {
        return Vec::new();
    };
    let mut out: Vec<(Stage, StageBundle<'t>)> =
        render_stages(source.sizes()).into_iter().map(|stage| (stage, source.bundle(stage, label_prefix))).collect();
    // Mirrors the reference's "all" fallback; with one file the rendered
    // stages are never empty, so this only guards odd inputs.
    if out.is_empty() && source.sizes().contains_key(&Stage::All) {
        out.push((Stage::All, source.bundle(Stage::All, label_prefix)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::value::trace_from_value;
    use serde_json::json;

    fn x(name: &str, cat: &str, pid: &str, tid: u32, ts: f64, dur: f64, args: serde_json::Value) -> serde_json::Value {
        json!({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args})
    }

    #[test]
    fn extraction_prefers_tp00_and_resolves_streams_and_ids() {
        let trace = trace_from_value(&json!({"traceEvents": [
            {"ph": "M", "name": "thread_name", "pid": "TP00 a", "tid": 5, "args": {"name": "stream five"}},
            x("void big(int)", "kernel", "TP01 b", 1, 0.0, 100.0, json!({"stream": 7})),
            x("void k(int)", "kernel", "TP00 a", 5, 10.0, 2.0, json!({"correlation": 3})),
            x("gemm_op", "cuda", "TP00 a", 6, 20.0, 2.0, json!({"cuda_stream": 9, "External id": 4})),
            x("plain_op", "cuda", "TP00 a", 6, 30.0, 2.0, json!({"stream": 9})),
            x("x.py(1): f", "cuda", "TP00 a", 6, 40.0, 2.0, json!({"stream": 9})),
            x("void k(int)", "gpu_memcpy", "TP00 a", 8, 50.0, 2.0, json!({})),
            x("cudaLaunchKernel", "cuda_runtime", "TP00 a", 2, 9.0, 1.0, json!({"correlation": 3, "External id": 77})),
        ]}));
        let (events, pid) = extract_kernel_events(&trace, None);
        assert_eq!(pid.as_deref(), Some("TP00 a"));
        let got: Vec<(&str, &str, Option<i64>)> =
            events.iter().map(|e| (e.canonical_name(), &**e.stream, e.external_id(&trace))).collect();
        assert_eq!(
            got,
            vec![("void k", "stream five", Some(77)), ("gemm_op", "9", Some(4)), ("void k", "tid=8", None)]
        );
        assert_eq!(events.iter().map(|e| e.idx()).collect::<Vec<_>>(), vec![0, 1, 2]);
        let (_, pid) = extract_kernel_events(&trace, Some("TP01"));
        assert_eq!(pid.as_deref(), Some("TP01 b"));

        let bundles = stage_bundles(&trace, Stage::Decode, "formal", None, Masking::WordStart);
        assert_eq!(bundles.len(), 1);
        assert_eq!((bundles[0].0, bundles[0].1.label.as_str()), (Stage::Decode, "formal-decode"));
        assert_eq!(bundles[0].1.events.len(), 3);
        assert!(stage_bundles(
            &trace_from_value(&json!({"traceEvents": []})),
            Stage::All,
            "f",
            None,
            Masking::WordStart
        )
        .is_empty());
    }

    #[test]
    fn render_order_hides_all_when_named_stages_exist() {
        let mut g: IndexMap<Stage, ()> = IndexMap::new();
        g.insert(Stage::All, ());
        g.insert(Stage::Decode, ());
        g.insert(Stage::Extend, ());
        assert_eq!(render_stages(&g), vec![Stage::Extend, Stage::Decode]);
        let mut only: IndexMap<Stage, ()> = IndexMap::new();
        only.insert(Stage::All, ());
        assert_eq!(render_stages(&only), vec![Stage::All]);
    }
}
