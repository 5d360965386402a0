//! Rendering of a batch: the markdown summary (per stage a rank table and a
//! cross-rank kernel table, then the failures), the same as JSON, and the
//! per-file JSON lines. Layout of the JSON: docs/json-schema.md, "Batch".

use crate::error::shown;
use crate::report::counted;
use std::path::Path;

use serde_json::{json, Value};

use crate::analysis::ranks::{
    above, KernelSpread, RankRow, RankSource, Role, StageFacts, StageSummary, Unexplained, EXPLAINS_SHARE,
};
use crate::error::Error;
use crate::report::labels::FileLabels;
use crate::report::markdown::{escape_md_cell, fixed, format_ms};
use crate::report::model::FileOutcome;

/// What a batch report was made from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Traces found in a directory (or the one trace file `dir` names, when
    /// `file`) and triaged here by `jobs` workers within a memory budget of
    /// `budget` bytes, which had at most `at_once` files in flight.
    Batch { dir: &'a Path, file: bool, jobs: usize, at_once: usize, budget: u64 },
    /// Summaries written by earlier batches (files, or directories holding
    /// them), merged without triaging anything; never empty.
    Merge { inputs: &'a [std::path::PathBuf] },
}

/// Facts about the run shown in the header.
pub struct RunInfo<'a> {
    pub source: Source<'a>,
    pub files: usize,
    pub straggler_pct: f64,
    pub failures: &'a [(&'a Path, &'a Error)],
    /// JSON files left out, with the reason.
    pub skipped: &'a [(std::path::PathBuf, crate::report::model::SkipReason)],
    /// The world sizes the traces give, with how many files give each
    /// ([`crate::analysis::ranks::world_sizes`]).
    pub world_sizes: Vec<(u64, usize)>,
    /// The triaged files' own notes (events skipped, a pid filter that kept
    /// nothing), in file order, as `triage` gives them.
    pub file_notes: Vec<String>,
    /// The warnings about skipped files that look like missing ranks
    /// ([`crate::report::model::SkipReason::warning`]), printed before the
    /// files are read.
    pub skip_notes: Vec<String>,
    /// The warning that the batch lacks ranks it was meant to hold, found
    /// in the listing of its directory (exit code 1), or `None`.
    pub incomplete: Option<String>,
    /// The ranks of the files triaged, each once, in order.
    pub ranks: Vec<u64>,
    /// Files that look like copies of another rank's trace
    /// ([`crate::analysis::ranks::copied_ranks`]).
    pub copies: Vec<crate::analysis::ranks::RankCopy>,
}

/// Inputs of a merge named in its header before the rest are counted.
const INPUTS_SHOWN: usize = 3;

impl RunInfo<'_> {
    /// The header's line naming what was read: the batch's directory, or
    /// a merge's inputs.
    pub fn source_line(&self) -> String {
        let inputs = match self.source {
            Source::Batch { dir, file: true, .. } => return format!("File: {}", shown(dir)),
            Source::Batch { dir, .. } => return format!("Directory: {}", shown(dir)),
            Source::Merge { inputs } => inputs,
        };
        let mut names: Vec<String> = inputs.iter().take(INPUTS_SHOWN).map(|p| shown(p)).collect();
        if inputs.len() > INPUTS_SHOWN {
            names.push(format!("and {} more", inputs.len() - INPUTS_SHOWN));
        }
        format!("Merged from: {}", names.join(", "))
    }

    /// The `Files:` line: how many triaged and failed, and how the batch
    /// ran (a merge of summaries has no jobs or memory budget of its own).
    pub fn files_line(&self) -> String {
        let triaged = self.files - self.failures.len();
        let failed = self.failures.len();
        match self.source {
            Source::Batch { jobs, at_once, budget, .. } => {
                let fewer = if at_once < jobs { format!(", at most {at_once} at once") } else { String::new() };
                format!(
                    "Files: {triaged} triaged, {failed} failed (jobs {jobs}, memory budget {}{fewer})",
                    size_text(budget)
                )
            }
            Source::Merge { .. } => format!("Files: {triaged} triaged, {failed} failed (merged from summaries)"),
        }
    }

    /// The JSON header's `dir`, `jobs` and `memory_budget_bytes`: a merge
    /// gives its first input, one job and no budget.
    fn json_header(&self) -> (String, usize, u64) {
        match self.source {
            Source::Batch { dir, at_once, budget, .. } => (dir.display().to_string(), at_once, budget),
            Source::Merge { inputs } => (inputs.first().map(|p| p.display().to_string()).unwrap_or_default(), 1, 0),
        }
    }
}

