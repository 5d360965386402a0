//! The fuse-pattern registry: the built-in patterns (a TOML data file
//! embedded in the binary) plus user files given with `--patterns`, parsed
//! with serde and validated so that a bad file fails with one line naming
//! the file and the pattern. Format: docs/patterns.md.

use crate::analysis::framework::Framework;
use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::pysem::normalize_text;

/// The built-in pattern file.
const BUILTIN_TOML: &str = include_str!("builtin.toml");

/// Where a fused implementation lives: already in the framework tree
/// (`mainline`), in a neighbouring project (`upstream`), or in an open PR
/// (`inflight`, shown as "pending").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Mainline,
    Upstream,
    Inflight,
}

impl Origin {
    fn parse(text: &str) -> Option<Origin> {
        match text {
            "mainline" => Some(Origin::Mainline),
            "upstream" => Some(Origin::Upstream),
            "inflight" | "pending" => Some(Origin::Inflight),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Mainline => "mainline",
            Origin::Upstream => "upstream",
            Origin::Inflight => "inflight",
        }
    }

    /// First word of the status cell ("pending" for in-flight work).
    pub fn status_word(self) -> &'static str {
        match self {
            Origin::Mainline => "mainline",
            Origin::Upstream => "upstream",
            Origin::Inflight => "pending",
        }
    }
}

/// Which file a pattern came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Builtin,
    /// A user file; `overrides` when it replaced a built-in of the same name.
    User {
        file: String,
        overrides: bool,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("builtin"),
            Source::User { file, overrides: false } => write!(f, "user:{file}"),
            Source::User { file, overrides: true } => write!(f, "user:{file} (overrides builtin)"),
        }
    }
}

/// One validated fuse pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternSpec {
    pub name: String,
    pub origin: Origin,
    /// Shown `<br>`-joined in the Candidate fused path column.
    pub candidate_paths: Vec<String>,
    /// Any of these in a kernel row means the fused kernel already runs.
    pub keywords: Vec<String>,
    /// Every group must match some row for a split (unfused) match.
    pub split_groups: Vec<Vec<String>>,
    /// Under whole-token matching, a row whose kernel name matches one of
    /// these is never related to the pattern: a kernel that shares words
    /// with the pattern's pieces but is none of them (an attention kernel
    /// that reads a paged KV cache is no KV-cache write).
    pub exclude_kernels: Vec<String>,
    /// Lower-cased substrings; the model path must contain one (if any).
    pub models: Vec<String>,
    /// Lower-cased substrings; the model path must contain none.
    pub exclude_models: Vec<String>,
    /// When set, the pattern needs at least this tensor-parallel size.
    pub min_tp_size: Option<i64>,
    /// Least related share (percent) for a split-only match.
    pub min_share: f64,
    /// Share (percent) from which a split match is "Confirmed".
    pub likely_share: f64,
    pub priority: i64,
    /// Patterns hidden once this one is reported.
    pub subsumes: Vec<String>,
    /// Frameworks the pattern applies to; empty means every framework.
    pub frameworks: Vec<Framework>,
    /// Model families ([`FAMILIES`]) the pattern applies to; empty means
    /// any model. Under whole-token matching one of them has to appear in the
    /// trace.
    pub families: Vec<String>,
    pub rationale: String,
    pub source: Source,
}

/// The model families a pattern may name, each with the words (matched as
/// whole tokens in the model path or in a kernel row's name, Python
/// location or CPU op) that show a trace comes from such a model.
pub const FAMILIES: &[(&str, &[&str])] = &[
    ("deepseek", &["deepseek", "kimi", "nsa", "flashmla", "flash_mla"]),
    ("moe", &["moe", "expert", "experts", "mixtral", "deepseek", "qwen2_moe", "qwen3_moe", "dbrx", "grok", "gpt_oss"]),
];

/// The sign words of a family in [`FAMILIES`].
pub fn family_signs(family: &str) -> Option<&'static [&'static str]> {
    FAMILIES.iter().find(|(name, _)| *name == family).map(|(_, signs)| *signs)
}

impl PatternSpec {
    pub fn candidate_path(&self) -> String {
        self.candidate_paths.join("<br>")
    }

    /// Number of distinct pieces the pattern fuses (at least 1 when it has
    /// direct keywords).
    pub fn span(&self) -> usize {
        self.split_groups.len().max(usize::from(!self.keywords.is_empty()))
    }
}

