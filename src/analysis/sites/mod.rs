//! Site attribution: which Python source line launched each kernel. A kernel
//! is matched to its CPU op by External id (nearest in time), and the Python
//! frames active on that op's thread at the op's start give the site; when
//! that fails, the CUDA launch call with the kernel's correlation is used the
//! same way. Sites are aggregated per canonical kernel name.

pub mod frames;
pub mod locations;

use indexmap::IndexMap;
use rustc_hash::FxHashMap;

use crate::analysis::kernels::{CpuOpEvent, KernelEvent, LaunchEvent};
use crate::analysis::types::{Text, TextCache, UNRESOLVED};
use crate::columns::frames::BlockMark;
use crate::columns::{Sym, ThreadIdx, Trace};
use crate::pysem::{fcmp, fcmp_key};
use frames::{sweep_order, FrameIndex};

/// Launch totals of one (kernel, location) pair, with the CPU op names and
/// stacks seen there (insertion-ordered counters).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MappingSiteAggregate {
    pub total_us: f64,
    pub count: u64,
    pub cpu_ops: Vec<(Text, u64)>,
    pub stacks: Vec<(Text, u64)>,
}

/// One kernel's launch sites: location → totals, in first-seen order.
pub type KernelSites = Vec<(Text, MappingSiteAggregate)>;

/// canonical kernel name → location → totals, all in first-seen order.
/// Small lists rather than maps: most kernels have one or two sites, and a
/// trace can have hundreds of thousands of kernel names.
pub type SiteStats = IndexMap<Text, KernelSites, rustc_hash::FxBuildHasher>;

/// Position of `key` in a first-seen list, appending it (with the text
/// `text` gives) when new. Lists grow from one slot.
pub(crate) fn list_slot<V: Default>(list: &mut Vec<(Text, V)>, key: &str, text: impl FnOnce() -> Text) -> usize {
    if let Some(i) = list.iter().position(|(k, _)| &**k == key) {
        return i;
    }
    if list.len() == list.capacity() {
        list.reserve_exact(list.len().max(1));
    }
    list.push((text(), V::default()));
    list.len() - 1
}

/// Rows of one column set grouped by an id, each group sorted by start
/// time (stable, so equal starts keep trace order): the keys are sorted and
/// a group is found by binary search, with no per-id allocation. When the
/// ids are a column of the trace (launch correlations), `keys` is left
/// empty and the search reads the column instead.
#[derive(Clone, Debug, Default)]
struct KeyedRows {
    keys: Vec<i64>,
    rows: Vec<u32>,
}

impl KeyedRows {
    /// `rows` are the rows that have an id, in trace order; `key_by_row`
    /// gives each row's id and `ts` its start. The sort runs on (id, row)
    /// pairs, read once, rather than on rows that look their id up at every
    /// comparison; only the rows (4 bytes each) are kept.
    fn build(key_by_row: impl Fn(usize) -> i64, rows: Vec<u32>, ts: &[f64], keep_keys: bool) -> Self {
        let mut pairs: Vec<(i64, u32)> = rows.iter().map(|&r| (key_by_row(r as usize), r)).collect();
        drop(rows);
        // Rows are distinct, so ordering by (id, row) is the stable order by id.
        pairs.sort_unstable();
        // Groups are short: each one's end is found by a walk, not a
        // binary search over the whole rest (one cache miss per step).
        for group in pairs.chunk_by_mut(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                group.sort_by(|a, b| fcmp(ts[a.1 as usize], ts[b.1 as usize]));
            }
        }
        let keys = if keep_keys { pairs.iter().map(|p| p.0).collect() } else { Vec::new() };
        KeyedRows { keys, rows: pairs.into_iter().map(|p| p.1).collect() }
    }

    /// The group of `key`, from the stored keys (built with `keep_keys`).
    fn group(&self, key: i64, hint: &mut usize) -> &[u32] {
        debug_assert_eq!(self.keys.len(), self.rows.len(), "built without its keys");
        self.search(key, |pos| self.keys.get(pos).copied().unwrap_or(i64::MAX), hint)
    }

    /// The group of `key` in an index built without its keys: `key_by_row`
    /// gives each row's id, as it did to [`KeyedRows::build`].
    fn group_by(&self, key: i64, key_by_row: impl Fn(usize) -> i64, hint: &mut usize) -> &[u32] {
        self.search(key, |pos| key_by_row(self.rows[pos] as usize), hint)
    }

    /// `hint` is where the previous lookup ended: kernels come in trace
    /// order, so their ids are usually close and the search gallops from
    /// there instead of bisecting the whole index.
    fn search(&self, key: i64, k: impl Fn(usize) -> i64, hint: &mut usize) -> &[u32] {
        let lo = gallop(self.rows.len(), *hint, |pos| k(pos) < key);
        let hi = gallop(self.rows.len(), lo, |pos| k(pos) <= key);
        *hint = lo;
        &self.rows[lo..hi]
    }
}