/// The labels of the files of a batch's stages ([`FileLabels`]).
pub(crate) fn file_labels(stages: &[StageSummary]) -> FileLabels {
    FileLabels::of(stages.iter().flat_map(|s| s.rows.iter().map(|r| r.file.as_path())))
}

fn cell(text: &str) -> String {
    escape_md_cell(text)
}

fn rank_line(r: &RankRow, labels: &FileLabels) -> String {
    let f = &r.facts;
    let top_exposed = match &f.top_exposed {
        Some((k, us)) => format!("{} ({})", cell(k), format_ms(*us)),
        None => "-".into(),
    };
    let headroom = headroom_text(f, cell);
    let role = match (r.role, r.waits_on) {
        (Some(Role::Slow), _) => "**slow**".to_string(),
        (Some(Role::Waiting), Some(on)) => format!("waiting on {on}"),
        (Some(Role::Waiting), None) => "waiting".to_string(),
        (None, _) => String::new(),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.rank,
        cell(&labels.get(&r.file)),
        opt_ms(f.busy()),
        format_ms(r.compute_us),
        opt_pct(r.overlap_pct),
        opt_ms(f.exposed_comm()),
        opt_pct(r.exposed_comm_pct),
        top_exposed,
        headroom,
        role,
    )
}

/// The top headroom cell of a rank's stage: its priority and kernel, the
/// kernel's name as `name` shows it in the format at hand; `-` without one.
pub(crate) fn headroom_text(f: &StageFacts, name: impl Fn(&str) -> String) -> String {
    f.top_headroom.as_ref().map_or_else(|| "-".to_string(), |(p, k)| format!("{p} {}", name(k)))
}

/// Milliseconds, or `-` for a figure not measured.
fn opt_ms(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), format_ms)
}

/// A percentage with one decimal, or `-` for a figure not measured.
fn opt_pct(pct: Option<f64>) -> String {
    pct.map_or_else(|| "-".into(), |p| format!("{}%", fixed(p, 1)))
}

/// How `value` stands against `median`, in percent (`+17.1%`).
fn against_median(value: f64, median: f64) -> String {
    if median > 0.0 {
        format!("{:+.1}%", 100.0 * (value - median) / median)
    } else {
        "-".into()
    }
}

/// What the rank table's columns measure, and how they differ from the
/// triage timeline's figures of the same names.
/// What the cross-rank kernel table's columns measure, under the table in
/// every format.
pub(crate) const KERNEL_COLUMNS_LEGEND: &str = "Per kernel its GPU time on every rank of the stage, 0 on a rank \
     that does not run it: Min / Median / Max over those ranks. Ranks with it: how many run it. Leads ranks: the \
     ranks where it is the kernel with the most GPU time; Max rank: the rank with the Max.";

pub(crate) const RANK_COLUMNS_LEGEND: &str = "Busy: GPU time any kernel runs; compute: summed kernel time outside \
     communication kernels (memory copies included, unlike the timeline's Compute); overlap: share of busy time with \
     kernels on two or more streams at once (not the timeline's comm/compute overlap); exposed comm: communication no \
     other stream's kernel hides (share of busy; the timeline's counts only computation as hiding it); top headroom: \
     the first headroom row of the rank's overlap table, its priority (P1 act first to P5 skip) and kernel.";

/// What the roles of the rank table mean, at `pct` percent over the median.
pub(crate) fn roles_legend(pct: f64) -> String {
    format!(
        "Roles: slow = the most compute (kernel time outside communication), more than {pct}% above the stage median \
         and by at least a quarter of the spread of exposed communication; \
         waiting = exposed communication more than {pct}% above the median and above it by at least {floor}% of the median busy time (beside a slow rank, only ranks whose own compute is not); \
         late (with no slow rank) = the least exposed communication, more than {pct}% below the median and below it by at least {floor}% of the median busy time",
        floor = 100.0 * crate::analysis::ranks::WAIT_FLOOR_SHARE
    )
}

