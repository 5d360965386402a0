//! A batch as map and reduce: the per-trace summary (a triaged file's
//! [`RankFacts`], or its error) as a file that `batch --summaries DIR`
//! writes and `merge` reads back, so that any scheduler (a Slurm job array,
//! Dask, Ray) can triage the traces where they are and one merge prints the
//! cross-rank report `batch` would have printed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::analysis::framework::FrameworkChoice;
use crate::analysis::ranks::RankFacts;
use crate::error::{Error, Result};
use crate::report::batch::error_text;
use crate::report::model::{FileOutcome, SCHEMA_VERSION};
use crate::run::atomic::write_atomic;
use crate::run::triage::TriageOptions;

/// `kind` of a summary file.
pub const SUMMARY_KIND: &str = "torchtriage-rank-summary";
/// The ending of a summary file's name.
pub const SUMMARY_SUFFIX: &str = ".summary.json";

/// One trace of a batch, triaged or failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub schema_version: u32,
    pub kind: String,
    /// The trace, as the batch found it (a name that is not UTF-8 with its
    /// bad bytes replaced).
    #[serde(serialize_with = "crate::analysis::ranks::lossy_path")]
    pub file: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Complete events skipped for their times (a non-numeric `ts` or
    /// `dur`; a GPU event's missing one or negative `dur`).
    pub skipped_events: u64,
    /// What the cross-rank comparison reads; `None` when the trace failed.
    pub facts: Option<RankFacts>,
    /// Why the trace failed (the message without the file name).
    pub error: Option<String>,
    /// The notes of the trace's triage report (events skipped, a pid
    /// filter that kept nothing); absent in summaries of older builds.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The options the facts were found with; absent in summaries of
    /// older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<FactOptions>,
}

/// The options a summary's facts depend on. Facts found with other options
/// (another timeline basis, framework or process filter) do not compare,
/// so `merge` refuses to put them side by side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an object of the options (framework, pid_substring, timeline_basis)")]
pub struct FactOptions {
    /// `--framework`: `auto` or the framework asked for.
    pub framework: String,
    /// `--pid-substring`, when given.
    pub pid_substring: Option<String>,
    /// `--timeline-basis`: `trace`, `hta` or `hta_exact`.
    pub timeline_basis: crate::analysis::timeline::Basis,
}

impl FactOptions {
    pub fn of(opts: &TriageOptions) -> Self {
        let framework = match opts.framework {
            FrameworkChoice::Auto => "auto".to_string(),
            FrameworkChoice::Fixed(f) => f.as_str().to_string(),
        };
        FactOptions { framework, pid_substring: opts.pid_substring.clone(), timeline_basis: opts.timeline.basis }
    }

    /// The options as a command line gives them.
    fn as_flags(&self) -> String {
        let basis = serde_json::to_value(self.timeline_basis).ok();
        let basis = basis.as_ref().and_then(|v| v.as_str()).unwrap_or("trace").replace('_', "-");
        let mut flags = format!("--framework {} --timeline-basis {basis}", self.framework);
        if let Some(pid) = &self.pid_substring {
            flags.push_str(&format!(" --pid-substring {pid:?}"));
        }
        flags
    }
}

impl RankSummary {
    pub fn of(outcome: &FileOutcome, opts: &TriageOptions) -> Self {
        let (facts, error, skipped_events, notes) = match &outcome.result {
            Ok(a) => (Some(a.facts.clone()), None, a.skipped_events, a.notes.clone()),
            Err(e) => (None, Some(error_text(&outcome.file.path, e)), 0, Vec::new()),
        };
        RankSummary {
            schema_version: SCHEMA_VERSION,
            kind: SUMMARY_KIND.into(),
            file: outcome.file.path.clone(),
            size: outcome.file.size,
            skipped_events,
            facts,
            error,
            notes,
            options: Some(FactOptions::of(opts)),
        }
    }

    /// The error of a failed trace, as the batch report shows it.
    pub fn failure(&self) -> Option<Error> {
        self.error.as_ref().map(|e| Error::bad_input(e.clone()))
    }
}

/// The summary file's name for a trace: its file name and a hash of its
/// full path, so that traces of the same name in different directories (or
/// from different jobs) do not collide.
pub fn summary_file_name(trace: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    trace.hash(&mut h);
    let name = trace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
    format!("{name}.{:016x}{SUMMARY_SUFFIX}", h.finish())
}

