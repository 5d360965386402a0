//! Which trace files an input path stands for: a file is itself; a profile
//! directory yields its newest trace per stage for one rank (rank 0 when
//! present), skipping `merged-` files. Also the stage and rank a path names,
//! and the `server_args.json` kept beside a trace.

use std::path::{Path, PathBuf};

use crate::analysis::framework::{detect_from_server_args, detect_from_text, Framework, FrameworkChoice};
use crate::analysis::stage::{parse_stage, Stage};
use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::ingest::{load_path, IngestOptions};

const IGNORED_NAMES: &[&str] = &["server_args.json", "metadata.json", "config.json"];

/// Finds `word` + digits in `name` (ASCII case-insensitive), optionally
/// requiring a `_`/`-` (or the start) before and `_`/`.`/`-` (or the end)
/// after, and returns the number.
fn find_numbered(name: &str, word: &str, bounded: bool) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut from = 0;
    while let Some(off) = lower[from..].find(word) {
        let i = from + off;
        from = i + 1;
        if bounded && i > 0 && !matches!(b[i - 1], b'_' | b'-') {
            continue;
        }
        let start = i + word.len();
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

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Whether a file is a trace: by name for `*.trace.json[.gz]`, else by
/// content (an object with `traceEvents`, or a non-empty event array).
pub fn file_looks_like_trace(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if IGNORED_NAMES.contains(&name.as_str()) || path.is_dir() {
        return false;
    }
    if name.ends_with(".trace.json") || name.ends_with(".trace.json.gz") || name.contains(".pt.trace.json") {
        return true;
    }
    if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
        return false;
    }
    // Discovery asks about the same file several times (stage folders, the
    // newest-trace choice, rank selection); read each file's content once.
    type Verdicts = std::sync::Mutex<std::collections::HashMap<PathBuf, bool>>;
    static CHECKED: std::sync::LazyLock<Verdicts> = std::sync::LazyLock::new(Default::default);
    if let Some(&v) = CHECKED.lock().ok().as_ref().and_then(|c| c.get(path)) {
        return v;
    }
    let verdict = content_looks_like_trace(path);
    if let Ok(mut c) = CHECKED.lock() {
        c.insert(path.to_path_buf(), verdict);
    }
    verdict
}

/// The content test: an object with `traceEvents`, or a non-empty event
/// array, that parses completely (the reference loads the whole file).
fn content_looks_like_trace(path: &Path) -> bool {
    #[cfg(test)]
    CONTENT_CHECKS.lock().unwrap_or_else(|e| e.into_inner()).push(path.to_path_buf());
    match load_path(path, &IngestOptions::default()) {
        Ok(t) => {
            if t.meta.top_level_array {
                t.counts.events > 0
            } else {
                t.meta.top_level_keys.iter().any(|k| k == "traceEvents")
            }
        }
        Err(_) => false,
    }
}

/// Every path whose content was checked, in order (tests count them).
#[cfg(test)]
static CONTENT_CHECKS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn walk(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if recursive {
                walk(&p, true, out);
            }
            continue;
        }
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(p);
        }
    }
}

/// Trace files in a directory (or the file itself), oldest first.
pub fn discover_trace_files(path: &Path, recursive: bool, limit: Option<usize>) -> Vec<PathBuf> {
    if path.is_file() {
        return if file_looks_like_trace(path) { vec![path.to_path_buf()] } else { vec![] };
    }
    let mut found = Vec::new();
    walk(path, recursive, &mut found);
    let mut seen = std::collections::HashSet::new();
    let mut candidates: Vec<PathBuf> = found
        .into_iter()
        .map(|p| p.canonicalize().unwrap_or(p))
        .filter(|p| seen.insert(p.clone()))
        .filter(|p| p.exists() && file_looks_like_trace(p))
        .collect();
    candidates.sort_by_key(|p| mtime(p));
    match limit {
        Some(0) => vec![],
        Some(n) => candidates.split_off(candidates.len().saturating_sub(n)),
        None => candidates,
    }
}

fn newest_trace_dir(path: &Path) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path.parent().map(Path::to_path_buf).unwrap_or_default());
    }
    if !discover_trace_files(path, false, None).is_empty() {
        return Ok(path.to_path_buf());
    }
    let traces = discover_trace_files(path, true, None);
    let mut dirs: Vec<(PathBuf, SystemTime)> = Vec::new();
    for t in &traces {
        let parent = t.parent().map(Path::to_path_buf).unwrap_or_default();
        let m = mtime(t);
        match dirs.iter_mut().find(|(d, _)| *d == parent) {
            Some((_, best)) => *best = (*best).max(m),
            None => dirs.push((parent, m)),
        }
    }
    dirs.sort_by_key(|(_, m)| *m);
    dirs.pop().map(|(d, _)| d).ok_or_else(|| Error::usage(format!("No trace files found under {}", path.display())))
}