/// The first position in `0..n` where `below` turns false (`below` must be
/// true then false along the positions), searched outward from `from`.
fn gallop(n: usize, from: usize, below: impl Fn(usize) -> bool) -> usize {
    let from = from.min(n);
    // Find lo <= answer <= hi: every position before lo is below, and hi
    // is n or a position that is not.
    let (mut lo, mut hi) = (0, n);
    let mut step = 1;
    if from < n && below(from) {
        lo = from + 1;
        while from + step < n {
            if below(from + step) {
                lo = from + step + 1;
                step *= 2;
            } else {
                hi = from + step;
                break;
            }
        }
    } else {
        hi = from;
        while step <= from {
            if below(from - step) {
                lo = from - step + 1;
                break;
            }
            hi = from - step;
            step *= 2;
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// First element with the smallest key (Python's `min(key=...)`).
fn first_min_by<T: Copy>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> f64) -> Option<T> {
    let mut best: Option<(T, f64)> = None;
    for item in items {
        let k = key(&item);
        if best.as_ref().is_none_or(|(_, b)| k < *b) {
            best = Some((item, k));
        }
    }
    best.map(|(t, _)| t)
}

/// The row nearest a kernel start among `rows` (sorted by start): among
/// the few rows starting around `probe`, the one ending closest to it if
/// any started before, else the one starting closest.
fn nearest(rows: &[u32], ts: &[f64], dur: &[f64], probe: f64) -> Option<u32> {
    if rows.is_empty() {
        return None;
    }
    let t = |r: &u32| ts[*r as usize];
    let limit = probe + 1e-3;
    let right = rows.partition_point(|r| t(r) <= limit);
    let lo = right.saturating_sub(4);
    let hi = (right + 2).min(rows.len());
    let candidates = &rows[lo..hi];
    let earlier = candidates.iter().copied().filter(|r| t(r) <= limit);
    if let Some(best) = first_min_by(earlier, |r| ((t(r) + dur[*r as usize]) - probe).abs()) {
        return Some(best);
    }
    first_min_by(candidates.iter().copied(), |r| (t(r) - probe).abs())
}

/// "No row" in the packed per-kernel row pairs.
const NO_ROW: u32 = u32::MAX;

/// Lookup tables built once per trace: CPU ops by (resolved) External id,
/// launch calls by correlation.
#[derive(Clone, Debug, Default)]
pub struct SiteIndex {
    cpu_ops: KeyedRows,
    launches: KeyedRows,
    /// Display form and rank of every Python frame name.
    frames: FrameIndex,
}

impl SiteIndex {
    pub fn build(trace: &Trace) -> Self {
        let ops = &trace.cpu_ops;
        let mut key_by_row = vec![0i64; ops.len()];
        let mut rows = Vec::new();
        for (i, key) in key_by_row.iter_mut().enumerate() {
            let row = ops.get(i);
            if let Some(x) = trace.resolve_external(row.external_id, row.correlation) {
                *key = x;
                rows.push(i as u32);
            }
        }
        let cpu_ops = KeyedRows::build(|r| key_by_row[r], rows, &ops.ts, true);
        drop(key_by_row);
        let l = &trace.launches;
        let launches = KeyedRows::build(|r| l.correlation.get(r), (0..l.len() as u32).collect(), &l.ts, false);
        SiteIndex { cpu_ops, launches, frames: FrameIndex::build(trace) }
    }

    /// Row (in `trace.cpu_ops`) of the CPU op nearest the kernel with its
    /// External id.
    fn cpu_op_row(&self, trace: &Trace, kernel: &KernelEvent, hint: &mut usize) -> Option<u32> {
        let ops = &trace.cpu_ops;
        nearest(self.cpu_ops.group(kernel.external_id()?, hint), &ops.ts, &ops.dur, kernel.ts(trace))
    }

    /// Row (in `trace.launches`) of the launch call nearest the kernel with
    /// its correlation.
    fn launch_row(&self, trace: &Trace, kernel: &KernelEvent, hint: &mut usize) -> Option<u32> {
        let l = &trace.launches;
        nearest(
            self.launches.group_by(kernel.correlation(trace)?, |r| l.correlation.get(r), hint),
            &l.ts,
            &l.dur,
            kernel.ts(trace),
        )
    }
}

fn cpu_op_event(trace: &Trace, row: u32, external_id: i64) -> CpuOpEvent {
    let (ops, row) = (&trace.cpu_ops, row as usize);
    CpuOpEvent { name: ops.name(row), thread: ops.thread(row), ts: ops.ts[row], dur: ops.dur[row], external_id }
}

fn launch_event(trace: &Trace, row: u32, correlation: i64) -> LaunchEvent {
    let (l, row) = (&trace.launches, row as usize);
    LaunchEvent { name: l.name(row), thread: l.thread(row), ts: l.ts[row], dur: l.dur[row], correlation }
}

/// The site chosen for a set of active frames (the chosen frame's name)
/// and the stack shown for it (an id in the [`StackTable`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct FrameResolution {
    location: Sym,
    stack: u32,
}

/// An optional [`FrameResolution`] as a 4-byte id into the aggregation's
/// [`StackTable`] (there are two per kernel, and few distinct ones).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Resolved(u32);

impl Resolved {
    const NONE: Resolved = Resolved(u32::MAX);
}

/// Stack texts of one aggregation, each built once: keyed by the frame
/// names shown (at most four), since the text is a function of them.
#[derive(Default)]
struct StackTable {
    ids: FxHashMap<StackKey, u32>,
    /// The key of each stack id, beside its text in `texts`.
    keys: Vec<StackKey>,
    texts: Vec<String>,
    /// Distinct resolutions, for [`Resolved`] ids.
    resolutions: Vec<FrameResolution>,
    resolution_ids: FxHashMap<(Sym, u32), u32>,
}

/// What the [`Resolved`] ids of an absorbed table are in the table that
/// absorbed it.
struct Absorbed(Vec<Resolved>);

impl Absorbed {
    fn get(&self, r: Resolved) -> Resolved {
        self.0.get(r.0 as usize).copied().unwrap_or(Resolved::NONE)
    }
}

/// The frame names a stack shows, and how many of the four are used.
type StackKey = ([Sym; 4], u8);

impl StackTable {
    /// The id of the stack `key`, its text made by `text` when it is new.
    fn intern(&mut self, key: StackKey, text: impl FnOnce() -> String) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.keys.push(key);
        self.texts.push(text());
        self.ids.insert(key, id);
        id
    }

    /// Takes in the stacks and resolutions of a table filled elsewhere
    /// (one thread's sweep); returns what each of its [`Resolved`] ids is
    /// here.
    fn absorb(&mut self, other: StackTable) -> Absorbed {
        let stack_ids: Vec<u32> =
            other.keys.into_iter().zip(other.texts).map(|(key, text)| self.intern(key, || text)).collect();
        Absorbed(
            other
                .resolutions
                .into_iter()
                .map(|r| {
                    self.resolved(Some(FrameResolution { location: r.location, stack: stack_ids[r.stack as usize] }))
                })
                .collect(),
        )
    }

    fn text(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", String::as_str)
    }

    fn resolved(&mut self, r: Option<FrameResolution>) -> Resolved {
        let Some(r) = r else { return Resolved::NONE };
        let next = self.resolutions.len() as u32;
        let id = *self.resolution_ids.entry((r.location, r.stack)).or_insert(next);
        if id == next {
            self.resolutions.push(r);
        }
        Resolved(id)
    }

    fn resolution(&self, r: Resolved) -> Option<FrameResolution> {
        self.resolutions.get(r.0 as usize).copied()
    }
}

