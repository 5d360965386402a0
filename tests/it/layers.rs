//! The module graph of `src/` follows the data: no import circle between
//! modules, and nothing in `analysis/` (or the layers below it) reaches up
//! into the drivers (`run`), the renderers (`report`) or the command line
//! (`commands`).
//!
//! A module is a top-level module (`src/run/…` is `run`), or for
//! `analysis/` one of its submodules (`src/analysis/sites/frames.rs` is
//! `analysis::sites`). An arrow is any `crate::…` path (or a `super::…`
//! path that leaves the module) in the code outside `#[cfg(test)]` items.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module path of a source file, as components (`["analysis", "sites", "frames"]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// The graph node a module path belongs to.
fn node(path: &[String]) -> Option<String> {
    match path.first().map(String::as_str) {
        None => None,
        Some("analysis") if path.len() >= 2 => Some(format!("analysis::{}", path[1])),
        Some(top) => Some(top.to_string()),
    }
}

/// The code of a file without its `#[cfg(test)]` items (test modules sit
/// at the end of a file, or are separate `tests.rs` files).
fn non_test_code(text: &str) -> &str {
    match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// Module paths referenced from `code`, resolved against the file's module.
fn references(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    for (start, kw) in code
        .match_indices("crate::")
        .map(|(i, _)| (i, "crate"))
        .chain(code.match_indices("super::").map(|(i, _)| (i, "super")))
    {
        if start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b':') {
            continue;
        }
        let mut base: Vec<String> = if kw == "crate" {
            Vec::new()
        } else {
            // `super` of a `mod.rs` file is its directory's parent.
            let mut m = module.to_vec();
            m.pop();
            m
        };
        let rest = &code[start + kw.len() + 2..];
        let mut segs = rest.split("::");
        for seg in segs.by_ref() {
            let name: String = seg.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.is_empty() || name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                break;
            }
            if name == "super" {
                base.pop();
                continue;
            }
            base.push(name.clone());
            if name.len() != seg.len() {
                break;
            }
        }
        out.push(base);
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        let module = module_of(&src, &f);
        let Some(from) = node(&module) else { continue };
        edges.entry(from.clone()).or_default();
        for r in references(&module, non_test_code(&text)) {
            if let Some(to) = node(&r) {
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// A circle in the graph, if any, as the nodes along it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn module_graph_has_no_circle() {
    let edges = graph();
    assert!(edges.contains_key("analysis::overlap") && edges.contains_key("run"), "graph looks empty: {edges:?}");
    if let Some(c) = find_cycle(&edges) {
        panic!("import circle: {}", c.join(" -> "));
    }
}

#[test]
fn lower_layers_do_not_reach_up() {
    let edges = graph();
    let upper = ["run", "report", "commands", "main"];
    let lower = |n: &str| {
        n.starts_with("analysis") || ["columns", "ingest", "input", "tokenizer", "pysem", "error"].contains(&n)
    };
    let mut bad = Vec::new();
    for (from, tos) in &edges {
        if !lower(from) {
            continue;
        }
        for to in tos {
            if upper.contains(&to.as_str()) {
                bad.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(bad.is_empty(), "arrows from the data and analysis layers up: {bad:?}");
    // Renderers read the model; they never drive a run.
    let report = edges.get("report").cloned().unwrap_or_default();
    assert!(!report.contains("commands"), "report -> commands");
}

#[test]
fn the_checker_sees_circles() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&edges), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&edges), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    let r = references(
        &["analysis".into(), "sites".into(), "frames".into()],
        "use super::locations::x; use crate::analysis::kernels::extract::py_cmp;",
    );
    assert_eq!(
        r,
        vec![
            vec!["analysis".to_string(), "kernels".into(), "extract".into(), "py_cmp".into()],
            vec!["analysis".into(), "sites".into(), "locations".into(), "x".into()]
        ]
    );
}