/// `server_args.json` beside the trace (or in its parent directory).
pub fn load_server_args(path: &Path) -> Option<serde_json::Value> {
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

/// The traces an input path stands for, in (stage, file name) order, and the
/// server arguments found with them.
pub fn discover_trace_targets(path: &Path) -> Result<(Vec<PathBuf>, Option<serde_json::Value>)> {
    if path.is_file() {
        return Ok((vec![path.to_path_buf()], load_server_args(path)));
    }
    if !path.exists() {
        return Err(Error::usage(format!("{}: no such file or directory", path.display())));
    }
    let direct = discover_trace_files(path, false, None);
    let recursive = discover_trace_files(path, true, None);
    let (traces, trace_dir) =
        if direct.is_empty() && !recursive.is_empty() && recursive.iter().any(|t| parse_stage(t) != Stage::All) {
            (recursive, path.to_path_buf())
        } else {
            let dir = newest_trace_dir(path)?;
            (discover_trace_files(&dir, false, None), dir)
        };
    if traces.is_empty() {
        return Err(Error::usage(format!("No trace files found under {}", trace_dir.display())));
    }
    let non_merged: Vec<PathBuf> = traces
        .iter()
        .filter(|t| !t.file_name().map(|n| n.to_string_lossy().starts_with("merged-")).unwrap_or(false))
        .cloned()
        .collect();
    let mut selected = if non_merged.is_empty() { traces } else { non_merged };
    let mut ranks: Vec<u64> = selected.iter().filter_map(|t| parse_tp_rank(t)).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if let Some(&first) = ranks.first() {
        let rank = if ranks.contains(&0) { 0 } else { first };
        selected.retain(|t| parse_tp_rank(t) == Some(rank));
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
    selected.sort_by(|a, b| {
        parse_stage(a).cmp(&parse_stage(b)).then_with(|| a.file_name().cmp(&b.file_name()))
    });
    Ok((selected, load_server_args(&trace_dir)))
}

/// Framework hinted by an input path: its text, its server args, then the
/// sample text of the trace (for a directory, of its three newest traces).
/// `sample_of` loads a trace and returns its framework sample text.
pub fn detect_from_path(path: &Path, sample_of: &dyn Fn(&Path) -> Option<String>) -> Option<Framework> {
    if let Some(h) = detect_from_text(&path.to_string_lossy()) {
        return Some(h);
    }
    if let Some(h) = detect_from_server_args(load_server_args(path).as_ref()) {
        return Some(h);
    }
    if path.is_file() {
        return sample_of(path).and_then(|s| detect_from_text(&s));
    }
    discover_trace_files(path, true, Some(3)).iter().find_map(|t| sample_of(t).and_then(|s| detect_from_text(&s)))
}

/// The reference's `resolve_framework` for a local input.
pub fn resolve_framework(
    requested: FrameworkChoice,
    input_path: &Path,
    server_args: Option<&serde_json::Value>,
    sample_of: &dyn Fn(&Path) -> Option<String>,
) -> Framework {
    if let FrameworkChoice::Fixed(f) = requested {
        return f;
    }
    detect_from_server_args(server_args)
        .or_else(|| detect_from_path(input_path, sample_of))
        .unwrap_or(Framework::Sglang)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_content_is_read_once_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("a.json");
        std::fs::write(&trace, r#"{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2}]}"#).unwrap();
        let other = dir.path().join("b.json");
        std::fs::write(&other, r#"{"not": "a trace"}"#).unwrap();
        for _ in 0..3 {
            let found = discover_trace_files(dir.path(), false, None);
            assert_eq!(found, vec![trace.canonicalize().unwrap()]);
        }
        assert!(file_looks_like_trace(&trace.canonicalize().unwrap()));
        assert!(!file_looks_like_trace(&other.canonicalize().unwrap()));
        let checks = CONTENT_CHECKS.lock().unwrap().clone();
        for p in [&trace, &other] {
            let p = p.canonicalize().unwrap();
            assert_eq!(checks.iter().filter(|c| **c == p).count(), 1, "{}", p.display());
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
}
