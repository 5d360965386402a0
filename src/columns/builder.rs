//! Per-event classification: turns one streamed event ([`RawEvent`]) into
//! rows of the column sets it belongs to, with the reference's tests for
//! "complete", "kernel-like", "launch", "annotation" and friends. Builders
//! made on separate chunks of one file merge in file order.

use rustc_hash::FxHashMap;

use super::*;
use crate::pysem::{is_int_literal, normalize_text, py_float_of_num, py_int_of_str, Scalar};

/// The fields of `args` that the analyses read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgsFields<'a> {
    /// `args` is a JSON object (anything else is treated as `{}`).
    pub is_object: bool,
    pub external_id: Scalar<'a>,
    pub correlation: Scalar<'a>,
    pub stream: Scalar<'a>,
    pub cuda_stream: Scalar<'a>,
    /// `args.name` (thread_name / process_name metadata).
    pub name: Scalar<'a>,
}

/// One event of `traceEvents`, as far as the analyses care.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawEvent<'a> {
    pub ph: Scalar<'a>,
    pub cat: Scalar<'a>,
    pub name: Scalar<'a>,
    pub pid: Scalar<'a>,
    pub tid: Scalar<'a>,
    pub ts: Scalar<'a>,
    pub dur: Scalar<'a>,
    /// `float()` of `ts` and of `dur` when the tokenizer has already read
    /// it from the number's text; `None` leaves it to the builder.
    pub ts_float: Option<f64>,
    pub dur_float: Option<f64>,
    pub args: ArgsFields<'a>,
    /// Only while [`ColumnsBuilder::wants_sample`]: the first eight `args`
    /// keys, each followed by its value when that is a string, joined by
    /// single spaces (empty when there are none).
    pub args_head: &'a str,
}

/// How many leading events feed the framework-detection sample.
pub const SAMPLE_EVENTS: usize = 256;

// Category classes, cached per interned category string.
const CAT_KNOWN: u16 = 1;
const CAT_NON_KERNEL: u16 = 2; // python_function / cpu_op / trace substring
const CAT_ANNOTATION: u16 = 4; // "annotation" substring
const CAT_KERNELISH: u16 = 8; // "kernel" substring or gpu_ prefix
const CAT_RUNTIME: u16 = 16; // cuda_runtime / cuda_driver
const CAT_STAGE_ANN: u16 = 32; // user_annotation / gpu_user_annotation
const CAT_GPU_ANN: u16 = 64; // gpu_user_annotation
const CAT_PYTHON_FUNCTION: u16 = 128; // exactly python_function (a Python frame)
const CAT_CPU_OP: u16 = 256; // exactly cpu_op

// Name classes, cached per interned name string.
const NAME_KNOWN: u8 = 1;
const NAME_METADATA: u8 = 2;
const NAME_CALL_ANN: u8 = 4; // starts with "## call "
const NAME_LAUNCH: u8 = 8; // "launch" in lowercased name

/// Accumulates columns for one trace, or for one chunk of one.
#[derive(Default)]
pub struct ColumnsBuilder {
    t: Trace,
    cat_class: Vec<u16>,
    name_class: Vec<u8>,
    /// The framework-detection sample's text, and where each of its
    /// events' text ends in it.
    sample: String,
    sample_ends: Vec<usize>,
    thread_cache: FxHashMap<(Sym, Sym), ThreadIdx>,
    scratch: String,
    /// Last text, symbol and whether the text was a number, per field slot
    /// (ph, cat, pid, tid): most events repeat their neighbour's, and a
    /// compare beats formatting and a hash.
    last: [(String, Sym, bool); 4],
    /// The last (pid, tid) symbols and their thread.
    last_thread: Option<(Sym, Sym, ThreadIdx)>,
    /// The last `ph` and `cat` counted and their entries in the count maps
    /// (entries are only ever appended, so an index stays valid; the key
    /// is checked all the same).
    last_counted: [(Sym, usize); 2],
}

