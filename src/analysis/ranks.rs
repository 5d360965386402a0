//! The cross-rank view of a batch, per stage: one row per triaged file
//! (rank, busy time, compute time, multi-stream overlap, exposed
//! communication, top exposed and headroom kernels) with the likely slow
//! rank and the ranks waiting on it marked, and the spread across ranks of
//! every kernel that leads some rank's kernel table.
//!
//! Slow and waiting ranks. In a collective (all-reduce, all-to-all, ...)
//! every rank leaves only when the last one has arrived, so the ranks that
//! arrive early spend the difference inside the communication kernel: they
//! show the most exposed communication. The rank that holds them up shows
//! the opposite, more work of its own and less time waiting in the
//! collective. Per stage, with `bar(x) = median(x) * (1 + straggler_pct / 100)`:
//!
//! - compute time of a row: the GPU time of its kernel-table rows whose
//!   category is not `communication` (the stage's kernel time minus its
//!   communication kernel time);
//! - the likely slow rank: among the rows whose compute time is positive and
//!   above `bar(compute)`, the one with the most compute time; on a tie, the
//!   one with less exposed communication, then the first by rank. None when
//!   no row's compute time is above the bar, and none when its compute
//!   exceeds the median by less than [`EXPLAINS_SHARE`] of the spread of the
//!   measured rows' exposed communication (largest minus smallest): a rank
//!   whose extra work is a fraction of the other ranks' extra waiting does
//!   not hold them up by that work; nor is one named when fewer than two
//!   rows have exposed communication measured, there being no waits to
//!   explain (the stage then records the candidate as
//!   [`StageSummary::unexplained`]);
//! - waiting ranks: rows whose exposed communication is positive, above
//!   `bar(exposed communication)` and above the median by at least
//!   [`WAIT_FLOOR_SHARE`] of the median busy time. When a slow rank exists they wait on it,
//!   and a row whose own compute time is above `bar(compute)` is not among
//!   them (it holds the others up too); without one the wait has no cause
//!   among the GPU kernels (a late launch on the host, say), whatever the
//!   row computes, so the ranks that wait the most are never left out;
//! - every other row has no role, including a row whose compute time is
//!   above the bar but is not the highest, beside a slow rank.
//!
//! - the likely late rank, when no slow rank is named: the row with the
//!   least exposed communication, below the median by more than
//!   `straggler_pct` percent of it and by at least [`WAIT_FLOOR_SHARE`] of
//!   the median busy time, among at least three measured rows. It waited
//!   least in the collectives, so the others waited for it, and its GPU
//!   compute does not say why: its delay comes before its kernels (the
//!   host, the input pipeline, data loading).
//!
//! Medians of an even count average the two middle values.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::analysis::stage::Stage;
use crate::analysis::types::Text;

/// A stage's kernel rows as `[name, category, GPU time µs]` triples; a
/// category is read back as the static text of the categories the kernel
/// table uses, and an unknown one is an error.
mod kernel_rows {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::analysis::kernels::names::known_category;
    use crate::analysis::types::Text;

    pub fn serialize<S: Serializer>(rows: &[(Text, &'static str, f64)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(rows.iter().map(|(name, category, us)| (&**name, *category, *us)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(Text, &'static str, f64)>, D::Error> {
        let rows: Vec<(String, String, f64)> = Vec::deserialize(d)?;
        rows.into_iter()
            .map(|(name, category, us)| {
                let category = known_category(&category)
                    .ok_or_else(|| D::Error::custom(format!("unknown category `{category}`")))?;
                Ok((Text::from(name), category, us))
            })
            .collect()
    }
}

/// Where a file's rank came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankSource {
    /// `tp3`, `rank3`, `worker3`, ... in the file name.
    FileName,
    /// `distributedInfo.rank` in the trace.
    DistributedInfo,
    /// Neither: the file's position in the batch.
    Index,
}

impl RankSource {
    pub fn name(self) -> &'static str {
        match self {
            RankSource::FileName => "file-name",
            RankSource::DistributedInfo => "distributed-info",
            RankSource::Index => "index",
        }
    }
}

/// A row's part in its stage's collectives (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The likely slow rank: the most compute, above the bar.
    Slow,
    /// Exposed communication above the bar, compute not.
    Waiting,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Slow => "slow",
            Role::Waiting => "waiting",
        }
    }
}

/// What one stage of one file contributes to the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageFacts {
    pub stage: Stage,
    /// Overlap bundle label (`formal-<stage>`); empty without a bundle.
    pub bundle: String,
    /// Time with at least one kernel running (the overlap sweep).
    pub busy_us: f64,
    /// Time with kernels on two or more streams.
    pub overlap_us: f64,
    /// Exclusive (exposed) time of communication kernels.
    pub exposed_comm_us: f64,
    /// The communication kernel with the most exclusive time.
    pub top_exposed: Option<(String, f64)>,
    /// First `headroom` row of the overlap table: (priority, kernel).
    pub top_headroom: Option<(String, String)>,
    /// Kernel table of the stage: (kernel, category, GPU time µs), ranked.
    /// The names are the report's shared texts.
    #[serde(with = "kernel_rows")]
    pub kernels: Vec<(Text, &'static str, f64)>,
    /// Sum of the stage's kernel GPU time (kernel table total).
    pub gpu_time_us: f64,
    /// GPU idle time in the stage's timeline window (GPUs summed); `None`
    /// without a timeline.
    #[serde(default)]
    pub idle_us: Option<f64>,
    /// Steps the stage's timeline found; `None` without steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
}