/// Writes one summary file per outcome into `dir` (created when missing).
pub fn write_summaries(dir: &Path, outcomes: &[FileOutcome], opts: &TriageOptions) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(e).in_file(dir))?;
    for o in outcomes {
        let s = RankSummary::of(o, opts);
        write_atomic(&dir.join(summary_file_name(&s.file)), |out| {
            serde_json::to_writer(&mut *out, &s)?;
            out.write_all(b"\n")
        })?;
    }
    Ok(())
}

/// Reads one summary file.
pub fn read_summary(path: &Path) -> Result<RankSummary> {
    let file = std::fs::read(path).map_err(|e| Error::io(e).in_file(path))?;
    // A byte-order mark (an editor's save) is no part of the JSON, as in a
    // trace; offsets stay the file's.
    let bom = if file.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let text = &file[bom..];
    let s: RankSummary = serde_json::from_slice(text).map_err(|e| {
        let message = e.to_string();
        // serde_json's message ends with the line and column: give the byte
        // offset instead, as every other input error does.
        let reason = message.rfind(" at line ").map_or(message.as_str(), |i| &message[..i]);
        let err = Error::bad_input(format!("not a torchtriage summary: {reason}")).in_file(path);
        match json_error_offset(text, &e) {
            Some(at) => err.at(at + bom as u64),
            None => err,
        }
    })?;
    if s.kind != SUMMARY_KIND {
        return Err(Error::bad_input(format!("not a torchtriage summary (kind `{}`)", s.kind)).in_file(path));
    }
    if s.schema_version != SCHEMA_VERSION {
        return Err(Error::bad_input(format!(
            "summary schema version {} (this torchtriage reads {SCHEMA_VERSION})",
            s.schema_version
        ))
        .in_file(path));
    }
    // A summary holds a triaged trace's facts or its failure: one without
    // either would drop its rank from the merge unnoticed.
    match (&s.facts, &s.error) {
        (None, None) => {
            return Err(
                Error::bad_input("not a torchtriage summary: it holds neither `facts` nor an `error`").in_file(path)
            )
        }
        (Some(_), Some(_)) => {
            return Err(
                Error::bad_input("not a torchtriage summary: it holds both `facts` and an `error`").in_file(path)
            )
        }
        _ => {}
    }
    Ok(s)
}

/// The byte offset of a JSON error in `text`, from serde_json's line and
/// column (1-based; the end of the text for an unexpected end).
fn json_error_offset(text: &[u8], e: &serde_json::Error) -> Option<u64> {
    if e.line() == 0 {
        return None;
    }
    if e.is_eof() {
        return Some(text.len() as u64);
    }
    let line_start = if e.line() == 1 { 0 } else { memchr::memchr_iter(b'\n', text).nth(e.line() - 2)? + 1 };
    Some((line_start + e.column().saturating_sub(1)).min(text.len()) as u64)
}

/// Every summary in `inputs` (summary files, or directories searched for
/// `*.summary.json` with their subdirectories, as `batch` searches for
/// traces), in trace-path order as `batch` orders its files. A trace
/// summarized twice counts once when the two summaries agree; when they do
/// not (two runs, or other options), the merge is refused rather than made
/// from whichever came first.
pub fn read_summaries(inputs: &[PathBuf]) -> Result<Vec<RankSummary>> {
    read_summary_files(&summary_files(inputs)?, inputs)
}

/// The summary files `inputs` name (files as given, directories searched
/// with their subdirectories for `*.summary.json`), in the order found.
pub fn summary_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let survey = crate::run::discover::Survey::of(input, "summaries")?;
            if let Some(dir) = survey.passed.unreadable_dirs.first() {
                return Err(Error::usage("cannot list this directory, which may hold summaries").in_file(dir));
            }
            let summary = |p: &PathBuf| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(SUMMARY_SUFFIX));
            files.extend(survey.files.into_iter().filter(summary));
        } else if input.is_file() {
            files.push(input.clone());
        } else if input.as_os_str() == "-" {
            return Err(Error::usage(
                "merge reads summary files and the directories that hold them, not standard input",
            ));
        } else if input.exists() {
            // A pipe or a device: it could block, or never end.
            return Err(Error::usage(
                "merge reads summary files and the directories that hold them, not a pipe or device: save the summary to a file first",
            )
            .in_file(input));
        } else {
            return Err(Error::usage("no such file or directory").in_file(input));
        }
    }
    Ok(files)
}