/// What a `[[pattern]]` table may hold (see docs/patterns.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternDef {
    name: String,
    #[serde(default = "default_origin")]
    origin: String,
    candidate_paths: Vec<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    split_groups: Vec<Vec<String>>,
    #[serde(default)]
    exclude_kernels: Vec<String>,
    #[serde(default)]
    models: Vec<String>,
    #[serde(default)]
    exclude_models: Vec<String>,
    min_tp_size: Option<i64>,
    #[serde(default = "default_min_share")]
    min_share: f64,
    #[serde(default = "default_likely_share")]
    likely_share: f64,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    subsumes: Vec<String>,
    frameworks: Option<Vec<String>>,
    #[serde(default)]
    families: Vec<String>,
    #[serde(default)]
    rationale: String,
}

fn default_origin() -> String {
    "mainline".into()
}

fn default_min_share() -> f64 {
    0.25
}

fn default_likely_share() -> f64 {
    3.0
}

/// Frameworks implied by where the candidate fused code lives.
pub fn framework_hints(candidate_path: &str) -> Vec<Framework> {
    let text = normalize_text(candidate_path).to_lowercase();
    let mut hints = Vec::new();
    let has = |tokens: &[&str]| tokens.iter().any(|t| text.contains(t));
    if has(&["python/sglang/", "sgl-kernel/", "sgl_kernel/"]) {
        hints.push(Framework::Sglang);
    }
    if has(&["vllm/"]) {
        hints.push(Framework::Vllm);
    }
    if has(&["tensorrt_llm/"]) {
        hints.push(Framework::Trtllm);
    }
    if has(&["tokenspeed/", "tokenspeed-", "tokenspeed_"]) {
        hints.push(Framework::Tokenspeed);
    }
    hints
}

/// How messages name the `i`-th pattern (from 0) of a file: `"name" (#i+1)`.
fn label_of(name: &str, i: usize) -> String {
    format!("{name:?} (#{})", i + 1)
}

/// Each pattern of a file by name, with its label in messages.
fn file_labels(patterns: &[PatternSpec]) -> Vec<(String, String)> {
    patterns.iter().enumerate().map(|(i, p)| (p.name.clone(), label_of(&p.name, i))).collect()
}

fn invalid(file: &str, pattern: &str, message: impl fmt::Display) -> Error {
    Error::usage(format!("{file}: pattern {pattern}: {message}"))
}

fn check_keywords(file: &str, label: &str, what: &str, words: &[String]) -> Result<()> {
    if words.iter().any(|w| w.trim().is_empty()) {
        return Err(invalid(file, label, format!("{what} holds an empty keyword")));
    }
    Ok(())
}

impl PatternDef {
    fn validate(self, file: &str, label: &str, source: Source) -> Result<PatternSpec> {
        if self.name.trim().is_empty() {
            return Err(invalid(file, label, "name is empty"));
        }
        let origin = Origin::parse(&self.origin).ok_or_else(|| {
            invalid(file, label, format!("origin {:?} is not one of mainline, upstream, inflight", self.origin))
        })?;
        if self.candidate_paths.is_empty() {
            return Err(invalid(file, label, "candidate_paths is empty"));
        }
        if self.candidate_paths.iter().all(|p| p.trim().is_empty()) {
            return Err(invalid(file, label, "candidate_paths holds only blank paths"));
        }
        if let Some(tp) = self.min_tp_size.filter(|&tp| tp < 1) {
            return Err(invalid(file, label, format!("min_tp_size must be at least 1, got {tp}")));
        }
        if self.keywords.is_empty() && self.split_groups.is_empty() {
            return Err(invalid(file, label, "needs keywords or split_groups (it could never match)"));
        }
        check_keywords(file, label, "keywords", &self.keywords)?;
        check_keywords(file, label, "exclude_kernels", &self.exclude_kernels)?;
        for (i, group) in self.split_groups.iter().enumerate() {
            if group.is_empty() {
                return Err(invalid(file, label, format!("split_groups[{i}] is an empty keyword group")));
            }
            check_keywords(file, label, &format!("split_groups[{i}]"), group)?;
        }
        for (key, value) in [("min_share", self.min_share), ("likely_share", self.likely_share)] {
            if !value.is_finite() || value < 0.0 {
                return Err(invalid(file, label, format!("{key} must be a percentage >= 0, got {value}")));
            }
        }
        let frameworks = match self.frameworks {
            Some(list) => {
                let mut out = Vec::with_capacity(list.len());
                for name in &list {
                    let Some(f) = Framework::from_id(name) else {
                        let known: Vec<&str> = Framework::ALL.iter().map(|f| f.as_str()).collect();
                        return Err(invalid(
                            file,
                            label,
                            format!("unknown framework {name:?} (use {})", known.join(", ")),
                        ));
                    };
                    out.push(f);
                }
                out
            }
            None => framework_hints(&self.candidate_paths.join("<br>")),
        };
        if let Some(f) = self.families.iter().find(|f| family_signs(f).is_none()) {
            let known: Vec<&str> = FAMILIES.iter().map(|(name, _)| *name).collect();
            return Err(invalid(file, label, format!("unknown model family {f:?} (use {})", known.join(", "))));
        }
        let lower = |v: Vec<String>| v.into_iter().map(|s| s.to_lowercase()).collect();
        Ok(PatternSpec {
            name: self.name,
            origin,
            candidate_paths: self.candidate_paths,
            keywords: self.keywords,
            split_groups: self.split_groups,
            exclude_kernels: self.exclude_kernels,
            models: lower(self.models),
            exclude_models: lower(self.exclude_models),
            min_tp_size: self.min_tp_size,
            min_share: self.min_share,
            likely_share: self.likely_share,
            priority: self.priority,
            subsumes: self.subsumes,
            frameworks,
            families: self.families,
            rationale: self.rationale,
            source,
        })
    }
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes().iter().take(offset).filter(|&&b| b == b'\n').count() + 1
}

