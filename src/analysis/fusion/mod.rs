//! The Fuse Opportunity Table: which known fusion patterns show up in a
//! stage's kernel rows. Patterns come from a [`Registry`] (built-ins plus
//! user files); [`detect_fusion_opportunities`] matches each one, ranks the
//! matches and drops those whose rows an earlier (higher-ranked) match
//! already explains. The driver applies the 1% display bar. Rows are read
//! through [`FuseRow`], and each row's text is made once, in one pass that
//! finds the rows every keyword list hits.

mod matcher;
mod registry;
mod summary;
mod tokens;

use std::borrow::Borrow;
use std::hash::Hash;

use crate::analysis::framework::Framework;
use rustc_hash::FxHashSet as HashSet;

use serde_json::Value;

use crate::analysis::types::{cpu_op_cell, location_cell, KernelEntry, KernelRow};
use crate::pysem::{fcmp, py_float_repr, py_int_of_str};

pub use matcher::{
    compact_match_text, find_hits, find_hits_with, KeywordMatch, MatchContext, Needle, PatternHits, RowText,
};
pub use registry::{family_signs, framework_hints, Origin, PatternSpec, Registry, Source, FAMILIES};
pub use summary::{fusion_display_location, kernel_row_locations, ordered_unique, pct};

/// What the matcher reads of a kernel-table row. [`KernelRow`] is one; the
/// triage driver passes views of its report rows that borrow their cells
/// and the kernel-map entry, so that a stage with hundreds of thousands of
/// kernels is not copied for the matcher.
pub trait FuseRow {
    /// An item of the location and CPU-op lists.
    type Cell: Borrow<str> + Hash + Eq;
    fn name(&self) -> &str;
    fn total_us(&self) -> f64;
    /// Python locations launching the kernel (empty: unresolved).
    fn location(&self) -> &[Self::Cell];
    /// CPU ops launching it (empty: none known).
    fn cpu_op(&self) -> &[Self::Cell];
    /// Its kernel-map entry, if it has one.
    fn entry(&self) -> Option<&KernelEntry>;
}

impl FuseRow for KernelRow {
    type Cell = String;

    fn name(&self) -> &str {
        &self.name
    }

    fn total_us(&self) -> f64 {
        self.aggregate.total_us
    }

    fn location(&self) -> &[String] {
        &self.location
    }

    fn cpu_op(&self) -> &[String] {
        &self.cpu_op
    }

    fn entry(&self) -> Option<&KernelEntry> {
        self.entry.as_ref()
    }
}

/// One row of the fuse table.
#[derive(Clone, Debug, PartialEq)]
pub struct FusionOpportunity {
    pub pattern: String,
    /// `mainline|upstream|pending` + ` direct|split`.
    pub status: String,
    /// `Confirmed` or `Candidate` (reference rule); under whole-token
    /// matching `Confirmed` or `Possible`.
    pub confidence: String,
    pub related_us: f64,
    /// `name (share%)` of the leading related kernels (empty: none).
    pub evidence: Vec<String>,
    /// Where the related kernels are launched from (empty: unknown).
    pub current_locations: Vec<String>,
    /// Where the fused implementation lives.
    pub candidate_path: Vec<String>,
    pub rationale: String,
    /// (name, location, cpu_op) of every related row.
    covered: Vec<(String, String, String)>,
    span: usize,
    priority: i64,
    has_direct_match: bool,
    subsumes: Vec<String>,
}

impl FusionOpportunity {
    /// Whether a kernel of the fused family itself was seen (vs. only the
    /// split pieces).
    pub fn has_direct_match(&self) -> bool {
        self.has_direct_match
    }

    /// Identities (name, location, cpu_op) of the rows this match explains.
    pub fn covered_rows(&self) -> &[(String, String, String)] {
        &self.covered
    }

    pub fn pattern_span(&self) -> usize {
        self.span
    }