/// [`read_summaries`] of the `files` [`summary_files`] found in `inputs`.
pub fn read_summary_files(files: &[PathBuf], inputs: &[PathBuf]) -> Result<Vec<RankSummary>> {
    let mut read = files.iter().map(|p| Ok((p, read_summary(p)?))).collect::<Result<Vec<_>>>()?;
    if read.is_empty() {
        let under: Vec<String> = inputs.iter().map(|p| crate::error::shown(p)).collect();
        return Err(Error::usage(format!("no *{SUMMARY_SUFFIX} files found in {} or below", under.join(", "))));
    }
    read.sort_by(|a, b| a.1.file.cmp(&b.1.file));
    for pair in read.windows(2) {
        let ((a_path, a), (b_path, b)) = (&pair[0], &pair[1]);
        if a.file == b.file && a != b {
            return Err(Error::usage(format!(
                "{} and {} summarize the same trace differently (two runs, or other options): merge one of them",
                crate::error::shown(a_path),
                crate::error::shown(b_path)
            ))
            .in_file(&a.file));
        }
    }
    same_options(&read)?;
    let mut out: Vec<RankSummary> = read.into_iter().map(|(_, s)| s).collect();
    out.dedup_by(|a, b| a.file == b.file);
    Ok(out)
}

/// Refuses summaries whose facts were found with different options
/// (summaries of older builds, which do not record them, go with any; a
/// failed trace's, which has none, too), or with a framework no build
/// writes.
fn same_options(read: &[(&PathBuf, RankSummary)]) -> Result<()> {
    for (path, o) in read.iter().filter_map(|(p, s)| Some((p, s.options.as_ref()?))) {
        let known = o.framework == "auto" || crate::analysis::framework::Framework::from_id(&o.framework).is_some();
        if !known {
            return Err(Error::usage(format!(
                "not a torchtriage summary: options.framework {:?} is none that torchtriage writes \
                 (auto, sglang, vllm, trtllm, tokenspeed, generic)",
                o.framework
            ))
            .in_file(path));
        }
    }
    // A failed trace has no facts to compare.
    let mut with = read.iter().filter(|(_, s)| s.facts.is_some()).filter_map(|(p, s)| Some((p, s.options.as_ref()?)));
    let Some((first_path, first)) = with.next() else { return Ok(()) };
    match with.find(|(_, o)| o != &first) {
        None => Ok(()),
        Some((path, other)) => Err(Error::usage(format!(
            "{} was made with {}, {} with {}: the facts do not compare; merge summaries made with the same options",
            crate::error::shown(first_path),
            first.as_flags(),
            crate::error::shown(path),
            other.as_flags()
        ))),
    }
}

/// The map step on its own: triages one trace as `batch` does and returns
/// its summary (the error, when the trace fails, is in the summary). `index`
/// is the trace's position in the job, the rank of last resort when neither
/// the file name nor `distributedInfo` gives one. `name_rank` is the rank
/// the name the trace was found by carries ([`super::BatchFile::name_rank`]:
/// a symbolic link's own name), read before the path's.
pub fn summarize_trace(
    path: &Path,
    index: usize,
    name_rank: Option<u64>,
    opts: &crate::run::triage::TriageOptions,
) -> RankSummary {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let name_rank = name_rank.or_else(|| crate::run::discover::parse_rank(path));
    // Named as `batch` names its files: absolute, symbolic links resolved
    // (the rank above is the name's as given), so a trace summarised by two
    // names is one trace to the merge.
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let file = super::BatchFile { index, path, size, name_rank };
    let result = super::analyze_file(&file, opts, false, &|_| {});
    RankSummary::of(&FileOutcome { file, result }, opts)
}