/// Why a stage names no slow rank.
fn no_slow_rank_line(s: &StageSummary, pct: f64, named: &dyn Fn(&RankRow) -> String) -> String {
    // The rank as the role lines name it (with its file when several files
    // hold its number).
    let rank = |u: &Unexplained| s.rows.get(u.row).map_or_else(|| u.rank.to_string(), named);
    match s.unexplained {
        Some(u @ Unexplained { comm_spread_us: None, .. }) => format!(
            "No slow rank: rank {} computes the most, {} above the median {}, but exposed communication was measured on fewer than two ranks, so whether the others wait on it cannot be told",
            rank(&u),
            format_ms(u.excess_us),
            format_ms(s.median_compute_us),
        ),
        Some(u @ Unexplained { comm_spread_us: Some(spread), .. }) => format!(
            "No slow rank: rank {} computes the most, {} above the median {}, but the ranks' exposed communication differs by up to {}: GPU compute does not explain the waits (extra compute under {:.0}% of that; look at the host, the input pipeline or the network)",
            rank(&u),
            format_ms(u.excess_us),
            format_ms(s.median_compute_us),
            format_ms(spread),
            100.0 * EXPLAINS_SHARE
        ),
        None => format!(
            "No slow rank: no rank's compute is more than {pct}% above the median {}",
            format_ms(s.median_compute_us)
        ),
    }
}

/// The line under each stage's roles when some files failed: the ranks
/// were compared among the files triaged only.
pub(crate) fn failed_files_line(info: &RunInfo) -> Option<String> {
    let failed = info.failures.len();
    (failed > 0).then(|| {
        format!(
            "Compared among the {} triaged only: {} failed (named at the end of the report), and the slow rank may be among them",
            counted(info.files.saturating_sub(failed) as u64, "file", "files"),
            counted(failed as u64, "file", "files")
        )
    })
}

/// `exposed comm 5.54 ms, -34.1% against the median 8.40 ms` for row `r`.
fn exposed_against_median(s: &StageSummary, r: &RankRow) -> String {
    let exposed = r.facts.exposed_comm();
    format!(
        "exposed comm {}, {} against the median {}",
        opt_ms(exposed),
        exposed.zip(s.median_exposed_comm_us).map_or_else(|| "-".into(), |(e, m)| against_median(e, m)),
        opt_ms(s.median_exposed_comm_us),
    )
}

/// The lines under a rank table naming the slow rank and the ranks waiting.
pub(crate) fn roles_lines(s: &StageSummary, pct: f64, labels: &FileLabels) -> Vec<String> {
    // A rank number more than one file holds is named with its file, and
    // so is one that is only the file's position in the batch (neither its
    // name nor its distributedInfo gave a rank).
    let named = |r: &RankRow| {
        if r.rank_source == RankSource::Index {
            format!("{} (the position of {})", r.rank, labels.get(&r.file))
        } else if s.shared_ranks.contains(&r.rank) {
            format!("{} in {}", r.rank, labels.get(&r.file))
        } else {
            r.rank.to_string()
        }
    };
    let ranks = |role: Role| -> Vec<String> { s.rows.iter().filter(|r| r.role == Some(role)).map(named).collect() };
    let waiting = ranks(Role::Waiting);
    let mut out = Vec::new();
    if !s.shared_ranks.is_empty() {
        let shared: Vec<String> = s.shared_ranks.iter().map(u64::to_string).collect();
        out.push(format!(
            "Rank numbers held by more than one file in this stage: {} (each file is compared as a rank of its own; a rank comes from the file name, else distributedInfo, else the file's position)",
            shared.join(", ")
        ));
    }
    match s.rows.iter().find(|r| r.role == Some(Role::Slow)) {
        Some(r) => {
            out.push(format!(
                "Likely slow rank: {} (compute {}, {} against the median {}; {})",
                named(r),
                format_ms(r.compute_us),
                against_median(r.compute_us, s.median_compute_us),
                format_ms(s.median_compute_us),
                exposed_against_median(s, r),
            ));
            let close: Vec<String> = s
                .rows
                .iter()
                .filter(|o| o.role.is_none() && above(o.compute_us, s.median_compute_us, pct))
                .map(|o| format!("{} ({})", named(o), format_ms(o.compute_us)))
                .collect();
            if !close.is_empty() {
                out.push(format!("Compute also more than {pct}% above the median: {}", close.join(", ")));
            }
            let on_it: Vec<String> = s.rows.iter().filter(|o| o.waits_on == Some(r.rank)).map(named).collect();
            if !on_it.is_empty() {
                out.push(format!("Waiting on rank {}: {}", named(r), on_it.join(", ")));
            }
            let others: Vec<String> =
                s.rows.iter().filter(|o| o.role == Some(Role::Waiting) && o.waits_on.is_none()).map(named).collect();
            if !others.is_empty() {
                out.push(format!("Also waiting, with the slow rank's own number: {}", others.join(", ")));
            }
        }
        None => {
            out.push(no_slow_rank_line(s, pct, &named));
            if let Some(r) = s.late.and_then(|i| s.rows.get(i)) {
                out.push(format!(
                    "Likely late rank: {} ({}): it waited the least in the collectives, so the others waited for it there, and its GPU compute does not say why: look at what comes before its kernels (the host, the input pipeline, data loading)",
                    named(r),
                    exposed_against_median(s, r),
                ));
            }
            if !waiting.is_empty() {
                out.push(format!(
                    "Waiting, with no slow rank among the traces: {} (no rank's GPU compute explains the wait)",
                    waiting.join(", ")
                ));
            }
        }
    }
    out
}

