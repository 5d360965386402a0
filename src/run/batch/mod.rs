//! Batch triage of a directory of per-rank traces: finds every trace below
//! a directory (all ranks, all stages), triages each one on its own with
//! [`run_triage`], measures per stage how much communication runs exposed
//! (no kernel on another stream hides it), and lines the ranks up against
//! each other ([`crate::analysis::ranks`]). Files run in parallel under a memory budget
//! ([`memory`], [`schedule`]); a file that fails is reported, not fatal.
//!
//! Each file is read once, inside [`run_triage`]; its report carries the
//! per-kernel exclusive time of every overlap sweep and the trace's
//! `distributedInfo`.

pub mod memory;
pub mod schedule;
pub mod summary;

use std::path::{Path, PathBuf};
use std::time::Instant;

use indexmap::IndexMap;

use crate::analysis::hardware::distributed_number;
use crate::analysis::ranks::{RankFacts, RankSource, StageFacts};
use crate::analysis::stage::{parse_stage, Stage};
use crate::error::{Error, Result};
use crate::report::counted;
pub use crate::report::model::{BatchFile, FileAnalysis, FileOutcome};
use crate::report::model::{SkipReason, TriageReport};
use crate::run::discover::{
    has_trace_suffix, named_file_looks_like_trace, named_trace_files_in, no_traces_in, parse_rank, Survey,
};
use crate::run::triage::{run_triage, TriageInput, TriageOptions};

/// Names `triage` never reads as traces.
const SIDE_FILES: &[&str] = &["server_args.json", "metadata.json", "config.json"];

/// Every `*.json`, `*.json.gz`, `*.json.zst` and `*.zst` the survey of a
/// directory found (regular files only, link cycles walked once), by their
/// canonical paths.
fn json_files(survey: &Survey) -> Vec<PathBuf> {
    survey.files.iter().filter(|p| is_json_name(p)).map(|p| p.canonicalize().unwrap_or_else(|_| p.clone())).collect()
}

/// JSON files below `dir` left out of the batch, with why: `merged-`
/// files, empty files and files not recognised as traces (by content, or
/// unreadable), worth a note since a truncated trace without `.trace.json`
/// in its name ends up here rather than failing.
pub fn skipped_files(dir: &Path, found: &Discovered) -> Vec<(PathBuf, SkipReason)> {
    if !dir.is_dir() {
        return Vec::new();
    }
    let files = &found.files;
    let mut all = json_files(&found.survey);
    all.sort();
    all.dedup();
    all.retain(|p| !files.iter().any(|f| &f.path == p));
    // Another name of a trace read (a hard link has its own canonical path)
    // is listed once, as that.
    let other_names: Vec<PathBuf> = found.same_file.iter().filter_map(|p| p.canonicalize().ok()).collect();
    all.retain(|p| !other_names.contains(p));
    let mut skipped: Vec<(PathBuf, SkipReason)> = all
        .into_iter()
        .map(|p| {
            let why = skip_reason(&p);
            (p, why)
        })
        .collect();
    // A rank's link whose target is gone (a moved or deleted run) or that
    // loops is worth naming: the batch would otherwise just have one rank
    // fewer.
    let passed = &found.survey.passed;
    fn named_as_trace(paths: &[PathBuf], why: SkipReason) -> impl Iterator<Item = (PathBuf, SkipReason)> + '_ {
        paths.iter().filter(|p| is_json_name(p)).map(move |p| (std::path::absolute(p).unwrap_or(p.clone()), why))
    }
    skipped.extend(named_as_trace(&passed.dangling_links, SkipReason::DanglingLink));
    skipped.extend(named_as_trace(&passed.link_loops, SkipReason::LinkLoop));
    // A directory that cannot be listed may hold ranks: the batch is
    // complete only as far as the listing went.
    skipped.extend(
        passed.unreadable_dirs.iter().map(|p| (p.canonicalize().unwrap_or(p.clone()), SkipReason::UnreadableDirectory)),
    );
    // A pipe or a device with a rank's name is not read (it could block or
    // never end), and the rank it stands for is missing.
    skipped.extend(named_as_trace(&passed.special, SkipReason::NotRegular));
    // A second link to a trace: the batch reads the trace once, under one
    // of its names, so a rank another name gives is missing.
    skipped.extend(found.same_file.iter().map(|p| (std::path::absolute(p).unwrap_or(p.clone()), SkipReason::SameFile)));
    skipped.sort();
    skipped
}