/// The reduce step: the cross-rank stages of any set of summaries (in
/// trace-path order, as `batch` orders its files), and the traces that
/// failed with their errors.
pub fn merge_summaries(
    summaries: &[RankSummary],
    straggler_pct: f64,
) -> (Vec<crate::analysis::ranks::StageSummary>, Vec<(PathBuf, Error)>) {
    let mut ordered: Vec<&RankSummary> = summaries.iter().collect();
    ordered.sort_by(|a, b| a.file.cmp(&b.file));
    ordered.dedup_by(|a, b| a.file == b.file);
    let facts: Vec<&RankFacts> = ordered.iter().filter_map(|s| s.facts.as_ref()).collect();
    let failures = ordered.iter().filter_map(|s| Some((s.file.clone(), s.failure()?))).collect();
    (crate::analysis::ranks::summarize(&facts, straggler_pct), failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled DLRM profile's folder and its eight rank traces, in
    /// path order.
    fn dlrm_ranks() -> (PathBuf, Vec<PathBuf>) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces/param_dlrm_8rank");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        (dir, paths)
    }

    #[test]
    fn summaries_made_with_other_options_are_not_merged() {
        let (dir, paths) = dlrm_ranks();
        let trace = TriageOptions { quiet: true, ..TriageOptions::default() };
        let mut hta = trace.clone();
        hta.timeline.basis = crate::analysis::timeline::Basis::Hta;
        let out = tempfile::tempdir().unwrap();
        let write = |name: &str, s: &RankSummary| {
            let p = out.path().join(format!("{name}{SUMMARY_SUFFIX}"));
            std::fs::write(&p, serde_json::to_string(s).unwrap()).unwrap();
            p
        };
        let a = summarize_trace(&paths[0], 0, None, &trace);
        let b = summarize_trace(&paths[1], 1, None, &hta);
        assert_eq!(a.options.as_ref().map(|o| o.timeline_basis), Some(crate::analysis::timeline::Basis::Trace));
        let (pa, pb) = (write("a", &a), write("b", &b));
        let err = read_summaries(&[pa.clone(), pb.clone()]).unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Usage);
        assert!(
            err.message.contains("was made with --framework auto --timeline-basis trace, ")
                && err.message.contains(" with --framework auto --timeline-basis hta: the facts do not compare"),
            "{}",
            err.message
        );
        // A summary of an older build, which records no options, goes with any.
        let old = RankSummary { options: None, ..summarize_trace(&paths[2], 2, None, &hta) };
        let po = write("old", &old);
        assert_eq!(read_summaries(&[pa, po.clone()]).unwrap().len(), 2);
        assert_eq!(read_summaries(&[pb.clone(), po]).unwrap().len(), 2);
        // A failed trace has no facts that could disagree.
        let failed = summarize_trace(&dir.join("nonesuch.json"), 9, None, &trace);
        assert!(failed.facts.is_none());
        assert_eq!(read_summaries(&[pb, write("failed", &failed)]).unwrap().len(), 2);
        // A framework no build writes is no summary of ours.
        let mut odd = a.clone();
        odd.options.as_mut().unwrap().framework = "pytorch".into();
        let err = read_summaries(&[write("odd", &odd)]).unwrap_err();
        assert!(
            err.message.contains(r#"options.framework "pytorch" is none that torchtriage writes"#),
            "{}",
            err.message
        );
    }

    #[test]
    fn summaries_survive_json_and_merge_like_a_batch() {
        let (dir, paths) = dlrm_ranks();
        let opts = TriageOptions { quiet: true, ..TriageOptions::default() };
        let sums: Vec<RankSummary> =
            paths.iter().enumerate().rev().map(|(i, p)| summarize_trace(p, i, None, &opts)).collect();
        let back: Vec<RankSummary> =
            sums.iter().map(|s| serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap()).collect();
        assert_eq!(back, sums);
        assert!(sums.iter().all(|s| s.facts.as_ref().is_some_and(|f| f.stages[0].idle_us.is_some())));
        // Given in any order, merged in path order.
        let (stages, failures) = merge_summaries(&back, 10.0);
        assert!(failures.is_empty());
        let ranks: Vec<u64> = stages[0].rows.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, (0..8).collect::<Vec<u64>>());
        let missing = summarize_trace(&dir.join("nonesuch.json"), 8, None, &opts);
        assert!(missing.facts.is_none() && missing.error.is_some());
        assert_eq!(merge_summaries(&[missing], 10.0).1.len(), 1);
    }
}
