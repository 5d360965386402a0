//! `docs/json-schema.md` states the `schema_version` each JSON document
//! carries: every example and the stated number match what the binary
//! writes, for triage, batch, diff and stats.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
const DOC: &str = include_str!("../../docs/json-schema.md");

fn version_written(args: &[&str]) -> u64 {
    let out = common::run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["schema_version"].as_u64().unwrap_or_else(|| panic!("{args:?}: no schema_version"))
}

/// The `"schema_version": N` examples of each top-level section (`# ...`)
/// of the document, with the section's title.
fn examples() -> Vec<(String, u64)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in DOC.lines() {
        if let Some(title) = line.strip_prefix("# ") {
            section = title.to_string();
        }
        if let Some(rest) = line.split("\"schema_version\":").nth(1) {
            let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
            out.push((section.clone(), digits.parse().unwrap()));
        }
    }
    out
}

#[test]
fn the_written_schema_shows_the_versions_the_binary_writes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, dir.path().join("rank0.json")).unwrap();
    let triage = version_written(&["triage", "--format", "json", FIXTURE]);
    let batch = version_written(&["batch", "--format", "json", dir.path().to_str().unwrap()]);
    let diff = version_written(&["diff", "--format", "json", FIXTURE, FIXTURE]);
    let stats = version_written(&["stats", "--format", "json", FIXTURE]);
    assert_eq!((batch, diff), (triage, triage), "batch and diff carry triage's version");
    assert!(DOC.contains(&format!("`schema_version` is {triage}.")), "the stated version is not {triage}");
    let examples = examples();
    assert_eq!(examples.len(), 4, "{examples:?}");
    for (section, version) in examples {
        let want = if section.starts_with("Stats") { stats } else { triage };
        assert_eq!(version, want, "the example under \"# {section}\"");
    }
}