/// The longest GPU event the kernel table sums, in µs: 2^53 µs, 285 years,
/// past any profile, and short enough that no sum of them overflows.
pub const MAX_GPU_DUR_US: f64 = 9_007_199_254_740_992.0;

/// Adds one to `sym`'s count, through the one-entry cache `last`.
#[inline]
fn count_one(map: &mut FxIndexMap<Sym, u64>, last: &mut (Sym, usize), sym: Sym) {
    if last.0 == sym {
        if let Some((_, n)) = map.get_index_mut(last.1).filter(|(k, _)| **k == sym) {
            *n += 1;
            return;
        }
    }
    let entry = map.entry(sym);
    *last = (sym, entry.index());
    *entry.or_insert(0) += 1;
}

fn classify_cat(cat: &str) -> u16 {
    let l = normalize_text(cat).to_lowercase();
    let mut c = CAT_KNOWN;
    if ["python_function", "cpu_op", "trace"].iter().any(|t| l.contains(t)) {
        c |= CAT_NON_KERNEL;
    }
    if l.contains("annotation") {
        c |= CAT_ANNOTATION;
    }
    if l.contains("kernel") || l.starts_with("gpu_") {
        c |= CAT_KERNELISH;
    }
    if l == "cuda_runtime" || l == "cuda_driver" {
        c |= CAT_RUNTIME;
    }
    if l == "user_annotation" || l == "gpu_user_annotation" {
        c |= CAT_STAGE_ANN;
    }
    if l == "gpu_user_annotation" {
        c |= CAT_GPU_ANN;
    }
    match cat {
        "python_function" => c |= CAT_PYTHON_FUNCTION,
        "cpu_op" => c |= CAT_CPU_OP,
        _ => {}
    }
    c
}

fn classify_name(name: &str) -> u8 {
    let n = normalize_text(name);
    let l = n.to_lowercase();
    let mut c = NAME_KNOWN;
    if matches!(&*n, "process_name" | "thread_name" | "process_sort_index" | "thread_sort_index") {
        c |= NAME_METADATA;
    }
    if l.starts_with("## call ") {
        c |= NAME_CALL_ANN;
    }
    if l.contains("launch") {
        c |= NAME_LAUNCH;
    }
    c
}

/// The name prefix of the profiler's step annotations.
const STEP_PREFIX: &str = "ProfilerStep";