/// The whole file in one typed pass, only to learn where a field error is
/// (deserializing from a parsed table loses positions).
#[derive(Deserialize)]
struct FileDef {
    #[serde(default, rename = "pattern")]
    _pattern: Vec<PatternDef>,
}

fn serde_error_line(text: &str) -> Option<usize> {
    let err = toml::from_str::<FileDef>(text).err()?;
    err.span().map(|r| line_of(text, r.start))
}

/// Parses and validates one pattern file. `file` names it in errors.
/// Pattern files larger than this are refused (a pattern is a few lines;
/// `--check /dev/zero` read until memory ran out).
pub const MAX_PATTERN_FILE_BYTES: u64 = 16 << 20;

/// Reads a pattern file of at most [`MAX_PATTERN_FILE_BYTES`].
fn read_pattern_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        // A missing file is a usage error, as a missing trace is.
        std::io::ErrorKind::NotFound => Error::usage(format!("cannot open the pattern file: {e}")).in_file(path),
        _ => Error::from(e).in_file(path),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_PATTERN_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::from(e).in_file(path))?;
    if bytes.len() as u64 > MAX_PATTERN_FILE_BYTES {
        return Err(
            Error::usage(format!("larger than {} MiB: not a pattern file", MAX_PATTERN_FILE_BYTES >> 20)).in_file(path)
        );
    }
    String::from_utf8(bytes)
        .map_err(|e| Error::usage(format!("byte {}: not UTF-8 text", e.utf8_error().valid_up_to())).in_file(path))
}

fn parse_patterns(text: &str, file: &str, source: &Source) -> Result<Vec<PatternSpec>> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map(|r| format!("line {}: ", line_of(text, r.start))).unwrap_or_default();
        Error::usage(format!("{file}: {at}{}", e.message().trim()))
    })?;
    if let Some(key) = doc.keys().find(|k| k.as_str() != "pattern") {
        return Err(Error::usage(format!("{file}: unknown top-level key {key:?} (expected [[pattern]] tables)")));
    }
    let tables = match doc.get("pattern") {
        None => return Ok(Vec::new()),
        Some(toml::Value::Array(items)) => items,
        Some(_) => return Err(Error::usage(format!("{file}: `pattern` must be an array of tables ([[pattern]])"))),
    };
    let mut out: Vec<PatternSpec> = Vec::with_capacity(tables.len());
    let mut seen = HashSet::new();
    for (i, item) in tables.iter().enumerate() {
        let label = match item.get("name").and_then(|v| v.as_str()) {
            Some(name) => label_of(name, i),
            None => format!("#{}", i + 1),
        };
        let def = PatternDef::deserialize(item.clone()).map_err(|e| {
            let at = serde_error_line(text).map(|l| format!("line {l}: ")).unwrap_or_default();
            invalid(file, &label, format!("{at}{}", e.message().trim()))
        })?;
        let spec = def.validate(file, &label, source.clone())?;
        if !seen.insert(spec.name.clone()) {
            return Err(invalid(file, &label, "duplicate name (already defined earlier in this file)"));
        }
        out.push(spec);
    }
    Ok(out)
}

/// The ordered list of patterns the matcher runs. Order breaks ties in
/// the priority ranking, so user additions come after the built-ins and an
/// override keeps the built-in's place.
#[derive(Clone, Debug)]
pub struct Registry {
    patterns: Vec<PatternSpec>,
}

