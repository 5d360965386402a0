//! User pattern files: adding a pattern, overriding a built-in by name,
//! every validation error, and the `torchtriage patterns` subcommand.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use torchtriage::analysis::framework::Framework;
use torchtriage::analysis::fusion::{detect_fusion_opportunities, KeywordMatch, Registry, Source};
use torchtriage::analysis::types::{Aggregate, KernelEntry, KernelRow, SiteEntry};

fn row(name: &str, us: f64) -> KernelRow {
    KernelRow {
        name: name.into(),
        category: "other".into(),
        location: Vec::new(),
        aggregate: Aggregate { total_us: us, count: 2, max_us: us / 2.0 },
        ..Default::default()
    }
}

fn write_file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    path
}

const USER_PATTERN: &str = r#"
[[pattern]]
name = "My fused bias + GELU"
origin = "upstream"
candidate_paths = ["my_project/kernels/bias_gelu.py"]
split_groups = [["add_bias", "bias_add"], ["gelu"]]
min_share = 1.0
likely_share = 20.0
rationale = "Our repo has a bias+GELU kernel."
"#;

#[test]
fn user_pattern_is_added_and_matches() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "mine.toml", USER_PATTERN);
    let reg = Registry::builtin().with_user_file(&path).unwrap();
    assert_eq!(reg.patterns().len(), 48);
    let spec = reg.get("My fused bias + GELU").unwrap();
    assert!(matches!(&spec.source, Source::User { overrides: false, .. }));
    assert!(spec.frameworks.is_empty(), "no framework hint in the path: applies to all");

    let mut gelu = row("triton_poi_fused_gelu_3", 6.0);
    gelu.entry = Some(KernelEntry {
        sites: vec![SiteEntry { location: "model/mlp.py:40 forward".into(), ..Default::default() }],
        ..Default::default()
    });
    let rows = vec![row("AddBias_kernel", 4.0), gelu, row("gemm", 90.0)];
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Vllm), KeywordMatch::Substring);
    assert_eq!(got.len(), 1);
    let o = &got[0];
    assert_eq!(o.pattern, "My fused bias + GELU");
    assert_eq!(o.status, "upstream split");
    assert_eq!(o.confidence, "Candidate"); // 10% related, below likely_share 20
    assert_eq!(o.related_us, 10.0);
    assert_eq!(o.evidence, vec!["AddBias_kernel (4.0%)", "triton_poi_fused_gelu_3 (6.0%)"]);
    assert_eq!(o.current_locations, vec!["forward @ model/mlp.py:40"]);
    assert_eq!(o.candidate_path, vec!["my_project/kernels/bias_gelu.py"]);
}

#[test]
fn user_file_overrides_builtin_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
[[pattern]]
name = "Fused logit softcap"
origin = "mainline"
candidate_paths = ["python/sglang/srt/layers/my_softcap.py"]
keywords = ["my_softcap_kernel"]
min_share = 0.1
likely_share = 1.0
"#;
    let path = write_file(dir.path(), "override.toml", text);
    let builtin = Registry::builtin();
    let index = builtin.patterns().iter().position(|p| p.name == "Fused logit softcap").unwrap();
    let reg = builtin.with_user_file(&path).unwrap();
    assert_eq!(reg.patterns().len(), 47);
    assert_eq!(reg.patterns()[index].name, "Fused logit softcap", "keeps the built-in's place");
    let spec = reg.get("Fused logit softcap").unwrap();
    assert_eq!(spec.keywords, vec!["my_softcap_kernel"]);
    assert!(matches!(&spec.source, Source::User { overrides: true, .. }));

    let rows = vec![row("void my_softcap_kernel<float>", 3.0), row("gemm", 97.0)];
    let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Sglang), KeywordMatch::Substring);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].candidate_path, vec!["python/sglang/srt/layers/my_softcap.py"]);
    assert_eq!(got[0].status, "mainline direct");
}

fn check_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "bad.toml", text);
    let err = Registry::check_file(&path).unwrap_err().to_string();
    assert!(err.contains("bad.toml"), "error names the file: {err}");
    assert!(!err.contains('\n'), "one line: {err}");
    err
}

const HEAD: &str = "[[pattern]]\nname = \"P\"\ncandidate_paths = [\"x.py\"]\n";

#[test]
fn unknown_key_is_rejected() {
    let err = check_error(&format!("{HEAD}keywords = [\"k\"]\nkeyword = [\"typo\"]\n"));
    assert!(err.contains("pattern \"P\""), "{err}");
    assert!(err.contains("unknown field `keyword`"), "{err}");
}

#[test]
fn bad_type_is_rejected() {
    let err = check_error(&format!("{HEAD}keywords = \"not a list\"\n"));
    assert!(err.contains("pattern \"P\"") && err.contains("invalid type"), "{err}");
    let err = check_error(&format!("{HEAD}keywords = [\"k\"]\nmin_share = \"high\"\n"));
    assert!(err.contains("invalid type"), "{err}");
}

#[test]
fn duplicate_name_is_rejected() {
    let err = check_error(&format!("{HEAD}keywords = [\"a\"]\n{HEAD}keywords = [\"b\"]\n"));
    assert!(err.contains("pattern \"P\" (#2)") && err.contains("duplicate name"), "{err}");
}

