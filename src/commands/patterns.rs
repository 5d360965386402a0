//! `torchtriage patterns`: list the fuse-pattern registry (built-ins plus
//! any `--patterns` files), or validate a user pattern file with `--check`.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::Global;
use crate::analysis::fusion::{PatternSpec, Registry};
use crate::error::Result;

#[derive(Clone, Debug, clap::Args)]
pub struct PatternsArgs {
    /// Add patterns from a TOML file (repeatable); a pattern with a
    /// built-in's name replaces it. Format: docs/patterns.md.
    #[arg(long = "patterns", value_name = "FILE")]
    pub patterns: Vec<PathBuf>,
    /// Only validate FILE: print how many patterns it defines (exit 0) or
    /// the first problem (exit 2).
    #[arg(long, value_name = "FILE", conflicts_with = "patterns")]
    pub check: Option<PathBuf>,
    /// Print only the pattern names, one per line.
    #[arg(long)]
    pub names: bool,
}

pub fn run(args: &PatternsArgs, _global: &Global) -> Result<i32> {
    if let Some(path) = &args.check {
        let count = Registry::check_file(path)?;
        let noun = if count == 1 { "pattern" } else { "patterns" };
        super::print_report(&format!("{}: ok, {count} {noun}", path.display()))?;
        return Ok(0);
    }
    let mut registry = Registry::builtin();
    for path in &args.patterns {
        registry = registry.with_user_file(path)?;
    }
    let mut out = String::new();
    for spec in registry.patterns() {
        if args.names {
            let _ = writeln!(out, "{}", spec.name);
        } else {
            describe(spec, &mut out);
        }
    }
    super::print_report(&out)?;
    Ok(0)
}

fn describe(spec: &PatternSpec, out: &mut String) {
    let frameworks = if spec.frameworks.is_empty() {
        "any".to_string()
    } else {
        spec.frameworks.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
    };
    let _ = writeln!(out, "{}", spec.name);
    let _ = writeln!(out, "  origin: {} [{}]  frameworks: {frameworks}", spec.origin.as_str(), spec.source);
    if !spec.keywords.is_empty() {
        let _ = writeln!(out, "  keywords: {}", spec.keywords.join(", "));
    }
    if !spec.split_groups.is_empty() {
        let groups: Vec<String> = spec.split_groups.iter().map(|g| format!("({})", g.join(" | "))).collect();
        let _ = writeln!(out, "  split: {}", groups.join(" + "));
    }
    let mut gates = Vec::new();
    if !spec.models.is_empty() {
        gates.push(format!("models: {}", spec.models.join(", ")));
    }
    if !spec.exclude_models.is_empty() {
        gates.push(format!("not: {}", spec.exclude_models.join(", ")));
    }
    if !spec.exclude_kernels.is_empty() {
        gates.push(format!("not kernels: {}", spec.exclude_kernels.join(", ")));
    }
    if let Some(tp) = spec.min_tp_size {
        gates.push(format!("tp >= {tp}"));
    }
    gates.push(format!("min share {}%, likely {}%", spec.min_share, spec.likely_share));
    if spec.priority != 0 {
        gates.push(format!("priority {}", spec.priority));
    }
    let _ = writeln!(out, "  {}", gates.join("; "));
    if !spec.subsumes.is_empty() {
        let _ = writeln!(out, "  subsumes: {}", spec.subsumes.join("; "));
    }
}