/// Why a JSON file a batch does not read is left out: a merged trace, a
/// batch summary, an empty file, or a file that is no trace.
pub fn skip_reason(p: &Path) -> SkipReason {
    let named = |f: &dyn Fn(&str) -> bool| p.file_name().is_some_and(|n| f(&n.to_string_lossy()));
    let empty = std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() == 0);
    if named(&|n| n.starts_with("merged-")) {
        SkipReason::MergedTrace
    } else if named(&|n| n.ends_with(summary::SUMMARY_SUFFIX)) && !empty {
        SkipReason::Summary
    } else if empty {
        SkipReason::EmptyFile
    } else {
        SkipReason::NotATrace
    }
}

/// The traces a batch reads, and the other names some of them were found
/// by (links to a trace found first under another name).
#[derive(Clone, Debug, Default)]
pub struct Discovered {
    pub files: Vec<BatchFile>,
    pub same_file: Vec<PathBuf>,
    /// The walk the files were found by (empty for a file), which
    /// [`skipped_files`] reads again rather than walking once more.
    pub survey: Survey,
}

/// Whether an entry left out of a batch stands for a rank: its name gives
/// one or names a trace (`.trace.json`), and it is no merged trace.
fn stands_for_rank(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    !name.starts_with("merged-") && (name.contains(".trace.json") || parse_rank(path).is_some())
}

/// The warning that the batch lacks ranks it was meant to hold, or `None`:
/// directories below it that could not be listed (they may hold any
/// number), and entries named for a rank whose content could not be seen
/// (a link that leads to no file, a pipe or device, an empty file). The
/// exit code is then 1. From the skipped files alone, which is what a batch
/// spread over a cluster has of its listing.
pub fn incomplete_note(skipped: &[(PathBuf, SkipReason)]) -> Option<String> {
    let count = |reasons: &[SkipReason]| {
        skipped
            .iter()
            .filter(|(p, why)| reasons.contains(why) && (*why == SkipReason::UnreadableDirectory || stands_for_rank(p)))
            .count() as u64
    };
    let verb = |n: u64, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut parts = Vec::new();
    let dirs = count(&[SkipReason::UnreadableDirectory]);
    if dirs > 0 {
        parts.push(format!("{} below it could not be listed", counted(dirs, "directory", "directories")));
    }
    let special = count(&[SkipReason::NotRegular]);
    if special > 0 {
        let is = verb(special, "is not a regular file", "are not regular files");
        parts.push(format!("{} named for a rank {is}", counted(special, "entry", "entries")));
    }
    let links = count(&[SkipReason::DanglingLink, SkipReason::LinkLoop]);
    if links > 0 {
        parts.push(format!(
            "{} named for a rank {} to no file",
            counted(links, "link", "links"),
            verb(links, "leads", "lead")
        ));
    }
    let empty = count(&[SkipReason::EmptyFile]);
    if empty > 0 {
        parts.push(format!("{} named for a rank {} empty", counted(empty, "file", "files"), verb(empty, "is", "are")));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "warning: the batch is incomplete: {}; the ranks in them or named by them are not in it",
            parts.join(", and ")
        )
    })
}

/// The warnings `batch` gives about the `skipped` files that look like
/// missing ranks ([`SkipReason::warning`], with the rank a file's name
/// gives), in order.
pub fn skip_warnings(skipped: &[(PathBuf, SkipReason)]) -> Vec<String> {
    skipped.iter().filter_map(|(path, why)| why.warning(path, parse_rank(path))).collect()
}

