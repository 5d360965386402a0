//! The default markdown, table and HTML reports say what their tables' terms mean; the
//! reference's layout (`--compat reference`) stays line for line its own;
//! a trace without GPU kernels says so instead of a share bar no row cleared.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
const CPU_ONLY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
);

fn report(format: &str, args: &[&str]) -> String {
    let out = common::run(&[&["-q", "triage", "--format", format][..], args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn markdown(args: &[&str]) -> String {
    report("markdown", args)
}

#[test]
fn the_default_report_explains_its_tables() {
    let md = markdown(&[FIXTURE]);
    let kernel = md.find("\nShare: of the stage's total kernel time").expect("kernel legend");
    let overlap = md.find("\nFormal signal: the kernel's GPU time; share: ").expect("overlap legend");
    let sections = |name: &str| md.find(&format!("\n{name}\n")).unwrap();
    assert!(sections("Kernel Table") < kernel && kernel < sections("Overlap Opportunity Table"));
    assert!(sections("Overlap Opportunity Table") < overlap && overlap < sections("Fuse Opportunity Table"));
    assert!(md.contains("excl (exclusive)") && md.contains("Priority: P1 (act first) to P5 (skip)"));
    let reference = markdown(&[FIXTURE, "--compat", "reference"]);
    assert!(!reference.contains("Formal signal: the kernel's") && !reference.contains("\nShare: of the"));
}

#[test]
fn a_trace_without_kernels_says_so() {
    let md = markdown(&[CPU_ONLY]);
    assert!(md.contains("| No GPU kernels in this trace. |"), "{md}");
    assert!(md.contains("| - | - | No GPU kernels in this trace, so nothing to overlap. |"), "{md}");
    assert!(!md.contains("mapping/formal mode") && !md.contains("\nShare: of the"), "{md}");
    // The reference's own words in its layout.
    let reference = markdown(&[CPU_ONLY, "--compat", "reference"]);
    assert!(reference.contains("No rows cleared the 1.0% reporting bar. Use mapping/formal mode"), "{reference}");
}

#[test]
fn the_html_report_explains_its_tables_too() {
    let html = |trace: &str| {
        let out = common::run(&["-q", "triage", "--format", "html", trace]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let page = html(FIXTURE);
    let kernels = page.find("<p class=\"note\">Share: of the stage&#39;s total kernel time").expect("kernel note");
    let overlap = page.find("<p class=\"note\">Share: the time any launch of the kernel runs").expect("overlap note");
    let heading = |h: &str| page.find(&format!("<h2>{h}</h2>")).unwrap();
    assert!(heading("Kernels") < kernels && kernels < heading("Overlap opportunities"));
    assert!(heading("Overlap opportunities") < overlap && overlap < heading("Fuse opportunities"));
    assert!(page.contains("Dependency: whether the neighbouring kernels"));
    // The overlap table's category is its own, and says so.
    assert!(page.contains(">Overlap category<") && page.contains("Overlap category: the overlap analysis"));
    let cpu_only = html(CPU_ONLY);
    assert!(!cpu_only.contains("Share: the time any launch") && cpu_only.contains("No GPU kernels in this trace"));
    assert!(!cpu_only.contains("No kernel rows at or above"), "the kernels table says why it is empty");
}

#[test]
fn the_table_words_the_overlap_terms_as_markdown_does() {
    let out = common::run(&["-q", "triage", "--format", "table", FIXTURE]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let md = markdown(&[FIXTURE]);
    let start = md.find("Verdict: headroom = ").expect("overlap terms");
    let terms = &md[start..start + md[start..].find("(skip).").unwrap() + "(skip).".len()];
    // The table wraps its legend; compare the words.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words(&table).contains(&words(terms)), "{terms}\n{table}");
}

/// A share bar that hides every row still says what it hid, per stage, and
/// the empty overlap table says how many rows the bar left out rather than
/// the reference's advice to use mapping/formal mode (which the single-trace
/// report already is); `--compat reference` keeps the reference's words.
#[test]
fn a_bar_that_hides_every_row_says_what_it_hid() {
    let md = markdown(&[FIXTURE, "--min-share", "50"]);
    assert!(md.contains("No kernel rows at or above 50.0% share."), "{md}");
    assert!(md.contains("extend/prefill: 9 more kernels below the 50.0% share cut-off hold 100.0%"), "{md}");
    assert!(md.contains("decode: 8 more kernels below the 50.0% share cut-off hold 100.0%"), "{md}");
    assert!(md.contains("No overlap rows at or above 50.0% share; 11 rows are below it (--min-share 0 shows them)."));
    assert!(!md.contains("mapping/formal mode"), "{md}");
    let tb = report("table", &[FIXTURE, "--min-share", "50"]);
    assert!(tb.contains("9 more kernels below the 50.0% share cut-off"), "{tb}");
    assert!(tb.contains("8 more kernels below the 50.0% share cut-off"), "{tb}");
    let reference = markdown(&[FIXTURE, "--min-share", "50", "--compat", "reference"]);
    assert!(reference.contains("Use mapping/formal mode for overlap attribution."), "{reference}");
    assert!(!reference.contains("more kernels below"), "{reference}");
}

/// A stage with kernels that the overlap step did not cover (kernels far
/// from the trace's one stage annotation) gets an overlap section saying
/// so, not none.
#[test]
fn a_stage_the_overlap_step_left_out_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = staged_trace(dir.path());
    let md = markdown(&[trace.to_str().unwrap()]);
    let overlap = md.split("Overlap Opportunity Table").nth(1).unwrap();
    assert!(overlap.contains("##### decode"), "{overlap}");
    assert!(overlap.contains("##### all\nThe overlap step covers the trace's named stages, not this one"), "{overlap}");
}

/// A trace with a `decode` annotation over two launches of one kernel, and
/// two kernels launched far from it (the `all` stage, 50 % each).
fn staged_trace(dir: &std::path::Path) -> std::path::PathBuf {
    staged_trace_of(dir, &[(100, "gemm_a"), (200, "gemm_a"), (100_000, "gemm_a"), (100_100, "gemm_b")])
}

/// A trace with a `decode` annotation over its first millisecond and these
/// kernels launched at these times (µs), each running 50 µs.
fn staged_trace_of(dir: &std::path::Path, launches: &[(u64, &str)]) -> std::path::PathBuf {
    let mut events =
        vec![r#"{"ph": "X", "cat": "user_annotation", "name": "decode", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}"#
            .to_string()];
    for (c, &(ts, name)) in launches.iter().enumerate() {
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{"correlation": {c}}}}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {}, "dur": 50, "args": {{"correlation": {c}, "stream": 7}}}}"#,
            ts + 10
        ));
    }
    let trace = dir.join("staged.json");
    std::fs::write(&trace, format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))).unwrap();
    trace
}