#[test]
fn empty_keyword_group_is_rejected() {
    let err = check_error(&format!("{HEAD}split_groups = [[\"a\"], []]\n"));
    assert!(err.contains("pattern \"P\"") && err.contains("split_groups[1] is an empty keyword group"), "{err}");
    let err = check_error(&format!("{HEAD}keywords = [\"a\", \" \"]\n"));
    assert!(err.contains("empty keyword"), "{err}");
    let err = check_error(&format!("{HEAD}keywords = [\"a\"]\nexclude_kernels = [\"\"]\n"));
    assert!(err.contains("exclude_kernels holds an empty keyword"), "{err}");
}

#[test]
fn excluded_kernels_are_never_related_to_a_user_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[[pattern]]\nname = \"Bias + GELU\"\ncandidate_paths = [\"x/fused.py\"]\n\
                split_groups = [[\"bias\"], [\"gelu\"]]\nexclude_kernels = [\"gemm\"]\n\
                min_share = 1.0\nlikely_share = 5.0\n";
    let path = write_file(dir.path(), "p.toml", text);
    let reg = Registry::builtin().with_user_file(&path).unwrap();
    // A GEMM with a bias epilogue is no bias kernel of its own.
    let rows =
        vec![row("gemm_bias_epilogue", 60.0), row("add_bias_kernel", 2.0), row("gelu_kernel", 2.0), row("x", 36.0)];
    let get = |mode| {
        let got = detect_fusion_opportunities(&reg, &rows, 100.0, None, Some(Framework::Generic), mode);
        got.into_iter().find(|o| o.pattern == "Bias + GELU").map(|o| (o.confidence, o.related_us))
    };
    assert_eq!(get(KeywordMatch::Tokens), Some(("Possible".to_string(), 4.0)));
    // The reference's rule has no such key.
    assert_eq!(get(KeywordMatch::Substring), Some(("Confirmed".to_string(), 64.0)));
    let exe = env!("CARGO_BIN_EXE_torchtriage");
    let out = Command::new(exe).args(["patterns", "--patterns"]).arg(&path).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("not kernels: gemm"));
}

#[test]
fn other_validation_errors() {
    assert!(check_error(HEAD).contains("needs keywords or split_groups"));
    assert!(check_error(&format!("{HEAD}keywords = [\"k\"]\norigin = \"someday\"\n")).contains("origin"));
    assert!(check_error(&format!("{HEAD}keywords = [\"k\"]\nframeworks = [\"jax\"]\n")).contains("unknown framework"));
    let err = check_error(&format!("{HEAD}keywords = [\"k\"]\nsubsumes = [\"Nope\"]\n"));
    assert!(err.contains("pattern \"P\" (#1): subsumes unknown pattern \"Nope\""), "{err}");
    let err = check_error(&format!("{HEAD}keywords = [\"k\"]\nmin_tp_size = -2\n"));
    assert!(err.contains("min_tp_size must be at least 1, got -2"), "{err}");
    let blank = "[[pattern]]\nname = \"P\"\ncandidate_paths = [\" \"]\nkeywords = [\"k\"]\n";
    assert!(check_error(blank).contains("candidate_paths holds only blank paths"), "{blank}");
    assert!(check_error(&format!("{HEAD}keywords = [\"k\"]\nmin_share = -1.0\n")).contains("min_share"));
    assert!(
        check_error("[[pattern]]\nkeywords = [\"k\"]\ncandidate_paths = [\"x\"]\n").contains("missing field `name`")
    );
    assert!(check_error("[[pattern]\nname = 1\n").contains("line 1"));
    assert!(check_error("title = \"x\"\n").contains("unknown top-level key"));
}

#[test]
fn check_file_counts_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "mine.toml", USER_PATTERN);
    assert_eq!(Registry::check_file(&path).unwrap(), 1);
}

#[test]
fn patterns_subcommand_lists_and_checks() {
    let exe = env!("CARGO_BIN_EXE_torchtriage");
    let dir = tempfile::tempdir().unwrap();
    let good = write_file(dir.path(), "mine.toml", USER_PATTERN);
    let bad = write_file(dir.path(), "bad.toml", &format!("{HEAD}split_groups = [[]]\n"));

    let out = Command::new(exe).args(["patterns", "--check"]).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok, 1 pattern"));

    let out = Command::new(exe).args(["patterns", "--check"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml") && err.contains("pattern \"P\""), "{err}");

    let out = Command::new(exe).args(["patterns", "--patterns"]).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Fused residual add + RMSNorm"));
    assert!(text.contains("My fused bias + GELU"));
    assert!(text.contains("frameworks: any"));
}

#[test]
fn a_fuse_row_without_a_known_location_has_none_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "p.toml",
        "[[pattern]]\nname = \"AllReduce fused\"\ncandidate_paths = [\"x/fused.py\"]\nkeywords = [\"AllReduce\"]\nframeworks = [\"generic\"]\n",
    );
    // A training trace without Python stacks: no kernel has a location.
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
    );
    let run = |format: &str| {
        let out =
            crate::common::run(&["-q", "triage", "--format", format, "--patterns", path.to_str().unwrap(), trace]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let row = v["fuse"].as_array().unwrap().iter().find(|r| r["pattern"] == "AllReduce fused").expect("the row");
    assert_eq!(row["current_locations"], serde_json::json!([]), "{row}");
    // The tables say so in words, as the reference does.
    assert!(run("markdown").lines().any(|l| l.contains("AllReduce fused") && l.contains("unresolved")));
}
