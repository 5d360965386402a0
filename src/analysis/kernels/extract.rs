//! The attribution view of one trace: GPU kernels of the heaviest process
//! with canonical name, category and stage (CPU ops, launch calls and Python
//! frames are read from the trace's columns by the site index).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use super::names::{kernel_category, kernel_table_name, KernelRule};
use crate::analysis::stage::{select_heaviest_pid, RowStages, Stage};
use crate::analysis::text::Masking;
use crate::analysis::types::{Text, TextCache};
use crate::columns::{Pack, Sym, ThreadIdx, Trace};
use crate::pysem::normalize_text;

/// Process ids preferred when choosing the process whose kernels are ranked.
pub const PREFERRED_PIDS: &[&str] = &["TP00", "TP-0"];

/// Canonical name and category of one raw kernel name, shared by all of
/// its launches. The canonical name is a shared text: the kernel maps key
/// their entries by it without copying it.
#[derive(Debug, PartialEq)]
pub struct KernelName {
    pub canonical: Text,
    pub category: &'static str,
}

/// One GPU kernel execution: its row in `trace.kernels` and what the
/// attribution derives for it. Kept to 24 bytes, since a large trace holds
/// millions: the start, duration, raw name and ids are read from the row,
/// the name's derived forms are shared, and the stage is a one-byte code.
#[derive(Clone, Debug)]
pub struct KernelEvent {
    info: Arc<KernelName>,
    /// The row's External id, or the one its correlation maps to (packed).
    external_id: i64,
    row: u32,
    stage: u8,
}

impl KernelEvent {
    /// `external_id` is the row's External id, or the one its correlation
    /// maps to.
    pub fn new(row: u32, info: Arc<KernelName>, stage: Stage, external_id: Option<i64>) -> Self {
        KernelEvent { info, external_id: Pack::pack(external_id), row, stage: stage.code() }
    }

    /// The kernel's row in `trace.kernels`.
    pub fn row(&self) -> usize {
        self.row as usize
    }

    pub fn ts(&self, trace: &Trace) -> f64 {
        trace.kernels.ts[self.row()]
    }

    pub fn dur(&self, trace: &Trace) -> f64 {
        trace.kernels.dur[self.row()]
    }

    /// The raw name.
    pub fn name(&self, trace: &Trace) -> Sym {
        trace.kernels.name[self.row()]
    }

    pub fn canonical(&self) -> &str {
        &self.info.canonical
    }

    /// The canonical name's shared text.
    pub fn canonical_text(&self) -> &Text {
        &self.info.canonical
    }

    /// compute / communication / memory / ... (the kernel module's classifier).
    pub fn category(&self) -> &'static str {
        self.info.category
    }

    pub fn stage(&self) -> Stage {
        Stage::from_code(self.stage)
    }

    pub fn external_id(&self) -> Option<i64> {
        Pack::unpack(self.external_id)
    }

    /// The row's `args.correlation`.
    pub fn correlation(&self, trace: &Trace) -> Option<i64> {
        trace.kernels.correlation.get(self.row())
    }
}

/// A CPU operator that carries (or maps to) an External id.
#[derive(Clone, Copy, Debug)]
pub struct CpuOpEvent {
    pub name: Sym,
    pub thread: ThreadIdx,
    pub ts: f64,
    pub dur: f64,
    pub external_id: i64,
}

/// A `cudaLaunchKernel`-like runtime call.
#[derive(Clone, Copy, Debug)]
pub struct LaunchEvent {
    pub name: Sym,
    pub thread: ThreadIdx,
    pub ts: f64,
    pub dur: f64,
    pub correlation: i64,
}

/// Everything site attribution reads from one trace.
#[derive(Clone, Debug, Default)]
pub struct TraceData {
    pub kernels: Vec<KernelEvent>,
    pub chosen_pid: Option<String>,
}

/// `looks_like_python_scope_name`: frames and module scopes that carry a
/// stream marker but are not kernels.
pub fn looks_like_python_scope_name(name: &str) -> bool {
    let lowered = normalize_text(name).to_lowercase();
    lowered.contains(".py(") || lowered.starts_with("python/") || lowered.starts_with("nn.module:")
}

/// Which kernel-like rows the kernel table treats as GPU kernels: a kernel /
/// `gpu_*` category, or a stream marker on a name that is not a Python scope.
pub fn gpu_kernel_mask(trace: &Trace) -> Vec<bool> {
    let mut cat_ok: HashMap<Sym, bool> = HashMap::default();
    let mut scope_name: HashMap<Sym, bool> = HashMap::default();
    let k = &trace.kernels;
    (0..k.len())
        .map(|i| {
            let cat = k.cat(i);
            let kernelish = *cat_ok.entry(cat).or_insert_with(|| {
                let l = normalize_text(trace.s(cat)).to_lowercase();
                l.contains("kernel") || l.starts_with("gpu_")
            });
            if kernelish {
                return true;
            }
            let name = k.name[i];
            let scope = *scope_name.entry(name).or_insert_with(|| looks_like_python_scope_name(trace.s(name)));
            !scope && k.has_stream_marker(i)
        })
        .collect()
}

/// Whether a kernel-like row's category is a host-side one: a runtime or
/// driver API call (`cuda_runtime`, `cuda_driver`), which ROCm's profiler
/// writes with a `stream` argument.
pub fn host_call_category(cat: &str) -> bool {
    let l = normalize_text(cat).to_lowercase();
    l.contains("runtime") || l.contains("driver")
}

