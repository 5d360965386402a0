//! `--format html`: the page written for a triage, a batch and a diff,
//! checked statically (size, no links that load anything) and in headless
//! Chromium (the page's own counts of charts and table rows against the
//! JSON report of the same command, no script errors, no blocked
//! requests), with a screenshot kept for a person to look at.
//!
//! The traceMap and param_dlrm cases need `../shared`; without it they
//! report "not run" (and fail under `CI=true`), as they do when Chromium
//! is missing. The bundled-trace case always runs its static checks.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
);

/// Largest page allowed.
const MAX_BYTES: u64 = 2 * 1024 * 1024;

/// Rows the pages show at most (the renderers' limits).
const BATCH_KERNEL_ROWS: usize = 50;
const DIFF_KERNEL_ROWS: usize = 200;
const DIFF_TIMELINE_ROWS: usize = 13;

/// Says a check did not run; under `CI=true` that is a failure.
fn not_run(what: &str) {
    if common::ci() {
        panic!("{what} (required under CI=true)");
    }
    eprintln!("not run: {what}");
}

/// The shared trace folder, or `None` after reporting it missing.
fn shared_traces() -> Option<PathBuf> {
    let root = common::Corpus::shared_location();
    let traces = root.join("traces");
    if traces.join("traceMap").is_dir() && traces.join("param_dlrm_8rank").is_dir() {
        Some(traces)
    } else {
        not_run(&format!("{} is missing: the HTML checks over the shared traces", traces.display()));
        None
    }
}

/// The Chromium binary on `PATH`, or `None` after reporting it missing.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file());
    if found.is_none() {
        not_run("chromium is not installed: the headless-browser checks");
    }
    found
}

fn json(args: &[&str]) -> Value {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = common::run(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// Writes the page of `args` with `-o`; returns its path and text.
fn write_html(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, String) {
    let file = dir.join(format!("{name}.html"));
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    let file_arg = file.to_str().expect("utf-8 path").to_string();
    all.extend_from_slice(&["-o", &file_arg]);
    let out = common::run(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).expect("read the page");
    (file, text)
}

/// Size, self-containment and escaping of a page.
fn static_checks(file: &Path, html: &str) {
    let size = std::fs::metadata(file).expect("page").len();
    eprintln!("{}: {size} bytes", file.display());
    assert!(size < MAX_BYTES, "{} is {size} bytes", file.display());
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("http-equiv=\"Content-Security-Policy\""));
    for attr in ["src=", "href="] {
        for (i, _) in html.match_indices(attr) {
            let value = &html[i + attr.len()..];
            let value = value.trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http://") && !value.starts_with("https://") && !value.starts_with("//"),
                "{}: remote {attr} at byte {i}",
                file.display()
            );
        }
    }
    assert_eq!(html.matches("<script").count(), 1, "only the page's own script");
    let body = &html[html.find("</head>").expect("end of head")..];
    assert!(!body.contains("NaN"), "{}: a NaN in the page", file.display());
}

/// An attribute of `<body>` in Chromium's DOM dump.
fn body_attr(dom: &str, name: &str) -> String {
    let start = dom.find("<body").unwrap_or_else(|| panic!("no <body> in the DOM: {dom}"));
    let tag = &dom[start..start + dom[start..].find('>').expect("end of <body>")];
    let key = format!("{name}=\"");
    let Some(i) = tag.find(&key) else { panic!("<body> has no {name}: {tag}") };
    let rest = &tag[i + key.len()..];
    rest[..rest.find('"').expect("closing quote")].to_string()
}

