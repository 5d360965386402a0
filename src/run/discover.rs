//! Which trace files an input path stands for: a file is itself; a profile
//! directory yields its newest trace per stage for one rank (rank 0 when
//! present), skipping `merged-` files. Also the stage and rank a path names,
//! and the `server_args.json` kept beside a trace.

use std::path::{Path, PathBuf};

use crate::analysis::framework::{detect_from_server_args, detect_from_text, Framework, FrameworkChoice, Undetected};
use crate::analysis::stage::{parse_stage, Stage};
use std::time::SystemTime;

use super::batch::summary::{SUMMARY_KIND, SUMMARY_SUFFIX};
use crate::error::{Error, Result};
use crate::tokenizer::scan::is_ws;

const IGNORED_NAMES: &[&str] = &["server_args.json", "metadata.json", "config.json"];

/// Finds `word` + digits in `name` (ASCII case-insensitive), optionally
/// requiring a `_`/`-` (or the start) before and `_`/`.`/`-` (or the end)
/// after, and returns the number.
fn find_numbered(name: &str, word: &str, bounded: bool) -> Option<u64> {
    find_numbered_with(name, word, bounded, false)
}

/// [`find_numbered`], with `separated` also taking one `_` or `-` between
/// the word and its digits.
fn find_numbered_with(name: &str, word: &str, bounded: bool, separated: bool) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut from = 0;
    while let Some(off) = lower[from..].find(word) {
        let i = from + off;
        from = i + 1;
        if bounded && i > 0 && !matches!(b[i - 1], b'_' | b'-') {
            continue;
        }
        let mut start = i + word.len();
        if separated && matches!(b.get(start), Some(b'_' | b'-')) {
            start += 1;
        }
        let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            continue;
        }
        let end = start + digits;
        if bounded && end < b.len() && !matches!(b[end], b'_' | b'.' | b'-') {
            continue;
        }
        if let Ok(n) = lower[start..end].parse() {
            return Some(n);
        }
    }
    None
}

/// The tensor-parallel rank a trace file name carries (`tp3`, `TP-3`,
/// `rank3`, `worker3`).
pub fn parse_tp_rank(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_string_lossy();
    find_numbered(&name, "tp", true)
        .or_else(|| find_numbered(&name, "tp-", false))
        .or_else(|| find_numbered(&name, "rank", true))
        .or_else(|| find_numbered(&name, "worker", true))
}

/// The rank a trace file name carries, for `batch`: what
/// [`parse_tp_rank`] reads (the reference's rule, which picks `triage`'s
/// rank in a directory), and also `rank-3` / `rank_3` (Holistic Trace
/// Analysis names its samples `rank-N.<date>.pt.trace.json`) and
/// `worker-3` / `worker_3`.
pub fn parse_rank(path: &Path) -> Option<u64> {
    parse_tp_rank(path).or_else(|| {
        let name = path.file_name()?.to_string_lossy();
        find_numbered_with(&name, "rank", true, true).or_else(|| find_numbered_with(&name, "worker", true, true))
    })
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// File names discovery considers (`.json`, `.json.gz`, `.json.zst`, `.zst`).
pub fn has_trace_suffix(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".json", ".json.gz", ".json.zst", ".zst"].iter().any(|s| name.ends_with(s))
}

/// The message for a directory that holds no trace, at any depth.
pub const NO_TRACES: &str =
    "no trace files in this directory or below it (a trace is a .json, .json.gz, .json.zst or .zst file that begins as a profiler trace, or whose name holds .trace.json)";

/// Top-level keys the PyTorch profiler writes; a document opening with one
/// of them is a trace.
const TRACE_KEYS: &[&str] = &[
    "traceEvents",
    "schemaVersion",
    "deviceProperties",
    "distributedInfo",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "traceName",
    "deviceType",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "roctracer_version",
    "with_stack",
    "record_shapes",
    "profile_memory",
    "with_flops",
    "with_modules",
    "trace_id",
];

/// Decoded bytes discovery reads of a file to recognise it.
const SNIFF_BYTES: usize = 64 << 10;

/// Whether a file is a trace: by name for `*.trace.json` (and its gzip and
/// zstd forms), else from its first bytes: after gzip or zstd magic is
/// undone, a JSON array whose first element is an object and which names a
/// `ph` key within those bytes, or an object
/// whose first key is one the profiler writes (or that names `traceEvents`
/// early on). Nothing is parsed in full.
pub fn file_looks_like_trace(path: &Path) -> bool {
    let name = lowercase_name(path);
    if IGNORED_NAMES.contains(&name.as_str()) || path.is_dir() {
        return false;
    }
    // A batch's own summaries are named after their trace
    // (`<trace>.<hash>.summary.json`) but are not traces.
    if name.ends_with(SUMMARY_SUFFIX)
        && crate::input::head(path, 256).is_ok_and(|(h, _)| memchr::memmem::find(&h, SUMMARY_KIND.as_bytes()).is_some())
    {
        return false;
    }
    if is_trace_by_name(&name) {
        return true;
    }
    has_trace_suffix(&name) && content_looks_like_trace(path)
}

/// Whether a file named on the command line is a trace: as
/// [`file_looks_like_trace`], but by its first bytes whatever its name ends
/// with (`triage` reads such a file too).
pub fn named_file_looks_like_trace(path: &Path) -> bool {
    file_looks_like_trace(path) || (!has_trace_suffix(&lowercase_name(path)) && content_looks_like_trace(path))
}