impl StageFacts {
    /// Whether the overlap step measured the stage: its busy, overlap and
    /// exposed-communication times are known. A stage of the kernel table
    /// the overlap table leaves out (the reference's `all` beside named
    /// stages) has none.
    pub fn measured(&self) -> bool {
        !self.bundle.is_empty()
    }

    /// Busy time, when measured.
    pub fn busy(&self) -> Option<f64> {
        self.measured().then_some(self.busy_us)
    }

    /// Multi-stream overlap time, when measured.
    pub fn overlap(&self) -> Option<f64> {
        self.measured().then_some(self.overlap_us)
    }

    /// Exposed communication time, when measured.
    pub fn exposed_comm(&self) -> Option<f64> {
        self.measured().then_some(self.exposed_comm_us)
    }
}

/// One triaged file as the cross-rank comparison sees it. Serializable:
/// the per-trace summary that `batch --summaries` writes and `merge`
/// reads back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankFacts {
    /// Written as text, a name that is not UTF-8 with its bad bytes
    /// replaced (JSON holds no other).
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    pub rank: u64,
    pub rank_source: RankSource,
    pub stages: Vec<StageFacts>,
    /// `distributedInfo.world_size` in the trace, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u64>,
    /// `distributedInfo.rank` in the trace, when it gives one (whatever
    /// [`RankFacts::rank`] was taken from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed_rank: Option<u64>,
}

pub(crate) fn lossy_path<S: serde::Serializer>(path: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// The world sizes the files' traces give, each with how many files give
/// it, smallest first: more than one means files of different jobs.
pub fn world_sizes<'a>(files: impl IntoIterator<Item = &'a RankFacts>) -> Vec<(u64, usize)> {
    let mut counts: std::collections::BTreeMap<u64, usize> = Default::default();
    for size in files.into_iter().filter_map(|f| f.world_size) {
        *counts.entry(size).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// The ranks of `files` as the tables show them ([`settled_ranks`]), each
/// once, smallest first.
pub fn ranks_of(files: &[&RankFacts]) -> Vec<u64> {
    let mut ranks: Vec<u64> = settled_ranks(files).into_iter().map(|(rank, _)| rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// Each file's rank as the tables show it: its own ([`RankFacts::rank`]),
/// unless file names give one rank number to several files (per-node
/// folders of local ranks: `node0/rank0.json`, `node1/rank0.json`) while
/// every trace's `distributedInfo.rank` tells them all apart; then each
/// takes that.
pub fn settled_ranks(files: &[&RankFacts]) -> Vec<(u64, RankSource)> {
    let own = || files.iter().map(|f| (f.rank, f.rank_source)).collect();
    let mut named: Vec<u64> = files.iter().filter(|f| f.rank_source == RankSource::FileName).map(|f| f.rank).collect();
    named.sort_unstable();
    if !named.windows(2).any(|w| w[0] == w[1]) {
        return own();
    }
    let Some(mut distributed) = files.iter().map(|f| f.distributed_rank).collect::<Option<Vec<u64>>>() else {
        return own();
    };
    distributed.sort_unstable();
    if distributed.windows(2).any(|w| w[0] == w[1]) {
        return own();
    }
    files.iter().map(|f| (f.distributed_rank.unwrap_or(f.rank), RankSource::DistributedInfo)).collect()
}

/// A file whose name gives one rank while its trace's `distributedInfo`
/// gives another, which a second file of the same world holds by both: most
/// likely a copy of that file's trace, compared as a rank it is not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankCopy {
    pub file: PathBuf,
    pub name_rank: u64,
    pub trace_rank: u64,
    pub other: PathBuf,
}

/// The [`RankCopy`]s among `files`, in file order.
pub fn copied_ranks(files: &[&RankFacts]) -> Vec<RankCopy> {
    let settled = settled_ranks(files);
    // (rank, world size) → the first file holding the rank by both its
    // table rank and its trace.
    let mut holder: std::collections::HashMap<(u64, Option<u64>), usize> = Default::default();
    for (i, f) in files.iter().enumerate() {
        if f.distributed_rank == Some(settled[i].0) {
            holder.entry((settled[i].0, f.world_size)).or_insert(i);
        }
    }
    files
        .iter()
        .zip(&settled)
        .filter_map(|(f, &(rank, source))| {
            let trace_rank = f.distributed_rank.filter(|&d| d != rank && source == RankSource::FileName)?;
            let other = holder.get(&(trace_rank, f.world_size))?;
            Some(RankCopy { file: f.file.clone(), name_rank: rank, trace_rank, other: files[*other].file.clone() })
        })
        .collect()
}

/// One file's row in a stage table.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRow {
    pub rank: u64,
    pub rank_source: RankSource,
    pub file: PathBuf,
    pub facts: StageFacts,
    /// `100 * overlap / busy` (0 when idle); `None` when not measured
    /// ([`StageFacts::measured`]).
    pub overlap_pct: Option<f64>,
    /// `100 * exposed communication / busy` (0 when idle); `None` when not
    /// measured.
    pub exposed_comm_pct: Option<f64>,
    /// GPU time of the stage's kernels outside the `communication`
    /// category ([`compute_us`]).
    pub compute_us: f64,
    /// Slow, waiting, or neither.
    pub role: Option<Role>,
    /// For a waiting row, the stage's slow rank when there is one and it is
    /// not this row's own rank number (a rank shared by several files).
    pub waits_on: Option<u64>,
    /// `["compute"]` on the likely slow rank (its compute time is the
    /// reason); empty on every other row.
    pub straggler: Vec<&'static str>,
}

impl RankRow {
    /// The row's role in words (`slow`, `waiting on 3`, `waiting`); `None`
    /// without a role.
    pub fn role_text(&self) -> Option<String> {
        match (self.role?, self.waits_on) {
            (Role::Slow, _) => Some("slow".into()),
            (Role::Waiting, Some(on)) => Some(format!("waiting on {on}")),
            (Role::Waiting, None) => Some("waiting".into()),
        }
    }
}

/// How one kernel's GPU time spreads over the ranks of a stage.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpread {
    pub kernel: String,
    pub category: String,
    /// Ranks whose kernel table this kernel tops.
    pub leads: Vec<u64>,
    /// Rows (files) that ran the kernel at all.
    pub present: usize,
    pub min_us: f64,
    pub median_us: f64,
    pub max_us: f64,
    /// Rank of the first row holding the maximum.
    pub max_rank: u64,
}

/// A rank above the compute bar whose extra compute is too small to
/// explain the spread of the ranks' exposed communication.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unexplained {
    pub rank: u64,
    /// Its row in the stage's `rows` (which names its file when several
    /// files hold the rank).
    pub row: usize,
    /// Its compute time minus the stage's median compute time.
    pub excess_us: f64,
    /// Largest minus smallest exposed communication of the measured rows;
    /// `None` when fewer than two rows were measured, so the waits cannot
    /// be compared at all.
    pub comm_spread_us: Option<f64>,
}

