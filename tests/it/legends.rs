//! The default markdown, table and HTML reports say what their tables' terms mean; the
//! reference's layout (`--compat reference`) stays line for line its own;
//! a trace without GPU kernels says so instead of a share bar no row cleared.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
const CPU_ONLY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
);

fn markdown(args: &[&str]) -> String {
    let out = common::run(&[&["-q", "triage", "--format", "markdown"][..], args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
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