/// A share bar that hides every row of one stage but not of another keeps
/// that stage's table in the JSON (every row hidden) and says in each view
/// what it hid there; `--compat reference` drops the stage as the
/// reference does.
#[test]
fn a_stage_whose_rows_are_all_hidden_keeps_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let trace = staged_trace(dir.path());
    let trace = trace.to_str().unwrap();
    let json: serde_json::Value = serde_json::from_str(&report("json", &[trace, "--min-share", "60"])).unwrap();
    let tables: Vec<(&str, usize, usize)> = json["kernel_tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let rows = t["rows"].as_array().unwrap();
            (t["stage"].as_str().unwrap(), rows.len(), rows.iter().filter(|r| r["rendered"] == true).count())
        })
        .collect();
    assert_eq!(tables, [("decode", 1, 1), ("all", 2, 0)]);
    let md = markdown(&[trace, "--min-share", "60"]);
    let kernels = md.split("Kernel Table").nth(1).unwrap();
    assert!(
        kernels.contains("##### all\nNo kernel rows at or above 60.0% share.\n2 more kernels below the 60.0% share cut-off hold 100.0%"),
        "{kernels}"
    );
    let table = report("table", &[trace, "--min-share", "60"]);
    assert!(table.contains("2 more kernels below the 60.0% share cut-off hold 100.0%"), "{table}");
    let html = report("html", &[trace, "--min-share", "60"]);
    assert!(html.contains("all: 2 more kernels below the 60.0% share cut-off hold 100.0%"), "html");
    let reference: serde_json::Value =
        serde_json::from_str(&report("json", &[trace, "--min-share", "60", "--compat", "reference"])).unwrap();
    assert_eq!(reference["kernel_tables"].as_array().unwrap().len(), 1);
}

/// The stage the share bar hid whole comes in its place among the others,
/// and the `all` stage beside it keeps its heading: a bar that hides the
/// named stage's rows does not leave the `all` table unheaded above it.
#[test]
fn a_hidden_stage_keeps_its_place_before_the_all_stage() {
    let dir = tempfile::tempdir().unwrap();
    let trace = staged_trace_of(dir.path(), &[(100, "gemm_a"), (200, "gemm_b"), (100_000, "gemm_c")]);
    let md = markdown(&[trace.to_str().unwrap(), "--min-share", "60"]);
    let kernels = md.split("Kernel Table\n").nth(1).unwrap();
    assert!(
        kernels.starts_with("##### decode\nNo kernel rows at or above 60.0% share.\n2 more kernels below"),
        "{kernels}"
    );
    assert!(kernels.contains("\n\n##### all\n| Kernel |"), "{kernels}");
}

/// The markdown and table views define a host wait alike: counted up to a
/// millisecond after the next kernel's launch call ended.
#[test]
fn both_views_give_the_host_wait_its_one_millisecond_cap() {
    let md = markdown(&[FIXTURE]);
    assert!(md.contains("began after the previous kernel ended, up to 1 ms after that call ended"), "markdown");
    let table = report("table", &[FIXTURE]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        table.contains("kernel ended, counted up to 1 ms after that call ended (a kernel that starts later"),
        "{table}"
    );
}