/// The share of the exposed-communication spread a slow rank's extra
/// compute must reach to be named the cause of the waits.
pub const EXPLAINS_SHARE: f64 = 0.25;

/// The share of the stage's median busy time by which a row's exposed
/// communication must exceed the median to count as waiting: a few
/// microseconds over a tiny median are no wait worth a role.
pub const WAIT_FLOOR_SHARE: f64 = 0.02;

/// Everything the batch report shows for one stage.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSummary {
    pub stage: Stage,
    pub rows: Vec<RankRow>,
    /// Over the rows the overlap step measured; `None` without one.
    pub median_busy_us: Option<f64>,
    pub median_compute_us: f64,
    /// Over the rows the overlap step measured; `None` without one.
    pub median_exposed_comm_us: Option<f64>,
    /// Rank of the likely slow row, if any.
    pub slow_rank: Option<u64>,
    /// The row that would have been the slow rank, when its extra compute
    /// does not explain the waits.
    pub unexplained: Option<Unexplained>,
    /// Rank numbers that more than one row (file) of the stage has,
    /// ascending: the comparison still treats each file as a rank.
    pub shared_ranks: Vec<u64>,
    pub kernels: Vec<KernelSpread>,
    /// The row of the likely late rank (see the module's rules), when no
    /// slow rank is named.
    pub late: Option<usize>,
}

/// Median of the values (NaN-safe order; 0 for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ratio_pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// Compute time of a stage: GPU time of its kernel-table rows whose
/// category is not `communication`; 0 (not the `-0.0` of an empty `sum`,
/// which prints as `-0.00 ms`) without such rows.
pub fn compute_us(f: &StageFacts) -> f64 {
    f.kernels.iter().filter(|k| k.1 != "communication").fold(0.0, |total, k| total + k.2)
}

/// Whether `value` is positive and more than `pct` percent above `median`:
/// the bar of the module doc.
pub fn above(value: f64, median: f64, pct: f64) -> bool {
    value > 0.0 && value > median * (1.0 + pct / 100.0)
}

/// Builds the per-stage summaries from the triaged files.
pub fn summarize(files: &[&RankFacts], straggler_pct: f64) -> Vec<StageSummary> {
    let mut stages: Vec<Stage> = Vec::new();
    for a in files {
        for f in &a.stages {
            if !stages.contains(&f.stage) {
                stages.push(f.stage);
            }
        }
    }
    stages.sort();
    let ranks = settled_ranks(files);
    stages.into_iter().map(|s| summarize_stage(s, files, &ranks, straggler_pct)).collect()
}