/// A frame as the sweep compares it.
#[derive(Clone, Copy)]
struct ActiveFrame {
    name: Sym,
    ts: f64,
    dur: f64,
    end: f64,
    priority: i32,
}

/// Highest (priority, ts, -dur), first on ties.
fn choose_mapping_frame(active: &[ActiveFrame]) -> Option<&ActiveFrame> {
    let mut best: Option<&ActiveFrame> = None;
    for f in active {
        let better = match best {
            None => true,
            Some(b) => {
                (f.priority, f.ts, -f.dur).partial_cmp(&(b.priority, b.ts, -b.dur)) == Some(std::cmp::Ordering::Greater)
            }
        };
        if better {
            best = Some(f);
        }
    }
    best
}

/// The last four informative frames (or the innermost one), outermost
/// first, joined by ` -> `.
fn build_stack_display(active: &[ActiveFrame], names: &FrameIndex, table: &mut StackTable) -> u32 {
    let mut shown = [0 as Sym; 4];
    let mut len = 0;
    let informative = active.iter().filter(|f| f.priority > 0).count();
    if informative == 0 {
        if let Some(f) = active.last() {
            shown[0] = f.name;
            len = 1;
        }
    } else {
        for f in active.iter().filter(|f| f.priority > 0).skip(informative.saturating_sub(4)) {
            shown[len] = f.name;
            len += 1;
        }
    }
    table.intern((shown, len as u8), || {
        let text: Vec<&str> = shown[..len].iter().map(|&s| names.name(s).map_or("", |n| &*n.normalized)).collect();
        text.join(" -> ")
    })
}

