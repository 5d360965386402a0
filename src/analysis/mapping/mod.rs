//! The mapping kernel map (which Python site launches each kernel, per stage
//! and overall, from the mapping traces) and the kernel table rows built from
//! it for a formal trace.

pub mod key_index;
pub mod lookup;
pub mod payload;

use std::sync::Arc;

use indexmap::map::Entry;
use indexmap::IndexMap;

pub use lookup::{best_site_summary, relaxed_lookup, KernelMap, MapPayload, SiteCells};
pub use payload::{build_stage_payload, pct, py_round_digits, site_display_location};

use crate::analysis::framework::Framework;
use crate::analysis::kernels::{
    categories_by_name, group_kernels_by_stage, kernel_stage, KernelEvent, NameCategories, NameTotals, TraceData,
};
use crate::analysis::sites::{aggregate_kernel_sites, merge_site_stats, SiteIndex, SiteStats};
use crate::analysis::stage::Stage;
use crate::analysis::types::{Aggregate, KernelEntry, KernelRow, StagePayload};
use crate::columns::Trace;
use crate::pysem::fcmp;

/// Launches kept per kernel name when sampling a mapping trace.
pub const SAMPLE_LIMIT_PER_NAME: usize = 16;

/// One loaded trace with its attribution view.
pub struct AttributedTrace<'t> {
    pub trace: &'t Trace,
    pub data: &'t TraceData,
    pub index: &'t SiteIndex,
    /// Stage named by the file path (`all` when none).
    pub default_stage: Stage,
}

/// Up to `limit` launches per canonical name, evenly spread over each name's
/// launches, then ordered by (start, raw name).
pub fn sample_kernels_for_mapping<'a>(
    trace: &Trace,
    kernels: &[&'a KernelEvent],
    limit: usize,
) -> Vec<&'a KernelEvent> {
    let mut sampled: Vec<&'a KernelEvent> =
        crate::pysem::sample_per_name(kernels.iter().copied(), KernelEvent::canonical, limit);
    if limit == 0 {
        return sampled;
    }
    sampled.sort_by(|a, b| {
        fcmp(a.ts(trace), b.ts(trace)).then_with(|| trace.s(a.name(trace)).cmp(trace.s(b.name(trace))))
    });
    sampled
}