fn kernel_line(k: &KernelSpread) -> String {
    let leads: Vec<String> = k.leads.iter().map(u64::to_string).collect();
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        cell(&k.kernel),
        cell(&k.category),
        leads.join(", "),
        k.present,
        format_ms(k.min_us),
        format_ms(k.median_us),
        format_ms(k.max_us),
        k.max_rank,
    )
}

/// The markdown summary.
pub fn markdown(stages: &[StageSummary], info: &RunInfo) -> String {
    let labels = file_labels(stages);
    let mut out =
        vec!["Batch View".to_string(), info.source_line(), info.files_line(), roles_legend(info.straggler_pct)];
    out.extend(notes(stages, info).iter().map(|n| escape_md_cell(n)));
    for s in stages {
        out.push(String::new());
        out.push(format!("##### {}", s.stage.label()));
        out.push(String::new());
        out.push("Rank Table".into());
        out.push("| Rank | File | Busy | Compute | Overlap | Exposed comm | Exposed comm % | Top exposed comm kernel | Top headroom | Role |".into());
        out.push("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |".into());
        out.extend(s.rows.iter().map(|r| rank_line(r, &labels)));
        out.push(RANK_COLUMNS_LEGEND.to_string());
        out.push(format!(
            "Median busy {}, median compute {}, median exposed communication {}",
            opt_ms(s.median_busy_us),
            format_ms(s.median_compute_us),
            opt_ms(s.median_exposed_comm_us)
        ));
        out.extend(roles_lines(s, info.straggler_pct, &labels));
        out.extend(failed_files_line(info));
        out.push(String::new());
        out.push("Cross-rank Kernel Table".into());
        out.push("| Kernel | Category | Leads ranks | Ranks with it | Min | Median | Max | Max rank |".into());
        out.push("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |".into());
        out.extend(s.kernels.iter().map(kernel_line));
        if !s.kernels.is_empty() {
            out.push(String::new());
            out.push(KERNEL_COLUMNS_LEGEND.to_string());
        }
    }
    if !info.skipped.is_empty() {
        out.push(String::new());
        out.push("Skipped files".into());
        for (path, why) in info.skipped {
            out.push(format!("- {}: {why}", shown(path)));
        }
    }
    if !info.failures.is_empty() {
        out.push(String::new());
        out.push("Failed files".into());
        for (path, e) in info.failures {
            out.push(format!("- {}: {}", shown(path), error_text(path, e)));
        }
    }
    out.join("\n")
}

/// The error line without the file name when it leads the message.
/// An error's text without the leading `path: `.
pub(crate) fn error_text(path: &Path, e: &Error) -> String {
    let text = e.to_string();
    // The message names the file as `Display` shows it: control
    // characters escaped.
    let prefix = format!("{}: ", shown(path));
    text.strip_prefix(&prefix).map(str::to_string).unwrap_or(text)
}

fn row_value(r: &RankRow) -> Value {
    let f = &r.facts;
    json!({
        "rank": r.rank,
        "rank_source": r.rank_source.name(),
        "file": r.file.display().to_string(),
        "bundle": f.bundle,
        "busy_us": f.busy(),
        "overlap_us": f.overlap(),
        "overlap_pct": r.overlap_pct,
        "gpu_time_us": f.gpu_time_us,
        "compute_us": r.compute_us,
        "exposed_comm_us": f.exposed_comm(),
        "exposed_comm_pct": r.exposed_comm_pct,
        "idle_us": f.idle_us,
        "steps": f.steps,
        "top_exposed_comm": f.top_exposed.as_ref().map(|(k, us)| json!({"kernel": k, "exclusive_us": us})),
        "top_headroom": f.top_headroom.as_ref().map(|(p, k)| json!({"priority": p, "kernel": k})),
        "leading_kernel": f.kernels.first().map(|k| json!({"kernel": k.0, "category": k.1, "total_us": k.2})),
        "role": r.role.map_or("", Role::name),
        "waits_on": r.waits_on,
        "straggler": r.straggler,
    })
}

fn failures_value(failures: &[(&Path, &Error)]) -> Value {
    Value::Array(
        failures.iter().map(|(p, e)| json!({"file": p.display().to_string(), "error": error_text(p, e)})).collect(),
    )
}

