//! Stage resolution: which serving stage (`extend` = prefill, `decode`, or
//! `all`) a GPU kernel belongs to, from user / gpu_user annotations. An
//! annotation sharing the kernel's External id wins; otherwise a merged
//! annotation window containing the kernel (a GPU-side window its start; a
//! host-side one, by default, the start of its launch call); otherwise the
//! nearest window within 20 ms.

use rustc_hash::FxHashMap as HashMap;
use std::path::{Component, Path};

use crate::columns::Trace;
use crate::pysem::{fcmp, normalize_text};

/// A serving stage: prefill (the reference calls it `extend`), decode, or
/// the whole trace when no stage can be told. Ordered as reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Extend,
    Decode,
    All,
}

impl Stage {
    /// The name as the reference spells it: `extend`, `decode` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Extend => "extend",
            Stage::Decode => "decode",
            Stage::All => "all",
        }
    }

    /// Section title: `extend/prefill`, `decode`, `all`.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Extend => "extend/prefill",
            other => other.as_str(),
        }
    }

    /// One-byte code (for compact per-row storage).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The stage behind a [`Stage::code`] (`All` for an unknown code).
    pub fn from_code(code: u8) -> Stage {
        match code {
            0 => Stage::Extend,
            1 => Stage::Decode,
            _ => Stage::All,
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The last six path components as the reference sees them (the root `/`
/// counts as a component).
fn last_parts(path: &Path) -> Vec<String> {
    let parts: Vec<String> = path
        .components()
        .map(|c| match c {
            Component::RootDir => "/".to_string(),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    let start = parts.len().saturating_sub(6);
    parts[start..].iter().map(|p| p.to_lowercase()).collect()
}

/// The stage a path names (`-extend`, `_prefill`, a `decode/` directory,
/// ...), or `all`, as the reference reads it.
pub fn parse_stage(path: &Path) -> Stage {
    parse_stage_with(path, StageRule::Reference)
}

/// [`parse_stage`] with the marks read by `rule`: by default a mark such as
/// `_prefill` counts only where no letter follows it, so that
/// `sglang_prefilldecode/` (prefill and decode in one trace) names no
/// stage, while `_decode.json`, `-EXTEND.trace.json` and `_decode_full/`
/// still do.
pub fn parse_stage_with(path: &Path, rule: StageRule) -> Stage {
    let parts = last_parts(path);
    let name = parts.join(" ");
    let segments = format!("/{}/", parts.join("/"));
    let marked = |marks: &[&str]| {
        marks.iter().any(|m| match rule {
            StageRule::Reference => name.contains(m),
            StageRule::Default => name
                .match_indices(m)
                .any(|(i, _)| name.as_bytes().get(i + m.len()).is_none_or(|c| !c.is_ascii_alphabetic())),
        })
    };
    if marked(&["-extend", "-prefill", "_extend", "_prefill"]) {
        return Stage::Extend;
    }
    if ["extend", "prefill"].iter().any(|s| segments.contains(&format!("/{s}/"))) {
        return Stage::Extend;
    }
    if marked(&["-decode", "_decode"]) {
        return Stage::Decode;
    }
    if segments.contains("/decode/") {
        return Stage::Decode;
    }
    Stage::All
}

/// The stage that holds every kernel of the trace at `path` whose rows are
/// in `stages`, as its path names it ([`parse_stage_with`]); `all` when the
/// path names none. By default the path is not taken when the trace's own
/// annotations put kernels in another stage: a folder named for a setting
/// (`chunked_prefill_off/`) does not relabel the decode steps a trace
/// marks as such. The reference's rule always takes it.
pub fn path_stage(path: &Path, stages: &RowStages, rule: StageRule) -> Stage {
    match parse_stage_with(path, rule) {
        named if rule == StageRule::Default && named != Stage::All && stages.names_other_than(named) => Stage::All,
        named => named,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Annotation {
    stage: Stage,
    ts: f64,
    end_ts: f64,
    is_gpu: bool,
}

/// A run of same-stage annotations merged into one time window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageWindow {
    pub stage: Stage,
    pub ts: f64,
    pub end_ts: f64,
}

/// Everything needed to resolve kernel stages for one trace.
#[derive(Clone, Debug, Default)]
pub struct StageIndex {
    by_external_id: rustc_hash::FxHashMap<i64, Annotation>,
    gpu_windows: WindowIndex,
    cpu_windows: WindowIndex,
}

/// How an annotation's name names a stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StageRule {
    /// The reference's, except that `decode` and `prefill` name a stage
    /// only as words: not followed by a letter of the same case as their
    /// own last one, so a training trace's `## decoder fp8 ##` (a model's
    /// decoder tower) is no decode stage while `decodeStep` and
    /// `step[DECODE bs=2]` are.
    #[default]
    Default,
    /// The reference's: the words anywhere in the name.
    Reference,
}

/// `decode` for names with `generation_1` or `decode`, `extend` for
/// `generation_0` or `prefill`, else none; `decode` and `prefill` as
/// `rule` reads them.
pub fn infer_stage_from_annotation_name(name: &str, rule: StageRule) -> Option<Stage> {
    let text = normalize_text(name);
    let lowered = text.to_lowercase();
    if lowered.is_empty() {
        return None;
    }
    let has = |word: &str| match rule {
        StageRule::Reference => lowered.contains(word),
        StageRule::Default => {
            // ASCII lowering keeps every byte where it was, so the case of
            // the letters around a match can be read in the name itself.
            let (cased, ascii) = (text.as_bytes(), text.to_ascii_lowercase());
            ascii.match_indices(word).any(|(i, _)| {
                let end = i + word.len();
                let last = cased[end - 1];
                cased.get(end).is_none_or(|&c| {
                    !(c.is_ascii_lowercase() && last.is_ascii_lowercase()
                        || c.is_ascii_uppercase() && last.is_ascii_uppercase())
                })
            })
        }
    };
    if lowered.contains("generation_1") || has("decode") {
        return Some(Stage::Decode);
    }
    if lowered.contains("generation_0") || has("prefill") {
        return Some(Stage::Extend);
    }
    None
}

fn merge_windows(mut anns: Vec<Annotation>) -> Vec<StageWindow> {
    // Stable sort by (ts, end_ts), as Python's list.sort (NaN last).
    anns.sort_by(|a, b| fcmp(a.ts, b.ts).then(fcmp(a.end_ts, b.end_ts)));
    let mut merged: Vec<StageWindow> = Vec::new();
    for a in anns {
        if let Some(last) = merged.last_mut() {
            if last.stage == a.stage && a.ts <= last.end_ts + 1e-3 {
                last.end_ts = last.end_ts.max(a.end_ts);
                continue;
            }
        }
        merged.push(StageWindow { stage: a.stage, ts: a.ts, end_ts: a.end_ts });
    }
    merged
}

/// Returns (stage, gap) of the first window containing `probe`, else the
/// nearest window (first on ties). Linear; the reference's definition, kept
/// as the oracle for [`WindowIndex`].
#[cfg(test)]
fn resolve_from_windows(probe: f64, windows: &[StageWindow]) -> (Option<Stage>, Option<f64>) {
    let mut nearest: (Option<Stage>, Option<f64>) = (None, None);
    for w in windows {
        if w.ts <= probe && probe <= w.end_ts + 1e-3 {
            return (Some(w.stage), Some(0.0));
        }
        let gap = (probe - w.ts).abs().min((probe - w.end_ts).abs());
        if nearest.1.is_none_or(|g| gap < g) {
            nearest = (Some(w.stage), Some(gap));
        }
    }
    nearest
}

/// Merged windows (sorted by start) with a running maximum of their ends,
/// answering `resolve_from_windows` in O(log n): the first containing
/// window is the first whose running end reaches the probe; otherwise the
/// nearest is either the window with the latest end among those starting
/// before the probe, or the first one starting after it.
#[derive(Clone, Debug, Default)]
struct WindowIndex {
    windows: Vec<StageWindow>,
    max_end: Vec<f64>,
}

impl WindowIndex {
    fn new(windows: Vec<StageWindow>) -> Self {
        let mut max_end = Vec::with_capacity(windows.len());
        let mut m = f64::NEG_INFINITY;
        for w in &windows {
            m = m.max(w.end_ts);
            max_end.push(m);
        }
        WindowIndex { windows, max_end }
    }

    fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    fn resolve(&self, probe: f64) -> (Option<Stage>, Option<f64>) {
        let w = &self.windows;
        if w.is_empty() {
            return (None, None);
        }
        // Windows starting at or before the probe: w[..k].
        let k = w.partition_point(|x| x.ts <= probe);
        // First window whose end (+1e-3) reaches the probe.
        let j = self.max_end[..k].partition_point(|&m| !(probe <= m + 1e-3));
        if j < k {
            return (Some(w[j].stage), Some(0.0));
        }
        let mut best: Option<(usize, f64)> = None;
        if k > 0 {
            // Latest end among w[..k]; first index reaching it.
            let m = self.max_end[k - 1];
            let i = self.max_end[..k].partition_point(|&x| x < m);
            let gap = (probe - w[i].ts).abs().min((probe - w[i].end_ts).abs());
            best = Some((i, gap));
        }
        if k < w.len() {
            let gap = (probe - w[k].ts).abs().min((probe - w[k].end_ts).abs());
            // Strictly smaller wins; on a tie the earlier window (i < k).
            if best.is_none_or(|(_, g)| gap < g) {
                best = Some((k, gap));
            }
        }
        match best {
            Some((i, gap)) => (Some(w[i].stage), Some(gap)),
            None => (None, None),
        }
    }
}

impl StageIndex {
    /// Builds the index from the trace's annotation columns, their names
    /// read by `rule`.
    pub fn build(trace: &Trace, rule: StageRule) -> Self {
        let mut idx = StageIndex::default();
        let mut gpu = Vec::new();
        let mut cpu = Vec::new();
        for row in trace.annotations.iter() {
            let Some(stage) = infer_stage_from_annotation_name(trace.s(row.name), rule) else {
                continue;
            };
            let ann = Annotation { stage, ts: row.ts, end_ts: row.ts + row.dur, is_gpu: row.is_gpu };
            if let Some(ext) = row.external_id {
                let replace = match idx.by_external_id.get(&ext) {
                    None => true,
                    Some(cur) if ann.is_gpu != cur.is_gpu => ann.is_gpu,
                    Some(cur) => (ann.end_ts - ann.ts) > (cur.end_ts - cur.ts),
                };
                if replace {
                    idx.by_external_id.insert(ext, ann);
                }
            }
            if ann.is_gpu {
                gpu.push(ann);
            } else {
                cpu.push(ann);
            }
        }
        idx.gpu_windows = WindowIndex::new(merge_windows(gpu));
        idx.cpu_windows = WindowIndex::new(merge_windows(cpu));
        idx
    }

    /// True when the trace has no stage annotations at all.
    pub fn is_empty(&self) -> bool {
        self.by_external_id.is_empty() && self.gpu_windows.is_empty() && self.cpu_windows.is_empty()
    }

    /// The reference's `resolve_kernel_stage`.
    pub fn resolve(&self, kernel_ts: f64, external_id: Option<i64>) -> Stage {
        self.resolve_launched(kernel_ts, None, external_id)
    }

    /// [`StageIndex::resolve`], with the host-side (CPU) windows probed at
    /// the start of the kernel's launch call when it has one: a CPU
    /// annotation spans the host's time, and a GPU that runs behind the
    /// host runs the kernels launched inside it after it has ended. GPU
    /// windows are probed at the kernel's own start, as the reference does.
    pub fn resolve_launched(&self, kernel_ts: f64, launch_ts: Option<f64>, external_id: Option<i64>) -> Stage {
        if let Some(ext) = external_id {
            if let Some(a) = self.by_external_id.get(&ext) {
                return a.stage;
            }
        }
        if self.gpu_windows.is_empty() && self.cpu_windows.is_empty() {
            return Stage::All;
        }
        let gpu_probe = kernel_ts + 1e-3;
        let cpu_probe = launch_ts.unwrap_or(kernel_ts) + 1e-3;
        let mut nearest: (Option<Stage>, Option<f64>) = (None, None);
        for (windows, probe) in [(&self.gpu_windows, gpu_probe), (&self.cpu_windows, cpu_probe)] {
            let (stage, gap) = windows.resolve(probe);
            if gap == Some(0.0) && stage.is_some() {
                return stage.unwrap_or(Stage::All);
            }
            if let (Some(s), Some(g)) = (stage, gap) {
                if nearest.1.is_none_or(|n| g < n) {
                    nearest = (Some(s), Some(g));
                }
            }
        }
        match nearest {
            (Some(stage), Some(gap)) if gap <= 20_000.0 => stage,
            _ => Stage::All,
        }
    }
}

/// The start of each launch call, by correlation id (the first call of an
/// id, in trace order).
#[derive(Default)]
struct LaunchTimes(Vec<(i64, f64)>);

impl LaunchTimes {
    fn of(trace: &Trace) -> Self {
        let l = &trace.launches;
        let mut v: Vec<(i64, f64)> = (0..l.len()).map(|i| (l.correlation.get(i), l.ts[i])).collect();
        // Stable: the first call of an id stays first.
        v.sort_by_key(|&(c, _)| c);
        v.dedup_by_key(|&mut (c, _)| c);
        LaunchTimes(v)
    }

    fn get(&self, correlation: i64) -> Option<f64> {
        let i = self.0.binary_search_by_key(&correlation, |&(c, _)| c).ok()?;
        Some(self.0[i].1)
    }
}

/// The stage of every kernel row of a trace (`trace.kernels`), resolved
/// once, in parallel, and shared by the kernel table and the overlap
/// bundles: one byte per row.
#[derive(Clone, Debug, Default)]
pub struct RowStages {
    codes: Vec<u8>,
}

impl RowStages {
    /// The stage of every kernel row, annotation names read by `rule`;
    /// under [`StageRule::Default`] a host-side (CPU) annotation holds the
    /// kernels launched inside it ([`StageIndex::resolve_launched`]), under
    /// [`StageRule::Reference`] those that start on the GPU inside it.
    pub fn build(trace: &Trace, rule: StageRule) -> Self {
        use rayon::prelude::*;
        let index = StageIndex::build(trace, rule);
        let k = &trace.kernels;
        let launches = match rule {
            StageRule::Default if !index.cpu_windows.is_empty() => LaunchTimes::of(trace),
            _ => LaunchTimes::default(),
        };
        let codes = (0..k.len())
            .into_par_iter()
            .with_min_len(1 << 12)
            .map(|i| {
                let external_id = trace.resolve_external(k.get(i).external_id, k.get(i).correlation);
                let launch_ts = k.get(i).correlation.and_then(|c| launches.get(c));
                index.resolve_launched(k.ts[i], launch_ts, external_id).code()
            })
            .collect();
        RowStages { codes }
    }

    /// Every one of `rows` kernel rows in `stage` (a trace whose path names
    /// its stage).
    pub fn uniform(rows: usize, stage: Stage) -> Self {
        RowStages { codes: vec![stage.code(); rows] }
    }

    /// The stage of kernel row `row` (`all` for a row out of range).
    pub fn get(&self, row: usize) -> Stage {
        Stage::from_code(self.codes.get(row).copied().unwrap_or(2))
    }

    /// Whether some row is in a stage other than `stage` and `all`.
    pub fn names_other_than(&self, stage: Stage) -> bool {
        let (own, all) = (stage.code(), Stage::All.code());
        self.codes.iter().any(|&c| c != own && c != all)
    }
}

/// Whether the pid of any kernel row contains `sub` (the `--pid-substring`
/// filter keeps some process). Each thread is looked at once.
pub fn kernel_pid_contains(trace: &Trace, sub: &str) -> bool {
    let k = &trace.kernels;
    let mut seen = vec![false; trace.threads.len()];
    (0..k.len()).any(|i| {
        let t = k.thread(i);
        let first = !std::mem::replace(&mut seen[t as usize], true);
        first && trace.pid_str(t).contains(sub)
    })
}

/// The reference's `select_heaviest_pid`: sums `dur` per pid string over the
/// given (pid, dur) pairs (in trace order), optionally filtered by a pid
/// substring, and returns the heaviest; when a preferred substring matches
/// any pid, the heaviest of those. Ties go to the first pid seen.
pub fn select_heaviest_pid<'a>(
    rows: impl IntoIterator<Item = (&'a str, f64)>,
    pid_substring: Option<&str>,
    preferred_substrings: &[&str],
) -> Option<String> {
    let mut order: Vec<&'a str> = Vec::new();
    let mut totals: HashMap<&'a str, f64> = HashMap::default();
    for (pid, dur) in rows {
        if let Some(sub) = pid_substring.filter(|s| !s.is_empty()) {
            if !pid.contains(sub) {
                continue;
            }
        }
        match totals.get_mut(pid) {
            Some(t) => *t += dur,
            None => {
                order.push(pid);
                totals.insert(pid, dur);
            }
        }
    }
    if order.is_empty() {
        return None;
    }
    let first_max = |cands: &[&'a str]| -> Option<String> {
        let mut best: Option<(&str, f64)> = None;
        for &p in cands {
            let d = totals[p];
            if best.is_none_or(|(_, b)| d > b) {
                best = Some((p, d));
            }
        }
        best.map(|(p, _)| p.to_string())
    };
    for sub in preferred_substrings {
        let preferred: Vec<&str> = order.iter().copied().filter(|p| p.contains(sub)).collect();
        if !preferred.is_empty() {
            return first_max(&preferred);
        }
    }
    first_max(&order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_stages_as_words() {
        let by = |rule: StageRule, p: &str| parse_stage_with(Path::new(p), rule);
        for (path, default, reference) in [
            ("/x/sglang_prefilldecode/t.json.gz", Stage::All, Stage::Extend),
            ("/x/vllm_prefilldecode_piecewise/g.json.gz", Stage::All, Stage::Extend),
            ("/x/sglang_Qwen3-8B_decode.json.gz", Stage::Decode, Stage::Decode),
            ("/x/vllm_decode_full/g.json.gz", Stage::Decode, Stage::Decode),
            ("/x/1700000-TP-0-EXTEND.trace.json.gz", Stage::Extend, Stage::Extend),
            ("/x/chunked_prefill_off/trace.json.gz", Stage::Extend, Stage::Extend),
            ("/x/decoder_runs/t.json", Stage::All, Stage::All),
            ("/x/run_decoder/t.json", Stage::All, Stage::Decode),
            ("/x/decode/t.json", Stage::Decode, Stage::Decode),
            ("/x/t.json", Stage::All, Stage::All),
        ] {
            assert_eq!(by(StageRule::Default, path), default, "{path}");
            assert_eq!(by(StageRule::Reference, path), reference, "{path}");
            assert_eq!(parse_stage(Path::new(path)), reference, "{path}");
        }
    }

    #[test]
    fn annotation_names() {
        for rule in [StageRule::Default, StageRule::Reference] {
            assert_eq!(infer_stage_from_annotation_name("execute_model_generation_1", rule), Some(Stage::Decode));
            assert_eq!(infer_stage_from_annotation_name("Prefill batch", rule), Some(Stage::Extend));
            assert_eq!(infer_stage_from_annotation_name("step[DECODE bs=2]", rule), Some(Stage::Decode));
            assert_eq!(infer_stage_from_annotation_name("spec_decode_step", rule), Some(Stage::Decode));
            assert_eq!(infer_stage_from_annotation_name("step", rule), None);
        }
        // A model's decoder tower in a DLRM training trace names no stage,
        // unless the reference's rule is asked for.
        let tower = "## decoder fp8 None ##";
        assert_eq!(infer_stage_from_annotation_name(tower, StageRule::Default), None);
        assert_eq!(infer_stage_from_annotation_name(tower, StageRule::Reference), Some(Stage::Decode));
        assert_eq!(infer_stage_from_annotation_name("prefiller", StageRule::Default), None);
        assert_eq!(infer_stage_from_annotation_name("DECODER", StageRule::Default), None);
        // A camel-case name's next word starts with a capital.
        assert_eq!(infer_stage_from_annotation_name("decodeStep", StageRule::Default), Some(Stage::Decode));
        assert_eq!(infer_stage_from_annotation_name("runPrefillBatch", StageRule::Default), Some(Stage::Extend));
        assert_eq!(infer_stage_from_annotation_name("decoder; then decode", StageRule::Default), Some(Stage::Decode));
    }

    #[test]
    fn heaviest_pid_first_max_and_preference() {
        let rows = [("a", 5.0), ("b", 5.0), ("TP00 x", 1.0)];
        assert_eq!(select_heaviest_pid(rows, None, &[]).as_deref(), Some("a"));
        assert_eq!(select_heaviest_pid(rows, None, &["TP00"]).as_deref(), Some("TP00 x"));
        assert_eq!(select_heaviest_pid(rows, Some("b"), &[]).as_deref(), Some("b"));
        assert_eq!(select_heaviest_pid([], None, &[]), None);
    }

    #[test]
    fn indexed_resolution_equals_linear_scan() {
        let mut rng = crate::pysem::test_rng(0x2545_F491_4F6C_DD1Du64);
        let mut next = |n: u64| rng() % n;
        for _ in 0..300 {
            let mut anns = Vec::new();
            for _ in 0..(1 + next(12)) {
                let ts = next(200) as f64;
                let stage = if next(2) == 0 { Stage::Decode } else { Stage::Extend };
                anns.push(Annotation { stage, ts, end_ts: ts + next(40) as f64, is_gpu: true });
            }
            let windows = merge_windows(anns);
            let idx = WindowIndex::new(windows.clone());
            for p in 0..260 {
                let probe = p as f64 - 10.0 + 0.001;
                assert_eq!(idx.resolve(probe), resolve_from_windows(probe, &windows), "{windows:?} {probe}");
            }
        }
    }

    #[test]
    fn windows_merge_and_nearest() {
        let w = merge_windows(vec![
            Annotation { stage: Stage::Decode, ts: 10.0, end_ts: 20.0, is_gpu: true },
            Annotation { stage: Stage::Decode, ts: 20.0005, end_ts: 30.0, is_gpu: true },
            Annotation { stage: Stage::Extend, ts: 40.0, end_ts: 50.0, is_gpu: true },
        ]);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].end_ts, 30.0);
        assert_eq!(resolve_from_windows(33.0, &w), (Some(Stage::Decode), Some(3.0)));
        assert_eq!(resolve_from_windows(36.0, &w), (Some(Stage::Extend), Some(4.0)));
    }
}