/// The content rule of [`file_looks_like_trace`], read from the file.
fn content_looks_like_trace(path: &Path) -> bool {
    match crate::input::head(path, SNIFF_BYTES) {
        // A compressed file of a trace's name that is damaged (corrupt or
        // cut short) is judged by what decodes of it, and kept when nothing
        // does: reading it then fails naming the file and the decoder's
        // reason, rather than the run passing over a damaged rank as not a
        // trace.
        Ok((head, broken)) => {
            head_looks_like_trace(&head)
                || (broken && head.is_empty())
                || (head.len() == SNIFF_BYTES && parse_rank(path).is_some() && opens_object(&head) && {
                    // A file named for a rank whose metadata runs past the
                    // bytes sniffed: its top-level keys decide.
                    super::sniff::file_names_trace_events(path)
                })
        }
        // A file of a trace's name that cannot be opened (no permission), or
        // whose opening finds it damaged (cut inside the magic number of
        // its compression), is kept, for the same reason.
        Err(e) => e.kind == crate::error::ErrorKind::BadInput || std::fs::File::open(path).is_err(),
    }
}

/// Whether a file name (lowercase) makes a file a trace whatever it holds:
/// `*.trace.json` and its compressed forms, or a name holding
/// `.pt.trace.json`.
pub fn is_trace_by_name(name: &str) -> bool {
    [".trace.json", ".trace.json.gz", ".trace.json.zst"].iter().any(|s| name.ends_with(s))
        || name.contains(".pt.trace.json")
}

/// The content rule of [`file_looks_like_trace`] on a file's first bytes.
pub fn head_looks_like_trace(head: &[u8]) -> bool {
    let head = without_bom(head);
    let skip_ws = |b: &[u8]| -> usize { b.iter().take_while(|&&c| is_ws(c)).count() };
    let i = skip_ws(head);
    match head.get(i) {
        // An array of events: every event has a `ph`, which an array of
        // other records (a package's `vendors.json`) does not.
        Some(b'[') => {
            let j = i + 1 + skip_ws(&head[i + 1..]);
            head.get(j) == Some(&b'{') && names_key(&head[j..], b"\"ph\"")
        }
        Some(b'{') => {
            let j = i + 1 + skip_ws(&head[i + 1..]);
            let rest = &head[j..];
            let first_key = rest
                .strip_prefix(b"\"")
                .and_then(|r| r.iter().position(|&c| c == b'"' || c == b'\\').map(|end| &r[..end]));
            first_key.is_some_and(|k| TRACE_KEYS.iter().any(|t| t.as_bytes() == k))
                || names_key(head, b"\"traceEvents\"")
        }
        _ => false,
    }
}

/// Whether `head` opens a JSON object (after a byte-order mark and
/// whitespace).
fn opens_object(head: &[u8]) -> bool {
    without_bom(head).iter().find(|&&c| !is_ws(c)) == Some(&b'{')
}

/// `head` without a UTF-8 byte-order mark in front.
fn without_bom(head: &[u8]) -> &[u8] {
    head.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(head)
}

/// Whether `key` (quoted) appears in `head` as a key (followed by a
/// colon), not merely as a string: a report that lists a trace's top-level
/// keys is not a trace.
fn names_key(head: &[u8], key: &[u8]) -> bool {
    memchr::memmem::find_iter(head, key).any(|at| {
        let rest = &head[at + key.len()..];
        rest.iter().find(|&&c| !is_ws(c)) == Some(&b':')
    })
}

/// Calls `visit` on every regular file in `dir` (and, when `recursive`, in
/// its subdirectories), in path order within each directory. Symlinks are
/// followed, but never into a directory already walked (by its device and
/// inode), so link cycles end; FIFOs, sockets and devices are passed over
/// without being opened, so the walk never blocks.
pub(crate) fn walk_regular_files(dir: &Path, recursive: bool, visit: &mut dyn FnMut(PathBuf)) {
    walk_from(dir, recursive, &mut |p, kind| {
        if kind == Found::File {
            visit(p)
        }
    });
}

/// What a walk of a directory passes over, in the order it meets it.
#[derive(Clone, Debug, Default)]
pub struct PassedOver {
    /// Symbolic links whose target does not exist.
    pub dangling_links: Vec<PathBuf>,
    /// Symbolic links that lead back to themselves.
    pub link_loops: Vec<PathBuf>,
    /// Directories whose entries cannot be listed (no permission), `dir`
    /// itself included: the traces in them, if any, are out of every walk.
    pub unreadable_dirs: Vec<PathBuf>,
    /// Entries that are neither regular files nor directories (pipes,
    /// sockets, devices, links to them).
    pub special: Vec<PathBuf>,
}

impl PassedOver {
    /// Keeps `p` if the walk passed it over (anything but a regular file).
    fn record(&mut self, p: PathBuf, kind: Found) {
        match kind {
            Found::DanglingLink => self.dangling_links.push(p),
            Found::LinkLoop => self.link_loops.push(p),
            Found::UnreadableDir => self.unreadable_dirs.push(p),
            Found::Special => self.special.push(p),
            Found::File => {}
        }
    }
}