/// Resolves queries on one thread with a sweep over its frames (in
/// [`sweep_order`]): frames that started at or before the query time and
/// end no earlier than 1 ns before it. `queries` are query ids sorted by
/// time (stable: equal times in the order asked), `time` gives each one's
/// time. The sweep starts at the thread's first frame whatever the first
/// query, so any run of the sorted queries resolves on its own exactly as
/// it would within the whole. Returns the resolution of each query, in
/// the order given, as an id in `stacks` (none at all on a thread without
/// frames: its queries resolve to nothing).
fn resolve_thread_queries(
    trace: &Trace,
    frames: &FrameIndex,
    thread: ThreadIdx,
    queries: &[u32],
    time: impl Fn(u32) -> f64,
    stacks: &mut StackTable,
) -> Vec<Resolved> {
    if queries.is_empty() || trace.frames.thread_len(thread) == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(queries.len());
    let mut sweep = sweep_order(&trace.frames, thread);
    let mut active: Vec<ActiveFrame> = Vec::new();
    let mut last: Option<(f64, Resolved)> = None;
    for &qid in queries {
        let ts = time(qid);
        // Equal times (0.0 == -0.0 included) share one resolution.
        if let Some((t, r)) = last {
            if t == ts {
                out.push(r);
                continue;
            }
        }
        // Whole blocks of frames that start by the query and end before
        // it would be read and dropped: pass over them.
        let skip = |b: &BlockMark| b.last_ts <= ts && b.max_end < ts - 1e-3;
        // Active at the query: ends no earlier than 1 ns before it.
        let alive = |end: f64| end >= ts - 1e-3;
        while let Some(f) = sweep.peek_skipping(skip).filter(|f| f.ts <= ts) {
            // A frame the retain below would drop is not added: between
            // sparse queries most frames start and end.
            if !alive(f.end()) {
                sweep.advance();
                continue;
            }
            active.push(ActiveFrame {
                name: f.name,
                ts: f.ts,
                dur: f.dur,
                end: f.end(),
                priority: frames.name(f.name).map_or(0, |n| n.priority),
            });
            sweep.advance();
        }
        active.retain(|f| alive(f.end));
        let chosen = choose_mapping_frame(&active).map(|chosen| FrameResolution {
            location: chosen.name,
            stack: build_stack_display(&active, frames, stacks),
        });
        let resolution = stacks.resolved(chosen);
        out.push(resolution);
        last = Some((ts, resolution));
    }
    out
}

/// (location, stack, cpu op name) of one kernel.
type SiteContext<'a> = (&'a str, &'a str, &'a str);