/// A trace-suffixed name that is not one of the side files.
fn is_json_name(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    has_trace_suffix(&name) && !SIDE_FILES.contains(&name.as_str())
}

/// Every trace below `dir` (or `dir` itself when it is a file), by the
/// discovery rules of `triage` but across all ranks and stages: `*.json` /
/// `*.json.gz` / `*.json.zst` / `*.zst` files that look like traces, recursively, `merged-` files
/// skipped unless nothing else is there. Sorted by path; a trace found
/// under several names (links) is read once, under the name with the
/// lowest rank, else the first.
pub fn discover_batch_files(dir: &Path) -> Result<Discovered> {
    if !dir.exists() {
        return Err(Error::usage(format!("{}: no such file or directory", crate::error::shown(dir))));
    }
    let survey = Survey::of(dir, "traces")?;
    let found = if dir.is_dir() {
        named_trace_files_in(&survey)
    } else if named_file_looks_like_trace(dir) {
        vec![(dir.to_path_buf(), dir.to_path_buf())]
    } else {
        Vec::new()
    };
    let is_merged = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("merged-"));
    let mut paths: Vec<(PathBuf, PathBuf)> = found.iter().filter(|(p, _)| !is_merged(p)).cloned().collect();
    if paths.is_empty() {
        paths = found;
    }
    if paths.is_empty() && dir.is_file() && std::fs::metadata(dir).is_ok_and(|m| m.len() == 0) {
        return Err(Error::bad_input("empty input: expected a JSON object or array").in_file(dir).at(0));
    }
    if paths.is_empty() && dir.is_file() {
        return Err(
            Error::usage("not recognised as a trace (its start does not look like a profiler trace)").in_file(dir)
        );
    }
    if paths.is_empty() {
        return Err(no_traces_in(dir, &survey));
    }
    // Canonical paths, as `triage` resolves its input (stage names in parent
    // directories depend on it); the rank is read from the name the file was
    // found by (a link named `rank2.json` to a trace named otherwise).
    let paths: Vec<(PathBuf, PathBuf)> =
        paths.into_iter().map(|(p, named)| (p.canonicalize().unwrap_or(p), named)).collect();
    // A trace found under several names (symbolic or hard links) is read
    // under the one with the lowest rank (`rank2.json` before
    // `rank10.json`), else the first.
    let rank_order = |named: &Path| parse_rank(named).unwrap_or(u64::MAX);
    let mut keyed: Vec<(FileKey, PathBuf, PathBuf)> =
        paths.into_iter().map(|(p, named)| (FileKey::of(&p), p, named)).collect();
    keyed.sort_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| rank_order(&a.2).cmp(&rank_order(&b.2))).then_with(|| a.2.cmp(&b.2))
    });
    let mut same_file = Vec::new();
    keyed.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            same_file.push(later.2.clone());
        }
        same
    });
    let mut paths: Vec<(PathBuf, PathBuf)> = keyed.into_iter().map(|(_, p, named)| (p, named)).collect();
    paths.sort();
    let files = paths
        .into_iter()
        .enumerate()
        .map(|(index, (path, named))| {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let name_rank = parse_rank(&named).or_else(|| parse_rank(&path));
            BatchFile { index, path, size, name_rank }
        })
        .collect();
    Ok(Discovered { files, same_file, survey })
}

/// What makes two paths one file: its device and inode where the system
/// has them (hard links share them), else its canonical path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum FileKey {
    Inode(u64, u64),
    Path(PathBuf),
}

impl FileKey {
    fn of(canonical: &Path) -> FileKey {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if let Ok(m) = std::fs::metadata(canonical) {
                return FileKey::Inode(m.dev(), m.ino());
            }
        }
        FileKey::Path(canonical.to_path_buf())
    }
}

/// `distributedInfo.rank` as a non-negative integer (or integral float /
/// numeric string).
fn distributed_rank(info: Option<&serde_json::Value>) -> Option<u64> {
    distributed_number(info, "rank")
}