/// Loads the page in headless Chromium: checks its counts, errors and
/// blocked requests, and keeps a screenshot beside it.
fn browser_checks(chrome: &Path, file: &Path, svgs: usize, rows: usize) {
    let url = format!("file://{}", file.display());
    // The browser profile is thrown away; the page and screenshot are kept.
    let profile_dir = tempfile::tempdir().expect("tempdir");
    let profile = profile_dir.path();
    let base = |extra: &[String]| {
        let mut cmd = Command::new(chrome);
        cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&url);
        cmd.output().expect("run chromium")
    };
    let out = base(&["--dump-dom".to_string()]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "chromium --dump-dom: {}", String::from_utf8_lossy(&out.stderr));
    let got_svgs = body_attr(&dom, "data-svg-count");
    let got_rows = body_attr(&dom, "data-table-rows");
    eprintln!("{}: data-svg-count={got_svgs} data-table-rows={got_rows}", file.display());
    assert_eq!(got_svgs, svgs.to_string(), "{}: svg elements", file.display());
    assert_eq!(got_rows, rows.to_string(), "{}: table rows", file.display());
    assert_eq!(body_attr(&dom, "data-errors"), "", "{}: script errors", file.display());
    assert_eq!(body_attr(&dom, "data-blocked"), "", "{}: blocked requests", file.display());

    let png = file.with_extension("png");
    let out = base(&[format!("--screenshot={}", png.display()), "--window-size=1400,2400".to_string()]);
    assert!(out.status.success(), "chromium --screenshot: {}", String::from_utf8_lossy(&out.stderr));
    assert!(png.is_file(), "no screenshot at {}", png.display());
    eprintln!("screenshot: {}", png.display());
    // A copy under the target folder, where it is easy to find:
    // target/html-screenshots/NAME.png.
    let bin = Path::new(env!("CARGO_BIN_EXE_torchtriage"));
    if let Some(target) = bin.parent().and_then(Path::parent) {
        let shots = target.join("html-screenshots");
        let copy = shots.join(png.file_name().expect("file name"));
        if std::fs::create_dir_all(&shots).and_then(|()| std::fs::copy(&png, &copy)).is_ok() {
            eprintln!("screenshot: {}", copy.display());
        }
    }
}

/// A temp folder kept after the test, so its page and screenshot can be
/// looked at.
fn kept_dir(name: &str) -> PathBuf {
    let dir = tempfile::Builder::new().prefix(&format!("torchtriage-html-{name}-")).tempdir().expect("tempdir");
    dir.keep()
}

/// Charts and rows of a triage page, from the triage JSON.
fn triage_counts(v: &Value) -> (usize, usize) {
    let mut stages: Vec<String> =
        arr(&v["timeline"]["stages"]).iter().map(|s| s["stage"].as_str().unwrap_or("").to_string()).collect();
    let timeline_charts = stages.len();
    let mut kernel_charts = 0;
    let mut counted: Vec<String> = Vec::new();
    for t in arr(&v["kernel_tables"]).iter().filter(|t| !arr(&t["rows"]).is_empty()) {
        let stage = t["stage"].as_str().unwrap_or("").to_string();
        if !counted.contains(&stage) {
            counted.push(stage.clone());
            kernel_charts += 1;
        }
        if !stages.contains(&stage) {
            stages.push(stage);
        }
    }
    let rendered = |rows: &[Value]| rows.iter().filter(|r| r["rendered"] == Value::Bool(true)).count();
    let kernel_rows: usize = arr(&v["kernel_tables"]).iter().map(|t| rendered(arr(&t["rows"]))).sum();
    // Each stage's idle time by stream, a row per GPU and stream.
    let idle_rows: usize = arr(&v["timeline"]["stages"])
        .iter()
        .flat_map(|s| arr(&s["gpus"]))
        .map(|g| arr(&g["idle_by_stream"]).len())
        .sum();
    let rows = kernel_rows + rendered(arr(&v["overlap"])) + arr(&v["fuse"]).len() + idle_rows;
    (timeline_charts + kernel_charts, rows)
}

fn triage_case(name: &str, trace: &str) {
    let dir = kept_dir(name);
    let (file, html) = write_html(&dir, name, &["triage", trace]);
    static_checks(&file, &html);
    let (svgs, rows) = triage_counts(&json(&["triage", trace]));
    assert!(svgs > 0 && rows > 0, "the report has charts and rows");
    if let Some(chrome) = chromium() {
        browser_checks(&chrome, &file, svgs, rows);
    }
}

#[test]
fn bundled_trace_triage_page() {
    triage_case("bundled", BUNDLED);
}

