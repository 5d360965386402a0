//! Columns: the compact, per-category record of a trace that ingest keeps and
//! every analysis reads. Owns the data model (`Trace`), the string interner
//! and the per-event classification (`builder`). The raw event list is never
//! held: each event is classified as it streams past and only the fields the
//! analyses use are kept, in struct-of-arrays columns, in trace order.
//!
//! All string fields are interned [`Sym`]s holding the Python `str()` form of
//! the JSON value (so pid `0` is `"0"`, a missing pid is `"None"`), because the
//! reference keys threads and processes by those strings.

pub mod builder;
pub mod classes;
pub mod corrmap;
pub mod frames;
pub mod ids;
pub mod interner;
pub mod value;

use indexmap::{IndexMap, IndexSet};

/// An insertion-ordered map with the fast (non-DoS-resistant) Fx hash, for
/// maps keyed by interned ids on hot paths.
pub type FxIndexMap<K, V> = IndexMap<K, V, rustc_hash::FxBuildHasher>;

pub use builder::{ArgsFields, ColumnsBuilder, RawEvent};
pub use corrmap::CorrMap;
pub use frames::{Frame, FrameRow, FrameStore};
pub use ids::IdColumn;
pub use interner::{Interner, Sym};

/// A `(pid, tid)` pair as Python strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ThreadKey {
    pub pid: Sym,
    pub tid: Sym,
}

/// Index into [`Trace::threads`].
pub type ThreadIdx = u32;

/// How a row field is stored in its column: optional ids and symbols use a
/// sentinel instead of an `Option` tag, halving their size.
pub trait Pack: Copy {
    type Store: Copy;
    fn pack(self) -> Self::Store;
    fn unpack(s: Self::Store) -> Self;
}

macro_rules! pack_plain {
    ($($t:ty),*) => {$(
        impl Pack for $t {
            type Store = $t;
            #[inline] fn pack(self) -> $t { self }
            #[inline] fn unpack(s: $t) -> $t { s }
        }
    )*};
}
pack_plain!(u32, i32, i64, f64, bool);

impl Pack for Option<i64> {
    type Store = i64;
    #[inline]
    fn pack(self) -> i64 {
        // i64::MIN is not a value a trace id takes; it marks "missing".
        self.unwrap_or(i64::MIN)
    }
    #[inline]
    fn unpack(s: i64) -> Self {
        (s != i64::MIN).then_some(s)
    }
}

impl Pack for Option<u32> {
    type Store = u32;
    #[inline]
    fn pack(self) -> u32 {
        self.unwrap_or(u32::MAX)
    }
    #[inline]
    fn unpack(s: u32) -> Self {
        (s != u32::MAX).then_some(s)
    }
}

/// The column one kind of row field is kept in: a plain vector of its
/// packed form, or for ids an [`IdColumn`] at 4 bytes a row.
pub trait FieldColumn<T>: Default + Clone + std::fmt::Debug {
    fn push_value(&mut self, v: T);
    fn at(&self, i: usize) -> T;
    fn bytes(&self) -> usize;
    fn shrink(&mut self);
    /// Appends `other`, passing each value through `map`.
    fn append_with(&mut self, other: Self, map: impl Fn(T) -> T);
}

impl<T: Pack> FieldColumn<T> for Vec<T::Store>
where
    T::Store: std::fmt::Debug,
{
    #[inline]
    fn push_value(&mut self, v: T) {
        self.push(v.pack());
    }
    #[inline]
    fn at(&self, i: usize) -> T {
        T::unpack(self[i])
    }
    fn bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T::Store>()
    }
    fn shrink(&mut self) {
        self.shrink_to_fit();
    }
    fn append_with(&mut self, other: Self, map: impl Fn(T) -> T) {
        reserve_rows(self, other.len());
        self.extend(other.into_iter().map(|v| map(T::unpack(v)).pack()));
    }
}