/// The reference's `build_mapping_kernel_map`. SGLang and generic PyTorch
/// traces are attributed from every launch ([`Framework::maps_every_launch`]);
/// other frameworks from a per-name sample. When all
/// kernels fall in one stage, the global payload is that stage's (the same
/// sites merged in the same order) and is built once and shared.
pub fn build_mapping_kernel_map(traces: &[AttributedTrace<'_>], framework: Framework) -> KernelMap {
    let mut stages_seen: Vec<Stage> = Vec::new();
    for t in traces {
        for k in &t.data.kernels {
            let stage = kernel_stage(k, t.default_stage);
            if !stages_seen.contains(&stage) {
                stages_seen.push(stage);
            }
        }
    }
    let single_stage = stages_seen.len() == 1;
    let mut stage_stats: IndexMap<Stage, SiteStats> = IndexMap::new();
    let mut stage_categories: IndexMap<Stage, NameCategories> = IndexMap::new();
    let mut global_stats = SiteStats::default();
    let mut global_categories = NameCategories::default();
    for t in traces {
        if t.data.kernels.is_empty() {
            continue;
        }
        // Sample every stage first, so that the stages' full lists (tens of
        // megabytes on a large trace) are gone before the sweeps.
        let sampled: Vec<(Stage, NameCategories, Vec<&KernelEvent>)> =
            group_kernels_by_stage(&t.data.kernels, t.default_stage)
                .into_iter()
                .map(|(stage, kernels)| {
                    let categories = categories_by_name(kernels.iter().copied());
                    let sampled = if framework.maps_every_launch() {
                        kernels
                    } else {
                        sample_kernels_for_mapping(t.trace, &kernels, SAMPLE_LIMIT_PER_NAME)
                    };
                    (stage, categories, sampled)
                })
                .collect();
        for (stage, categories, sampled) in sampled {
            let local = aggregate_kernel_sites(t.trace, t.index, &sampled);
            if !single_stage {
                merge_site_stats(&mut global_stats, &local);
                global_categories.extend(categories.iter().map(|(k, v)| (*k, *v)));
            }
            // A stage's first sites are taken as they are: merging them
            // into an empty map would copy them unchanged.
            match stage_stats.entry(stage) {
                Entry::Vacant(slot) => {
                    slot.insert(local);
                }
                Entry::Occupied(slot) => merge_site_stats(slot.into_mut(), &local),
            }
            stage_categories.entry(stage).or_default().extend(categories);
        }
    }
    let empty = NameCategories::default();
    let stages: IndexMap<Stage, Arc<MapPayload>> = stage_stats
        .into_iter()
        .map(|(stage, stats)| {
            let payload = build_stage_payload(stats, stage_categories.get(&stage).unwrap_or(&empty));
            (stage, Arc::new(MapPayload::new(payload)))
        })
        .collect();
    let global = match stages.values().next() {
        Some(payload) if single_stage => payload.clone(),
        _ => Arc::new(MapPayload::new(build_stage_payload(global_stats, &global_categories))),
    };
    KernelMap { stages, global }
}

/// A trace's stage payloads, stages in first-seen order.
pub type StagePayloads = Vec<(Stage, Arc<MapPayload>)>;

/// The kernel map and the formal stage payloads of a trace that is its own
/// mapping trace, when the map's stages are those payloads: the mapping
/// sample of every stage is all its launches in the trace's order (SGLang
/// or generic PyTorch, or no name launched more than
/// [`SAMPLE_LIMIT_PER_NAME`] times in the stage and the launches in time
/// order), so [`build_mapping_kernel_map`] and [`formal_stage_payloads`]
/// would aggregate the same launches in the same order. Each stage is
/// aggregated once, one stage at a time, and is the map's payload for that
/// stage and the formal payload; the map's global payload is the stages
/// merged in first-seen order (the one stage's payload when there is one).
/// `None` otherwise, or when the trace has no kernels.
pub fn shared_stage_maps(t: &AttributedTrace<'_>, framework: Framework) -> Option<(KernelMap, StagePayloads)> {
    let groups = group_kernels_by_stage(&t.data.kernels, t.default_stage);
    if groups.is_empty() {
        return None;
    }
    if !framework.maps_every_launch() {
        for (_, kernels) in &groups {
            let sampled = sample_kernels_for_mapping(t.trace, kernels, SAMPLE_LIMIT_PER_NAME);
            if sampled.len() != kernels.len() || sampled.iter().zip(kernels).any(|(a, b)| !std::ptr::eq(*a, *b)) {
                return None;
            }
        }
    }
    let single_stage = groups.len() == 1;
    let mut global_stats = SiteStats::default();
    let mut global_categories = NameCategories::default();
    let mut formal: StagePayloads = Vec::with_capacity(groups.len());
    for (stage, kernels) in groups {
        let categories = categories_by_name(kernels.iter().copied());
        let local = aggregate_kernel_sites(t.trace, t.index, &kernels);
        drop(kernels);
        if !single_stage {
            merge_site_stats(&mut global_stats, &local);
            global_categories.extend(categories.iter().map(|(k, v)| (*k, *v)));
        }
        formal.push((stage, Arc::new(MapPayload::new(build_stage_payload(local, &categories)))));
    }
    let global = if single_stage {
        formal[0].1.clone()
    } else {
        Arc::new(MapPayload::new(build_stage_payload(global_stats, &global_categories)))
    };
    let stages = formal.iter().map(|(stage, payload)| (*stage, payload.clone())).collect();
    Some((KernelMap { stages, global }, formal))
}

/// The mapping entry of a kernel, falling back to the formal trace's own
/// payload for that stage.
pub fn resolve_kernel_entry<'a>(
    stage: Stage,
    name: &str,
    local: &'a StagePayload,
    map: Option<&'a KernelMap>,
) -> Option<&'a KernelEntry> {
    if let Some(e) = map.and_then(|m| m.lookup(stage, name)) {
        return Some(e);
    }
    relaxed_lookup(local, name)
}

/// A kernel of a stage's table before its cells are made: its totals,
/// category and the map entry it borrows.
#[derive(Clone, Copy, Debug)]
pub struct RankedKernel<'a> {
    pub name: &'a str,
    pub category: &'static str,
    pub aggregate: Aggregate,
    pub entry: Option<&'a KernelEntry>,
}

impl RankedKernel<'_> {
    /// The owned row, with the given cells.
    pub fn to_row(&self, location: Vec<String>, cpu_op: Vec<String>) -> KernelRow {
        KernelRow {
            name: self.name.to_string(),
            category: self.category.to_string(),
            aggregate: self.aggregate,
            location,
            cpu_op,
            entry: self.entry.cloned(),
        }
    }
}