#[test]
fn bundled_trace_diff_page_against_itself() {
    let dir = kept_dir("bundled-diff");
    let (file, html) = write_html(&dir, "bundled-diff", &["diff", BUNDLED, BUNDLED]);
    static_checks(&file, &html);
    let (svgs, rows) = diff_counts(&json(&["diff", BUNDLED, BUNDLED]));
    if let Some(chrome) = chromium() {
        browser_checks(&chrome, &file, svgs, rows);
    }
}

#[test]
fn tracemap_h100_triage_page() {
    let Some(traces) = shared_traces() else { return };
    let trace = traces.join("traceMap/1_h100_1000isl_10osl_32con.pt.trace.json.gz");
    triage_case("h100", trace.to_str().unwrap());
}

#[test]
fn param_dlrm_batch_page() {
    let Some(traces) = shared_traces() else { return };
    let input = traces.join("param_dlrm_8rank");
    let input = input.to_str().unwrap();
    let dir = kept_dir("batch");
    let (file, html) = write_html(&dir, "batch", &["batch", input]);
    static_checks(&file, &html);
    let v = json(&["batch", input]);
    let stages = arr(&v["stages"]);
    let rows: usize =
        stages.iter().map(|s| arr(&s["ranks"]).len() + arr(&s["kernels"]).len().min(BATCH_KERNEL_ROWS)).sum();
    // Rank 3 computes the most, but too little more to explain the waits:
    // no rank is marked slow, and the page says why.
    assert!(!html.contains("class=\"slow\""), "no rank is marked slow");
    assert!(html.contains("No slow rank: rank 3 computes the most"), "the page says why");
    if let Some(chrome) = chromium() {
        browser_checks(&chrome, &file, stages.len(), rows);
    }
}

/// Charts and rows of a diff page, from the diff JSON.
fn diff_counts(v: &Value) -> (usize, usize) {
    let stages = arr(&v["stages"]);
    let rows = stages
        .iter()
        .map(|s| {
            // The page shows the kernels the share bar lets through.
            let shown = arr(&s["kernels"]).iter().filter(|k| k["rendered"] == true).count();
            DIFF_TIMELINE_ROWS + shown.min(DIFF_KERNEL_ROWS) + arr(&s["categories"]).len()
        })
        .sum();
    (stages.len(), rows)
}

#[test]
fn tracemap_h100_mi300x_diff_page() {
    let Some(traces) = shared_traces() else { return };
    let base = traces.join("traceMap/1_h100_1000isl_10osl_32con.pt.trace.json.gz");
    let new = traces.join("traceMap/1_mi300x_1000isl_10osl_32con.pt.trace.json.gz");
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let dir = kept_dir("diff");
    let (file, html) = write_html(&dir, "diff", &["diff", base, new]);
    static_checks(&file, &html);
    let (svgs, rows) = diff_counts(&json(&["diff", base, new]));
    assert!(rows > DIFF_TIMELINE_ROWS, "the diff has kernel rows");
    if let Some(chrome) = chromium() {
        browser_checks(&chrome, &file, svgs, rows);
    }
}