/// The site of one kernel from the resolutions of its CPU-op query and its
/// launch query.
fn resolve_site_context<'a>(
    trace: &'a Trace,
    frames: &'a FrameIndex,
    stacks: &'a StackTable,
    cpu_op: Option<CpuOpEvent>,
    launch: Option<LaunchEvent>,
    (op_res, launch_res): (Option<FrameResolution>, Option<FrameResolution>),
) -> SiteContext<'a> {
    let show = |r: FrameResolution| (frames.name(r.location).map_or("", |n| &*n.normalized), stacks.text(r.stack));
    if let Some(op) = cpu_op {
        if let Some((location, stack)) = op_res.map(show) {
            return (location, stack, trace.s(op.name));
        }
    }
    if let Some(launch) = launch {
        if let Some((location, stack)) = launch_res.map(show) {
            let name = cpu_op.map_or(launch.name, |op| op.name);
            return (location, stack, trace.s(name));
        }
        return (UNRESOLVED, "", trace.s(launch.name));
    }
    let name = cpu_op.map_or("", |op| trace.s(op.name));
    (UNRESOLVED, "", name)
}

/// Queries of one thread swept as one run: each run starts its sweep over
/// the thread's frames again (passing whole blocks that ended before it),
/// so runs are long enough for that to cost little next to their work.
const QUERY_RUN: usize = 1 << 15;

/// Sorts query ids by (`time(id)`, id), each time looked up once.
fn sort_by_time(ids: &mut [u32], time: impl Fn(u32) -> f64 + Sync) {
    use rayon::prelude::*;
    let mut keyed: Vec<(u64, u32)> = ids.iter().map(|&id| (fcmp_key(time(id)), id)).collect();
    keyed.par_sort_unstable();
    for (out, (_, id)) in ids.iter_mut().zip(keyed) {
        *out = id;
    }
}