/// What a walk reports.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    File,
    DanglingLink,
    LinkLoop,
    UnreadableDir,
    /// Neither a regular file nor a directory: a pipe, a socket, a device
    /// (or a link to one). Never read by a walk: a pipe could block it.
    Special,
}

/// Entries (files, directories, links) one walk looks at before it stops:
/// a job's profile directory holds thousands, while a link to `/` or to
/// `/proc` below it would otherwise have the walk read the whole machine.
pub(crate) const WALK_BUDGET: usize = 200_000;

/// One recursive walk of a directory (links followed, each folder once):
/// its regular files and what it passed over, in walk order. Commands that
/// look below a directory walk it once, through this.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) passed: PassedOver,
}

impl Survey {
    /// Walks `dir` (a file, or a path that is no directory, gives an empty
    /// survey). More than [`WALK_BUDGET`] entries is a usage error naming
    /// `dir` and saying what to do, since a walk cut short would pass for
    /// all of it; `holding` names what the command looks for (`traces`,
    /// `summaries`).
    pub(crate) fn of(dir: &Path, holding: &str) -> Result<Survey> {
        Self::within(dir, WALK_BUDGET, holding)
    }

    fn within(dir: &Path, budget: usize, holding: &str) -> Result<Survey> {
        let mut survey = Survey::default();
        if !dir.is_dir() {
            return Ok(survey);
        }
        let (files, passed) = (&mut survey.files, &mut survey.passed);
        let complete = walk_within(dir, true, budget, &mut |p, kind| match kind {
            Found::File => files.push(p),
            other => passed.record(p, other),
        });
        if !complete {
            return Err(Error::usage(format!(
                "more than {budget} files and folders below this directory (links followed); \
                 give the directory that holds the {holding}"
            ))
            .in_file(dir));
        }
        Ok(survey)
    }
}

fn walk_from(dir: &Path, recursive: bool, visit: &mut dyn FnMut(PathBuf, Found)) {
    walk_within(dir, recursive, WALK_BUDGET, visit);
}

/// Walks `dir`; false when it stopped at `budget` entries.
fn walk_within(dir: &Path, recursive: bool, budget: usize, visit: &mut dyn FnMut(PathBuf, Found)) -> bool {
    let mut seen = std::collections::HashSet::new();
    if let Ok(m) = std::fs::metadata(dir) {
        seen.insert(dir_id(&m));
    }
    let mut left = budget;
    walk(dir, recursive, &mut seen, &mut left, visit)
}

/// A directory's identity (device and inode): the same directory reached
/// by two paths (a link back up the tree) has one. Read from metadata the
/// walk has anyway, where resolving each folder's full path would cost a
/// system call per level of its depth.
fn dir_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

fn walk(
    dir: &Path,
    recursive: bool,
    seen: &mut std::collections::HashSet<(u64, u64)>,
    left: &mut usize,
    visit: &mut dyn FnMut(PathBuf, Found),
) -> bool {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            // Gone since it was listed is no loss; anything else (no
            // permission, a path too long to open) leaves its traces out.
            if e.kind() != std::io::ErrorKind::NotFound {
                visit(dir.to_path_buf(), Found::UnreadableDir);
            }
            return true;
        }
    };
    let mut listed: Vec<PathBuf> = Vec::new();
    for e in entries {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        if let Ok(e) = e {
            listed.push(e.path());
        }
    }
    listed.sort();
    for p in listed {
        // Follows a symlink; a dangling one has no metadata of its target.
        let meta = match std::fs::metadata(&p) {
            Ok(meta) => meta,
            Err(e) => {
                if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                    let looped = e.raw_os_error() == Some(libc::ELOOP);
                    visit(p, if looped { Found::LinkLoop } else { Found::DanglingLink });
                } else if e.kind() != std::io::ErrorKind::NotFound {
                    // Neither gone nor a link: an entry that cannot be
                    // looked at (a path too long to name), perhaps a folder.
                    visit(p, Found::UnreadableDir);
                }
                continue;
            }
        };
        if meta.is_dir() {
            if recursive && seen.insert(dir_id(&meta)) && !walk(&p, true, seen, left, visit) {
                return false;
            }
        } else if meta.is_file() {
            visit(p, Found::File);
        } else {
            visit(p, Found::Special);
        }
    }
    true
}