/// `int(args["stream"])` the way the profiler's analysis tools normalise a
/// stream: integers and integer strings as themselves, floats truncated,
/// booleans 0 / 1, anything else (`"0x0"`, `"7.0"`, NaN, null, absent) -1.
/// Saturated to the `i32` range.
pub fn stream_int(v: Scalar<'_>) -> i32 {
    let n: Option<i64> = match v {
        Scalar::Bool(b) => Some(b as i64),
        Scalar::Num(raw) if is_int_literal(raw) => {
            Some(raw.parse::<i64>().unwrap_or(if raw.starts_with('-') { i64::MIN } else { i64::MAX }))
        }
        Scalar::Num(raw) => py_float_of_num(raw).filter(|f| f.is_finite()).map(|f| f.trunc() as i64),
        Scalar::Str(s) => py_int_of_str(s),
        _ => None,
    };
    n.map_or(-1, |n| n.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
}

/// The class of `sym`'s string, through `cache` (0 is "not yet": every
/// class has a bit set).
#[inline]
fn class_of<C: Copy + Default + PartialEq>(cache: &mut Vec<C>, sym: Sym, strings: &Interner, f: fn(&str) -> C) -> C {
    let i = sym as usize;
    match cache.get(i) {
        Some(&c) if c != C::default() => c,
        _ => {
            if cache.len() <= i {
                cache.resize(i + 1, C::default());
            }
            cache[i] = f(strings.resolve(sym));
            cache[i]
        }
    }
}

impl ColumnsBuilder {
    pub fn new() -> Self {
        let mut b = Self::default();
        // An empty string with an impossible symbol: never a cache hit.
        for e in &mut b.last {
            e.1 = Sym::MAX;
        }
        b.last_counted = [(Sym::MAX, 0); 2];
        b
    }

    /// The framework-detection sample so far, as [`Trace::framework_sample`]
    /// holds it once the trace is finished; the builder's is left empty.
    pub fn take_sample(&mut self) -> String {
        self.sample_ends.clear();
        std::mem::take(&mut self.sample)
    }

    /// True while the framework-detection sample still takes events.
    pub fn wants_sample(&self) -> bool {
        self.sample_ends.len() < SAMPLE_EVENTS
    }

    /// Number of events pushed so far.
    pub fn events(&self) -> u64 {
        self.t.counts.events
    }

    /// Mutable access to the metadata (filled by the tokenizer's top level).
    pub fn meta_mut(&mut self) -> &mut TraceMeta {
        &mut self.t.meta
    }

    fn intern_py(&mut self, v: Scalar<'_>, default: &str) -> Sym {
        if let Scalar::Str(s) = v {
            return self.t.strings.intern(s);
        }
        let mut tmp = std::mem::take(&mut self.scratch);
        v.py_str_into(default, &mut tmp);
        let id = self.t.strings.intern(&tmp);
        self.scratch = tmp;
        id
    }

    /// `intern_py` through the one-entry cache of `slot`.
    fn intern_slot(&mut self, slot: usize, v: Scalar<'_>, default: &str) -> Sym {
        // A number's text decides its Python `str()`, so it is cached by
        // its text too, apart from strings with the same text.
        let (text, num) = match v {
            Scalar::Str(s) => (s, false),
            Scalar::Num(s) => (s, true),
            _ => return self.intern_py(v, default),
        };
        let (ls, lsym, lnum) = &self.last[slot];
        if *lsym != Sym::MAX && *lnum == num && super::interner::same_bytes(ls.as_bytes(), text.as_bytes()) {
            return *lsym;
        }
        let id = if num { self.intern_py(v, default) } else { self.t.strings.intern(text) };
        let e = &mut self.last[slot];
        e.0.clear();
        e.0.push_str(text);
        e.1 = id;
        e.2 = num;
        id
    }

    fn count_key(&mut self, slot: usize, v: Scalar<'_>) -> Sym {
        if v.is_missing() {
            return self.t.strings.intern("<none>");
        }
        self.intern_slot(slot, v, "")
    }

    fn thread_of(&mut self, pid: Scalar<'_>, tid: Scalar<'_>) -> ThreadIdx {
        let p = self.intern_slot(2, pid, "None");
        let t = self.intern_slot(3, tid, "None");
        if let Some((lp, lt, i)) = self.last_thread {
            if (lp, lt) == (p, t) {
                return i;
            }
        }
        if let Some(&i) = self.thread_cache.get(&(p, t)) {
            self.last_thread = Some((p, t, i));
            return i;
        }
        let key = ThreadKey { pid: p, tid: t };
        let (i, _) = self.t.threads.insert_full(key);
        self.thread_cache.insert((p, t), i as ThreadIdx);
        self.last_thread = Some((p, t, i as ThreadIdx));
        i as ThreadIdx
    }

    /// Classifies one event and keeps what the analyses need of it.
    pub fn push(&mut self, ev: &RawEvent<'_>) {
        let counts_ph = self.count_key(0, ev.ph);
        let counts_cat = self.count_key(1, ev.cat);
        self.t.counts.events += 1;
        count_one(&mut self.t.counts.by_ph, &mut self.last_counted[0], counts_ph);
        count_one(&mut self.t.counts.by_cat, &mut self.last_counted[1], counts_cat);
        let thread = self.thread_of(ev.pid, ev.tid);
        match ev.ts {
            Scalar::Num(raw) if !self.t.counts.ts_fractional && !is_int_literal(raw) => {
                self.t.counts.ts_fractional = true;
            }
            Scalar::Missing | Scalar::Null => self.t.counts.ts_fractional = true,
            Scalar::Str(_) => self.t.counts.ts_text = true,
            _ => {}
        }

        if self.wants_sample() {
            self.sample_event(ev);
        }

        let args = ev.args;
        let correlation = args.correlation.coerce_int();
        let external_id = args.external_id.coerce_int();
        if let (Some(c), Some(e)) = (correlation, external_id) {
            self.t.corr_to_ext.push(c, e);
        }

        match ev.ph {
            Scalar::Str("X") => self.push_complete(ev, thread, counts_cat, correlation, external_id),
            Scalar::Str("M") => self.push_metadata(ev, thread),
            // An event written as a begin/end pair (`ph` `B`, then `E`):
            // the tables, the timeline and the steps read complete (`X`)
            // events, as the reference does, so it is counted with the
            // skipped events and the report says what it lacks.
            Scalar::Str("B") => self.t.counts.skipped += 1,
            _ => {}
        }
    }

    fn push_metadata(&mut self, ev: &RawEvent<'_>, thread: ThreadIdx) {
        let which = match ev.name {
            Scalar::Str("thread_name") => 0,
            Scalar::Str("process_name") => 1,
            _ => return,
        };
        let value = ev.args.name;
        let sym = self.intern_py(value, "");
        if self.t.strings.resolve(sym).is_empty() {
            return;
        }
        let key = self.t.threads[thread as usize];
        if which == 0 {
            self.t.thread_names.insert(key, sym);
        } else {
            self.t.process_names.insert(key.pid, sym);
        }
    }

    /// Counts a CPU-side annotation or step mark left out for its times
    /// ([`Counts::unplaced_annotations`]).
    fn count_unplaced(&mut self, name: Sym) {
        *self.t.counts.unplaced_annotations.entry(name).or_insert(0) += 1;
    }

    /// `counts_cat` is the symbol [`Self::count_key`] gave the category:
    /// the category's own, unless it is missing.
    fn push_complete(
        &mut self,
        ev: &RawEvent<'_>,
        thread: ThreadIdx,
        counts_cat: Sym,
        correlation: Option<i64>,
        external_id: Option<i64>,
    ) {
        // float(event.get("ts", 0.0)) / float(event.get("dur", 0.0)).
        let ts = ev.ts_float.or_else(|| ev.ts.py_float_or(0.0));
        let dur = ev.dur_float.or_else(|| ev.dur.py_float_or(0.0));
        let (ts, dur) = match (ts, dur) {
            (Some(ts), Some(dur)) => (ts, dur),
            _ => {
                self.t.counts.skipped += 1;
                // A step mark whose time is no number (`"dur": null`) is a
                // step the step figures lack, too.
                if ev.name.as_str().is_some_and(|n| n.starts_with(STEP_PREFIX)) {
                    let cat = if ev.cat.is_missing() { self.intern_py(ev.cat, "") } else { counts_cat };
                    let cc = class_of(&mut self.cat_class, cat, &self.t.strings, classify_cat);
                    if cc & (CAT_GPU_ANN | CAT_PYTHON_FUNCTION) == 0 {
                        let name = self.intern_py(ev.name, "");
                        self.count_unplaced(name);
                    }
                }
                return;
            }
        };
        // An infinite duration (`1e999`, `Infinity`) is no measurement: not
        // complete, as NaN is not.
        let complete = !ev.ts.is_none() && !ev.dur.is_none() && dur > 0.0 && dur.is_finite();
        if !ev.ts.is_none() {
            let c = &mut self.t.counts;
            c.min_ts = Some(c.min_ts.map_or(ts, |m| m.min(ts)));
            let end = ts + dur;
            c.max_end = Some(c.max_end.map_or(end, |m| m.max(end)));
        }
        let cat = if ev.cat.is_missing() { self.intern_py(ev.cat, "") } else { counts_cat };
        let cc = class_of(&mut self.cat_class, cat, &self.t.strings, classify_cat);
        if cc & CAT_PYTHON_FUNCTION != 0 {
            let name = self.intern_py(ev.name, "");
            self.t.frames.push(FrameRow { name, thread, ts, dur, complete });
            return;
        }
        let timed = !ev.ts.is_none() && !ev.dur.is_none();
        let step_named = ev.name.as_str().is_some_and(|n| n.starts_with(STEP_PREFIX));
        let step_mark = timed && step_named;
        if step_named && !timed && cc & CAT_STAGE_ANN == 0 {
            // A step mark with no start or no duration (a stage annotation's
            // is counted below with the others it cannot place).
            let name = self.intern_py(ev.name, "");
            self.count_unplaced(name);
        }
        if cc & CAT_CPU_OP != 0 {
            if external_id.is_some() || correlation.is_some() {
                let name = self.intern_py(ev.name, "");
                self.t.cpu_ops.push(CpuOpRow { name, thread, ts, dur, complete, external_id, correlation });
            }
            if step_mark {
                let name = self.intern_py(ev.name, "");
                self.t.step_marks.push(StepMarkRow { name, ts, dur });
            }
            return;
        }
        let has_stream_marker =
            ev.args.is_object && (!ev.args.stream.is_missing() || !ev.args.cuda_stream.is_missing());
        let host_side = cc & (CAT_NON_KERNEL | CAT_ANNOTATION) == 0 && timed;
        if cc & (CAT_RUNTIME | CAT_STAGE_ANN | CAT_KERNELISH) == 0 && !has_stream_marker {
            // Neither a launch, a stage annotation nor kernel-like: kept only
            // as the host side of a correlation, or as a step mark.
            if let (Some(correlation), true) = (correlation, host_side) {
                let name = self.intern_py(ev.name, "");
                self.t.runtime.push(RuntimeRow { name, thread, ts, dur, correlation });
            }
            if step_mark {
                let name = self.intern_py(ev.name, "");
                self.t.step_marks.push(StepMarkRow { name, ts, dur });
            }
            return;
        }
        let name = self.intern_py(ev.name, "");
        let nc = class_of(&mut self.name_class, name, &self.t.strings, classify_name);

        let launch = cc & CAT_RUNTIME != 0 && nc & NAME_LAUNCH != 0 && correlation.is_some();
        if let (Some(correlation), true) = (correlation, launch) {
            self.t.launches.push(LaunchRow { name, thread, ts, dur, complete, correlation });
        }
        let gpu_event = nc & NAME_METADATA == 0
            && cc & CAT_NON_KERNEL == 0
            && cc & CAT_ANNOTATION == 0
            && nc & NAME_CALL_ANN == 0
            && (cc & CAT_KERNELISH != 0 || has_stream_marker);
        // A GPU event longer than `MAX_GPU_DUR_US` is no measurement
        // either: two of them would sum to infinity.
        let kernel_like = complete && gpu_event && dur <= MAX_GPU_DUR_US;
        // A GPU event left out for its times (no `ts` or `dur`, or a
        // negative, NaN, infinite or longer duration) is counted with the
        // skipped events, so the report says the kernel table lacks it; a
        // zero duration is a real, empty event and is not.
        if gpu_event && (ev.ts.is_none() || ev.dur.is_none() || dur < 0.0 || !(dur <= MAX_GPU_DUR_US)) {
            self.t.counts.skipped += 1;
        }
        let stream_int = if has_stream_marker { stream_int(ev.args.stream) } else { -1 };
        if let (Some(correlation), false, false, true) = (correlation, launch, kernel_like, host_side) {
            if stream_int < 0 {
                self.t.runtime.push(RuntimeRow { name, thread, ts, dur, correlation });
            }
        }
        let annotation = complete && cc & CAT_STAGE_ANN != 0;
        if step_mark && !annotation {
            self.t.step_marks.push(StepMarkRow { name, ts, dur });
        } else if !complete && cc & CAT_STAGE_ANN != 0 && cc & CAT_GPU_ANN == 0 {
            self.count_unplaced(name);
        }
        if !complete {
            return;
        }
        if annotation {
            self.t.annotations.push(AnnotationRow {
                name,
                thread,
                ts,
                dur,
                is_gpu: cc & CAT_GPU_ANN != 0,
                external_id,
            });
        }
        if kernel_like {
            let stream = if ev.args.stream.truthy() { Some(self.intern_py(ev.args.stream, "")) } else { None };
            let cuda_stream =
                if ev.args.cuda_stream.truthy() { Some(self.intern_py(ev.args.cuda_stream, "")) } else { None };
            self.t.kernels.push(KernelRow {
                name,
                cat,
                thread,
                ts,
                dur,
                stream,
                cuda_stream,
                has_stream_marker,
                external_id,
                correlation,
                stream_int,
            });
        }
    }

    /// Packs the Python frames still buffered: done on the thread that
    /// parsed them, it keeps the packing out of a later [`merge`](Self::merge).
    pub fn pack_frames(&mut self) {
        self.t.frames.flush_all();
    }

    /// Appends a builder that saw the events right after this one's.
    pub fn merge(&mut self, other: ColumnsBuilder) {
        if self.is_blank() {
            // Nothing here yet (the document's builder before its first
            // chunk): take the chunk whole, its ids are already ours.
            let meta = std::mem::take(&mut self.t.meta);
            *self = other;
            self.t.meta = meta;
            return;
        }
        let o = other.t;
        let (other_sample, other_ends) = (other.sample, other.sample_ends);
        let sym = self.t.strings.absorb(&o.strings);
        let thread: Vec<ThreadIdx> = o
            .threads
            .iter()
            .map(|k| {
                let key = ThreadKey { pid: sym[k.pid as usize], tid: sym[k.tid as usize] };
                self.t.threads.insert_full(key).0 as ThreadIdx
            })
            .collect();
        for (pid_tid, i) in self.t.threads.iter().zip(0..) {
            self.thread_cache.insert((pid_tid.pid, pid_tid.tid), i);
        }
        let t = &mut self.t;
        let (sym, thread) = (&sym, &thread);
        // The row columns, a few each on either thread (the frames move
        // their packed runs, the others translate row by row).
        rayon::join(
            || {
                t.frames.append_mapped(o.frames, sym, thread);
                t.kernels.append_mapped(o.kernels, sym, thread);
                t.runtime.append_mapped(o.runtime, sym, thread);
            },
            || {
                t.cpu_ops.append_mapped(o.cpu_ops, sym, thread);
                t.launches.append_mapped(o.launches, sym, thread);
                t.step_marks.append_mapped(o.step_marks, sym, thread);
                t.annotations.append_mapped(o.annotations, sym, thread);
                t.corr_to_ext.append(o.corr_to_ext);
            },
        );
        for (k, v) in &o.thread_names {
            let key = ThreadKey { pid: sym[k.pid as usize], tid: sym[k.tid as usize] };
            self.t.thread_names.insert(key, sym[*v as usize]);
        }
        for (k, v) in &o.process_names {
            self.t.process_names.insert(sym[*k as usize], sym[*v as usize]);
        }
        let c = &mut self.t.counts;
        c.events += o.counts.events;
        c.skipped += o.counts.skipped;
        c.ts_fractional |= o.counts.ts_fractional;
        c.ts_text |= o.counts.ts_text;
        merge_counts(&mut c.by_cat, &o.counts.by_cat, sym);
        merge_counts(&mut c.by_ph, &o.counts.by_ph, sym);
        merge_counts(&mut c.unplaced_annotations, &o.counts.unplaced_annotations, sym);
        c.min_ts = min_opt(c.min_ts, o.counts.min_ts, f64::min);
        c.max_end = min_opt(c.max_end, o.counts.max_end, f64::max);
        self.append_sample(&other_sample, &other_ends);
        self.cat_class.clear();
        self.name_class.clear();
        for e in &mut self.last {
            e.0.clear();
            e.1 = Sym::MAX;
        }
        self.last_thread = None;
    }

    /// Adds an event's name, category, pid and `args` head to the sample,
    /// each as the string table keeps a string ([`interner::kept`]): a huge
    /// name is not held whole.
    fn sample_event(&mut self, ev: &RawEvent<'_>) {
        let s = &mut self.sample;
        if !self.sample_ends.is_empty() {
            s.push(' ');
        }
        for (i, v) in [ev.name, ev.cat, ev.pid].iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            match v {
                Scalar::Str(t) => s.push_str(&interner::kept(t)),
                _ => {
                    let start = s.len();
                    v.py_str_push("", s);
                    if s.len() - start > interner::MAX_STRING_BYTES {
                        let text = interner::kept(&s[start..]).into_owned();
                        s.truncate(start);
                        s.push_str(&text);
                    }
                }
            }
        }
        if !ev.args_head.is_empty() {
            s.push(' ');
            s.push_str(&interner::kept(ev.args_head));
        }
        self.sample_ends.push(s.len());
    }

    /// Appends the first events of another chunk's sample (`text`, its
    /// events ending at `ends`) as far as this sample has room.
    fn append_sample(&mut self, text: &str, ends: &[usize]) {
        let take = ends.len().min(SAMPLE_EVENTS.saturating_sub(self.sample_ends.len()));
        if take == 0 {
            return;
        }
        if !self.sample_ends.is_empty() {
            self.sample.push(' ');
        }
        let base = self.sample.len();
        self.sample.push_str(&text[..ends[take - 1]]);
        self.sample_ends.extend(ends[..take].iter().map(|e| base + e));
    }

    /// Nothing pushed or interned yet.
    fn is_blank(&self) -> bool {
        self.t.counts.events == 0
            && self.t.strings.is_empty()
            && self.t.threads.is_empty()
            && self.sample_ends.is_empty()
    }

    /// The finished trace.
    pub fn finish(mut self) -> Trace {
        self.t.framework_sample = std::mem::take(&mut self.sample);
        self.t.corr_to_ext.compact();
        let wanted = self.t.correlations_to_resolve();
        self.t.corr_to_ext.retain_keys(&wanted);
        drop(wanted);
        self.t.corr_to_ext.shrink_to_fit();
        self.t.kernels.shrink_to_fit();
        self.t.cpu_ops.shrink_to_fit();
        self.t.launches.shrink_to_fit();
        self.t.runtime.shrink_to_fit();
        self.t.step_marks.shrink_to_fit();
        self.t.frames.seal();
        self.t.annotations.shrink_to_fit();
        self.t.strings.shrink_to_fit();
        self.t
    }
}