/// The warning for rank numbers that more than one file holds (each file
/// is still compared as a rank of its own), or `None` when every file has
/// its own. Printed on stderr and carried in the JSON's `notes`.
fn shared_ranks_note(stages: &[StageSummary]) -> Option<String> {
    // Each rank once, with the stages it is shared in.
    let mut by_rank: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
    for s in stages {
        for &rank in &s.shared_ranks {
            by_rank.entry(rank).or_default().push(s.stage.as_str());
        }
    }
    if by_rank.is_empty() {
        return None;
    }
    let items: Vec<String> = by_rank
        .iter()
        .map(|(rank, in_stages)| {
            let stages = if in_stages.len() > 1 { "stages" } else { "stage" };
            let names: Vec<String> = in_stages.iter().map(|s| s.to_string()).collect();
            format!("rank {rank} in {stages} {}", crate::report::listed(&names))
        })
        .collect();
    Some(format!(
        "warning: {} held by more than one file; each file is compared as a rank of its own (batch one profiling cycle at a time)",
        items.join(", ")
    ))
}

/// The warning that the files' traces give different world sizes (files
/// of different jobs, compared as ranks of one), or `None`. Printed on
/// stderr and carried in the JSON's `notes`.
fn mixed_worlds_note(info: &RunInfo) -> Option<String> {
    if info.world_sizes.len() < 2 {
        return None;
    }
    let sizes: Vec<String> =
        info.world_sizes.iter().map(|(size, n)| format!("{size} in {}", counted(*n as u64, "file", "files"))).collect();
    Some(format!(
        "warning: the traces give different world sizes ({}): files of different jobs are compared as ranks of one",
        sizes.join(", ")
    ))
}

/// The notes of a batch report about its ranks: shared rank numbers, mixed
/// jobs, ranks of the job that no file holds, ranks a stage lacks, and
/// ranks whose traces cover different numbers of steps.
pub fn rank_notes(stages: &[StageSummary], info: &RunInfo) -> Vec<String> {
    shared_ranks_note(stages)
        .into_iter()
        .chain(copies_notes(info))
        .chain(mixed_worlds_note(info))
        .chain(missing_ranks_note(info))
        .chain(stages_missing_ranks_notes(stages))
        .chain(stages.iter().filter_map(step_counts_note))
        .collect()
}

/// The `count` ranks `ranks` yields as a list (`ranks 0, 2 and 5`), at most
/// [`MISSING_SHOWN`] of them named, then `and N more`.
fn ranks_listed(ranks: impl Iterator<Item = u64>, count: u64) -> String {
    let mut named: Vec<String> = ranks.take(MISSING_SHOWN).map(|r| r.to_string()).collect();
    if count > MISSING_SHOWN as u64 {
        named.push(format!("{} more", count - MISSING_SHOWN as u64));
    }
    let word = if count == 1 { "rank" } else { "ranks" };
    format!("{word} {}", crate::report::listed(&named))
}

/// A warning for each stage that lacks ranks another stage has: the stage
/// compares the ranks it has, and its slow rank may be one it lacks.
fn stages_missing_ranks_notes(stages: &[StageSummary]) -> impl Iterator<Item = String> + '_ {
    let all: std::collections::BTreeSet<u64> = stages.iter().flat_map(|s| s.rows.iter().map(|r| r.rank)).collect();
    stages.iter().filter_map(move |s| {
        let have: std::collections::BTreeSet<u64> = s.rows.iter().map(|r| r.rank).collect();
        let lacks: Vec<u64> = all.difference(&have).copied().collect();
        (!lacks.is_empty()).then(|| {
            format!(
                "warning: stage {} has no trace of {}, which another stage has: it is compared among the ranks it has, and its slow rank may be one it lacks",
                s.stage.as_str(),
                ranks_listed(lacks.iter().copied(), lacks.len() as u64)
            )
        })
    })
}

/// The warning for a stage whose ranks' traces cover different numbers of
/// steps: their totals are compared as they are, so a rank with more steps
/// looks busier.
fn step_counts_note(s: &StageSummary) -> Option<String> {
    let mut by_count: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for r in &s.rows {
        if let Some(n) = r.facts.steps {
            by_count.entry(n).or_default().push(r.rank);
        }
    }
    if by_count.len() < 2 {
        return None;
    }
    let parts: Vec<String> = by_count
        .iter()
        .map(|(n, ranks)| {
            format!("{} on {}", counted(*n, "step", "steps"), ranks_listed(ranks.iter().copied(), ranks.len() as u64))
        })
        .collect();
    Some(format!(
        "warning: in stage {} the ranks' traces cover different numbers of steps ({}): their times are compared as totals, so a rank with more steps looks busier",
        s.stage.as_str(),
        parts.join("; ")
    ))
}