/// Whether `path` is one trace read once as a stream: `-` (standard
/// input), or a path that names neither a regular file nor a directory — a
/// pipe such as `/dev/stdin` or `<(zcat trace.json.gz)`, a character
/// device. Nothing is looked for beside it.
pub fn is_stream_path(path: &Path) -> bool {
    path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// What one discovery has learned of the files it met: whether each looks
/// like a trace ([`file_looks_like_trace`]), by canonical path, so that a
/// file several walks meet (the folder's own files, then the tree below
/// it) is read once.
#[derive(Default)]
struct Sniffs {
    seen: std::collections::HashMap<PathBuf, bool>,
    /// Files read to decide (each once).
    #[cfg(test)]
    reads: usize,
}

impl Sniffs {
    fn looks_like_trace(&mut self, path: &Path) -> bool {
        self.looks_like_trace_as(path, path)
    }

    /// Whether the file at canonical path `path`, found as `found` (a link's
    /// own name), is a trace: judged by the name it was found by, so that a
    /// link named `rank3.json` to a file named otherwise is read as that.
    fn looks_like_trace_as(&mut self, path: &Path, found: &Path) -> bool {
        if let Some(&known) = self.seen.get(path) {
            return known;
        }
        #[cfg(test)]
        {
            self.reads += 1;
        }
        let is = file_looks_like_trace(found);
        self.seen.insert(path.to_path_buf(), is);
        is
    }
}

/// Trace files in a directory (or the file itself), oldest first.
pub fn discover_trace_files(path: &Path, recursive: bool, limit: Option<usize>) -> Vec<PathBuf> {
    trace_files(path, recursive, limit, &mut Sniffs::default())
}

fn trace_files(path: &Path, recursive: bool, limit: Option<usize>, sniffs: &mut Sniffs) -> Vec<PathBuf> {
    let mut candidates = oldest_first(&named_trace_files(path, recursive, sniffs));
    match limit {
        Some(0) => vec![],
        Some(n) => candidates.split_off(candidates.len().saturating_sub(n)),
        None => candidates,
    }
}

/// The canonical paths of `found` ([`discover_named_trace_files`]), oldest
/// first.
fn oldest_first(found: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = found.iter().map(|(p, _)| p.clone()).collect();
    paths.sort_by_key(|p| mtime(p));
    paths
}

/// Trace files in a directory (or the file itself), in walk order: each as
/// its canonical path and the path it was found by (a symbolic link's own
/// name, which may carry a rank its target's does not). A file reached by
/// several paths is listed once for each (read once to tell whether it is
/// a trace); the caller picks among the names.
pub fn discover_named_trace_files(path: &Path, recursive: bool) -> Vec<(PathBuf, PathBuf)> {
    named_files(path, recursive, &mut Sniffs::default(), true)
}

/// [`discover_named_trace_files`] with a file reached by several paths
/// listed once, by the first.
fn named_trace_files(path: &Path, recursive: bool, sniffs: &mut Sniffs) -> Vec<(PathBuf, PathBuf)> {
    named_files(path, recursive, sniffs, false)
}

fn named_files(path: &Path, recursive: bool, sniffs: &mut Sniffs, every_name: bool) -> Vec<(PathBuf, PathBuf)> {
    if path.is_file() {
        let p = path.to_path_buf();
        return if sniffs.looks_like_trace(path) { vec![(p.clone(), p)] } else { vec![] };
    }
    let mut found = Vec::new();
    walk_regular_files(path, recursive, &mut |p| found.push(p));
    named_among(found, sniffs, every_name)
}

/// Of the regular `files` a walk met, the traces, as [`named_files`] lists
/// them.
fn named_among(files: Vec<PathBuf>, sniffs: &mut Sniffs, every_name: bool) -> Vec<(PathBuf, PathBuf)> {
    let found = files.into_iter().filter(|p| p.file_name().is_some_and(|n| has_trace_suffix(&n.to_string_lossy())));
    // Whether each canonical path is a trace, looked at once.
    let mut seen: std::collections::HashMap<PathBuf, bool> = std::collections::HashMap::new();
    found
        .map(|p| (p.canonicalize().unwrap_or_else(|_| p.clone()), p))
        .filter(|(c, found)| match seen.get(c) {
            Some(&trace) => every_name && trace,
            None => {
                let trace = c.exists() && sniffs.looks_like_trace_as(c, found);
                seen.insert(c.clone(), trace);
                trace
            }
        })
        .collect()
}

/// [`discover_named_trace_files`] of a directory from its survey, without
/// walking it again.
pub(crate) fn named_trace_files_in(survey: &Survey) -> Vec<(PathBuf, PathBuf)> {
    named_among(survey.files.clone(), &mut Sniffs::default(), true)
}

/// The folder holding the newest of `path`'s traces: `path` itself when
/// `direct` (its own traces) is not empty, else the folder of the newest of
/// `below` (every trace below it, oldest first).
fn newest_trace_dir(path: &Path, direct: &[PathBuf], below: &[PathBuf]) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path.parent().map(Path::to_path_buf).unwrap_or_default());
    }
    if !direct.is_empty() {
        return Ok(path.to_path_buf());
    }
    let mut dirs: Vec<(PathBuf, SystemTime)> = Vec::new();
    for t in below {
        let parent = t.parent().map(Path::to_path_buf).unwrap_or_default();
        let m = mtime(t);
        match dirs.iter_mut().find(|(d, _)| *d == parent) {
            Some((_, best)) => *best = (*best).max(m),
            None => dirs.push((parent, m)),
        }
    }
    dirs.sort_by_key(|(_, m)| *m);
    dirs.pop().map(|(d, _)| d).ok_or_else(|| no_traces(path))
}

/// Why `dir` yields no trace: a directory in it that cannot be listed,
/// named with the system's reason, else [`NO_TRACES`] and the files of a
/// trace's name it passed over for what they hold.
pub(crate) fn no_traces(dir: &Path) -> Error {
    match Survey::of(dir, "traces") {
        Ok(survey) => no_traces_in(dir, &survey),
        Err(e) => e,
    }
}

/// Files of a trace's name [`no_traces_in`] names, at most.
const PASSED_OVER_SHOWN: usize = 3;