fn merge_counts(into: &mut FxIndexMap<Sym, u64>, from: &FxIndexMap<Sym, u64>, sym: &[Sym]) {
    for (k, v) in from {
        *into.entry(sym[*k as usize]).or_insert(0) += v;
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_through_the_cache_match_plain_counting() {
        let mut map: FxIndexMap<Sym, u64> = FxIndexMap::default();
        let mut last = (Sym::MAX, 0);
        for sym in [3, 3, 5, 3, 5, 5, 7, 3] {
            count_one(&mut map, &mut last, sym);
        }
        let got: Vec<(Sym, u64)> = map.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(got, vec![(3, 4), (5, 3), (7, 1)]);
        // A cache entry naming the wrong index is not trusted.
        let mut stale = (5, 0);
        count_one(&mut map, &mut stale, 5);
        assert_eq!(map[&5], 4);
        assert_eq!(map[&3], 4);
        assert_eq!(stale, (5, 1));
    }

    /// A kernel event named `name` with the `args` head `head`.
    fn kernel<'a>(name: &'a str, head: &'a str) -> RawEvent<'a> {
        RawEvent {
            ph: Scalar::Str("X"),
            cat: Scalar::Str("kernel"),
            name: Scalar::Str(name),
            pid: Scalar::Num("1"),
            tid: Scalar::Num("7"),
            ts: Scalar::Num("5"),
            dur: Scalar::Num("2"),
            ts_float: None,
            dur_float: None,
            args: ArgsFields { is_object: true, stream: Scalar::Num("7"), ..Default::default() },
            args_head: head,
        }
    }

    #[test]
    fn a_blank_builder_takes_its_first_chunk_whole_and_keeps_its_metadata() {
        let chunk = |names: &[&'static str]| {
            let mut b = ColumnsBuilder::new();
            names.iter().for_each(|n| b.push(&kernel(n, "")));
            b
        };
        let mut doc = ColumnsBuilder::new();
        doc.meta_mut().top_level_array = true;
        doc.merge(chunk(&["k1", "k2"]));
        doc.merge(chunk(&["k3", "k2"]));
        let t = doc.finish();
        assert!(t.meta.top_level_array);
        let names: Vec<&str> = (0..t.kernels.len()).map(|i| t.s(t.kernels.get(i).name)).collect();
        assert_eq!(names, ["k1", "k2", "k3", "k2"]);
        assert_eq!((t.counts.events, t.threads.len()), (4, 1));
        assert_eq!(t.strings.iter().filter(|s| *s == "k2").count(), 1);
    }

    #[test]
    fn chunks_samples_join_as_one_sample_of_the_first_events() {
        let names: Vec<String> = (0..SAMPLE_EVENTS + 40).map(|i| format!("k{i}")).collect();
        let ev = |name: &str| -> String { format!("{name} kernel 1 stream 7") };
        // Three chunks of 10, 200 and the rest: the third lends only the
        // events the sample still has room for.
        let mut doc = ColumnsBuilder::new();
        for part in [&names[..10], &names[10..210], &names[210..]] {
            let mut chunk = ColumnsBuilder::new();
            part.iter().for_each(|n| chunk.push(&kernel(n, "stream 7")));
            doc.merge(chunk);
        }
        let want: Vec<String> = names[..SAMPLE_EVENTS].iter().map(|n| ev(n)).collect();
        assert!(!doc.wants_sample());
        assert_eq!(doc.finish().framework_sample, want.join(" "));
    }

    #[test]
    fn the_sample_keeps_a_long_text_as_the_string_table_does() {
        let long = format!("{}vllm", "x".repeat(interner::MAX_STRING_BYTES));
        let mut b = ColumnsBuilder::new();
        b.push(&kernel(&long, &long));
        let t = b.finish();
        let kept = interner::kept(&long);
        assert!(kept.len() <= interner::MAX_STRING_BYTES && kept.ends_with(" more bytes]"), "{}", kept.len());
        assert_eq!(t.framework_sample, format!("{kept} kernel 1 {kept}"));
        assert_eq!(t.s(t.kernels.get(0).name), kept);
    }

    #[test]
    fn the_correlation_map_keeps_what_rows_without_an_external_id_resolve() {
        let x = |cat: &str, ts: f64, args: serde_json::Value| serde_json::json!({"ph": "X", "cat": cat, "name": "n", "pid": 1, "tid": 1, "ts": ts, "dur": 1, "args": args});
        let events = serde_json::json!([
            // Launches carry both ids; the map learns 5 → 42, 6 → 43, 9 → 50.
            x("cuda_runtime", 0.0, serde_json::json!({"correlation": 5, "External id": 42})),
            x("cuda_runtime", 1.0, serde_json::json!({"correlation": 6, "External id": 43})),
            x("cuda_runtime", 2.0, serde_json::json!({"correlation": 9, "External id": 50})),
            // A kernel without an External id needs 5; one with its own does not need 6.
            x("kernel", 3.0, serde_json::json!({"correlation": 5, "stream": 7})),
            x("kernel", 4.0, serde_json::json!({"correlation": 6, "External id": 44, "stream": 7})),
            // A CPU op without an External id needs 9.
            x("cpu_op", 5.0, serde_json::json!({"correlation": 9})),
        ]);
        let t = crate::columns::value::trace_from_value(&events);
        let kept: Vec<(i64, i64)> = t.corr_to_ext.iter().map(|(c, e)| (*c, *e)).collect();
        assert_eq!(kept, vec![(5, 42), (9, 50)]);
        let k = |i: usize| t.resolve_external(t.kernels.get(i).external_id, t.kernels.get(i).correlation);
        let op = t.cpu_ops.get(0);
        assert_eq!((k(0), k(1), t.resolve_external(op.external_id, op.correlation)), (Some(42), Some(44), Some(50)));
    }
}