fn summarize_stage(
    stage: Stage,
    files: &[&RankFacts],
    ranks: &[(u64, RankSource)],
    straggler_pct: f64,
) -> StageSummary {
    let mut rows: Vec<RankRow> = files
        .iter()
        .zip(ranks)
        .flat_map(|(a, &(rank, rank_source))| {
            a.stages.iter().filter(|f| f.stage == stage).map(move |f| RankRow {
                rank,
                rank_source,
                file: a.file.clone(),
                overlap_pct: f.overlap().zip(f.busy()).map(|(o, b)| ratio_pct(o, b)),
                exposed_comm_pct: f.exposed_comm().zip(f.busy()).map(|(e, b)| ratio_pct(e, b)),
                compute_us: compute_us(f),
                facts: f.clone(),
                role: None,
                waits_on: None,
                straggler: Vec::new(),
            })
        })
        .collect();
    rows.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.file.cmp(&b.file)));
    let busy: Vec<f64> = rows.iter().filter_map(|r| r.facts.busy()).collect();
    let compute: Vec<f64> = rows.iter().map(|r| r.compute_us).collect();
    let comm: Vec<f64> = rows.iter().filter_map(|r| r.facts.exposed_comm()).collect();
    let measured_median = |v: &[f64]| (!v.is_empty()).then(|| median(v));
    let (median_busy_us, median_compute_us, median_exposed_comm_us) =
        (measured_median(&busy), median(&compute), measured_median(&comm));
    let candidate = slow_row(&rows, median_compute_us, straggler_pct);
    // Without exposed communication on two rows there is no wait to
    // explain: no rank is named slow on its compute alone.
    let comm_spread_us = (comm.len() >= 2).then(|| {
        comm.iter().copied().fold(f64::NEG_INFINITY, f64::max) - comm.iter().copied().fold(f64::INFINITY, f64::min)
    });
    let unexplained = candidate.and_then(|i| {
        let excess_us = rows[i].compute_us - median_compute_us;
        let explains = comm_spread_us.is_some_and(|spread| !(excess_us < EXPLAINS_SHARE * spread));
        (!explains).then_some(Unexplained { rank: rows[i].rank, row: i, excess_us, comm_spread_us })
    });
    let slow = candidate.filter(|_| unexplained.is_none());
    let slow_rank = slow.map(|i| rows[i].rank);
    for (i, r) in rows.iter_mut().enumerate() {
        if Some(i) == slow {
            r.role = Some(Role::Slow);
            r.straggler.push("compute");
        } else if r.facts.exposed_comm().zip(median_exposed_comm_us).is_some_and(|(e, m)| {
            above(e, m, straggler_pct) && e - m >= WAIT_FLOOR_SHARE * median_busy_us.unwrap_or(0.0)
        }) && (slow.is_none() || !above(r.compute_us, median_compute_us, straggler_pct))
        {
            r.role = Some(Role::Waiting);
            r.waits_on = slow_rank.filter(|&s| s != r.rank);
        }
    }
    let late = if slow.is_some() || comm.len() < 3 {
        None
    } else {
        median_exposed_comm_us.and_then(|m| {
            let floor = WAIT_FLOOR_SHARE * median_busy_us.unwrap_or(0.0);
            // The first of equal least, as the rows are in rank order.
            let (least, e) = (0..rows.len())
                .filter_map(|i| Some((i, rows[i].facts.exposed_comm()?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            (m - e > m * straggler_pct / 100.0 && m - e >= floor && m - e > 0.0).then_some(least)
        })
    };
    // Rows are sorted by rank: equal ranks are neighbours.
    let mut shared_ranks: Vec<u64> = rows.windows(2).filter(|w| w[0].rank == w[1].rank).map(|w| w[0].rank).collect();
    shared_ranks.dedup();
    let kernels = kernel_spreads(&rows);
    StageSummary {
        stage,
        rows,
        median_busy_us,
        median_compute_us,
        median_exposed_comm_us,
        slow_rank,
        unexplained,
        shared_ranks,
        kernels,
        late,
    }
}

/// Whether `a` shows less exposed communication than `b`; a row not
/// measured comes after every measured one.
fn less_exposed(a: &RankRow, b: &RankRow) -> bool {
    match (a.facts.exposed_comm(), b.facts.exposed_comm()) {
        (Some(x), Some(y)) => x < y,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Index of the likely slow row: the most compute time among the rows above
/// the bar; ties go to less exposed communication, then to the first row.
fn slow_row(rows: &[RankRow], median_compute_us: f64, straggler_pct: f64) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, r) in rows.iter().enumerate() {
        if !above(r.compute_us, median_compute_us, straggler_pct) {
            continue;
        }
        let better = best.is_none_or(|b| {
            let b = &rows[b];
            r.compute_us > b.compute_us || (r.compute_us == b.compute_us && less_exposed(r, b))
        });
        if better {
            best = Some(i);
        }
    }
    best
}

/// The kernels topping some row's kernel table, with their GPU time over
/// all rows of the stage (0 where a row did not run them), largest max
/// first.
fn kernel_spreads(rows: &[RankRow]) -> Vec<KernelSpread> {
    let mut leaders: Vec<(&Text, &'static str, Vec<u64>)> = Vec::new();
    for r in rows {
        let Some((name, category, _)) = r.facts.kernels.first() else {
            continue;
        };
        match leaders.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, _, ranks)) => {
                if !ranks.contains(&r.rank) {
                    ranks.push(r.rank);
                }
            }
            None => leaders.push((name, category, vec![r.rank])),
        }
    }
    let mut out: Vec<KernelSpread> = leaders
        .into_iter()
        .map(|(kernel, category, leads)| {
            let per_row: Vec<(u64, Option<f64>)> = rows
                .iter()
                .map(|r| {
                    let hits: Vec<f64> = r.facts.kernels.iter().filter(|k| k.0 == *kernel).map(|k| k.2).collect();
                    (r.rank, (!hits.is_empty()).then(|| hits.iter().sum()))
                })
                .collect();
            let values: Vec<f64> = per_row.iter().map(|(_, v)| v.unwrap_or(0.0)).collect();
            let (mut max_us, mut max_rank) = (f64::NEG_INFINITY, 0);
            for (rank, v) in &per_row {
                let v = v.unwrap_or(0.0);
                if v > max_us {
                    (max_us, max_rank) = (v, *rank);
                }
            }
            KernelSpread {
                kernel: kernel.to_string(),
                category: category.to_string(),
                leads,
                present: per_row.iter().filter(|(_, v)| v.is_some()).count(),
                min_us: values.iter().copied().fold(f64::INFINITY, f64::min),
                median_us: median(&values),
                max_us,
                max_rank,
            }
        })
        .collect();
    out.sort_by(|a, b| b.max_us.total_cmp(&a.max_us));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(stage: Stage, busy: f64, comm: f64, kernels: &[(&str, f64)]) -> StageFacts {
        StageFacts {
            stage,
            bundle: format!("formal-{stage}"),
            busy_us: busy,
            overlap_us: busy / 10.0,
            exposed_comm_us: comm,
            top_exposed: None,
            top_headroom: None,
            kernels: kernels.iter().map(|(n, us)| ((*n).into(), "gemm", *us)).collect(),
            gpu_time_us: busy,
            idle_us: None,
            steps: None,
        }
    }

    #[test]
    fn local_ranks_of_several_nodes_take_the_traces_ranks() {
        let file = |rank: u64, distributed: Option<u64>| RankFacts {
            distributed_rank: distributed,
            ..analysis(rank, Vec::new())
        };
        let (a, b, c, d) = (file(0, Some(0)), file(1, Some(1)), file(0, Some(2)), file(1, Some(3)));
        let settled = settled_ranks(&[&a, &b, &c, &d]);
        let by_trace = |ranks: &[u64]| ranks.iter().map(|&r| (r, RankSource::DistributedInfo)).collect::<Vec<_>>();
        assert_eq!(settled, by_trace(&[0, 1, 2, 3]));
        assert_eq!(ranks_of(&[&a, &b, &c, &d]), [0, 1, 2, 3]);
        // Names that tell the files apart keep their ranks.
        let (e, f) = (file(4, Some(0)), file(5, Some(1)));
        assert_eq!(
            settled_ranks(&[&a, &b, &e, &f]),
            [
                (0, RankSource::FileName),
                (1, RankSource::FileName),
                (4, RankSource::FileName),
                (5, RankSource::FileName)
            ]
        );
        // A trace without a rank, or two traces of one rank: names stay.
        let g = file(0, None);
        assert_eq!(settled_ranks(&[&a, &g]), [(0, RankSource::FileName); 2]);
        let h = file(0, Some(1));
        assert_eq!(
            settled_ranks(&[&a, &h, &b]),
            [(0, RankSource::FileName), (0, RankSource::FileName), (1, RankSource::FileName)]
        );
    }

    #[test]
    fn a_file_named_for_one_rank_holding_anothers_trace_is_a_copy() {
        let file = |name: &str, rank: u64, distributed: Option<u64>| RankFacts {
            file: PathBuf::from(name),
            distributed_rank: distributed,
            ..analysis(rank, Vec::new())
        };
        let (r0, r1) = (file("rank0.json", 0, Some(0)), file("rank1.json", 1, Some(1)));
        let copy = file("rank2.json", 2, Some(0));
        assert_eq!(copied_ranks(&[&r0, &r1]), []);
        assert_eq!(
            copied_ranks(&[&r0, &r1, &copy]),
            [RankCopy { file: "rank2.json".into(), name_rank: 2, trace_rank: 0, other: "rank0.json".into() }]
        );
        // Local ranks of several nodes take the traces' ranks: no copy.
        let (n0, n1) = (file("node1/rank0.json", 0, Some(2)), file("node1/rank1.json", 1, Some(3)));
        assert_eq!(copied_ranks(&[&r0, &r1, &n0, &n1]), []);
        // Names that differ from the traces' ranks, no file holding the
        // trace's rank by both, or another job's world: no copy either.
        let (m0, m1) = (file("worker4.json", 4, Some(0)), file("worker5.json", 5, Some(1)));
        assert_eq!(copied_ranks(&[&m0, &m1]), []);
        assert_eq!(copied_ranks(&[&r0, &file("rank2.json", 2, None)]), []);
        let other_world = RankFacts { world_size: Some(8), ..copy.clone() };
        assert_eq!(copied_ranks(&[&r0, &other_world]), []);
    }

    fn analysis(rank: u64, stages: Vec<StageFacts>) -> RankFacts {
        RankFacts {
            file: PathBuf::new(),
            rank,
            rank_source: RankSource::FileName,
            stages,
            world_size: None,
            distributed_rank: None,
        }
    }

    #[test]
    fn a_stage_of_communication_alone_computes_zero_not_minus_zero() {
        let mut f = facts(Stage::All, 50.0, 50.0, &[]);
        f.kernels = vec![("ncclKernel_AllReduce".into(), "communication", 50.0)];
        let c = compute_us(&f);
        assert!(c == 0.0 && c.is_sign_positive(), "{c}");
    }

    #[test]
    fn a_wait_of_a_few_microseconds_is_no_role() {
        // Three ranks of a 10 ms stage, with these exposed communications.
        let roles = |comm_ms: [f64; 3]| -> Vec<Option<Role>> {
            let a: Vec<RankFacts> = (0..3)
                .map(|i| {
                    analysis(
                        i,
                        vec![facts(Stage::Decode, 10_000.0, comm_ms[i as usize] * 1000.0, &[("gemm", 9_000.0)])],
                    )
                })
                .collect();
            summarize(&a.iter().collect::<Vec<_>>(), 10.0)[0].rows.iter().map(|r| r.role).collect()
        };
        // 0.13 ms against a median of 0.07 ms is 86 % over it, but 0.06 ms
        // of the stage's 10 ms: under the floor.
        assert_eq!(roles([0.13, 0.07, 0.07]), vec![None; 3]);
        // 0.30 ms over the median is 3 % of it: waiting.
        assert_eq!(roles([0.37, 0.07, 0.07]), vec![Some(Role::Waiting), None, None]);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn stragglers_and_spreads() {
        let a = [
            analysis(1, vec![facts(Stage::Decode, 100.0, 10.0, &[("gemm", 60.0), ("nccl", 10.0)])]),
            analysis(0, vec![facts(Stage::Decode, 100.0, 10.0, &[("gemm", 50.0), ("nccl", 10.0)])]),
            analysis(2, vec![facts(Stage::Decode, 115.0, 10.0, &[("nccl", 70.0), ("gemm", 40.0)])]),
            analysis(3, vec![facts(Stage::Extend, 5.0, 0.0, &[("gemm", 5.0)]), facts(Stage::Decode, 100.0, 30.0, &[])]),
        ];
        let mut a = a;
        for (i, x) in a.iter_mut().enumerate() {
            x.file = PathBuf::from(format!("f{i}"));
        }
        let files: Vec<&RankFacts> = a.iter().collect();
        let s = summarize(&files, 10.0);
        assert_eq!(s.iter().map(|x| x.stage).collect::<Vec<_>>(), vec![Stage::Extend, Stage::Decode]);
        let d = &s[1];
        assert_eq!(d.rows.iter().map(|r| r.rank).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(d.median_busy_us, Some(100.0));
        assert_eq!(d.median_compute_us, 65.0);
        assert_eq!(d.slow_rank, Some(2));
        assert_eq!((d.rows[2].role, d.rows[2].straggler.clone()), (Some(Role::Slow), vec!["compute"]));
        assert_eq!((d.rows[3].role, d.rows[3].waits_on), (Some(Role::Waiting), Some(2)));
        assert!(d.rows[3].straggler.is_empty());
        assert_eq!((d.rows[0].role, d.rows[0].waits_on), (None, None));
        assert!(d.rows[0].straggler.is_empty());
        assert_eq!(d.rows[0].overlap_pct, Some(10.0));
        let names: Vec<&str> = d.kernels.iter().map(|k| k.kernel.as_str()).collect();
        assert_eq!(names, vec!["nccl", "gemm"]);
        let gemm = &d.kernels[1];
        assert_eq!((gemm.min_us, gemm.median_us, gemm.max_us, gemm.max_rank), (0.0, 45.0, 60.0, 1));
        assert_eq!(gemm.leads, vec![0, 1]);
        assert_eq!(gemm.present, 3);
        assert_eq!(d.kernels[0].leads, vec![2]);
    }

    /// A stage of a collective: `compute` µs of GEMM and `exposed` µs of a
    /// communication kernel running alone.
    fn collective(compute: f64, exposed: f64) -> StageFacts {
        StageFacts {
            kernels: vec![("gemm".into(), "gemm", compute), ("nccl".into(), "communication", exposed)],
            ..facts(Stage::All, compute + exposed, exposed, &[])
        }
    }

    /// (compute, exposed communication) per rank 0, 1, ...: the summary of
    /// its one stage.
    fn stage_of(ranks: &[(f64, f64)]) -> StageSummary {
        let a: Vec<RankFacts> =
            ranks.iter().enumerate().map(|(i, (c, e))| analysis(i as u64, vec![collective(*c, *e)])).collect();
        let files: Vec<&RankFacts> = a.iter().collect();
        summarize(&files, 10.0).remove(0)
    }

    #[test]
    fn a_rank_held_by_several_files_never_waits_on_itself() {
        // Two files claim rank 0: the slow one, and one that waits.
        let a: Vec<RankFacts> = [(0, 150.0, 0.0), (0, 100.0, 60.0), (1, 100.0, 5.0), (2, 100.0, 5.0), (3, 100.0, 60.0)]
            .iter()
            .enumerate()
            .map(|(i, &(rank, c, e))| RankFacts {
                file: PathBuf::from(format!("f{i}")),
                ..analysis(rank, vec![collective(c, e)])
            })
            .collect();
        let files: Vec<&RankFacts> = a.iter().collect();
        let s = summarize(&files, 10.0).remove(0);
        assert_eq!(s.slow_rank, Some(0));
        assert_eq!(s.shared_ranks, vec![0]);
        assert_eq!(
            roles(&s),
            vec![(Some("slow"), None), (Some("waiting"), None), (None, None), (None, None), (Some("waiting"), Some(0))]
        );
        let lines = crate::report::batch::roles_lines(&s, 10.0, &Default::default());
        assert!(lines.iter().any(|l| l == "Waiting on rank 0 in f0: 3"), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.starts_with("Also waiting, with the slow rank's own number: 0 in f1")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.starts_with("Rank numbers held by more than one file in this stage: 0 ")));
        // Distinct ranks: nothing shared.
        assert!(stage_of(&[(100.0, 5.0), (150.0, 0.0)]).shared_ranks.is_empty());
    }

    fn roles(s: &StageSummary) -> Vec<(Option<&'static str>, Option<u64>)> {
        s.rows.iter().map(|r| (r.role.map(Role::name), r.waits_on)).collect()
    }

    #[test]
    fn a_rank_held_up_before_its_kernels_is_the_late_rank() {
        // Rank 2 stalls on the host before a collective: its compute is the
        // others', and it waits 2.86 ms less in the collective than they do.
        let s = stage_of(&[(1190.0, 8400.0), (1190.0, 8400.0), (1190.0, 5540.0), (1190.0, 8400.0)]);
        assert_eq!((s.slow_rank, s.late), (None, Some(2)));
        assert!(roles(&s).iter().all(|r| *r == (None, None)), "{:?}", roles(&s));
        let lines = crate::report::batch::roles_lines(&s, 10.0, &Default::default());
        assert!(
            lines.iter().any(|l| l.starts_with("Likely late rank: 2 (exposed comm 5.54 ms, -34.0% against the median 8.40 ms)")),
            "{lines:?}"
        );
        // A slow rank explains the waits: no late rank beside it.
        assert_eq!(stage_of(&[(1000.0, 8400.0), (1000.0, 8400.0), (4000.0, 5540.0), (1000.0, 8400.0)]).late, None);
        // Within the bar, or with two ranks only, no rank is late.
        assert_eq!(stage_of(&[(1000.0, 8400.0), (1000.0, 8000.0), (1000.0, 8400.0)]).late, None);
        assert_eq!(stage_of(&[(1000.0, 8400.0), (1000.0, 5000.0)]).late, None);
    }

    #[test]
    fn the_slow_rank_computes_more_and_its_peers_wait_on_it() {
        // Rank 2 computes 50% more and barely waits; ranks 0 and 1 wait the
        // longest, so they are the busiest (160 µs against 155 µs) without
        // being slow.
        let s = stage_of(&[(100.0, 60.0), (100.0, 60.0), (150.0, 5.0), (100.0, 20.0), (100.0, 20.0)]);
        assert_eq!(s.rows.iter().map(|r| r.compute_us).collect::<Vec<_>>(), vec![100.0, 100.0, 150.0, 100.0, 100.0]);
        assert_eq!((s.median_compute_us, s.median_exposed_comm_us), (100.0, Some(20.0)));
        assert_eq!(s.slow_rank, Some(2));
        let slow = (Some("slow"), None);
        let waiting = (Some("waiting"), Some(2));
        assert_eq!(roles(&s), vec![waiting, waiting, slow, (None, None), (None, None)]);
        assert_eq!(s.rows[2].straggler, vec!["compute"]);
        assert!(s.rows.iter().filter(|r| r.rank != 2).all(|r| r.straggler.is_empty()));
    }

    #[test]
    fn a_stage_the_overlap_step_left_out_has_no_busy_or_exposed_time() {
        // The kernel table's `all` stage beside named stages: kernels, but
        // no overlap bundle. Its busy and exposed figures are unknown, not
        // zero, and no rank of it waits.
        let unmeasured = |compute: f64| StageFacts { bundle: String::new(), ..collective(compute, 0.0) };
        let a: Vec<RankFacts> =
            [100.0, 130.0, 100.0].iter().enumerate().map(|(i, &c)| analysis(i as u64, vec![unmeasured(c)])).collect();
        let files: Vec<&RankFacts> = a.iter().collect();
        let s = summarize(&files, 10.0).remove(0);
        assert_eq!((s.median_busy_us, s.median_exposed_comm_us), (None, None));
        assert!(s.rows.iter().all(|r| r.overlap_pct.is_none() && r.exposed_comm_pct.is_none()));
        // Rank 1 computes the most, but with no waits measured nothing says
        // it holds the others up: it is not named slow.
        assert_eq!(roles(&s), vec![(None, None), (None, None), (None, None)]);
        assert_eq!(
            (s.slow_rank, s.unexplained),
            (None, Some(Unexplained { rank: 1, row: 1, excess_us: 30.0, comm_spread_us: None }))
        );
        // Beside a measured rank, the medians are the measured rows'.
        let mut a = a;
        a.push(analysis(3, vec![collective(100.0, 40.0)]));
        let files: Vec<&RankFacts> = a.iter().collect();
        let s = summarize(&files, 10.0).remove(0);
        assert_eq!(s.median_exposed_comm_us, Some(40.0));
        assert_eq!(s.rows[3].exposed_comm_pct, Some(100.0 * 40.0 / 140.0));
    }

    #[test]
    fn extra_compute_must_explain_the_waits() {
        // Rank 2 computes 15 % more, but the others' exposed communication
        // differs by 80 µs: 15 µs of compute does not hold them up 80 µs.
        let s = stage_of(&[(100.0, 10.0), (100.0, 50.0), (115.0, 10.0), (100.0, 90.0)]);
        assert_eq!(s.slow_rank, None);
        assert_eq!(s.unexplained, Some(Unexplained { rank: 2, row: 2, excess_us: 15.0, comm_spread_us: Some(80.0) }));
        let waiting = (Some("waiting"), None);
        assert_eq!(roles(&s), vec![(None, None), waiting, (None, None), waiting]);
        // The rank that computes more by too little to explain the waits
        // and waits the most is waiting, not left without a role (DLRM:
        // ranks 1 and 3 wait the most and compute over the bar).
        let s = stage_of(&[(100.0, 10.0), (112.0, 90.0), (100.0, 10.0), (100.0, 50.0)]);
        assert_eq!(s.unexplained.map(|u| u.rank), Some(1));
        assert_eq!(roles(&s), vec![(None, None), waiting, (None, None), waiting]);
        // 30 µs more compute reaches a quarter of a 90 µs spread.
        let s = stage_of(&[(100.0, 10.0), (100.0, 50.0), (130.0, 10.0), (100.0, 100.0)]);
        assert_eq!((s.slow_rank, s.unexplained), (Some(2), None));
    }

    #[test]
    fn one_measured_row_cannot_explain_waits() {
        // A pid filter that kept only rank 0's kernels: one row measured,
        // so no spread of waits to compare rank 2's extra compute with.
        let unmeasured = |compute: f64| StageFacts { bundle: String::new(), ..collective(compute, 0.0) };
        let a = [
            analysis(0, vec![collective(100.0, 40.0)]),
            analysis(1, vec![unmeasured(100.0)]),
            analysis(2, vec![unmeasured(150.0)]),
        ];
        let files: Vec<&RankFacts> = a.iter().collect();
        let s = summarize(&files, 10.0).remove(0);
        assert_eq!(s.slow_rank, None);
        assert_eq!(s.unexplained, Some(Unexplained { rank: 2, row: 2, excess_us: 50.0, comm_spread_us: None }));
        assert!(s.rows.iter().all(|r| r.role.is_none()));
    }

    #[test]
    fn a_compute_tie_goes_to_a_measured_row() {
        // Equal compute over the bar: the row whose exposed communication
        // is known and smaller wins, not the one with none measured.
        let unmeasured = StageFacts { bundle: String::new(), ..collective(150.0, 0.0) };
        let a = [
            analysis(0, vec![unmeasured]),
            analysis(1, vec![collective(150.0, 40.0)]),
            analysis(2, vec![collective(100.0, 10.0)]),
            analysis(3, vec![collective(100.0, 10.0)]),
            analysis(4, vec![collective(100.0, 10.0)]),
        ];
        let files: Vec<&RankFacts> = a.iter().collect();
        assert_eq!(summarize(&files, 10.0).remove(0).slow_rank, Some(1));
    }

    #[test]
    fn even_compute_names_no_slow_rank() {
        // Compute within 10% of the median everywhere: no slow rank, and the
        // rank with the most exposed communication waits on none of them.
        let s = stage_of(&[(100.0, 10.0), (108.0, 30.0), (95.0, 10.0), (100.0, 10.0)]);
        assert_eq!(s.slow_rank, None);
        assert_eq!(roles(&s), vec![(None, None), (Some("waiting"), None), (None, None), (None, None)]);
        assert!(s.rows.iter().all(|r| r.straggler.is_empty()));
        // One rank, or none computing at all: nothing to compare.
        assert_eq!(stage_of(&[(100.0, 10.0)]).slow_rank, None);
        assert_eq!(stage_of(&[(0.0, 10.0), (0.0, 50.0), (0.0, 10.0)]).slow_rank, None);
    }

    #[test]
    fn compute_ties_go_to_less_exposed_communication_then_the_first_rank() {
        let s = stage_of(&[(150.0, 20.0), (150.0, 10.0), (100.0, 10.0), (100.0, 10.0), (100.0, 10.0)]);
        assert_eq!(s.slow_rank, Some(1));
        // Rank 0 computes as much: above the bar, so not waiting either.
        assert_eq!(roles(&s)[..2], [(None, None), (Some("slow"), None)]);
        let s = stage_of(&[(100.0, 10.0), (150.0, 10.0), (150.0, 10.0), (100.0, 10.0)]);
        assert_eq!(s.slow_rank, Some(1));
        assert_eq!(s.rows[2].role, None);
    }

    #[test]
    fn non_finite_figures_name_no_slow_rank() {
        let s = stage_of(&[(f64::NAN, 10.0), (100.0, f64::INFINITY), (100.0, 10.0)]);
        assert_eq!(s.slow_rank, None);
        assert_eq!(s.rows[0].role, None);
    }
}