/// [`no_traces`] from a walk of `dir`.
pub(crate) fn no_traces_in(dir: &Path, survey: &Survey) -> Error {
    for d in &survey.passed.unreadable_dirs {
        if let Err(e) = std::fs::read_dir(d) {
            return Error::usage(format!("cannot list this directory: {e}")).in_file(d);
        }
    }
    let (summaries, named): (Vec<&PathBuf>, Vec<&PathBuf>) = survey
        .files
        .iter()
        .filter(|p| has_trace_name(p) && !IGNORED_NAMES.contains(&lowercase_name(p).as_str()))
        .partition(|p| lowercase_name(p).ends_with(SUMMARY_SUFFIX));
    let mut message = NO_TRACES.to_string();
    if !named.is_empty() {
        // Named from `dir`, which the message begins with (a walk's paths
        // may be canonical).
        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let below = |p: &Path| p.strip_prefix(&root).or_else(|_| p.strip_prefix(dir)).unwrap_or(p).to_path_buf();
        let mut shown: Vec<String> =
            named.iter().take(PASSED_OVER_SHOWN).map(|p| crate::error::shown(&below(p))).collect();
        if named.len() > PASSED_OVER_SHOWN {
            shown.push(format!("and {} more", named.len() - PASSED_OVER_SHOWN));
        }
        let (files, one) = if named.len() == 1 {
            ("file named like a trace", "it does")
        } else {
            ("files named like traces", "they do")
        };
        message += &format!("; {} {files} passed over, as {one} not begin as one: {}", named.len(), shown.join(", "));
    }
    if !summaries.is_empty() {
        let n = summaries.len();
        let (what, them) = if n == 1 { ("batch summary", "it") } else { ("batch summaries", "them") };
        message += &format!("; {n} {what} ({SUMMARY_SUFFIX}) here: `torchtriage merge` reads {them}");
    }
    Error::usage(message).in_file(dir)
}

/// The run a trace below a profile directory belongs to: its folder, or the
/// folder above when its own is named for a stage (`extend/`, `prefill/`,
/// `decode/`).
fn run_dir(trace: &Path) -> PathBuf {
    let parent = trace.parent().unwrap_or(Path::new(""));
    let named = parent.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    match parent.parent() {
        Some(above) if ["extend", "prefill", "decode"].contains(&named.as_str()) => above.to_path_buf(),
        _ => parent.to_path_buf(),
    }
}

/// Of the runs holding a stage-named trace, the one holding the newest of
/// them (the later path on a tie).
fn newest_stage_run(traces: &[PathBuf]) -> PathBuf {
    traces
        .iter()
        .filter(|t| parse_stage(t) != Stage::All)
        .map(|t| (mtime(t), run_dir(t)))
        .max()
        .map(|(_, run)| run)
        .unwrap_or_default()
}

/// `server_args.json` beside the trace (or in its parent directory).
pub(crate) fn load_server_args(path: &Path) -> Option<serde_json::Value> {
    if is_stream_path(path) {
        return None;
    }
    let resolved = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let dirs: Vec<PathBuf> = if resolved.is_file() {
        let p = resolved.parent().map(Path::to_path_buf);
        let pp = p.as_ref().and_then(|p| p.parent()).map(Path::to_path_buf);
        p.into_iter().chain(pp).collect()
    } else {
        let p = resolved.parent().map(Path::to_path_buf);
        std::iter::once(resolved.clone()).chain(p).collect()
    };
    let mut seen = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        let candidate = dir.join("server_args.json");
        if candidate.exists() {
            let text = std::fs::read_to_string(&candidate).ok()?;
            return serde_json::from_str(&text).ok();
        }
    }
    None
}

/// What an input path stands for: its traces, the server arguments found
/// with them, and what was left out.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// The traces to analyse, in (stage, file name) order.
    pub traces: Vec<PathBuf>,
    /// Each trace by the path the walk found it by (a link's own name,
    /// which carries the rank; the trace itself otherwise), in `traces`'s
    /// order.
    pub found_as: Vec<PathBuf>,
    pub server_args: Option<serde_json::Value>,
    /// The rank analysed when the directory holds several (from the file
    /// names).
    pub rank: Option<u64>,
    /// Traces found but not analysed: other ranks, and older traces of the
    /// same stage.
    pub left_out: usize,
    /// What below the input could not be looked at, with why: directories
    /// whose entries could not be listed (no permission) and entries with
    /// a trace's name that are not regular files (a pipe, a device). A
    /// rank or a newer run there was not among the choices.
    pub unseen: Vec<(PathBuf, &'static str)>,
}

/// The traces an input path stands for, in (stage, file name) order, and the
/// server arguments found with them.
pub fn discover_trace_targets(path: &Path) -> Result<Targets> {
    trace_targets(path, &mut Sniffs::default())
}