/// A small trace: one GEMM launched `delay_us` before it starts, and with
/// `comm` an all-reduce as well.
fn small_trace(dir: &Path, name: &str, delay_us: f64, comm: bool) -> String {
    let kernel = |name: &str, ts: f64, corr: u32| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 50, "args": {{"stream": 7, "correlation": {corr}}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 1, "args": {{"correlation": {corr}}}}}"#,
            ts - delay_us - 1.0
        )
    };
    let mut events = vec![kernel("sm90_gemm", 100_000.0, 1)];
    if comm {
        events.push(kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 100_100.0, 2));
    }
    let path = dir.join(name);
    std::fs::write(&path, format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn diff_page_writes_times_as_the_markdown_does() {
    // A launch delay of 585 µs against 41.2 ms is written in the unit that
    // suits each; a category on one side only has "-" on the other.
    let dir = tempfile::tempdir().unwrap();
    let base = small_trace(dir.path(), "base.json", 585.0, false);
    let new = small_trace(dir.path(), "new.json", 41_198.0, true);
    let (_, html) = write_html(dir.path(), "d", &["diff", &base, &new]);
    let markdown = String::from_utf8(common::run(&["-q", "diff", &base, &new]).stdout).unwrap();
    for shown in ["585.0 µs", "41.20 ms"] {
        assert!(markdown.contains(shown), "markdown lacks {shown}: {markdown}");
        assert!(html.contains(shown), "html lacks {shown}");
    }
    let category = html.split("<h3>Categories").nth(1).expect("a categories table");
    let comm_row = category.split("<tr").find(|r| r.contains(">communication<")).expect("a communication row");
    assert!(!comm_row.contains("0.00 ms"), "{comm_row}");
    // Its missing figures have no sort key, so the page sorts them after
    // every number, not as zeros among the unchanged rows.
    assert!(comm_row.contains("<td class=\"num\" data-v=\"\">-</td>"), "{comm_row}");
    assert!(!comm_row.contains("data-v=\"0\""), "{comm_row}");
}

/// The batch page's rank table has every column its legend explains (the
/// markdown's columns).
#[test]
fn batch_page_rank_table_has_the_legends_columns() {
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let out = common::run(&["-q", "batch", "--format", "html", ranks]);
    assert_eq!(out.status.code(), Some(0));
    let html = String::from_utf8(out.stdout).unwrap();
    for column in ["Busy", "Compute", "Overlap", "Exposed comm", "Top exposed comm kernel", "Top headroom", "Role"] {
        assert!(html.contains(&format!(">{column}<")) || html.contains(&format!(">{column} ")), "no {column} column");
    }
    assert!(html.contains("top headroom:"), "the legend explains it");
}

/// The notes the command line prints on stderr are on the page too: a
/// page passed on has no stderr beside it.
#[test]
fn a_triage_page_carries_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");
    let (_, html) = write_html(dir.path(), "ranks.html", &["triage", ranks]);
    let want = json(&["triage", ranks]);
    let notes = arr(&want["notes"]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = notes[0].as_str().unwrap();
    assert!(note.contains("analysed rank 0 only"), "{note}");
    let start = html.find("<p class=\"note\">note: ").expect("a note paragraph");
    assert!(html[start..].split("</p>").next().unwrap().contains("analysed rank 0 only"), "{html}");
}

/// A kernel launched from several Python sites lists each on a line of its
/// own, each shortened alone, so the page never shows a cut that runs two
/// sites together (and reads as one site with the second's share).
#[test]
fn list_cells_show_an_entry_a_line() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let out = common::run(&["-q", "triage", "--format", "html", fixture]);
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(
        html.contains(">vllm/v1/worker/gpu_model_runner.py:1402 execute_model (site share 53%)<br>vllm/v1/engine/core.py:245 step (site share 25%)</td>"),
        "the two sites, a line each"
    );
    assert!(!html.contains("(site share 53%); vllm"), "not joined into one line");
}

#[test]
fn names_in_the_page_s_prose_are_not_escaped_for_markdown() {
    // The top kernel's name and the slowest step's name hold characters a
    // markdown table escapes (`<` before a letter, `|`); the page shows
    // them as they are, and the markdown report escapes them.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let events = [
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1 a|b","pid":1,"tid":1,"ts":0,"dur":100}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":1}}"#,
        r#"{"ph":"X","cat":"kernel","name":"void gemm<float>(int)","pid":0,"tid":7,"ts":5,"dur":50,"args":{"stream":7,"correlation":1}}"#,
    ];
    std::fs::write(&trace, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let t = trace.to_str().unwrap();
    let (_, html) = write_html(dir.path(), "names", &["triage", t]);
    assert!(html.contains("top kernel void gemm&lt;float&gt; ("), "{html}");
    assert!(html.contains("slowest: ProfilerStep#1 a|b at ts"), "{html}");
    assert!(!html.contains("\\&lt;") && !html.contains("\\|"), "{html}");
    let md = String::from_utf8(common::run(&["-q", "triage", "--format", "markdown", t]).stdout).unwrap();
    assert!(md.contains("top kernel void gemm\\<float> ("), "{md}");
    assert!(md.contains("slowest: ProfilerStep#1 a\\|b at ts"), "{md}");
}