    pub fn priority(&self) -> i64 {
        self.priority
    }
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `str()` of a JSON scalar the way Python prints what `json.load` made.
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => py_float_repr(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The `model_path` (else `model`) entry of server_args.json, lower-cased.
pub fn model_path_from_server_args(server_args: Option<&Value>) -> String {
    let Some(Value::Object(map)) = server_args else { return String::new() };
    [map.get("model_path"), map.get("model")]
        .into_iter()
        .flatten()
        .find(|v| truthy(v))
        .map(|v| py_str(v).to_lowercase())
        .unwrap_or_default()
}

/// `tp_size` from server_args.json; 1 when absent, zero or unreadable.
pub fn tp_size_from_server_args(server_args: Option<&Value>) -> i64 {
    let Some(Value::Object(map)) = server_args else { return 1 };
    let Some(v) = map.get("tp_size").filter(|v| truthy(v)) else { return 1 };
    match v {
        Value::Bool(_) => 1,
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i,
            (None, Some(_), _) => i64::MAX,
            (_, _, Some(f)) if f.is_finite() => f.trunc() as i64,
            _ => 1,
        },
        Value::String(s) => py_int_of_str(s).unwrap_or(1),
        _ => 1,
    }
}

/// Our one-sentence explanation of a match (free wording; not part of
/// the parity contract).
/// `named` says a direct match's kernel, or the CPU op that launched it, is
/// named after the fused path (the reference's rule takes every direct
/// match as named).
fn rationale(spec: &PatternSpec, direct: bool, named: bool, share: f64) -> String {
    let lead = match (spec.origin, direct) {
        // A direct match is the fused kernel itself, wherever it comes from.
        (_, true) if named => format!("The fused kernel already runs here ({share:.1}% of stage GPU time)."),
        // Only a Python location names the fused path: no kernel or CPU op
        // shows that it runs.
        (_, true) => format!(
            "A Python location of the fused path launches kernels here, but no kernel or CPU op is named after it ({share:.1}% of stage GPU time)."
        ),
        (Origin::Mainline, false) => {
            format!("Unfused pieces of this family take {share:.1}% of stage GPU time; the framework has a fused path.")
        }
        (Origin::Upstream, false) => {
            format!("A fused path exists upstream ({share:.1}% of stage GPU time is related).")
        }
        (Origin::Inflight, false) => {
            format!("An open upstream change targets this ({share:.1}% of stage GPU time is related).")
        }
    };
    if spec.rationale.is_empty() {
        lead
    } else {
        format!("{lead} {}", spec.rationale)
    }
}

/// Matches every registry pattern against one stage's rows and returns the
/// kept opportunities, highest ranked first. `total_us` is the stage's
/// GPU time; `framework` is the resolved framework (`None` accepts every
/// pattern).
///
/// Under [`KeywordMatch::Substring`] this is the reference tool's rule:
/// `Confirmed` for a direct match or a split match of at least the
/// pattern's `likely_share`, else `Candidate`. Under
/// [`KeywordMatch::Tokens`] (the default) keywords match whole tokens, a
/// pattern limited to model families needs a sign of one of them, and
/// `Confirmed` also needs kernels of the pattern's own family: a kernel
/// whose name, or the CPU op that launched it, matches the direct keywords
/// (direct match) or, for a split match, each group. Other matches are `Possible`, and a match with no
/// evidence kernel to show is left out.
pub fn detect_fusion_opportunities<R: FuseRow + Sync>(
    registry: &Registry,
    rows: &[R],
    total_us: f64,
    server_args: Option<&Value>,
    framework: Option<Framework>,
    mode: KeywordMatch,
) -> Vec<FusionOpportunity> {
    if total_us <= 0.0 {
        return Vec::new();
    }
    let model_path = model_path_from_server_args(server_args);
    let ctx = MatchContext { model_path: &model_path, tp_size: tp_size_from_server_args(server_args), framework };
    // Patterns whose gates fail match nothing: their keywords are not tried.
    let specs: Vec<&PatternSpec> = registry.patterns().iter().filter(|spec| matcher::gates_pass(spec, &ctx)).collect();
    let strict = mode == KeywordMatch::Tokens;
    let signs: Vec<Vec<String>> = if strict {
        FAMILIES.iter().map(|(_, words)| words.iter().map(|w| w.to_string()).collect()).collect()
    } else {
        Vec::new()
    };
    let (hits, mut seen) = find_hits_with(&specs, rows, mode, &signs);
    if strict {
        let path = RowText::of_text(&model_path, mode);
        for (seen, words) in seen.iter_mut().zip(&signs) {
            *seen = *seen || path.matches_any(&Needle::all(words));
        }
    }
    let family_shown = |spec: &PatternSpec| {
        spec.families.is_empty()
            || spec.families.iter().any(|f| FAMILIES.iter().zip(&seen).any(|((name, _), s)| *s && name == f))
    };

    let mut raw: Vec<FusionOpportunity> = Vec::new();
    for (spec, hits) in specs.into_iter().zip(&hits) {
        if strict && !family_shown(spec) {
            continue;
        }
        let Some(m) = matcher::match_pattern(spec, rows, hits, total_us, &ctx) else { continue };
        let share = pct(m.related_us, total_us);
        let kind = if m.has_direct_match { "direct" } else { "split" };
        let mut confirmed = m.has_direct_match || share >= spec.likely_share;
        let evidence = summary::summarize_evidence(&m.related, total_us);
        if strict {
            let own_family = if m.has_direct_match {
                hits.direct_named
            } else {
                !hits.groups_named.is_empty() && hits.groups_named.iter().all(|&n| n)
            };
            confirmed &= own_family;
            if evidence.is_empty() {
                continue;
            }
        }
        let label = match (confirmed, strict) {
            (true, _) => "Confirmed",
            (false, false) => "Candidate",
            (false, true) => "Possible",
        };
        let locations = m.related.iter().flat_map(|r| kernel_row_locations(*r));
        raw.push(FusionOpportunity {
            pattern: spec.name.clone(),
            status: format!("{} {kind}", spec.origin.status_word()),
            confidence: label.to_string(),
            related_us: m.related_us,
            evidence,
            current_locations: summary::summarize_locations(locations),
            candidate_path: spec.candidate_paths.clone(),
            rationale: rationale(spec, m.has_direct_match, !strict || hits.direct_named, share),
            covered: m
                .related
                .iter()
                .map(|r| (r.name().to_string(), location_cell(r.location()), cpu_op_cell(r.cpu_op())))
                .collect(),
            span: spec.span(),
            priority: spec.priority,
            has_direct_match: m.has_direct_match,
            subsumes: spec.subsumes.clone(),
        });
    }

    // Stable, descending on (priority, span, covered rows, related time).
    raw.sort_by(|a, b| {
        (b.priority, b.span, b.covered.len())
            .cmp(&(a.priority, a.span, a.covered.len()))
            .then_with(|| fcmp(b.related_us, a.related_us))
    });

    let mut consumed: HashSet<(String, String, String)> = HashSet::default();
    let mut blocked: HashSet<String> = HashSet::default();
    let mut kept = Vec::new();
    for opp in raw {
        if blocked.contains(&opp.pattern) || opp.covered.iter().any(|k| consumed.contains(k)) {
            continue;
        }
        consumed.extend(opp.covered.iter().cloned());
        blocked.extend(opp.subsumes.iter().cloned());
        kept.push(opp);
    }
    kept
}

#[cfg(test)]
mod tests;