fn trace_targets(path: &Path, sniffs: &mut Sniffs) -> Result<Targets> {
    if path.is_file() {
        return Ok(Targets {
            traces: vec![path.to_path_buf()],
            found_as: vec![path.to_path_buf()],
            server_args: load_server_args(path),
            ..Targets::default()
        });
    }
    if !path.exists() {
        return Err(Error::usage(format!("{}: no such file or directory", crate::error::shown(path))));
    }
    let survey = Survey::of(path, "traces")?;
    let direct = trace_files(path, false, None, sniffs);
    let found_below = named_among(survey.files, sniffs, false);
    let recursive = oldest_first(&found_below);
    let (traces, trace_dir) =
        if direct.is_empty() && !recursive.is_empty() && recursive.iter().any(|t| parse_stage(t) != Stage::All) {
            // Stage traces below: the run holding the newest of them, so that
            // the stages of two runs (or of unrelated jobs) are never mixed.
            let run = newest_stage_run(&recursive);
            (recursive.iter().filter(|t| run_dir(t) == run).cloned().collect(), run)
        } else {
            let dir = newest_trace_dir(path, &direct, &recursive)?;
            (trace_files(&dir, false, None, sniffs), dir)
        };
    // Traces in the other folders below `path`, when one folder was chosen.
    let elsewhere = recursive.iter().filter(|t| !traces.contains(t)).count();
    if traces.is_empty() {
        return Err(no_traces(&trace_dir));
    }
    let non_merged: Vec<PathBuf> = traces
        .iter()
        .filter(|t| !t.file_name().map(|n| n.to_string_lossy().starts_with("merged-")).unwrap_or(false))
        .cloned()
        .collect();
    let mut selected = if non_merged.is_empty() { traces } else { non_merged };
    let found = selected.len();
    // A trace's rank is read from the name it was found by, as `batch` reads
    // it: a link named `rank0.json` to `worker7….json` is rank 0.
    let found_as: std::collections::HashMap<PathBuf, PathBuf> = found_below.into_iter().collect();
    let rank_of = |t: &PathBuf| found_as.get(t).and_then(|named| parse_tp_rank(named)).or_else(|| parse_tp_rank(t));
    let mut ranks: Vec<u64> = selected.iter().filter_map(rank_of).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut chosen_rank = None;
    if let Some(&first) = ranks.first() {
        let rank = if ranks.contains(&0) { 0 } else { first };
        selected.retain(|t| rank_of(t) == Some(rank));
        chosen_rank = (ranks.len() > 1).then_some(rank);
    }
    let mut groups: Vec<(Stage, Vec<PathBuf>)> = Vec::new();
    for t in selected {
        let stage = parse_stage(&t);
        match groups.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, v)) => v.push(t),
            None => groups.push((stage, vec![t])),
        }
    }
    let mut selected: Vec<PathBuf> = groups
        .into_iter()
        .filter_map(|(_, mut v)| {
            v.sort_by_key(|p| mtime(p));
            v.pop()
        })
        .collect();
    selected.sort_by(|a, b| parse_stage(a).cmp(&parse_stage(b)).then_with(|| a.file_name().cmp(&b.file_name())));
    let named_by = |t: &PathBuf| found_as.get(t).cloned().unwrap_or_else(|| t.clone());
    Ok(Targets {
        unseen: unseen_in(&survey.passed),
        left_out: found - selected.len() + elsewhere,
        found_as: selected.iter().map(named_by).collect(),
        traces: selected,
        server_args: load_server_args(&trace_dir),
        rank: chosen_rank,
    })
}

/// What a walk could not look at ([`Targets::unseen`]), from what it
/// passed over.
pub(crate) fn unseen_in(passed: &PassedOver) -> Vec<(PathBuf, &'static str)> {
    let dirs = passed.unreadable_dirs.iter().map(|d| (d.clone(), "cannot be listed"));
    let special = passed.special.iter().filter(|p| has_trace_name(p)).map(|p| (p.clone(), "not a regular file"));
    dirs.chain(special).collect()
}

/// Whether `p`'s file name ends as a trace's does (`.json`, `.json.gz`,
/// `.json.zst`, `.zst`), whatever it holds.
pub(crate) fn has_trace_name(p: &Path) -> bool {
    has_trace_suffix(&lowercase_name(p))
}

/// `p`'s file name in lowercase (empty for a path without one).
fn lowercase_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default()
}

/// Framework hinted by an input path: its text, its server args, then the
/// sample text of the trace (for a directory, of its three newest traces).
/// `sample_hint` reads a trace's framework sample and returns the framework
/// its text names ([`detect_from_text`]).
fn detect_from_path(
    path: &Path,
    analysed: &[PathBuf],
    sample_hint: &dyn Fn(&Path) -> Option<Framework>,
) -> Option<Framework> {
    if let Some(h) = detect_from_text(&path.to_string_lossy()) {
        return Some(h);
    }
    if let Some(h) = detect_from_server_args(load_server_args(path).as_ref()) {
        return Some(h);
    }
    let hint = sample_hint;
    if path.is_file() || is_stream_path(path) {
        return hint(path);
    }
    analysed
        .iter()
        .find_map(|t| hint(t))
        .or_else(|| discover_trace_files(path, true, Some(3)).iter().find_map(|t| hint(t)))
}