/// A warning for each file that looks like a copy of another rank's trace.
fn copies_notes<'a>(info: &'a RunInfo) -> impl Iterator<Item = String> + 'a {
    info.copies.iter().map(|c| {
        format!(
            "warning: {}: its name gives rank {}, but its trace's distributedInfo gives rank {}, as {} does: a copy of one rank's trace is compared as two ranks",
            shown(&c.file),
            c.name_rank,
            c.trace_rank,
            shown(&c.other)
        )
    })
}

/// Missing ranks named one by one before the rest are counted.
const MISSING_SHOWN: usize = 8;

/// The warning that the traces name a job of more ranks than the files
/// triaged hold (one world size among them, and ranks below it that no
/// file has), or `None`; never for a batch of one file named as such. A
/// job profiled on some ranks only gets it too: the report then covers
/// those.
fn missing_ranks_note(info: &RunInfo) -> Option<String> {
    if let Source::Batch { file: true, .. } = info.source {
        // One trace asked for by name: the other ranks were not.
        return None;
    }
    let [(world, _)] = info.world_sizes[..] else { return None };
    let held = info.ranks.iter().filter(|&&r| r < world).count() as u64;
    let absent = world - held;
    if absent == 0 {
        return None;
    }
    let missing = (0..world).filter(|r| info.ranks.binary_search(r).is_err());
    Some(format!(
        "warning: the traces give a world size of {world}, and no file triaged holds {}",
        ranks_listed(missing, absent)
    ))
}

/// The notes of a batch report: skipped files that look like missing
/// ranks, the files' own, [`rank_notes`], and the warning that the batch is
/// incomplete.
pub fn notes(stages: &[StageSummary], info: &RunInfo) -> Vec<String> {
    let mut notes = info.skip_notes.clone();
    notes.extend(info.file_notes.iter().cloned());
    notes.extend(rank_notes(stages, info));
    notes.extend(info.incomplete.clone());
    notes
}

/// The summary as pretty JSON.
pub fn json(stages: &[StageSummary], info: &RunInfo) -> String {
    let notes = notes(stages, info);
    let stages: Vec<Value> = stages
        .iter()
        .map(|s| {
            let kernels: Vec<Value> = s
                .kernels
                .iter()
                .map(|k| {
                    json!({
                        "kernel": k.kernel,
                        "category": k.category,
                        "leads_ranks": k.leads,
                        "ranks_with_kernel": k.present,
                        "min_us": k.min_us,
                        "median_us": k.median_us,
                        "max_us": k.max_us,
                        "max_rank": k.max_rank,
                    })
                })
                .collect();
            json!({
                "stage": s.stage,
                "median_busy_us": s.median_busy_us,
                "median_compute_us": s.median_compute_us,
                "median_exposed_comm_us": s.median_exposed_comm_us,
                "slow_rank": s.slow_rank,
                "unexplained_slow_rank": s.unexplained.map(|u| json!({
                    "rank": u.rank,
                    "file": s.rows.get(u.row).map(|r| r.file.display().to_string()),
                    "excess_compute_us": u.excess_us,
                    "comm_spread_us": u.comm_spread_us,
                })),
                "late_rank": s.late.and_then(|i| s.rows.get(i)).map(|r| r.rank),
                "shared_ranks": s.shared_ranks,
                "ranks": s.rows.iter().map(row_value).collect::<Vec<_>>(),
                "kernels": kernels,
            })
        })
        .collect();
    let (dir, jobs, budget) = info.json_header();
    let v = json!({
        "mode": "batch",
        "dir": dir,
        "files": info.files,
        "failed": info.failures.len(),
        "jobs": jobs,
        "memory_budget_bytes": budget,
        "straggler_pct": info.straggler_pct,
        "stages": stages,
        "failures": failures_value(info.failures),
        "skipped": info.skipped.iter().map(|(p, why)| json!({"file": p.display().to_string(), "reason": why.as_str()})).collect::<Vec<_>>(),
        "notes": notes,
    });
    crate::report::json::pretty(&v)
}