/// The reference's `aggregate_kernel_sites` over `kernels`.
pub fn aggregate_kernel_sites(trace: &Trace, index: &SiteIndex, kernels: &[&KernelEvent]) -> SiteStats {
    use rayon::prelude::*;
    // Per kernel: rows of its CPU op and launch call (found once, used
    // twice), `NO_ROW` for none.
    let found: Vec<(u32, u32)> = {
        let pack = |r: Option<u32>| r.unwrap_or(NO_ROW);
        kernels
            .par_chunks(1 << 12)
            .flat_map_iter(|chunk| {
                let (mut op_hint, mut launch_hint) = (0, 0);
                chunk.iter().map(move |k| {
                    (pack(index.cpu_op_row(trace, k, &mut op_hint)), pack(index.launch_row(trace, k, &mut launch_hint)))
                })
            })
            .collect()
    };
    let unpack = |r: u32| (r != NO_ROW).then_some(r);
    let events = |k: &KernelEvent, (op, launch): (u32, u32)| {
        (
            unpack(op).zip(k.external_id()).map(|(r, x)| cpu_op_event(trace, r, x)),
            unpack(launch).zip(k.correlation(trace)).map(|(r, c)| launch_event(trace, r, c)),
        )
    };
    // Query 2i is kernel i's CPU op probe, 2i + 1 its launch call; a
    // thread's queries are kept as ids and their times computed on demand.
    let mut queries: IndexMap<ThreadIdx, Vec<u32>> = IndexMap::new();
    for (i, (k, &rows)) in kernels.iter().zip(&found).enumerate() {
        let (op, launch) = events(k, rows);
        if let Some(op) = op {
            queries.entry(op.thread).or_default().push(2 * i as u32);
        }
        if let Some(l) = launch {
            queries.entry(l.thread).or_default().push(2 * i as u32 + 1);
        }
    }
    let (ops, launches) = (&trace.cpu_ops, &trace.launches);
    let time = |q: u32| -> f64 {
        let (op, launch) = found[q as usize / 2];
        if q % 2 == 0 {
            let r = op as usize;
            ops.ts[r] + (ops.dur[r] * 0.5).min(1.0)
        } else {
            launches.ts[launch as usize]
        }
    };
    // A thread's queries are sorted by time (stable: equal times keep the
    // order asked) and cut into runs that are swept side by side, each into
    // a stack table of its own; the tables are then joined in order.
    let mut threads: Vec<(ThreadIdx, Vec<u32>)> = queries.into_iter().collect();
    // The ids were pushed in ascending order, so ordering by (time, id) is
    // the stable order by time. Each time is looked up once, beside its id,
    // rather than at every comparison.
    threads.par_iter_mut().for_each(|(_, q)| sort_by_time(q, time));
    let runs: Vec<(ThreadIdx, &[u32])> =
        threads.iter().flat_map(|(thread, q)| q.chunks(QUERY_RUN).map(move |run| (*thread, run))).collect();
    let swept: Vec<(&[u32], Vec<Resolved>, StackTable)> = runs
        .into_par_iter()
        .map(|(thread, run)| {
            let mut local = StackTable::default();
            let answers = resolve_thread_queries(trace, &index.frames, thread, run, time, &mut local);
            (run, answers, local)
        })
        .collect();
    let mut stacks = StackTable::default();
    let mut resolved: Vec<Resolved> = vec![Resolved::NONE; 2 * kernels.len()];
    for (run, answers, local) in swept {
        let ids = stacks.absorb(local);
        for (&q, r) in run.iter().zip(answers) {
            resolved[q as usize] = ids.get(r);
        }
    }
    drop(threads);

    // Kernels are found by where their canonical name lives (a shared text,
    // also the key), so each distinct name is hashed once.
    // Locations and counters are short first-seen lists, scanned while
    // short; the positions in longer ones are cached by where the text
    // lives (every text is borrowed from a table that outlives this loop).
    let mut kernel_pos: FxHashMap<usize, usize> = FxHashMap::default();
    let mut long_lists = LongLists::default();
    let mut out = SiteStats::default();
    let mut texts = TextCache::default();
    for (i, (k, &rows)) in kernels.iter().zip(&found).enumerate() {
        let (op, launch) = events(k, rows);
        let res = (stacks.resolution(resolved[2 * i]), stacks.resolution(resolved[2 * i + 1]));
        let (location, stack, cpu_op) = resolve_site_context(trace, &index.frames, &stacks, op, launch, res);
        let ki = *kernel_pos.entry(k.canonical().as_ptr() as usize).or_insert_with(|| {
            match out.get_index_of(k.canonical()) {
                Some(i) => i,
                None => out.insert_full(k.canonical_text().clone(), Vec::new()).0,
            }
        });
        let li = long_lists.slot((ki, 0, ListKind::Locations), &mut out[ki], location, &mut texts);
        let item = &mut out[ki][li].1;
        item.total_us += k.dur(trace);
        item.count += 1;
        if !cpu_op.is_empty() {
            let ci = long_lists.slot((ki, li, ListKind::CpuOps), &mut item.cpu_ops, cpu_op, &mut texts);
            item.cpu_ops[ci].1 += 1;
        }
        if !stack.is_empty() {
            let si = long_lists.slot((ki, li, ListKind::Stacks), &mut item.stacks, stack, &mut texts);
            item.stacks[si].1 += 1;
        }
    }
    out
}

/// Lists up to this long are scanned rather than looked up.
const SCAN_MAX: usize = 8;

/// Which list of a kernel (its locations) or of a (kernel, location) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ListKind {
    Locations,
    CpuOps,
    Stacks,
}

/// A list: (kernel, location, which list).
type ListId = (usize, usize, ListKind);

/// Where a borrowed text lives: (address, length).
type TextPlace = (usize, usize);

/// Positions in the lists that grew past [`SCAN_MAX`], keyed by list and
/// where the text lives: most lists hold one or two entries and never get
/// here.
#[derive(Default)]
struct LongLists(FxHashMap<(ListId, TextPlace), usize>);

impl LongLists {
    /// Position of `key` in `list` (appended when new), as [`list_slot`].
    fn slot<V: Default>(&mut self, id: ListId, list: &mut Vec<(Text, V)>, key: &str, texts: &mut TextCache) -> usize {
        if list.len() <= SCAN_MAX {
            return list_slot(list, key, || texts.get(key));
        }
        *self
            .0
            .entry((id, (key.as_ptr() as usize, key.len())))
            .or_insert_with(|| list_slot(list, key, || texts.get(key)))
    }
}