/// The reference's `resolve_framework` for a local input; `undetected` is
/// what it settles on when no hint names a framework (the reference:
/// SGLang). For a directory, the first events of `analysed` (the traces
/// the run reads) are asked before those of the first traces found in it
/// (the reference asks only the latter, so a directory of one framework's
/// traces beside another's could name the other). With [`Undetected::Generic`], `strings_hint` (the framework the
/// input's loaded traces name anywhere, [`detect_from_strings`]) is asked
/// before settling on generic PyTorch.
///
/// [`detect_from_strings`]: crate::analysis::framework::detect_from_strings
pub fn resolve_framework(
    requested: FrameworkChoice,
    input_path: &Path,
    server_args: Option<&serde_json::Value>,
    analysed: &[PathBuf],
    sample_hint: &dyn Fn(&Path) -> Option<Framework>,
    strings_hint: &dyn Fn() -> Option<Framework>,
    undetected: Undetected,
) -> Framework {
    if let FrameworkChoice::Fixed(f) = requested {
        return f;
    }
    detect_from_server_args(server_args).or_else(|| detect_from_path(input_path, analysed, sample_hint)).unwrap_or_else(
        || match undetected {
            Undetected::Generic => strings_hint().unwrap_or(Framework::Generic),
            Undetected::Sglang => Framework::Sglang,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_told_from_their_first_bytes() {
        assert!(head_looks_like_trace(br#"{"schemaVersion": 1, "deviceProperties": []"#));
        assert!(head_looks_like_trace(b"\xef\xbb\xbf \n{\"traceEvents\": ["));
        assert!(head_looks_like_trace(br#"{"zzz": 1, "traceEvents": [{"ph": "X""#));
        assert!(head_looks_like_trace(br#"  [ {"ph": "X", "name": "k"}"#));
        assert!(!head_looks_like_trace(br#"[]"#));
        // An array of other records is no trace.
        assert!(!head_looks_like_trace(br#"[{"name": "lodash", "version": "4.17.21"}]"#));
        assert!(!head_looks_like_trace(br#"[{"a": 1}]"#));
        assert!(!head_looks_like_trace(br#"{"not": "a trace"}"#));
        assert!(!head_looks_like_trace(br#"{"model_path": "m", "tp_size": 2}"#));
        assert!(!head_looks_like_trace(b"\x00\x01garbage"));
        // Reports about traces name the key as a string, not as a key.
        assert!(!head_looks_like_trace(br#"{"a": ["traceEvents"]}"#));
        assert!(!head_looks_like_trace(br#"{"file": "t.json", "top_level_keys": ["schemaVersion", "traceEvents"]}"#));
        assert!(head_looks_like_trace(br#"{"zzz": ["traceEvents"], "traceEvents" : []}"#));
        assert!(!head_looks_like_trace(b""));
    }

    #[test]
    fn a_walk_stops_at_its_budget_and_the_check_names_the_directory() {
        // Two ranks and a link back to the folder's parent, which holds
        // more: the link's entries count against the budget too (3 in the
        // job, 11 in its parent, the job not walked twice).
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("job");
        std::fs::create_dir(&dir).unwrap();
        for name in ["rank0.json", "rank1.json"] {
            std::fs::write(dir.join(name), b"{}").unwrap();
        }
        for i in 0..10 {
            std::fs::write(top.path().join(format!("other{i}")), b"").unwrap();
        }
        assert!(Survey::within(&dir, 2, "traces").is_ok());
        std::os::unix::fs::symlink(top.path(), dir.join("up")).unwrap();
        assert!(Survey::within(&dir, 14, "traces").is_ok());
        let err = Survey::within(&dir, 13, "traces").unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Usage);
        assert_eq!(err.path.as_deref(), Some(dir.as_path()));
        assert!(err.message.starts_with("more than 13 files and folders below this directory (links followed); give the directory that holds the traces"), "{}", err.message);
        let mut files = 0;
        assert!(!walk_within(&dir, true, 13, &mut |_, kind| files += usize::from(kind == Found::File)));
        assert!(files <= 13);
        // A file is no walk.
        assert!(Survey::within(&dir.join("rank0.json"), 0, "traces").is_ok());
    }

    #[test]
    fn compressed_files_are_sniffed_through_their_decoder() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let doc = br#"{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2}]}"#;
        let gz = dir.path().join("a.json.gz");
        let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::default());
        e.write_all(doc).unwrap();
        e.finish().unwrap();
        let zst = dir.path().join("b.json.zst");
        std::fs::write(&zst, zstd::encode_all(&doc[..], 3).unwrap()).unwrap();
        let bare = dir.path().join("c.zst");
        std::fs::write(&bare, zstd::encode_all(&doc[..], 3).unwrap()).unwrap();
        std::fs::write(dir.path().join("d.json"), br#"{"not": "a trace"}"#).unwrap();
        std::fs::write(dir.path().join("e.txt"), doc).unwrap();
        let found = discover_trace_files(dir.path(), false, None);
        let names: std::collections::BTreeSet<String> =
            found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["a.json.gz", "b.json.zst", "c.zst"].iter().map(|s| s.to_string()).collect());
    }

    #[test]
    fn one_discovery_reads_each_file_once() {
        // Names without `.trace.json` are read to decide: the folder's own
        // files, a folder below with traces only, and a file that is not a
        // trace, whichever walks meet them.
        let doc = br#"{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2}]}"#;
        let flat = tempfile::tempdir().unwrap();
        for name in ["rank0.json", "rank1.json"] {
            std::fs::write(flat.path().join(name), doc).unwrap();
        }
        std::fs::write(flat.path().join("notes.json"), br#"{"not": "a trace"}"#).unwrap();
        let nested = tempfile::tempdir().unwrap();
        let run = nested.path().join("run1");
        std::fs::create_dir(&run).unwrap();
        for name in ["rank0.json", "rank1.json", "other.json"] {
            std::fs::write(run.join(name), if name == "other.json" { &br#"[1]"#[..] } else { doc }).unwrap();
        }
        for (dir, files, traces) in [(flat.path(), 3, 1), (nested.path(), 3, 1)] {
            let mut sniffs = Sniffs::default();
            let targets = trace_targets(dir, &mut sniffs).unwrap();
            assert_eq!(targets.traces.len(), traces, "{dir:?}");
            assert_eq!(targets.rank, Some(0), "{dir:?}");
            assert_eq!(sniffs.reads, files, "{dir:?}");
        }
    }

    #[test]
    fn stages_from_paths() {
        assert_eq!(parse_stage(Path::new("/a/b/run-extend/x.json")), Stage::Extend);
        assert_eq!(parse_stage(Path::new("/a/prefill/x.json")), Stage::Extend);
        assert_eq!(parse_stage(Path::new("/a/sglang_decode/x.json")), Stage::Decode);
        assert_eq!(parse_stage(Path::new("/a/decode/x.json")), Stage::Decode);
        assert_eq!(parse_stage(Path::new("/a/b/x.json")), Stage::All);
        assert_eq!(parse_stage(Path::new("/x_prefill/a/b/c/d/e/f.json")), Stage::All);
    }

    #[test]
    fn ranks_from_names() {
        assert_eq!(parse_tp_rank(Path::new("worker3_step_12.json")), Some(3));
        assert_eq!(parse_tp_rank(Path::new("x-TP-2.json")), Some(2));
        assert_eq!(parse_tp_rank(Path::new("rank-0.json")), None);
        assert_eq!(parse_tp_rank(Path::new("a_tp1.json")), Some(1));
        assert_eq!(parse_tp_rank(Path::new("bs_32_rank0.json.gz")), Some(0));
        assert_eq!(parse_tp_rank(Path::new("laptop1.json")), None);
    }

    #[test]
    fn batch_ranks_also_take_a_separator_after_the_word() {
        assert_eq!(parse_rank(Path::new("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")), Some(34));
        assert_eq!(parse_rank(Path::new("sampled_rank-1.json.gz")), Some(1));
        assert_eq!(parse_rank(Path::new("rank_5.pt.trace.json")), Some(5));
        assert_eq!(parse_rank(Path::new("worker-6.pt.trace.json")), Some(6));
        assert_eq!(parse_rank(Path::new("x-TP-2.json")), Some(2));
        assert_eq!(parse_rank(Path::new("worker3_step_12.json")), Some(3));
        // The word must start a part of the name, and the digits end one.
        assert_eq!(parse_rank(Path::new("prerank-3.json")), None);
        assert_eq!(parse_rank(Path::new("rank-3x.json")), None);
        assert_eq!(parse_rank(Path::new("rank--3.json")), None);
    }

    /// A training trace's first events: ProfilerStep, aten ops, torch.nn
    /// frames, nothing of a serving framework.
    const TRAINING_SAMPLE: &str = "ProfilerStep#12 aten::conv2d aten::batch_norm \
        torch/nn/modules/conv.py(456): forward train.py(88): train_step nccl:all_reduce";

    fn resolve_with_sample(sample: &'static str, undetected: Undetected) -> Framework {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("rank0.trace.json");
        std::fs::write(&trace, br#"{"traceEvents": []}"#).unwrap();
        resolve_framework(FrameworkChoice::Auto, &trace, None, &[], &|_| detect_from_text(sample), &|| None, undetected)
    }

    #[test]
    fn an_unhinted_training_trace_resolves_to_the_generic_framework() {
        assert_eq!(resolve_with_sample(TRAINING_SAMPLE, Undetected::Generic), Framework::Generic);
    }

    #[test]
    fn the_reference_framework_fallback_stays_sglang() {
        assert_eq!(resolve_with_sample(TRAINING_SAMPLE, Undetected::Sglang), Framework::Sglang);
    }

    #[test]
    fn trace_strings_name_the_framework_only_outside_the_reference_compat() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("rank0.trace.json");
        std::fs::write(&trace, br#"{"traceEvents": []}"#).unwrap();
        let resolve = |undetected| {
            let sample = |_: &Path| detect_from_text(TRAINING_SAMPLE);
            resolve_framework(FrameworkChoice::Auto, &trace, None, &[], &sample, &|| Some(Framework::Vllm), undetected)
        };
        assert_eq!(resolve(Undetected::Generic), Framework::Vllm);
        assert_eq!(resolve(Undetected::Sglang), Framework::Sglang);
    }

    #[test]
    fn framework_hints_win_over_either_fallback() {
        let sglang = "forward python/sglang/srt/model_executor/model_runner.py(1): forward";
        let vllm = "vllm/v1/worker/gpu_model_runner.py(1): execute_model";
        for undetected in [Undetected::Generic, Undetected::Sglang] {
            assert_eq!(resolve_with_sample(sglang, undetected), Framework::Sglang);
            assert_eq!(resolve_with_sample(vllm, undetected), Framework::Vllm);
        }
        let dir = tempfile::tempdir().unwrap();
        let fixed = FrameworkChoice::Fixed(Framework::Generic);
        let got =
            resolve_framework(fixed, dir.path(), None, &[], &|_| detect_from_text(vllm), &|| None, Undetected::Sglang);
        assert_eq!(got, Framework::Generic);
    }
}