/// The file's rank: from its name, else from the trace's `distributedInfo`,
/// else its index.
pub fn resolve_rank(file: &BatchFile, distributed_info: Option<&serde_json::Value>) -> (u64, RankSource) {
    if let Some(r) = file.name_rank {
        return (r, RankSource::FileName);
    }
    if let Some(r) = distributed_rank(distributed_info) {
        return (r, RankSource::DistributedInfo);
    }
    (file.index as u64, RankSource::Index)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Exposure per overlap bundle label: (exclusive communication µs, top
/// exposed communication kernel by canonical name).
type Exposure = IndexMap<String, (f64, Option<(String, f64)>)>;

/// Exclusive communication time and the communication kernel with the
/// most of it, from per-kernel (canonical name, category, exclusive µs).
fn comm_exposure<'a>(kernels: impl Iterator<Item = (&'a str, &'a str, f64)>) -> (f64, Option<(String, f64)>) {
    let mut per_kernel: IndexMap<&str, f64> = IndexMap::new();
    let mut total = 0.0;
    for (name, _, us) in kernels.filter(|k| k.1 == "communication") {
        total += us;
        *per_kernel.entry(name).or_insert(0.0) += us;
    }
    let mut top: Option<(&str, f64)> = None;
    for (name, us) in per_kernel {
        if top.is_none_or(|(_, best)| us > best) {
            top = Some((name, us));
        }
    }
    (total, top.map(|(n, us)| (n.to_string(), us)))
}

/// Per-stage facts from a triage report and its exposure per bundle.
fn stage_facts(report: &TriageReport, exposure: &Exposure) -> Vec<StageFacts> {
    let mut stages: IndexMap<Stage, StageFacts> = IndexMap::new();
    let blank = |stage: Stage| StageFacts {
        stage,
        bundle: String::new(),
        busy_us: 0.0,
        overlap_us: 0.0,
        exposed_comm_us: 0.0,
        top_exposed: None,
        top_headroom: None,
        kernels: Vec::new(),
        gpu_time_us: 0.0,
        idle_us: None,
        steps: None,
    };
    for s in &report.overlap_stats {
        let f = stages.entry(s.stage).or_insert_with(|| blank(s.stage));
        f.bundle = s.bundle.clone();
        f.busy_us = s.total_busy_us;
        f.overlap_us = s.overlap_us;
        if let Some((us, top)) = exposure.get(&s.bundle) {
            f.exposed_comm_us = *us;
            f.top_exposed = top.clone();
        }
    }
    for o in &report.overlap_rows {
        let f = stages.entry(o.stage).or_insert_with(|| blank(o.stage));
        if f.top_headroom.is_none() && o.row.verdict == "headroom" {
            f.top_headroom = Some((o.row.priority.clone(), o.row.kernel.clone()));
        }
    }
    for t in &report.kernel_tables {
        let f = stages.entry(t.stage).or_insert_with(|| blank(t.stage));
        f.gpu_time_us += t.total_us;
        f.kernels.extend(t.rows.iter().map(|r| (r.kernel.clone(), r.category, r.total_us)));
    }
    for t in report.timeline.iter().flat_map(|t| &t.stages) {
        if let Some(f) = stages.get_mut(&t.stage) {
            f.idle_us = Some(crate::report::timeline::stage_sum(t).idle_us);
            f.steps = (t.steps.count > 0).then_some(t.steps.count);
        }
    }
    stages.into_values().collect()
}

/// Triages one file: [`run_triage`] on the file alone. `opts.quiet` should be set: per-file
/// ingest progress has no place inside a batch. The report's JSON is kept
/// when `keep_json` says so (for the JSON lines file).
/// `phase` is told what starts next (`triage`).
pub fn analyze_file(
    file: &BatchFile,
    opts: &TriageOptions,
    keep_json: bool,
    phase: &dyn Fn(&'static str),
) -> Result<FileAnalysis> {
    phase("triage");
    let t0 = Instant::now();
    let report = run_triage(&TriageInput::Single(file.path.clone()), opts)?;
    let triage_ms = ms_since(t0);
    let (rank, rank_source) = resolve_rank(file, report.distributed_info.as_ref());
    let exposure: Exposure = report
        .overlap_stats
        .iter()
        .map(|s| {
            let kernels = s.exclusive_comm_by_kernel.iter().map(|(n, c, us)| (n.as_str(), *c, *us));
            (s.bundle.clone(), comm_exposure(kernels))
        })
        .collect();
    let stages = stage_facts(&report, &exposure);
    let mut notes = report.notes.clone();
    if stages.is_empty() {
        // Triaged, and counted so, but in no table: say why it is missing.
        notes.push(format!(
            "warning: {}: no GPU kernels, so the file is in no stage's rank table",
            crate::error::shown(&file.path)
        ));
    }
    Ok(FileAnalysis {
        facts: RankFacts {
            file: file.path.clone(),
            rank,
            rank_source,
            stages,
            world_size: distributed_number(report.distributed_info.as_ref(), "world_size"),
            distributed_rank: distributed_rank(report.distributed_info.as_ref()),
        },
        path_stage: parse_stage(&file.path),
        triage_ms,
        skipped_events: report.skipped_events,
        notes,
        report_json: keep_json.then(|| crate::report::json::compact(&report)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::value::trace_from_value;
    use serde_json::json;

    fn file(index: usize, name: &str) -> BatchFile {
        BatchFile { index, path: PathBuf::from(name), size: 0, name_rank: parse_rank(Path::new(name)) }
    }

    #[test]
    fn the_skipped_files_come_from_the_walk_that_found_the_traces() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
        std::fs::copy(fixture, dir.path().join("rank0.pt.trace.json")).unwrap();
        std::fs::write(dir.path().join("notes.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/nonexistent/rank1.json", dir.path().join("rank1.json")).unwrap();
        let found = discover_batch_files(dir.path()).unwrap();
        assert_eq!(found.files.len(), 1);
        // A file that turns up after the walk is in neither list: the
        // report describes one listing of the folder.
        std::fs::write(dir.path().join("late.json"), "{}").unwrap();
        let skipped = skipped_files(dir.path(), &found);
        let names: Vec<(String, SkipReason)> =
            skipped.iter().map(|(p, why)| (p.file_name().unwrap().to_string_lossy().into_owned(), *why)).collect();
        assert_eq!(
            names,
            [("notes.json".to_string(), SkipReason::NotATrace), ("rank1.json".to_string(), SkipReason::DanglingLink)]
        );
    }

    #[test]
    fn rank_sources() {
        let info = json!({"rank": 5});
        assert_eq!(resolve_rank(&file(1, "/d/worker3_step.json"), Some(&info)), (3, RankSource::FileName));
        assert_eq!(resolve_rank(&file(1, "/d/x.json"), Some(&info)), (5, RankSource::DistributedInfo));
        assert_eq!(resolve_rank(&file(1, "/d/x.json"), None), (1, RankSource::Index));
        assert_eq!(resolve_rank(&file(2, "/d/x.json"), Some(&json!({"rank": -1}))), (2, RankSource::Index));
        assert_eq!(distributed_rank(Some(&json!({"rank": "4"}))), Some(4));
        assert_eq!(distributed_rank(Some(&json!({"rank": 2.0}))), Some(2));
        let t = trace_from_value(&json!({"distributedInfo": {"rank": 6}, "traceEvents": []}));
        assert_eq!(distributed_rank(t.meta.distributed_info.as_ref()), Some(6));
    }

    #[test]
    fn top_exposed_is_the_first_largest() {
        let k = [
            ("a", "communication", 2.0),
            ("g", "compute", 9.0),
            ("b", "communication", 3.0),
            ("a", "communication", 1.0),
        ];
        assert_eq!(comm_exposure(k.into_iter()), (6.0, Some(("a".to_string(), 3.0))));
        assert_eq!(comm_exposure(std::iter::empty()), (0.0, None));
    }
}
