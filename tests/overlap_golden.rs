//! Overlap analysis against the reference's goldens (`tests/data/golden/`
//! and `../shared/golden/`).
//!
//! The `overlap_stats` trials check, one per trace, the stage bundles
//! (labels and kernel counts) and the sweep's busy / overlap / peak-stream
//! numbers; they need no kernel map. Those over `../shared` are reported
//! ignored when it is missing, and fail under `CI=true` (tests/common/mod.rs).
//! `overlap_rows_match_harness_dumps` (ignored; run with
//! `OVERLAP_HARNESS_DUMPS=<dir> cargo test --test overlap_golden -- --ignored`)
//! also checks the action rows, taking the kernel-map entries and formal
//! stage payloads from JSON dumps made outside the repository by an
//! instrumented run of the reference.

mod common;

use std::path::{Component, Path, PathBuf};

use common::Corpus;
use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use torchtriage::analysis::overlap::{
    analyze_overlap, build_action_rows, stage_bundles, ActionRow, Advice, Masking, RowOptions, ShareBasis, Stage,
};
use torchtriage::analysis::types::{KernelEntry, SiteEntry, StagePayload};
use torchtriage::ingest::{load_path, IngestOptions};

/// Golden JSON files, one per trace (the directory run is left out).
fn golden_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") && !p.to_string_lossy().ends_with(".dir.json") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The reference's stage-from-path rule (last six path parts).
fn parse_stage(path: &Path) -> Stage {
    let parts: Vec<String> = path
        .components()
        .map(|c| match c {
            Component::RootDir => "/".to_string(),
            other => other.as_os_str().to_string_lossy().to_lowercase(),
        })
        .collect();
    let parts = &parts[parts.len().saturating_sub(6)..];
    let name = parts.join(" ");
    let segments = format!("/{}/", parts.join("/"));
    if ["-extend", "-prefill", "_extend", "_prefill"].iter().any(|m| name.contains(m))
        || ["extend", "prefill"].iter().any(|s| segments.contains(&format!("/{s}/")))
    {
        return Stage::Extend;
    }
    if ["-decode", "_decode"].iter().any(|m| name.contains(m)) || segments.contains("/decode/") {
        return Stage::Decode;
    }
    Stage::All
}

