//! Row types shared between analyses: the kernel table rows and the mapping
//! kernel-map entries they carry (read by the overlap source map and by the
//! fuse-pattern matcher).

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
    pub location: String,
    pub display_location: String,
    pub launches: u64,
    /// Rounded to 3 decimals, as the reference stores it.
    pub total_us: f64,
    /// Rounded to 3 decimals.
    pub share_pct_within_kernel: f64,
    pub top_cpu_op: Option<String>,
    pub stack: Option<String>,
}

/// A kernel's entry in the mapping kernel map (`kernels[name]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelEntry {
    pub category: String,
    pub sites: Vec<SiteEntry>,
    pub best_location: String,
}

/// One row of the kernel table (`KernelRow` in the reference).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelRow {
    pub name: String,
    pub category: String,
    pub aggregate: Aggregate,
    pub location: String,
    pub cpu_op: String,
    pub entry: Option<KernelEntry>,
}

impl KernelRow {
    pub fn total_us(&self) -> f64 {
        self.aggregate.total_us
    }
}

/// A stage's kernel payload (the `kernels` object the kernel module builds
/// per stage): canonical kernel name → entry, sorted by name.
pub type StagePayload = indexmap::IndexMap<String, KernelEntry>;