/// The kernels of one stage by GPU time descending (stable), each with its
/// entry.
pub fn rank_kernels<'a>(
    stage: Stage,
    stats: &NameTotals<'a>,
    categories: &NameCategories,
    local: &'a StagePayload,
    map: Option<&'a KernelMap>,
) -> Vec<RankedKernel<'a>> {
    let mut ordered: Vec<(&'a str, &Aggregate)> = stats.iter().map(|(name, agg)| (*name, agg)).collect();
    ordered.sort_by(|a, b| fcmp(b.1.total_us, a.1.total_us));
    ordered
        .into_iter()
        .map(|(name, agg)| RankedKernel {
            name,
            category: categories.get(name).copied().unwrap_or("other"),
            aggregate: *agg,
            entry: resolve_kernel_entry(stage, name, local, map),
        })
        .collect()
}

/// Kernel table rows of one stage, by GPU time descending (stable).
pub fn build_kernel_rows(
    stage: Stage,
    stats: &NameTotals,
    categories: &NameCategories,
    local: &StagePayload,
    map: Option<&KernelMap>,
) -> Vec<KernelRow> {
    rank_kernels(stage, stats, categories, local, map)
        .iter()
        .map(|k| {
            let (location, cpu_op) = best_site_summary(k.entry);
            k.to_row(location, cpu_op)
        })
        .collect()
}

/// The first `limit` rows (all when 0).
pub fn limit_kernel_rows<T>(rows: &[T], limit: usize) -> &[T] {
    if limit == 0 {
        rows
    } else {
        &rows[..limit.min(rows.len())]
    }
}