/// The JSON line of one input file: its triage JSON plus batch fields, or
/// its path and error.
pub fn file_line(o: &FileOutcome) -> Value {
    let file = o.file.path.display().to_string();
    let a = match &o.result {
        Ok(a) => a,
        Err(e) => {
            return json!({"file": file, "size_bytes": o.file.size, "error": error_text(&o.file.path, e)});
        }
    };
    // The report is read back one file at a time (floats round-trip).
    let report = a.report_json.as_deref().and_then(|text| serde_json::from_str::<Value>(text).ok());
    let mut v = match report {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let stages: Vec<Value> = a
        .facts
        .stages
        .iter()
        .map(|f| {
            json!({
                "stage": f.stage,
                "busy_us": f.busy(),
                "overlap_us": f.overlap(),
                "exposed_comm_us": f.exposed_comm(),
                "top_exposed_comm": f.top_exposed.as_ref().map(|(k, us)| json!({"kernel": k, "exclusive_us": us})),
            })
        })
        .collect();
    // Batch fields first, then the triage JSON's own keys.
    let mut out = serde_json::Map::new();
    out.insert("file".into(), json!(file));
    out.insert("rank".into(), json!(a.facts.rank));
    out.insert("rank_source".into(), json!(a.facts.rank_source.name()));
    out.insert("path_stage".into(), json!(a.path_stage));
    out.insert("stages".into(), Value::Array(stages));
    out.insert("size_bytes".into(), json!(o.file.size));
    out.insert("triage_ms".into(), json!(a.triage_ms));
    for (k, val) in std::mem::take(&mut v) {
        out.entry(k).or_insert(val);
    }
    Value::Object(out)
}

/// A byte count for people: GiB with one decimal from 1 GiB up, else MiB.
fn size_text(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / MIB)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{roles_lines, shared_ranks_note, size_text, stages_missing_ranks_notes, step_counts_note};
    use crate::analysis::ranks::{summarize, RankFacts, RankSource, StageFacts, StageSummary};
    use crate::analysis::stage::Stage;

    fn shared(stage: Stage, ranks: &[u64]) -> StageSummary {
        StageSummary {
            stage,
            rows: Vec::new(),
            median_busy_us: None,
            median_compute_us: 0.0,
            median_exposed_comm_us: None,
            slow_rank: None,
            unexplained: None,
            shared_ranks: ranks.to_vec(),
            kernels: Vec::new(),
            late: None,
        }
    }

    #[test]
    fn the_shared_ranks_note_names_each_rank_once_with_its_stages() {
        assert_eq!(shared_ranks_note(&[shared(Stage::Extend, &[])]), None);
        let note = shared_ranks_note(&[shared(Stage::Extend, &[0, 3]), shared(Stage::Decode, &[0])]).unwrap();
        assert!(
            note.starts_with(
                "warning: rank 0 in stages extend and decode, rank 3 in stage extend held by more than one file; "
            ),
            "{note}"
        );
    }

    /// One stage's facts with `compute_us` of GEMM time.
    fn rank_file(file: &str, rank: u64, compute_us: f64) -> RankFacts {
        let facts = StageFacts {
            stage: Stage::Decode,
            bundle: "formal-decode".into(),
            busy_us: compute_us,
            overlap_us: 0.0,
            exposed_comm_us: 0.0,
            top_exposed: None,
            top_headroom: None,
            kernels: vec![("gemm".into(), "gemm", compute_us)],
            gpu_time_us: compute_us,
            idle_us: None,
            steps: None,
        };
        RankFacts {
            file: PathBuf::from(file),
            rank,
            rank_source: RankSource::FileName,
            stages: vec![facts],
            world_size: None,
            distributed_rank: None,
        }
    }

    #[test]
    fn ranks_with_different_step_counts_are_warned_of() {
        let mut files: Vec<RankFacts> = (0..4).map(|r| rank_file(&format!("rank{r}.json"), r, 1000.0)).collect();
        for f in &mut files {
            f.stages[0].steps = Some(if f.rank == 1 { 2 } else { 1 });
        }
        let refs: Vec<&RankFacts> = files.iter().collect();
        let stages = summarize(&refs, 10.0);
        assert_eq!(
            step_counts_note(&stages[0]).as_deref(),
            Some("warning: in stage decode the ranks' traces cover different numbers of steps (1 step on ranks 0, 2 and 3; 2 steps on rank 1): their times are compared as totals, so a rank with more steps looks busier")
        );
        // The same count everywhere, or no steps, says nothing.
        files[1].stages[0].steps = Some(1);
        files[2].stages[0].steps = None;
        let refs: Vec<&RankFacts> = files.iter().collect();
        assert_eq!(step_counts_note(&summarize(&refs, 10.0)[0]), None);
    }

    #[test]
    fn a_stage_lacking_a_rank_another_stage_has_is_warned_of() {
        let mut files: Vec<RankFacts> = (0..4).map(|r| rank_file(&format!("rank{r}-decode.json"), r, 1000.0)).collect();
        files.extend((0..3).map(|r| {
            let mut f = rank_file(&format!("rank{r}-prefill.json"), r, 1000.0);
            f.stages[0].stage = Stage::Extend;
            f
        }));
        let refs: Vec<&RankFacts> = files.iter().collect();
        let stages = summarize(&refs, 10.0);
        let notes: Vec<String> = stages_missing_ranks_notes(&stages).collect();
        assert_eq!(notes, ["warning: stage extend has no trace of rank 3, which another stage has: it is compared among the ranks it has, and its slow rank may be one it lacks"]);
        let refs: Vec<&RankFacts> = files[..4].iter().collect();
        assert_eq!(stages_missing_ranks_notes(&summarize(&refs, 10.0)).count(), 0);
    }

    #[test]
    fn a_rank_that_computes_the_most_but_explains_no_wait_is_named_with_its_file() {
        // Two files hold rank 0; the one in n0 computes the most, but by
        // far less than the spread of the waits.
        let mut files = [
            rank_file("/job/n0/rank0.json", 0, 10_000.0),
            rank_file("/job/n1/rank0.json", 0, 5_000.0),
            rank_file("/job/n1/rank1.json", 1, 5_000.0),
        ];
        files[1].stages[0].exposed_comm_us = 30_000.0;
        let refs: Vec<&RankFacts> = files.iter().collect();
        let stages = summarize(&refs, 10.0);
        let labels = super::file_labels(&stages);
        let lines = roles_lines(&stages[0], 10.0, &labels);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("No slow rank: rank 0 in n0/rank0.json computes the most, 5.00 ms above")),
            "{lines:?}"
        );
        let info = super::RunInfo {
            source: super::Source::Merge { inputs: &[] },
            files: 3,
            straggler_pct: 10.0,
            failures: &[],
            skipped: &[],
            world_sizes: vec![],
            file_notes: vec![],
            skip_notes: vec![],
            incomplete: None,
            ranks: vec![0, 1],
            copies: Vec::new(),
        };
        let v: serde_json::Value = serde_json::from_str(&super::json(&stages, &info)).unwrap();
        assert_eq!(v["stages"][0]["unexplained_slow_rank"]["file"], "/job/n0/rank0.json", "{v}");
    }

    #[test]
    fn roles_name_the_file_of_a_rank_number_several_files_hold() {
        // Three files that all say rank 0, and rank 1: the slow one and the
        // one close to it are named with their files.
        let files = [
            rank_file("/a/graph_execution.json.gz", 0, 10_720.0),
            rank_file("/b/decode.json.gz", 0, 9_780.0),
            rank_file("/c/capture.json.gz", 0, 4_900.0),
            rank_file("/d/rank1.json.gz", 1, 4_800.0),
        ];
        let refs: Vec<&RankFacts> = files.iter().collect();
        let summary = &summarize(&refs, 10.0)[0];
        let lines = roles_lines(summary, 10.0, &Default::default());
        assert!(
            lines.iter().any(|l| l.starts_with("Likely slow rank: 0 in graph_execution.json.gz (compute 10.72 ms")),
            "{lines:?}"
        );
        // A rank that is only a file's position says so, with the file.
        let mut by_position = files.clone();
        by_position[0].rank = 27;
        by_position[0].rank_source = RankSource::Index;
        let refs: Vec<&RankFacts> = by_position.iter().collect();
        let lines = roles_lines(&summarize(&refs, 10.0)[0], 10.0, &Default::default());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("Likely slow rank: 27 (the position of graph_execution.json.gz) (compute")),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"Compute also more than 10% above the median: 0 in decode.json.gz (9.78 ms)".to_string()),
            "{lines:?}"
        );
        // A rank number one file holds stays a number.
        let files = [
            rank_file("/a/x.json", 0, 10_720.0),
            rank_file("/b/y.json", 1, 4_900.0),
            rank_file("/c/z.json", 2, 4_800.0),
        ];
        let refs: Vec<&RankFacts> = files.iter().collect();
        let lines = roles_lines(&summarize(&refs, 10.0)[0], 10.0, &Default::default());
        assert!(lines.iter().any(|l| l.starts_with("Likely slow rank: 0 (compute")), "{lines:?}");
    }

    #[test]
    fn a_budget_under_a_gib_is_given_in_mib() {
        assert_eq!(size_text(1 << 20), "1 MiB");
        assert_eq!(size_text(512 << 20), "512 MiB");
        assert_eq!(size_text(3 << 30), "3.0 GiB");
    }
}