impl Registry {
    /// The embedded built-in patterns.
    pub fn builtin() -> Registry {
        match parse_patterns(BUILTIN_TOML, "builtin.toml", &Source::Builtin) {
            Ok(patterns) => Registry { patterns },
            // The embedded file is checked by a unit test; reaching this is a build defect.
            Err(e) => panic!("embedded pattern file is invalid: {e}"),
        }
    }

    /// A registry from pattern text, without the built-ins (tests, tools).
    pub fn from_toml(text: &str, file: &str) -> Result<Registry> {
        let source = Source::User { file: file.to_string(), overrides: false };
        let patterns = parse_patterns(text, file, &source)?;
        let labels = file_labels(&patterns);
        let reg = Registry { patterns };
        reg.check_subsumes(file, &labels)?;
        Ok(reg)
    }

    /// Adds the patterns of a user file; one with a built-in's name
    /// replaces it in place.
    pub fn with_user_file(self, path: &Path) -> Result<Registry> {
        let text = read_pattern_file(path)?;
        self.with_user_text(&text, &path.display().to_string())
    }

    /// [`Registry::with_user_file`] on text already read; `file` names it.
    pub fn with_user_text(mut self, text: &str, file: &str) -> Result<Registry> {
        let source = Source::User { file: file.to_string(), overrides: false };
        let user = parse_patterns(text, file, &source)?;
        let labels = file_labels(&user);
        for mut spec in user {
            match self.patterns.iter().position(|p| p.name == spec.name) {
                Some(i) => {
                    spec.source = Source::User { file: file.to_string(), overrides: true };
                    self.patterns[i] = spec;
                }
                None => self.patterns.push(spec),
            }
        }
        self.check_subsumes(file, &labels)?;
        Ok(self)
    }

    /// Validates a user file against the built-ins; returns how many
    /// patterns it defines.
    pub fn check_file(path: &Path) -> Result<usize> {
        let text = read_pattern_file(path)?;
        let file = path.display().to_string();
        let count = parse_patterns(&text, &file, &Source::Builtin)?.len();
        Registry::builtin().with_user_text(&text, &file)?;
        Ok(count)
    }

    pub fn patterns(&self) -> &[PatternSpec] {
        &self.patterns
    }

    pub fn get(&self, name: &str) -> Option<&PatternSpec> {
        self.patterns.iter().find(|p| p.name == name)
    }

    /// Every `subsumes` entry must name a pattern in the registry; `labels`
    /// names the file's patterns as its messages do (`"name" (#index)`).
    fn check_subsumes(&self, file: &str, labels: &[(String, String)]) -> Result<()> {
        let names: HashSet<&str> = self.patterns.iter().map(|p| p.name.as_str()).collect();
        for p in &self.patterns {
            if let Some(bad) = p.subsumes.iter().find(|s| !names.contains(s.as_str())) {
                let label = labels
                    .iter()
                    .find(|(name, _)| *name == p.name)
                    .map_or_else(|| format!("{:?}", p.name), |l| l.1.clone());
                return Err(invalid(file, &label, format!("subsumes unknown pattern {bad:?}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_with_all_patterns() {
        let reg = Registry::builtin();
        assert_eq!(reg.patterns().len(), 47);
        let p = reg.get("FlashInfer unified allreduce_fusion").unwrap();
        assert_eq!(p.min_tp_size, Some(2));
        assert_eq!(p.split_groups.len(), 2);
        assert_eq!(p.frameworks, vec![Framework::Sglang]);
        assert_eq!(p.span(), 2);
        let p = reg.get("PR #38621 fused QK norm + RoPE + cache + quant").unwrap();
        assert_eq!(p.origin, Origin::Inflight);
        assert_eq!(p.priority, 100);
        assert_eq!(p.frameworks, vec![Framework::Vllm]);
        assert!(reg.patterns().iter().all(|p| !p.rationale.is_empty()));
    }

    #[test]
    fn framework_hints_follow_candidate_paths() {
        assert_eq!(framework_hints("vllm/_custom_ops.py"), vec![Framework::Vllm]);
        assert_eq!(framework_hints("tokenspeed-kernel/x.py"), vec![Framework::Tokenspeed]);
        assert_eq!(framework_hints("tensorrt_llm/_torch/a.py"), vec![Framework::Trtllm]);
        assert_eq!(framework_hints("PR #1"), Vec::<Framework>::new());
    }

    #[test]
    fn span_counts_groups_or_direct() {
        let reg = Registry::builtin();
        assert_eq!(
            reg.get("Fused logit softcap").unwrap().span(),
            reg.get("Fused logit softcap").unwrap().split_groups.len().max(1)
        );
        assert_eq!(reg.get("Fused residual add + RMSNorm").unwrap().span(), 1);
    }
}