/// Adds `source` into `dest` (Counter.update semantics for the counters).
pub fn merge_site_stats(dest: &mut SiteStats, source: &SiteStats) {
    for (kernel, locations) in source {
        let d = dest.entry(kernel.clone()).or_default();
        for (location, agg) in locations {
            let li = list_slot(d, location, || location.clone());
            let t = &mut d[li].1;
            t.total_us += agg.total_us;
            t.count += agg.count;
            for (k, v) in &agg.cpu_ops {
                let i = list_slot(&mut t.cpu_ops, k, || k.clone());
                t.cpu_ops[i].1 += v;
            }
            for (k, v) in &agg.stacks {
                let i = list_slot(&mut t.stacks, k, || k.clone());
                t.stacks[i].1 += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_sort_by_time_then_by_id() {
        let times = [3.0, f64::NAN, 1.0, 0.0, 3.0, -0.0, 1.0, -2.5];
        let mut ids: Vec<u32> = (0..times.len() as u32).collect();
        sort_by_time(&mut ids, |id| times[id as usize]);
        // Equal times (0.0 and -0.0 among them) keep the order of their
        // ids, NaN sorts last: a stable sort by `fcmp`.
        assert_eq!(ids, [7, 3, 5, 2, 6, 0, 4, 1]);
    }

    #[test]
    fn sweep_picks_best_frame_and_stack() {
        let f = |name: &str, ts: f64, dur: f64| serde_json::json!({"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur});
        let trace = crate::columns::value::trace_from_value(&serde_json::json!({"traceEvents": [
            f("a/outer.py(1): f", 0.0, 100.0),
            f("python/sglang/inner.py(2): g", 10.0, 5.0),
            f("threading.py(3): run", 10.0, 20.0),
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 11, "dur": 1, "args": {"External id": 7}},
        ]}));
        let frames = FrameIndex::build(&trace);
        let thread = trace.frames.threads().next().unwrap();
        let mut stacks = StackTable::default();
        let times = [12.0, 50.0, 12.0, 200.0, -0.0, 0.0];
        let mut r = vec![Resolved::NONE; 6];
        let mut queries: Vec<u32> = (0..6).collect();
        queries.sort_by(|&a, &b| fcmp(times[a as usize], times[b as usize]));
        for (&q, x) in queries.iter().zip(resolve_thread_queries(
            &trace,
            &frames,
            thread,
            &queries,
            |q| times[q as usize],
            &mut stacks,
        )) {
            r[q as usize] = x;
        }
        let r: Vec<Option<FrameResolution>> = r.into_iter().map(|x| stacks.resolution(x)).collect();
        let location = |q: usize| r[q].and_then(|x| frames.name(x.location)).map(|n| n.normalized.to_string());
        assert_eq!(location(0).as_deref(), Some("python/sglang/inner.py:2 g"));
        assert_eq!(r[0], r[2]);
        assert_eq!(stacks.text(r[0].unwrap().stack), "a/outer.py:1 f -> python/sglang/inner.py:2 g");
        assert_eq!(location(1).as_deref(), Some("a/outer.py:1 f"));
        assert!(r[3].is_none());
        assert_eq!(location(4).as_deref(), Some("a/outer.py:1 f"));
        assert_eq!(r[4], r[5]);
    }

    #[test]
    fn runs_of_queries_resolve_as_the_whole_does() {
        // Thousands of frames (several packed blocks) nested and
        // overlapping at random, and queries at random times, ties included.
        let mut rng = crate::pysem::test_rng(0x5eed_u64);
        let names = ["a/outer.py(1): f", "python/sglang/inner.py(2): g", "threading.py(3): run", "x/y.py(4): h"];
        let mut events = Vec::new();
        let mut ts = 0.0;
        for _ in 0..3000 {
            ts += (rng() % 7) as f64 * 0.5;
            let dur = (rng() % 40) as f64 + if rng() % 50 == 0 { 2000.0 } else { 0.0 };
            let name = names[rng() as usize % names.len()];
            events.push(serde_json::json!({"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}));
        }
        let trace = crate::columns::value::trace_from_value(&serde_json::json!({ "traceEvents": events }));
        let frames = FrameIndex::build(&trace);
        let thread = trace.frames.threads().next().unwrap();
        let times: Vec<f64> = (0..2000).map(|_| (rng() % 4000) as f64 * 1.5 - 100.0).collect();
        let mut queries: Vec<u32> = (0..times.len() as u32).collect();
        queries.sort_by(|&a, &b| fcmp(times[a as usize], times[b as usize]));
        let shown = |answers: Vec<Resolved>, stacks: &StackTable| -> Vec<Option<(Sym, String)>> {
            answers
                .into_iter()
                .map(|r| stacks.resolution(r).map(|x| (x.location, stacks.text(x.stack).to_string())))
                .collect()
        };
        let mut stacks = StackTable::default();
        let whole = shown(
            resolve_thread_queries(&trace, &frames, thread, &queries, |q| times[q as usize], &mut stacks),
            &stacks,
        );
        assert!(whole.iter().filter(|r| r.is_some()).count() > 1000);
        for run in [1, 2, 3, 64, 700] {
            let mut joined = StackTable::default();
            let mut parts = Vec::new();
            for part in queries.chunks(run) {
                let mut local = StackTable::default();
                let answers = resolve_thread_queries(&trace, &frames, thread, part, |q| times[q as usize], &mut local);
                let ids = joined.absorb(local);
                parts.extend(answers.into_iter().map(|r| ids.get(r)));
            }
            assert_eq!(shown(parts, &joined), whole, "runs of {run}");
        }
    }

    #[test]
    fn nearest_prefers_earlier_events_by_end() {
        let idx = KeyedRows::build(|r| [1, 1, 1][r], vec![0, 1, 2], &[0.0, 5.0, 20.0], true);
        let at = |rows: &KeyedRows, ts: &[f64], dur: &[f64]| {
            nearest(rows.group(1, &mut 0), ts, dur, 10.0).map(|r| ts[r as usize])
        };
        assert_eq!(at(&idx, &[0.0, 5.0, 20.0], &[1.0, 4.0, 1.0]), Some(5.0));
        let later = KeyedRows::build(|r| [2, 1, 1][r], vec![0, 1, 2], &[0.0, 30.0, 20.0], true);
        let unkeyed = KeyedRows::build(|r| [2, 1, 1][r], vec![0, 1, 2], &[0.0, 30.0, 20.0], false);
        for key in 0..4 {
            for hint in 0..4 {
                assert_eq!(unkeyed.group_by(key, |r| [2, 1, 1][r], &mut hint.clone()), later.group(key, &mut 0));
            }
        }
        assert_eq!(at(&later, &[0.0, 30.0, 20.0], &[1.0, 1.0, 1.0]), Some(20.0));
        assert!(later.group(3, &mut 2).is_empty());
    }

    #[test]
    fn long_list_positions_match_the_first_seen_scan() {
        // Texts borrowed from one buffer: equal strings at two places, and
        // one place read at two lengths.
        let buffer = "abcabcaXbcab".repeat(4);
        let mut rng = crate::pysem::test_rng(0xfeed_u64);
        let mut next = move || rng() as usize;
        let mut long = LongLists::default();
        let mut texts = TextCache::default();
        let mut lists: Vec<KernelSites> = vec![Vec::new(); 3];
        let mut plain: Vec<KernelSites> = vec![Vec::new(); 3];
        for _ in 0..5000 {
            let list = next() % 3;
            let start = next() % 40;
            let key = &buffer[start..start + 1 + next() % 6];
            let got = long.slot((list, 0, ListKind::Locations), &mut lists[list], key, &mut texts);
            let want = list_slot(&mut plain[list], key, || key.into());
            assert_eq!(got, want, "{key:?}");
        }
        assert!(lists.iter().all(|l| l.len() > SCAN_MAX));
        assert_eq!(lists, plain);
    }

    #[test]
    fn galloping_finds_the_bisection_point_from_any_hint() {
        let keys: Vec<i64> = vec![1, 1, 2, 4, 4, 4, 7, 9, 9, 12];
        for key in 0..14 {
            let want = keys.partition_point(|&k| k < key);
            for hint in 0..=keys.len() + 2 {
                assert_eq!(gallop(keys.len(), hint, |p| keys[p] < key), want, "key {key} hint {hint}");
            }
        }
        assert_eq!(gallop(0, 5, |_| true), 0);
    }
}