/// Equal within 1e-9 relative, or exactly equal when `OVERLAP_EXACT` is set.
fn close(a: f64, b: f64) -> bool {
    if std::env::var_os("OVERLAP_EXACT").is_some() {
        return a == b;
    }
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// (trace name, golden JSON path, trace path) for every golden of a corpus.
fn cases(corpus: &Corpus) -> Vec<(String, PathBuf, PathBuf)> {
    let golden_dir = corpus.golden_dir();
    golden_files(&golden_dir)
        .into_iter()
        .map(|g| {
            let rel = g.strip_prefix(&golden_dir).unwrap().to_string_lossy().to_string();
            let stem = rel.strip_suffix(".json").unwrap().to_string();
            let trace = corpus.trace_for_golden(&stem);
            (stem, g, trace)
        })
        .collect()
}

/// One trace against its golden: the stage bundles (labels and kernel
/// counts) and the sweep's busy / overlap / peak-stream numbers.
fn check_overlap_stats(golden_path: &Path, trace_path: &Path) -> Result<(), Failed> {
    let golden: Value = serde_json::from_slice(&std::fs::read(golden_path).unwrap()).unwrap();
    let trace = load_path(trace_path, &IngestOptions::default()).unwrap();
    let bundles = stage_bundles(&trace, parse_stage(trace_path), "formal", None, Masking::WordStart);
    let want_bundles = golden["overlap"].as_array().cloned().unwrap_or_default();
    let want_stats = golden["overlap_stats"].as_array().cloned().unwrap_or_default();
    let mut problems = Vec::new();
    if bundles.len() != want_bundles.len() {
        problems.push(format!("{} bundles, want {}", bundles.len(), want_bundles.len()));
    }
    for (i, (_, mut bundle)) in bundles.into_iter().enumerate() {
        let (Some(wb), Some(ws)) = (want_bundles.get(i), want_stats.get(i)) else {
            break;
        };
        if wb["bundle"] != bundle.label.as_str() {
            problems.push(format!("label {} want {}", bundle.label, wb["bundle"]));
        }
        if wb["kernel_events"].as_u64() != Some(bundle.events.len() as u64) {
            problems.push(format!("{}: {} kernels, want {}", bundle.label, bundle.events.len(), wb["kernel_events"]));
        }
        let st = analyze_overlap(&mut bundle.events);
        let checks = [
            ("total_busy_us", st.total_busy_us, wb["total_busy_us"].as_f64()),
            ("stats.total_busy_us", st.total_busy_us, ws["total_busy_us"].as_f64()),
            ("total_overlap_us", st.overlap_us, ws["total_overlap_us"].as_f64()),
            ("max_concurrent_streams", st.max_concurrent_streams as f64, ws["max_concurrent_streams"].as_f64()),
        ];
        for (what, got, want) in checks {
            if !want.is_some_and(|w| close(got, w)) {
                problems.push(format!("{}: {what} {got} want {want:?}", bundle.label));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", trace_path.display(), problems.join("; ")).into())
    }
}

/// One trial per golden JSON of each corpus (the directory run left out).
fn overlap_stats_trials(corpus: &Corpus) -> Vec<Trial> {
    let cases = cases(corpus);
    if cases.is_empty() {
        let message = format!("no golden JSON under {}", corpus.golden_dir().display());
        return vec![common::failing(corpus.name("overlap_stats", "*"), message)];
    }
    cases
        .into_iter()
        .map(|(stem, golden, trace)| {
            Trial::test(corpus.name("overlap_stats", &stem), move || check_overlap_stats(&golden, &trace))
        })
        .collect()
}

fn entry_from_json(v: &Value) -> KernelEntry {
    let s = |v: &Value| -> torchtriage::analysis::types::Text { v.as_str().unwrap_or("").into() };
    KernelEntry {
        category: s(&v["category"]),
        best_location: s(&v["best_location"]),
        sites: v["sites"]
            .as_array()
            .map(|sites| {
                sites
                    .iter()
                    .map(|site| SiteEntry {
                        location: s(&site["location"]),
                        display_location: s(&site["display_location"]),
                        launches: site["launches"].as_u64().unwrap_or(0),
                        total_us: site["total_us"].as_f64().unwrap_or(0.0),
                        share_pct_within_kernel: site["share_pct_within_kernel"].as_f64().unwrap_or(0.0),
                        top_cpu_op: site["top_cpu_op"].as_str().map(Into::into),
                        stack: site["stack"].as_str().map(Into::into),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn row_problems(got: &ActionRow, want: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let strs = [
        ("priority", &got.priority),
        ("verdict", &got.verdict),
        ("kernel", &got.kernel),
        ("category", &got.category),
        ("python_scope", &got.python_scope),
        ("launch_op", &got.launch_op),
        ("dependency_signal", &got.dependency_signal),
        ("prev_neighbor", &got.prev_neighbor),
        ("next_neighbor", &got.next_neighbor),
        ("recommendation", &got.recommendation),
        ("suggestion", &got.suggestion),
    ];
    for (k, g) in strs {
        if want[k].as_str() != Some(g.as_str()) {
            out.push(format!("{k}: {g:?} want {}", want[k]));
        }
    }
    let nums = [
        ("total_us", got.total_us),
        ("share_pct", got.share_pct),
        ("exclusive_ratio", got.exclusive_ratio),
        ("hidden_ratio", got.hidden_ratio),
        ("mapping_ratio", got.mapping_ratio),
        ("representative_idx", got.representative_idx as f64),
    ];
    for (k, g) in nums {
        if !want[k].as_f64().is_some_and(|w| close(g, w)) {
            out.push(format!("{k}: {g} want {}", want[k]));
        }
    }
    out
}

/// Compares one trace with its harness dump (stages, kernel counts, sweep
/// stats and every action row); returns the problems found.
fn check_against_dump(dump: &Value) -> Vec<String> {
    let trace_path = PathBuf::from(dump["trace"].as_str().unwrap_or(""));
    let trace = match load_path(&trace_path, &IngestOptions::default()) {
        Ok(t) => t,
        Err(e) => return vec![format!("load failed: {e}")],
    };
    let stage = parse_stage(&trace_path);
    let started = std::time::Instant::now();
    // The dumps come from the reference itself: mask addresses its way
    // (docs/deviations.md, item 1).
    let mut formal = stage_bundles(&trace, stage, "formal", None, Masking::Reference);
    let mapping = stage_bundles(&trace, stage, "mapping", None, Masking::Reference);
    let stages = dump["stages"].as_array().cloned().unwrap_or_default();
    let mut problems = Vec::new();
    if formal.len() != stages.len() {
        problems.push(format!("{} stages, want {}", formal.len(), stages.len()));
    }
    for ((stage_name, bundle), sd) in formal.iter_mut().zip(&stages) {
        if sd["stage"].as_str() != Some(stage_name.as_str()) {
            problems.push(format!("stage {stage_name} want {}", sd["stage"]));
        }
        if sd["kernel_events"].as_u64() != Some(bundle.events.len() as u64) {
            problems.push(format!("{stage_name}: {} kernels want {}", bundle.events.len(), sd["kernel_events"]));
        }
        let stats = analyze_overlap(&mut bundle.events);
        let ws = &sd["overlap_stats"];
        for (what, got, want) in [
            ("busy", stats.total_busy_us, ws["total_busy_us"].as_f64()),
            ("overlap", stats.overlap_us, ws["total_overlap_us"].as_f64()),
            ("streams", stats.max_concurrent_streams as f64, ws["max_concurrent_streams"].as_f64()),
        ] {
            if !want.is_some_and(|w| close(got, w)) {
                problems.push(format!("{stage_name}: {what} {got} want {want:?}"));
            }
        }
        let pick = mapping
            .iter()
            .find(|(s, _)| s == stage_name)
            .or_else(|| mapping.iter().find(|(s, _)| *s == Stage::All))
            .or_else(|| if mapping.len() == 1 { mapping.first() } else { None });
        let Some((_, mapping_bundle)) = pick else {
            continue;
        };
        let lookups = sd["lookups"].clone();
        let lookup = move |_stage: Stage, name: &str| -> Option<KernelEntry> {
            lookups.get(name).filter(|v| !v.is_null()).map(entry_from_json)
        };
        let payload: Option<StagePayload> = sd["payload"]["kernels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str().into(), entry_from_json(v))).collect());
        let rows = build_action_rows(
            bundle,
            mapping_bundle,
            *stage_name,
            &stats,
            &lookup,
            payload.as_ref(),
            RowOptions { share: ShareBasis::Summed, advice: Advice::Reference, table_limit: 0 },
        );
        let want_rows = sd["rows"].as_array().cloned().unwrap_or_default();
        if rows.len() != want_rows.len() {
            problems.push(format!("{stage_name}: {} rows want {}", rows.len(), want_rows.len()));
        }
        for (j, (g, w)) in rows.iter().zip(&want_rows).enumerate() {
            for p in row_problems(g, w) {
                problems.push(format!("{stage_name} row {j}: {p}"));
            }
        }
    }
    eprintln!("  {}: overlap analysis {:?}", trace_path.display(), started.elapsed());
    problems
}

/// Ignored unless asked for: needs OVERLAP_HARNESS_DUMPS from an
/// instrumented reference run.
fn overlap_rows_match_harness_dumps() {
    let Ok(dumps) = std::env::var("OVERLAP_HARNESS_DUMPS") else {
        eprintln!("skipping: OVERLAP_HARNESS_DUMPS not set");
        return;
    };
    let only = std::env::var("OVERLAP_ONLY").ok();
    let files: Vec<PathBuf> = golden_files(Path::new(&dumps))
        .into_iter()
        .filter(|p| only.as_ref().is_none_or(|o| p.to_string_lossy().contains(o.as_str())))
        .collect();
    let mut matched = 0;
    for file in &files {
        let dump: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let problems = check_against_dump(&dump);
        if problems.is_empty() {
            matched += 1;
        } else {
            println!("  MISMATCH {}:\n    {}", file.display(), problems.join("\n    "));
        }
    }
    println!("overlap rows: {matched} of {} match", files.len());
    assert_eq!(matched, files.len());
}

fn main() {
    let mut trials = common::over_corpora("overlap_stats", overlap_stats_trials);
    trials.push(
        Trial::test("overlap_rows_match_harness_dumps", || {
            overlap_rows_match_harness_dumps();
            Ok(())
        })
        .with_ignored_flag(true),
    );
    common::run_trials(trials);
}
