//! Row types shared between analyses: the kernel table rows and the mapping
//! kernel-map entries they carry (read by the overlap source map and by the
//! fuse-pattern matcher).

use std::sync::Arc;

/// Shared text of the kernel maps: locations, stacks, CPU ops and
/// categories repeat across thousands of kernels, so each distinct text is
/// stored once ([`TextCache`]) and shared.
pub type Text = Arc<str>;

/// An optional text compared and hashed by where it lives, for memo
/// tables keyed by shared texts (one [`TextCache`] hands out one text per
/// string): while the table holds the key the text cannot be freed, so its
/// address names it, and a lookup costs no string hashing. Equal strings
/// in two places are two keys, each worked out once.
#[derive(Clone, Debug)]
pub struct TextAddr(pub Option<Text>);

impl TextAddr {
    fn addr(&self) -> usize {
        self.0.as_ref().map_or(0, |t| t.as_ptr() as usize)
    }
}

impl PartialEq for TextAddr {
    fn eq(&self, other: &Self) -> bool {
        self.addr() == other.addr()
    }
}

impl Eq for TextAddr {}

impl std::hash::Hash for TextAddr {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.addr().hash(h)
    }
}

/// A row's list of cell texts (locations, CPU ops), one allocation shared
/// by all rows with an equal list.
pub type TextList = Arc<[Text]>;

/// Hands out one shared [`Text`] per distinct string.
#[derive(Default)]
pub struct TextCache(rustc_hash::FxHashSet<Text>);

impl TextCache {
    pub fn get(&mut self, s: &str) -> Text {
        if let Some(t) = self.0.get(s) {
            return t.clone();
        }
        let t: Text = s.into();
        self.0.insert(t.clone());
        t
    }
}

/// Per-kernel totals (`Aggregate` in the reference).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Aggregate {
    pub total_us: f64,
    pub count: u64,
    pub max_us: f64,
}

impl Aggregate {
    pub fn avg_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_us / self.count as f64
        }
    }
}

/// One attributed launch site of a kernel in the mapping kernel map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteEntry {
    pub location: Text,
    pub display_location: Text,
    pub launches: u64,
    /// Rounded to 3 decimals, as the reference stores it.
    pub total_us: f64,
    /// Rounded to 3 decimals.
    pub share_pct_within_kernel: f64,
    pub top_cpu_op: Option<Text>,
    pub stack: Option<Text>,
}

/// A kernel's entry in the mapping kernel map (`kernels[name]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelEntry {
    pub category: Text,
    pub sites: Vec<SiteEntry>,
    pub best_location: Text,
}

/// One row of the kernel table (`KernelRow` in the reference), owned: the
/// fuse matcher's input as the tests and tools build it (the triage driver
/// hands it lighter views, see `fusion::FuseRow`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelRow {
    pub name: String,
    pub category: String,
    pub aggregate: Aggregate,
    /// Python locations the kernel is launched from (empty: unresolved).
    pub location: Vec<String>,
    /// CPU ops that launch it (empty: none known).
    pub cpu_op: Vec<String>,
    pub entry: Option<KernelEntry>,
}

impl KernelRow {
    pub fn total_us(&self) -> f64 {
        self.aggregate.total_us
    }

    /// The location cell as the reference prints it: `<br>`-joined, or
    /// `unresolved`.
    pub fn location_cell(&self) -> String {
        location_cell(&self.location)
    }

    /// The CPU-op cell as the reference prints it: `<br>`-joined, or `-`.
    pub fn cpu_op_cell(&self) -> String {
        cpu_op_cell(&self.cpu_op)
    }
}

/// The location text of a kernel whose Python source location is unknown,
/// as the tables print it and as the site attribution records it.
pub const UNRESOLVED: &str = "unresolved";

/// A kernel's Python locations as one cell, as the reference prints them:
/// `<br>`-joined, or [`UNRESOLVED`].
pub fn location_cell<S: std::borrow::Borrow<str>>(items: &[S]) -> String {
    list_cell(items, UNRESOLVED)
}

/// A kernel's launching CPU ops as one cell: `<br>`-joined, or `-`.
pub fn cpu_op_cell<S: std::borrow::Borrow<str>>(items: &[S]) -> String {
    list_cell(items, "-")
}

/// A list as one table cell: items joined with `<br>`, or `empty`.
pub fn list_cell<S: std::borrow::Borrow<str>>(items: &[S], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("<br>")
    }
}

/// A stage's kernel map (`{"kernels": {...}}` of the reference's
/// `build_stage_payload`): canonical kernel name → entry, sorted by name.
pub type StagePayload = indexmap::IndexMap<Text, KernelEntry, rustc_hash::FxBuildHasher>;
