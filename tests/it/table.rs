//! `--format table` through the binary on the bundled traces: every line
//! fits `COLUMNS`, mangled names are demangled, no markdown is left over,
//! and tables carry their legends.

use std::path::Path;
use std::process::Command;

const SGLANG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
);
/// A vLLM trace on AMD whose kernel names are mangled C++ (`_ZN7ck_tile…`).
const VLLM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/tracelens/inference/vllm_decode_full/graph_execution.json.gz"
);
const RANKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/param_dlrm_8rank");

/// The binary's stdout with `COLUMNS` set to `width`; panics on failure.
fn table(width: usize, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_torchtriage"))
        .env("COLUMNS", width.to_string())
        .arg("-q")
        .args(args)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn assert_fits(out: &str, width: usize) {
    for line in out.lines() {
        let n = line.chars().count();
        assert!(n <= width, "line of {n} chars over {width}: {line}");
    }
    assert!(!out.contains("<br>"), "markdown line breaks left: {out}");
    assert!(!out.contains("| --- |"), "a markdown table: {out}");
}

#[test]
fn triage_fits_and_demangles() {
    let out = table(120, &["triage", "--format", "table", VLLM]);
    assert_fits(&out, 120);
    assert!(out.contains("ck_tile::"), "demangled name missing: {out}");
    assert!(!out.contains("_ZN7ck_tile"), "mangled name left: {out}");
    assert!(out.contains("GPU time (ms)") && out.contains("Share (%)"), "{out}");
    assert!(out.contains("Share: of the stage's total kernel time"), "kernel legend missing: {out}");
}

#[test]
fn triage_fits_narrow_and_wide_terminals() {
    for width in [60, 80, 200] {
        let out = table(width, &["triage", "--format", "table", SGLANG]);
        assert_fits(&out, width);
        assert!(out.contains("Kernels") && out.contains("Timeline"), "{out}");
    }
}

#[test]
fn diff_fits() {
    let out = table(120, &["diff", "--format", "table", VLLM, VLLM]);
    assert_fits(&out, 120);
    assert!(out.contains("ck_tile::"), "demangled name missing: {out}");
    assert!(out.contains("Δ (ms)") && out.contains("matched by canonical name"), "legend missing: {out}");
}

#[test]
fn a_diffs_launch_delay_is_in_microseconds() {
    // A launch delay of a few µs (3.1 here) would read 0.00 in ms.
    let eager = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/b200/eager_trace.json.gz");
    let out = table(120, &["diff", "--format", "table", eager, eager]);
    let row = out.lines().find(|l| l.contains("launch delay p50")).expect("launch delay row");
    assert!(row.contains("(µs)"), "{row}");
    assert!(row.split_whitespace().any(|c| c.parse::<f64>().is_ok_and(|v| v > 0.0)), "{row}");
}

#[test]
fn batch_fits() {
    let out = table(120, &["batch", "--format", "table", RANKS]);
    assert_fits(&out, 120);
    assert!(out.contains("Busy (ms)") && out.contains("Cross-rank kernels"), "{out}");
    assert!(out.contains("Leads ranks:"), "legend missing: {out}");
    assert!(Path::new(RANKS).is_dir());
    // A wide terminal shows every column markdown has: the top exposed
    // communication kernel with its time, and the top headroom row.
    let wide = table(400, &["batch", "--format", "table", RANKS]);
    assert!(!wide.contains("Left out at"), "{wide}");
    assert!(
        wide.contains("(3.88 ms)") && wide.contains("Top headroom") && wide.contains("P1 ncclKernel_SendRecv"),
        "{wide}"
    );
}

#[test]
fn markdown_is_unchanged_by_the_table_format() {
    let out = table(120, &["triage", "--format", "markdown", SGLANG]);
    assert!(out.starts_with("Triage View"), "{out}");
    assert!(out.contains("| Kernel | Category | GPU time |"), "{out}");
}

/// Under `--compat reference` the table and HTML views hold the reference's
/// sections only, as the markdown does: no headline and no timeline.
#[test]
fn the_reference_compat_shows_no_timeline_in_any_view() {
    let default = table(120, &["triage", "--format", "table", SGLANG]);
    assert!(default.contains("Headline") && default.contains("Timeline"), "{default}");
    let out = table(120, &["triage", "--compat", "reference", "--format", "table", SGLANG]);
    assert!(!out.contains("Headline") && !out.contains("Timeline"), "{out}");
    assert!(out.contains("Kernels"), "{out}");
    let html = table(120, &["triage", "--compat", "reference", "--format", "html", SGLANG]);
    assert!(
        !html.contains("class=\"headline\"") && !html.contains("class=\"verdict\""),
        "timeline in the reference HTML"
    );
    let html = table(120, &["triage", "--format", "html", SGLANG]);
    assert!(
        html.contains("class=\"headline\"") && html.contains("class=\"verdict\""),
        "no timeline in the default HTML"
    );
}

/// In a terminal of 60 columns (`script` gives the command one), the table
/// on stdout fits it; the same table written to a file keeps 120 columns,
/// whatever terminal it was written from.
#[test]
fn the_terminal_width_applies_to_stdout_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.txt");
    let bin = env!("CARGO_BIN_EXE_torchtriage");
    let in_terminal = |args: &str| {
        let cmd = format!("stty cols 60; env -u COLUMNS {bin} -q triage {SGLANG} --format table {args}");
        let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("script (util-linux) runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().replace('\r', "")
    };
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let shown = in_terminal("");
    assert!(widest(&shown) <= 60 && shown.contains("Kernels"), "{shown}");
    in_terminal(&format!("-o {}", file.display()));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(widest(&written) > 60 && widest(&written) <= 120, "{written}");
}

/// The progress bar (on stderr, in a terminal of 80 columns) stays on one
/// line: the file's name is cut to what the terminal has left.
#[test]
fn the_progress_bar_fits_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join(format!("{}.pt.trace.json.gz", "a_rather_long_trace_file_name_".repeat(3)));
    std::fs::copy(SGLANG, &long).unwrap();
    let bin = env!("CARGO_BIN_EXE_torchtriage");
    let cmd = format!("stty cols 80 rows 40; env -u COLUMNS {bin} triage {} > /dev/null", long.display());
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("script (util-linux) runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    // Each redraw: the text between line breaks, carriage returns and
    // terminal escapes (which clear the line or move the cursor).
    let mut drawn = Vec::new();
    let mut plain = String::new();
    let mut chars = text.chars();
    let mut flush = |plain: &mut String| {
        if plain.contains("] ") {
            drawn.push(plain.clone());
        }
        plain.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ parameters, then a final letter.
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
                flush(&mut plain);
            }
            '\r' | '\n' => flush(&mut plain),
            c => plain.push(c),
        }
    }
    flush(&mut plain);
    assert!(!drawn.is_empty(), "no bar drawn: {text:?}");
    for line in &drawn {
        assert!(line.chars().count() <= 80, "{} chars: {line}", line.chars().count());
    }
}

#[test]
fn graph_launches_are_said_under_the_launch_figures() {
    // 85 kernels a graph launch: "kernels shorter than launch 99.8%" compares
    // each kernel with its graph's call, as the markdown's launch line says.
    let out = table(200, &["triage", "--format", "table", VLLM]);
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Launch: graph launches, 85.0 kernels a call: delays and the share shorter than their launch call compare each kernel with its graph's call."),
        "{out}"
    );
    // One kernel a call: no such line.
    let ranks = table(
        200,
        &["triage", "--format", "table", &format!("{RANKS}/worker0_step_12.1694128201545.pt.trace.json.gz")],
    );
    assert!(!ranks.contains("graph launches"), "{ranks}");
}