/// Formal stage payload of every stage of one trace (stage order as seen).
pub fn formal_stage_payloads(t: &AttributedTrace<'_>) -> Vec<(Stage, StagePayload)> {
    use rayon::prelude::*;
    group_kernels_by_stage(&t.data.kernels, t.default_stage)
        .into_par_iter()
        .map(|(stage, kernels)| {
            let local = aggregate_kernel_sites(t.trace, t.index, &kernels);
            let payload = build_stage_payload(local, &categories_by_name(kernels.iter().copied()));
            (stage, payload)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::kernels::{aggregate_by_name, extract_trace_data, KernelRule};
    use crate::analysis::stage::{RowStages, StageRule};
    use crate::analysis::text::Masking;
    use crate::columns::value::trace_from_value;

    fn tiny_trace() -> Trace {
        let v = serde_json::json!({"traceEvents": [
            {"ph": "X", "cat": "python_function", "name": "/srv/vllm/model.py(10): forward", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
            {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1): _call_impl", "pid": 1, "tid": 1, "ts": 1, "dur": 90},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 10, "args": {"External id": 7}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 8, "dur": 2, "args": {"correlation": 70, "External id": 7}},
            {"ph": "X", "cat": "kernel", "name": "void gemm_kernel<1>(int)", "pid": 0, "tid": 7, "ts": 20, "dur": 30, "args": {"correlation": 70, "stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "void gemm_kernel<1>(float)", "pid": 0, "tid": 7, "ts": 60, "dur": 10, "args": {"stream": 7}}
        ]});
        trace_from_value(&v)
    }

    #[test]
    fn attributes_kernels_to_framework_frames() {
        let trace = tiny_trace();
        let data = extract_trace_data(
            &trace,
            &RowStages::build(&trace, StageRule::Default),
            Masking::WordStart,
            KernelRule::Default,
        );
        assert_eq!(data.kernels.len(), 2);
        assert_eq!(data.kernels[0].canonical(), "void gemm_kernel<1>");
        assert_eq!(data.kernels[0].external_id(), Some(7));
        let index = SiteIndex::build(&trace);
        let view = AttributedTrace { trace: &trace, data: &data, index: &index, default_stage: Stage::All };
        let map = build_mapping_kernel_map(std::slice::from_ref(&view), Framework::Vllm);
        let kernels: Vec<&KernelEvent> = data.kernels.iter().collect();
        let rows = build_kernel_rows(
            Stage::All,
            &aggregate_by_name(&trace, kernels.iter().copied()),
            &categories_by_name(kernels.iter().copied()),
            &StagePayload::default(),
            Some(&map),
        );
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.aggregate.count, 2);
        assert_eq!(row.total_us(), 40.0);
        assert_eq!(row.category, "gemm");
        // Only framework sites are listed when there are any.
        assert_eq!(row.location, vec!["vllm/model.py:10 forward"]);
        let entry = row.entry.as_ref().map(|e| e.sites.len());
        assert_eq!(entry, Some(2));
        assert_eq!(row.cpu_op, vec!["aten::mm"]);
    }

    /// Two stages (a prefill and a decode window), two kernel names, each
    /// with a CPU op and a launch call under a Python frame.
    fn two_stage_trace() -> Trace {
        let mut events = vec![
            serde_json::json!({"ph": "X", "cat": "gpu_user_annotation", "name": "prefill", "pid": 0, "tid": 7, "ts": 0, "dur": 100}),
            serde_json::json!({"ph": "X", "cat": "gpu_user_annotation", "name": "decode", "pid": 0, "tid": 7, "ts": 100, "dur": 200}),
        ];
        for (i, (ts, kernel)) in [
            (10, "void gemm_kernel<1>(int)"),
            (120, "void gemm_kernel<1>(int)"),
            (150, "nccl_allreduce"),
            (200, "void gemm_kernel<1>(int)"),
        ]
        .into_iter()
        .enumerate()
        {
            let (ext, corr, cpu) = (7 + i as i64, 70 + i as i64, ts as f64 - 9.0);
            events.push(serde_json::json!({"ph": "X", "cat": "python_function", "name": format!("/srv/vllm/model.py({i}): forward"), "pid": 1, "tid": 1, "ts": cpu - 1.0, "dur": 8}));
            events.push(serde_json::json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": cpu, "dur": 4, "args": {"External id": ext}}));
            events.push(serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": cpu + 1.0, "dur": 2, "args": {"correlation": corr, "External id": ext}}));
            events.push(serde_json::json!({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts, "dur": 5, "args": {"correlation": corr, "stream": 7}}));
        }
        trace_from_value(&serde_json::json!({ "traceEvents": events }))
    }

    #[test]
    fn shared_stage_maps_match_the_separate_map_and_payloads() {
        let trace = two_stage_trace();
        let data = extract_trace_data(
            &trace,
            &RowStages::build(&trace, StageRule::Default),
            Masking::WordStart,
            KernelRule::Default,
        );
        let index = SiteIndex::build(&trace);
        let view = AttributedTrace { trace: &trace, data: &data, index: &index, default_stage: Stage::All };
        for framework in [Framework::Generic, Framework::Vllm] {
            let (map, formal) = shared_stage_maps(&view, framework).expect("every launch is sampled");
            let separate = build_mapping_kernel_map(std::slice::from_ref(&view), framework);
            let payloads = formal_stage_payloads(&view);
            let stages = |m: &KernelMap| m.stages.iter().map(|(s, p)| (*s, p.payload.clone())).collect::<Vec<_>>();
            assert_eq!(stages(&map), stages(&separate));
            assert_eq!(map.global.payload, separate.global.payload);
            let formal: Vec<(Stage, StagePayload)> = formal.iter().map(|(s, p)| (*s, p.payload.clone())).collect();
            assert_eq!(formal, payloads);
            assert_eq!(formal.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![Stage::Extend, Stage::Decode]);
            // Both stages' sites are in the global payload.
            let gemm = map.global.payload.get("void gemm_kernel<1>");
            let launches: u64 = gemm.map_or(0, |e| e.sites.iter().map(|s| s.launches).sum());
            assert_eq!(launches, 3);
        }
    }

    #[test]
    fn sampling_spreads_evenly_with_half_even_rounding() {
        let mut trace = Trace::default();
        let name = trace.strings.intern("k");
        let info =
            std::sync::Arc::new(crate::analysis::kernels::KernelName { canonical: "k".into(), category: "other" });
        let kernels: Vec<KernelEvent> = (0..20)
            .map(|i| {
                trace.kernels.push(crate::columns::KernelRow {
                    name,
                    cat: name,
                    thread: 0,
                    ts: i as f64,
                    dur: 1.0,
                    stream: None,
                    cuda_stream: None,
                    has_stream_marker: false,
                    external_id: None,
                    correlation: None,
                    stream_int: -1,
                });
                KernelEvent::new(i, info.clone(), Stage::All, None)
            })
            .collect();
        let refs: Vec<&KernelEvent> = kernels.iter().collect();
        let picked: Vec<f64> = sample_kernels_for_mapping(&trace, &refs, 16).iter().map(|k| k.ts(&trace)).collect();
        // round(i * 19 / 15) for i in 0..16, as Python computes it.
        let expected = [0, 1, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14, 15, 16, 18, 19];
        assert_eq!(picked, expected.iter().map(|&x| x as f64).collect::<Vec<_>>());
    }
}