impl<T: ids::IdValue + std::fmt::Debug> FieldColumn<T> for IdColumn<T> {
    #[inline]
    fn push_value(&mut self, v: T) {
        self.push(v);
    }
    #[inline]
    fn at(&self, i: usize) -> T {
        self.get(i)
    }
    fn bytes(&self) -> usize {
        self.heap_bytes()
    }
    fn shrink(&mut self) {
        self.shrink_to_fit();
    }
    /// Ids are the same in every builder: `map` is the identity for them.
    fn append_with(&mut self, other: Self, _map: impl Fn(T) -> T) {
        self.append(other);
    }
}

/// Which column a row field type is kept in.
pub trait Stored: Sized {
    type Col: FieldColumn<Self>;
}

macro_rules! stored_plain {
    ($($t:ty),*) => {$( impl Stored for $t { type Col = Vec<<$t as Pack>::Store>; } )*};
}
stored_plain!(u32, i32, f64, bool, Option<u32>);
impl Stored for i64 {
    type Col = IdColumn<i64>;
}
impl Stored for Option<i64> {
    type Col = IdColumn<Option<i64>>;
}

/// Defines a struct-of-arrays column set with a row type, `push`, `get`
/// and a byte count, so each category is declared once. Fields in an
/// optional `shared` group are kept per class (see [`classes`]), one
/// 4-byte class code a row, and read through an accessor of their name.
macro_rules! columns {
    ($(#[$m:meta])* $cols:ident, $row:ident { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }
     $(shared $class:ident { $($(#[$cm:meta])* $cf:ident : $ct:ty),* $(,)? })?) => {
        /// One row of the matching column set.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $row { $($(#[$fm])* pub $f: $t,)* $($($(#[$cm])* pub $cf: $ct,)*)? }

        $(
            /// The fields of a row that many rows share.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            struct $class { $($cf: $ct),* }
        )?

        $(#[$m])*
        /// Per-row columns are public for tight loops over one field;
        /// optional fields hold their packed form (see [`Pack`]), ids an
        /// [`IdColumn`], and shared fields are read through their accessor.
        /// Prefer `get` / `iter`.
        #[derive(Clone, Debug, Default)]
        pub struct $cols { $(pub $f: <$t as Stored>::Col,)* $(class: classes::ClassColumn<$class>,)? }

        impl $cols {
            pub fn push(&mut self, row: $row) {
                $(FieldColumn::push_value(&mut self.$f, row.$f);)*
                $(self.class.push($class { $($cf: row.$cf),* });)?
            }
            #[inline]
            pub fn get(&self, i: usize) -> $row {
                $(let c: &$class = self.class.get(i);)?
                $row { $($f: FieldColumn::at(&self.$f, i),)* $($($cf: c.$cf,)*)? }
            }
            $($(
                $(#[$cm])*
                #[inline]
                pub fn $cf(&self, i: usize) -> $ct { self.class.get(i).$cf }
            )*)?
            pub fn len(&self) -> usize { self.ts.len() }
            pub fn is_empty(&self) -> bool { self.ts.is_empty() }
            pub fn iter(&self) -> impl ExactSizeIterator<Item = $row> + '_ { (0..self.len()).map(move |i| self.get(i)) }
            /// Heap bytes held by the columns (capacity, not length).
            pub fn heap_bytes(&self) -> usize {
                0 $(+ FieldColumn::<$t>::bytes(&self.$f))* $(+ classes::ClassColumn::<$class>::heap_bytes(&self.class))?
            }
            pub fn shrink_to_fit(&mut self) {
                $(FieldColumn::<$t>::shrink(&mut self.$f);)*
                $(classes::ClassColumn::<$class>::shrink_to_fit(&mut self.class);)?
            }
            /// Appends `other` (consumed column by column to bound the peak),
            /// translating its symbols and thread indexes.
            pub fn append_mapped(&mut self, other: $cols, sym: &[Sym], thread: &[ThreadIdx]) {
                $(
                    FieldColumn::<$t>::append_with(&mut self.$f, other.$f, |v| {
                        <$t as Remap>::remap(v, stringify!($f), sym, thread)
                    });
                )*
                $(self.class.append_with(other.class, |c| $class {
                    $($cf: <$ct as Remap>::remap(c.$cf, stringify!($cf), sym, thread)),*
                });)?
            }
        }
    };
}

/// Columns of at least this many bytes grow by exactly what is appended:
/// the binary maps blocks this large on their own (see `run::memory`), and
/// those grow in place.
const LARGE_COLUMN_BYTES: usize = 1 << 20;

/// Room for `more` rows. A column that is already large grows by exactly
/// what is appended (see [`LARGE_COLUMN_BYTES`]), so
/// that a stream of appends does not double its capacity; a small one
/// grows geometrically, so that many small appends do not copy it again
/// each time.
fn reserve_rows<T>(col: &mut Vec<T>, more: usize) {
    if col.capacity() * std::mem::size_of::<T>() >= LARGE_COLUMN_BYTES {
        col.reserve_exact(more);
    } else {
        col.reserve(more);
    }
}

/// Translation of one field value when columns from another builder are
/// appended: symbols and thread indexes change, everything else stays.
pub trait Remap: Sized {
    fn remap(self, _field: &str, _sym: &[Sym], _thread: &[ThreadIdx]) -> Self {
        self
    }
}
impl Remap for i32 {}
impl Remap for i64 {}
impl Remap for f64 {}
impl Remap for bool {}
impl Remap for Option<i64> {}
impl Remap for u32 {
    fn remap(self, field: &str, sym: &[Sym], thread: &[ThreadIdx]) -> Self {
        if field == "thread" {
            thread[self as usize]
        } else {
            sym[self as usize]
        }
    }
}
impl Remap for Option<u32> {
    fn remap(self, _field: &str, sym: &[Sym], _thread: &[ThreadIdx]) -> Self {
        self.map(|s| sym[s as usize])
    }
}

columns!(
    /// Kernel-like `ph: "X"` events: complete (ts and dur present, dur > 0),
    /// not metadata, not a python_function / cpu_op / trace category, not an
    /// annotation, and either a kernel / `gpu_*` category or an `args.stream`
    /// / `args.cuda_stream` key. Both of the reference's kernel detectors
    /// accept a subset of these rows.
    KernelColumns, KernelRow {
        name: Sym,
        ts: f64,
        dur: f64,
        /// `coerce_optional_int(args["External id"])` (no correlation fallback).
        external_id: Option<i64>,
        /// `coerce_optional_int(args["correlation"])`.
        correlation: Option<i64>,
    }
    shared KernelClass {
        cat: Sym,
        thread: ThreadIdx,
        /// `str(args["stream"])` when that value is truthy.
        stream: Option<Sym>,
        /// `str(args["cuda_stream"])` when that value is truthy.
        cuda_stream: Option<Sym>,
        /// `"stream" in args or "cuda_stream" in args`.
        has_stream_marker: bool,
        /// `int(args["stream"])` as the profiler's own tools read the
        /// stream (`"7"` and `7.9` are 7, stream 0 is 0), or -1 when the key
        /// is absent or not an integer (`"0x0"`, `"7.0"`, NaN, null).
        /// Saturated to the `i32` range.
        stream_int: i32,
    }
);

columns!(
    /// `ph: "X"`, `cat == "cpu_op"` events that carry an External id or a
    /// correlation.
    CpuOpColumns, CpuOpRow {
        /// `float(ts)`, 0.0 when missing.
        ts: f64,
        /// `float(dur)`, 0.0 when missing.
        dur: f64,
        external_id: Option<i64>,
        correlation: Option<i64>,
    }
    shared CpuOpClass {
        name: Sym,
        thread: ThreadIdx,
        /// ts and dur present and dur > 0 (`is_complete_duration_event`).
        complete: bool,
    }
);

columns!(
    /// `ph: "X"` events whose normalized, lowercased category is
    /// `cuda_runtime` or `cuda_driver`, whose lowercased name contains
    /// `launch`, and which carry a correlation.
    LaunchColumns, LaunchRow {
        ts: f64,
        dur: f64,
        correlation: i64,
    }
    shared LaunchClass {
        name: Sym,
        thread: ThreadIdx,
        complete: bool,
    }
);

columns!(
    /// `ph: "X"` events with ts and dur that carry a correlation and are
    /// kept in no other column set: runtime calls other than launches
    /// (`cudaMemcpyAsync`, `cudaMemsetAsync`, `cudaStreamWaitEvent`, hip
    /// and MTIA runtime calls, of any category), never `python_function`,
    /// `cpu_op`, annotation or trace categories, kernel-like rows, or
    /// device rows (an integer `args.stream` >= 0). With the launches they
    /// are the host side of every correlation.
    RuntimeColumns, RuntimeRow {
        name: Sym,
        thread: ThreadIdx,
        ts: f64,
        dur: f64,
        correlation: i64,
    }
);

columns!(
    /// `ph: "X"` events whose name starts with `ProfilerStep` (the
    /// profiler's step annotation), of any category except
    /// `python_function`, that are not kept as annotations: the steps of
    /// traces that record them as operators (may also be in `cpu_ops`).
    StepMarkColumns, StepMarkRow {
        name: Sym,
        ts: f64,
        dur: f64,
    }
);

columns!(
    /// Complete `ph: "X"` events whose normalized, lowercased category is
    /// `user_annotation` or `gpu_user_annotation`.
    AnnotationColumns, AnnotationRow {
        name: Sym,
        thread: ThreadIdx,
        ts: f64,
        dur: f64,
        is_gpu: bool,
        external_id: Option<i64>,
    }
);

/// Small top-level metadata, parsed with serde_json as it streams past.
#[derive(Clone, Debug, Default)]
pub struct TraceMeta {
    /// Top-level keys in file order (`traceEvents` included). Empty for a
    /// top-level array.
    pub top_level_keys: Vec<String>,
    pub schema_version: Option<serde_json::Value>,
    pub device_properties: Option<serde_json::Value>,
    pub distributed_info: Option<serde_json::Value>,
    pub with_stack: Option<serde_json::Value>,
    pub base_time_nanoseconds: Option<serde_json::Value>,
    pub trace_name: Option<serde_json::Value>,
    /// True when the file's top level is an array of events.
    pub top_level_array: bool,
    /// Metadata keys whose value was too long to read
    /// (over 1 MiB); left as absent.
    pub oversized_keys: Vec<String>,
}

/// Event counts for `stats`: per `cat` and per `ph` in first-seen order
/// (`<none>` for a missing key), plus totals.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub events: u64,
    pub by_cat: FxIndexMap<Sym, u64>,
    pub by_ph: FxIndexMap<Sym, u64>,
    /// Events the builder could not use although the reference would have
    /// tried (a `ph: "X"` event whose ts is not a number), and GPU events
    /// left out for a missing `ts` or `dur` or a negative `dur`, and events
    /// written as a begin/end pair (counted at the `B`).
    pub skipped: u64,
    /// Smallest `ts` and largest `ts + dur` over X events with numeric ts.
    pub min_ts: Option<f64>,
    pub max_end: Option<f64>,
    /// Some event's `ts` is not an integer literal (`5.0`, `1.5e3`, NaN)
    /// or is missing / null.
    pub ts_fractional: bool,
    /// Some event's `ts` is a string.
    pub ts_text: bool,
    /// CPU-side user annotations left out of `annotations` for their times
    /// (no `ts` or `dur`, or a duration that is not a positive, finite
    /// number), and `ProfilerStep` events of any other CPU-side category
    /// with no `ts` or `dur` (or one that is no number), by name: a step annotation among them is a step the
    /// step figures lack. Timed `ProfilerStep` events are step marks.
    pub unplaced_annotations: FxIndexMap<Sym, u64>,
}

/// Everything ingest keeps of one trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub strings: Interner,
    pub meta: TraceMeta,
    /// Every `(pid, tid)` seen on any event, first-seen order.
    pub threads: IndexSet<ThreadKey>,
    pub kernels: KernelColumns,
    pub cpu_ops: CpuOpColumns,
    pub launches: LaunchColumns,
    /// Correlated host-side events that are not launches ([`RuntimeColumns`]).
    pub runtime: RuntimeColumns,
    /// `ProfilerStep` events not kept as annotations ([`StepMarkColumns`]).
    pub step_marks: StepMarkColumns,
    pub frames: FrameStore,
    pub annotations: AnnotationColumns,
    /// `ph: "M"`, `name == "thread_name"`: `str(args.name)` when non-empty.
    /// Last assignment wins; order is first insertion (a Python dict).
    pub thread_names: FxIndexMap<ThreadKey, Sym>,
    /// `ph: "M"`, `name == "process_name"`, keyed by pid string.
    pub process_names: FxIndexMap<Sym, Sym>,
    /// correlation → External id from any event carrying both (last wins),
    /// kept for the correlations [`Trace::resolve_external`] is asked about:
    /// those of the kernels and CPU ops that have no External id.
    pub corr_to_ext: CorrMap,
    /// The text the reference's framework detection reads: for the first
    /// 256 events, `str(name)`, `str(cat)`, `str(pid)` and the first eight
    /// `args` keys with their string values, joined by single spaces.
    pub framework_sample: String,
    pub counts: Counts,
    /// Bytes of JSON read: the file's length, or what a compressed input
    /// decoded to.
    pub json_bytes: u64,
}

impl Trace {
    /// A row's External id, else the one its correlation maps to.
    pub fn resolve_external(&self, external_id: Option<i64>, correlation: Option<i64>) -> Option<i64> {
        external_id.or_else(|| correlation.and_then(|c| self.corr_to_ext.get(&c).copied()))
    }
    /// Sorted, unique correlations of the kernel and CPU op rows that have
    /// no External id of their own: the only ones the correlation map is
    /// ever asked about.
    pub fn correlations_to_resolve(&self) -> Vec<i64> {
        let kernels =
            (0..self.kernels.len()).map(|i| (self.kernels.external_id.get(i), self.kernels.correlation.get(i)));
        let ops = (0..self.cpu_ops.len()).map(|i| (self.cpu_ops.external_id.get(i), self.cpu_ops.correlation.get(i)));
        let mut out: Vec<i64> = kernels.chain(ops).filter_map(|(x, c)| if x.is_none() { c } else { None }).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The string behind a symbol.
    pub fn s(&self, sym: Sym) -> &str {
        self.strings.resolve(sym)
    }

    /// The `(pid, tid)` strings of a thread index.
    pub fn thread(&self, idx: ThreadIdx) -> ThreadKey {
        self.threads[idx as usize]
    }

    pub fn pid_str(&self, idx: ThreadIdx) -> &str {
        self.s(self.thread(idx).pid)
    }

    pub fn tid_str(&self, idx: ThreadIdx) -> &str {
        self.s(self.thread(idx).tid)
    }

    /// Heap bytes the columns hold, frames as stored: cheap, unlike
    /// [`Trace::column_bytes`], which packs the frames afresh to give a
    /// size that does not depend on the thread count.
    pub fn heap_bytes(&self) -> usize {
        self.kernels.heap_bytes()
            + self.cpu_ops.heap_bytes()
            + self.launches.heap_bytes()
            + self.frames.heap_bytes()
            + self.annotations.heap_bytes()
            + self.strings.heap_bytes()
            + self.corr_to_ext.heap_bytes()
            + self.runtime.heap_bytes()
            + self.step_marks.heap_bytes()
    }

    /// Rows and bytes per column set, for `stats`: heap bytes held, except
    /// for the Python frames, whose packed size is given in a layout that
    /// does not depend on the number of threads that read the file.
    pub fn column_bytes(&self) -> Vec<(&'static str, usize, usize)> {
        vec![
            ("kernels", self.kernels.len(), self.kernels.heap_bytes()),
            ("cpu_ops", self.cpu_ops.len(), self.cpu_ops.heap_bytes()),
            ("launches", self.launches.len(), self.launches.heap_bytes()),
            ("python_frames", self.frames.len(), self.frames.packed_bytes()),
            ("annotations", self.annotations.len(), self.annotations.heap_bytes()),
            ("strings", self.strings.len(), self.strings.heap_bytes()),
            ("correlation_map", self.corr_to_ext.len(), self.corr_to_ext.heap_bytes()),
            ("runtime", self.runtime.len(), self.runtime.heap_bytes()),
            ("step_marks", self.step_marks.len(), self.step_marks.heap_bytes()),
        ]
    }
}