/// [`gpu_kernel_mask`] less the rows of a host-call category.
pub fn gpu_kernel_mask_without_host_calls(trace: &Trace) -> Vec<bool> {
    let mut mask = gpu_kernel_mask(trace);
    let mut host: HashMap<Sym, bool> = HashMap::default();
    let k = &trace.kernels;
    for (i, m) in mask.iter_mut().enumerate() {
        if *m {
            let cat = k.cat(i);
            *m = !*host.entry(cat).or_insert_with(|| host_call_category(trace.s(cat)));
        }
    }
    mask
}

/// The reference's `extract_trace_data`, with the kernels and categories
/// `rule` decides.
pub fn extract_trace_data(trace: &Trace, stages: &RowStages, masking: Masking, rule: KernelRule) -> TraceData {
    let mask = match rule {
        KernelRule::Default => gpu_kernel_mask_without_host_calls(trace),
        KernelRule::Reference => gpu_kernel_mask(trace),
    };
    let k = &trace.kernels;
    let chosen_pid = select_heaviest_pid(
        (0..k.len()).filter(|&i| mask[i]).map(|i| (trace.pid_str(k.thread(i)), k.dur[i])),
        None,
        PREFERRED_PIDS,
    );

    let mut out = TraceData { kernels: Vec::new(), chosen_pid: chosen_pid.clone() };

    let Some(pid) = chosen_pid else {
        return out;
    };
    let keep = |i: usize| mask[i] && trace.pid_str(k.thread(i)) == pid;
    // The kept rows' distinct raw names, first-seen order; their canonical
    // names and categories are worked out in parallel (a trace can have
    // hundreds of thousands).
    let mut kept = 0;
    let mut seen: HashMap<Sym, ()> = HashMap::default();
    let mut raw_names: Vec<Sym> = Vec::new();
    for i in (0..k.len()).filter(|&i| keep(i)) {
        kept += 1;
        if seen.insert(k.name[i], ()).is_none() {
            raw_names.push(k.name[i]);
        }
    }
    drop(seen);
    out.kernels.reserve_exact(kept);
    let derived: Vec<(String, &'static str)> = {
        use rayon::prelude::*;
        raw_names
            .par_iter()
            .map(|&sym| {
                let name = trace.s(sym);
                (kernel_table_name(name, masking), kernel_category(name, rule))
            })
            .collect()
    };
    // Raw names with one canonical name share its text.
    let mut texts = TextCache::default();
    let name_cache: HashMap<Sym, Arc<KernelName>> = raw_names
        .into_iter()
        .zip(derived)
        .map(|(sym, (canonical, category))| (sym, Arc::new(KernelName { canonical: texts.get(&canonical), category })))
        .collect();
    drop(texts);
    for (i, (row, &is_kernel)) in k.iter().zip(&mask).enumerate() {
        if !is_kernel || trace.pid_str(row.thread) != pid {
            continue;
        }
        let info = name_cache[&row.name].clone();
        let external_id = trace.resolve_external(row.external_id, row.correlation);
        out.kernels.push(KernelEvent::new(i as u32, info, stages.get(i), external_id));
    }
    out
}

/// The stage a kernel is grouped in: the trace's stage when its path names
/// one, else the kernel's own.
pub fn kernel_stage(kernel: &KernelEvent, default_stage: Stage) -> Stage {
    if default_stage != Stage::All {
        default_stage
    } else {
        kernel.stage()
    }
}

/// Kernels grouped by stage, stages in first-seen order. A trace whose path
/// names a stage puts every kernel in that stage.
pub fn group_kernels_by_stage<'a>(
    kernels: &'a [KernelEvent],
    default_stage: Stage,
) -> Vec<(Stage, Vec<&'a KernelEvent>)> {
    let mut groups: Vec<(Stage, Vec<&'a KernelEvent>)> = Vec::new();
    for kernel in kernels {
        let stage = kernel_stage(kernel, default_stage);
        match groups.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, v)) => v.push(kernel),
            None => groups.push((stage, vec![kernel])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::KernelRow;

    #[test]
    fn kernel_events_stay_compact() {
        assert!(std::mem::size_of::<KernelEvent>() <= 24);
        let mut trace = Trace::default();
        let name = trace.strings.intern("k");
        for ts in [1.0, 2.0] {
            trace.kernels.push(KernelRow {
                name,
                cat: name,
                thread: 0,
                ts,
                dur: 4.0,
                stream: None,
                cuda_stream: None,
                has_stream_marker: false,
                external_id: None,
                correlation: Some(9),
                stream_int: -1,
            });
        }
        let info = Arc::new(KernelName { canonical: "k".into(), category: "other" });
        let e = KernelEvent::new(1, info, Stage::Decode, Some(-5));
        assert_eq!((e.canonical(), e.category(), e.stage()), ("k", "other", Stage::Decode));
        assert_eq!((e.ts(&trace), e.dur(&trace), e.name(&trace)), (2.0, 4.0, name));
        assert_eq!((e.external_id(), e.correlation(&trace)), (Some(-5), Some(9)));
    }

    #[test]
    fn python_scope_names() {
        assert!(looks_like_python_scope_name("foo.py(12): bar"));
        assert!(looks_like_python_scope_name("nn.Module: Linear"));
        assert!(!looks_like_python_scope_name("void gemm"));
    }
}
