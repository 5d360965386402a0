//! Matching patterns against a stage's kernel rows: keyword tests on each
//! row's name, location and CPU op (plain lower-case and
//! alphanumeric-compacted), made for all patterns in one pass over the rows
//! ([`find_hits`]); the framework / model / TP / model-family gates; and
//! the direct-or-split decision with its share thresholds.
//!
//! Two [`KeywordMatch`] rules: the reference tool's plain substring test,
//! and (the default) whole tokens. A token is a run of letters or digits
//! split further at camel-case humps (`RMSNorm` is `RMS` `Norm`) and at
//! letter–digit changes; a keyword must begin where a token begins and end
//! where one ends, though it may span several (`fused_add_rmsnorm` matches
//! `FusedAddRMSNormKernel`). Runs that look like hashes — 24 or more
//! characters of one case (inductor cache files), 12 or more hex digits
//! with both letters and digits, `0x` addresses — are never matched.

use memchr::memmem::Finder;
use rustc_hash::FxHashSet as HashSet;

use crate::analysis::framework::Framework;
use crate::analysis::types::{cpu_op_cell, location_cell};
use crate::pysem::normalize_text;

use super::registry::PatternSpec;
use super::summary::pct;
use super::tokens;
use super::FuseRow;

/// Lower-cases and keeps only ASCII letters and digits, so that
/// `fused_add_rms_norm`, `FusedAddRMSNorm` and `fused add rms-norm` agree.
pub fn compact_match_text(text: &str) -> String {
    normalize_text(text).chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// How keywords are found in a row's text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeywordMatch {
    /// Whole tokens only (see the module docs).
    #[default]
    Tokens,
    /// Anywhere, as the reference tool does (`--compat reference`).
    Substring,
}

/// A keyword prepared for matching: lower-cased and compacted forms, each
/// with its substring searcher built once (rows are many).
pub struct Needle {
    lower: Finder<'static>,
    compact: Finder<'static>,
    /// An ASCII keyword found verbatim in a row is found compacted too
    /// (compacting both drops the same characters), so when its compacted
    /// form is not empty that search alone decides.
    compact_decides: bool,
}

impl Needle {
    pub fn new(keyword: &str) -> Needle {
        let finder = |text: &str| Finder::new(text.as_bytes()).into_owned();
        let compact = compact_match_text(keyword);
        Needle {
            lower: finder(&keyword.to_lowercase()),
            compact_decides: keyword.is_ascii() && !compact.is_empty(),
            compact: finder(&compact),
        }
    }

    pub fn all<S: AsRef<str>>(keywords: &[S]) -> Vec<Needle> {
        keywords.iter().map(|k| Needle::new(k.as_ref())).collect()
    }
}

/// A row's searchable text: name, location cell and CPU-op cell.
pub struct RowText {
    lowered: String,
    compact: String,
    /// Under [`KeywordMatch::Tokens`]: bit `i` of `starts` says a token
    /// begins at byte `i` of `compact`, bit `i` of `ends` that one ends
    /// just before it. Empty under [`KeywordMatch::Substring`].
    starts: Vec<u64>,
    ends: Vec<u64>,
    mode: KeywordMatch,
}

impl RowText {
    pub fn new<R: FuseRow>(row: &R) -> RowText {
        RowText::with_mode(row, KeywordMatch::Substring)
    }

    /// The row's text; under [`KeywordMatch::Tokens`] the kernel name
    /// without its parenthesized parts ([`RowText::of_name`]).
    pub fn with_mode<R: FuseRow>(row: &R, mode: KeywordMatch) -> RowText {
        let name = match mode {
            KeywordMatch::Substring => std::borrow::Cow::Borrowed(row.name()),
            KeywordMatch::Tokens => tokens::without_parens(row.name()),
        };
        let cells = [&*name, &location_cell(row.location()), &cpu_op_cell(row.cpu_op())];
        RowText::of_text(&cells.join(" "), mode)
    }

    /// A kernel name alone; under [`KeywordMatch::Tokens`] without its
    /// parameter list and the casts of template values.
    pub fn of_name(name: &str, mode: KeywordMatch) -> RowText {
        match mode {
            KeywordMatch::Substring => RowText::of_text(name, mode),
            KeywordMatch::Tokens => RowText::of_text(&tokens::without_parens(name), mode),
        }
    }

    /// The searchable form of any text.
    pub fn of_text(text: &str, mode: KeywordMatch) -> RowText {
        let lowered = text.to_lowercase();
        match mode {
            KeywordMatch::Substring => {
                let compact = compact_match_text(&lowered);
                RowText { lowered, compact, starts: Vec::new(), ends: Vec::new(), mode }
            }
            KeywordMatch::Tokens => {
                let (compact, starts, ends) = tokens::compact_with_bounds(&normalize_text(text));
                RowText { lowered, compact, starts, ends, mode }
            }
        }
    }

    /// True when any keyword occurs in the row, either verbatim (case
    /// insensitive) or after compaction of both sides; under
    /// [`KeywordMatch::Tokens`] only on token bounds of the compacted text.
    pub fn matches_any(&self, needles: &[Needle]) -> bool {
        needles.iter().any(|n| {
            let compacted = || match self.mode {
                KeywordMatch::Substring => n.compact.find(self.compact.as_bytes()).is_some(),
                KeywordMatch::Tokens => {
                    let len = n.compact.needle().len();
                    n.compact
                        .find_iter(self.compact.as_bytes())
                        .any(|at| tokens::bit(&self.starts, at) && tokens::bit(&self.ends, at + len))
                }
            };
            if n.compact_decides {
                return compacted();
            }
            n.lower.find(self.lowered.as_bytes()).is_some() || (!n.compact.needle().is_empty() && compacted())
        })
    }
}

/// Serving context the gates look at.
pub struct MatchContext<'a> {
    /// Lower-cased model path from server_args.json ("" when unknown).
    pub model_path: &'a str,
    pub tp_size: i64,
    /// The resolved framework; `None` accepts every pattern.
    pub framework: Option<Framework>,
}

/// One pattern's raw match before ranking and de-duplication.
pub struct PatternMatch<'r, R> {
    pub has_direct_match: bool,
    /// Direct rows first, then each split group's rows, without repeats.
    pub related: Vec<&'r R>,
    pub related_us: f64,
}

/// The rows (positions) one pattern's keyword lists hit: its direct
/// keywords, and each split group.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatternHits {
    pub direct: Vec<u32>,
    pub groups: Vec<Vec<u32>>,
    /// Under [`KeywordMatch::Tokens`]: some row's kernel name, or the CPU
    /// op that launched it (not its Python location), matches the direct
    /// keywords / each group.
    pub direct_named: bool,
    pub groups_named: Vec<bool>,
}

/// The hits of every pattern in `specs`, from one pass over the rows (in
/// parallel chunks, merged in row order): each row's text is made once and
/// dropped, rather than kept for all rows while pattern after pattern is
/// tried. An empty keyword list hits nothing. Substring matching, as the
/// reference tool does.
pub fn find_hits<R: FuseRow + Sync>(specs: &[&PatternSpec], rows: &[R]) -> Vec<PatternHits> {
    find_hits_with(specs, rows, KeywordMatch::Substring, &[]).0
}

/// [`find_hits`] under `mode`, and for each list of `signs` whether any
/// row's text holds one of its words.
pub fn find_hits_with<R: FuseRow + Sync>(
    specs: &[&PatternSpec],
    rows: &[R],
    mode: KeywordMatch,
    signs: &[Vec<String>],
) -> (Vec<PatternHits>, Vec<bool>) {
    use rayon::prelude::*;
    const CHUNK: usize = 4096;
    let named = mode == KeywordMatch::Tokens;
    let needles: Vec<(Vec<Needle>, Vec<Vec<Needle>>)> = specs
        .iter()
        .map(|s| (Needle::all(&s.keywords), s.split_groups.iter().map(|g| Needle::all(g)).collect()))
        .collect();
    // Kernel names that keep a row out of a pattern: whole-token rule only.
    let excluded: Vec<Vec<Needle>> =
        specs.iter().map(|s| if named { Needle::all(&s.exclude_kernels) } else { Vec::new() }).collect();
    let sign_needles: Vec<Vec<Needle>> = signs.iter().map(|l| Needle::all(l)).collect();
    let empty = || -> (Vec<PatternHits>, Vec<bool>) {
        let hits = needles
            .iter()
            .map(|(_, groups)| PatternHits {
                direct: Vec::new(),
                groups: vec![Vec::new(); groups.len()],
                direct_named: false,
                groups_named: vec![false; groups.len()],
            })
            .collect();
        (hits, vec![false; sign_needles.len()])
    };
    let hit = |text: &RowText, list: &[Needle]| !list.is_empty() && text.matches_any(list);
    let chunks: Vec<(Vec<PatternHits>, Vec<bool>)> = rows
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let (mut hits, mut seen) = empty();
            for (j, row) in chunk.iter().enumerate() {
                let i = (c * CHUNK + j) as u32;
                let text = RowText::with_mode(row, mode);
                let name = named.then(|| RowText::of_name(row.name(), mode));
                // The kernel and the CPU op that launched it: what shows a
                // pattern's own kernels run (a Python location does not).
                let own = named.then(|| {
                    let text = format!("{} {}", tokens::without_parens(row.name()), cpu_op_cell(row.cpu_op()));
                    RowText::of_text(&text, mode)
                });
                for (((direct, groups), excluded), found) in needles.iter().zip(&excluded).zip(&mut hits) {
                    if name.as_ref().is_some_and(|n| hit(n, excluded)) {
                        continue;
                    }
                    if hit(&text, direct) {
                        found.direct.push(i);
                        found.direct_named |= own.as_ref().is_some_and(|n| hit(n, direct));
                    }
                    for (g, group) in groups.iter().enumerate() {
                        if hit(&text, group) {
                            found.groups[g].push(i);
                            found.groups_named[g] |= own.as_ref().is_some_and(|n| hit(n, group));
                        }
                    }
                }
                for (list, seen) in sign_needles.iter().zip(&mut seen) {
                    *seen = *seen || hit(&text, list);
                }
            }
            (hits, seen)
        })
        .collect();
    let (mut hits, mut seen) = empty();
    for (part_hits, part_seen) in chunks {
        for (all, part) in hits.iter_mut().zip(part_hits) {
            all.direct.extend(part.direct);
            all.direct_named |= part.direct_named;
            for (all, part) in all.groups.iter_mut().zip(part.groups) {
                all.extend(part);
            }
            for (all, part) in all.groups_named.iter_mut().zip(part.groups_named) {
                *all |= part;
            }
        }
        for (all, part) in seen.iter_mut().zip(part_seen) {
            *all |= part;
        }
    }
    (hits, seen)
}

/// Whether the pattern applies to this framework / model / TP setup.
pub fn gates_pass(spec: &PatternSpec, ctx: &MatchContext) -> bool {
    if let Some(f) = ctx.framework {
        if !(spec.frameworks.is_empty() || spec.frameworks.contains(&f)) {
            return false;
        }
    }
    if let Some(min_tp) = spec.min_tp_size {
        if ctx.tp_size < min_tp {
            return false;
        }
    }
    if !spec.models.is_empty() && !spec.models.iter().any(|m| ctx.model_path.contains(m.as_str())) {
        return false;
    }
    !spec.exclude_models.iter().any(|m| ctx.model_path.contains(m.as_str()))
}

/// Matches `spec` against the rows, given the rows its keyword lists hit
/// ([`find_hits`] over the same rows).
/// A direct keyword hit always reports; a split match needs every group to
/// hit and at least `min_share` percent of `total_us`.
pub fn match_pattern<'r, R: FuseRow>(
    spec: &PatternSpec,
    rows: &'r [R],
    hits: &PatternHits,
    total_us: f64,
    ctx: &MatchContext,
) -> Option<PatternMatch<'r, R>> {
    if total_us <= 0.0 || !gates_pass(spec, ctx) {
        return None;
    }
    let (direct, groups) = (&hits.direct, &hits.groups);
    let has_direct_match = !direct.is_empty();
    let has_split_match = !groups.is_empty() && groups.iter().all(|g| !g.is_empty());
    if !has_direct_match && !has_split_match {
        return None;
    }
    let mut seen: HashSet<RowKey<'r, R::Cell>> = HashSet::default();
    let mut related: Vec<&R> = Vec::new();
    for i in direct.iter().chain(groups.iter().flatten()) {
        let Some(row) = rows.get(*i as usize) else { continue };
        if seen.insert(row_key(row)) {
            related.push(row);
        }
    }
    let related_us: f64 = related.iter().map(|r| r.total_us()).sum();
    if related_us <= 0.0 {
        return None;
    }
    if !has_direct_match && pct(related_us, total_us) < spec.min_share {
        return None;
    }
    Some(PatternMatch { has_direct_match, related, related_us })
}

/// Identity of a kernel-table row: name, location and CPU op.
pub type RowKey<'r, C> = (&'r str, &'r [C], &'r [C]);

pub fn row_key<R: FuseRow>(row: &R) -> RowKey<'_, R::Cell> {
    (row.name(), row.location(), row.cpu_op())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fusion::registry::Registry;
    use crate::analysis::types::{Aggregate, KernelRow};

    fn row(name: &str, location: &str, cpu_op: &str, us: f64) -> KernelRow {
        KernelRow {
            name: name.into(),
            location: [location]
                .iter()
                .filter(|l| !l.is_empty() && **l != "unresolved")
                .map(|l| l.to_string())
                .collect(),
            cpu_op: [cpu_op].iter().filter(|c| !c.is_empty() && **c != "-").map(|c| c.to_string()).collect(),
            aggregate: Aggregate { total_us: us, count: 1, max_us: us },
            ..Default::default()
        }
    }

    #[test]
    fn keywords_match_plain_and_compacted() {
        let t = RowText::new(&row("void vllm::FusedAddRMSNormKernel<8>", "unresolved", "", 1.0));
        assert!(t.matches_any(&Needle::all(&["fused_add_rmsnorm"])));
        assert!(t.matches_any(&Needle::all(&["FUSEDADDRMS"])));
        assert!(!t.matches_any(&Needle::all(&["silu"])));
        let t = RowText::new(&row("k", "vllm/a.py:3 forward", "aten::Softmax", 1.0));
        assert!(t.matches_any(&Needle::all(&["softmax"])));
        assert!(t.matches_any(&Needle::all(&["a.py:3"])));
        // A keyword that compacts to nothing only matches verbatim.
        assert!(!t.matches_any(&Needle::all(&["__"])));
    }

    #[test]
    fn compacted_search_alone_agrees_with_both_searches() {
        // The definition: verbatim (lower-cased) or compacted.
        let both = |row: &RowText, keyword: &str| {
            let compact = compact_match_text(keyword);
            row.lowered.contains(&keyword.to_lowercase()) || (!compact.is_empty() && row.compact.contains(&compact))
        };
        let keywords = ["silu_and_mul", "a.py:3", "__", "Fused Add", "x-y", "mm", "e\u{e9}", "K", "q k", "_v_"];
        let pieces =
            ["silu", "_and_", "mul", "a.py:3", "__", "fused", " add", "x-y", "M", "\u{e9}", "\u{212a}", "q\tk", "_v_"];
        let mut rng = crate::pysem::test_rng(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..4 {
                text.push_str(pieces[rng() as usize % pieces.len()]);
            }
            let row = RowText::new(&row(&text, "", "", 1.0));
            for k in keywords {
                assert_eq!(row.matches_any(&Needle::all(&[k])), both(&row, k), "{k:?} in {text:?}");
            }
        }
    }

    #[test]
    fn gates_check_framework_model_and_tp() {
        let reg = Registry::builtin();
        let ar = reg.get("FlashInfer unified allreduce_fusion").unwrap();
        let mut ctx = MatchContext { model_path: "", tp_size: 1, framework: None };
        assert!(!gates_pass(ar, &ctx));
        ctx.tp_size = 2;
        assert!(gates_pass(ar, &ctx));
        ctx.framework = Some(Framework::Vllm);
        assert!(!gates_pass(ar, &ctx));
        let q3 = reg.get("Qwen3 decode fused QK norm + 3D mRoPE + KV cache write").unwrap();
        let ctx = MatchContext { model_path: "qwen/qwen3-8b", tp_size: 1, framework: Some(Framework::Sglang) };
        assert!(gates_pass(q3, &ctx));
        let ctx = MatchContext { model_path: "qwen/qwen3.5-8b", tp_size: 1, framework: Some(Framework::Sglang) };
        assert!(!gates_pass(q3, &ctx));
    }

    #[test]
    fn split_match_needs_every_group_and_min_share() {
        let reg = Registry::builtin();
        let spec = reg.get("Fused sampling temperature + softmax").unwrap();
        let ctx = MatchContext { model_path: "", tp_size: 1, framework: None };
        let rows =
            vec![row("temperature_scale", "", "", 5.0), row("softmax_kernel", "", "", 5.0), row("gemm", "", "", 90.0)];
        let hits = &find_hits(&[spec], &rows)[0];
        let m = match_pattern(spec, &rows, hits, 100.0, &ctx).unwrap();
        assert!(!m.has_direct_match);
        assert_eq!(m.related.len(), 2);
        assert_eq!(m.related_us, 10.0);
        // One group missing: no match.
        assert!(match_pattern(spec, &rows[1..], &find_hits(&[spec], &rows[1..])[0], 100.0, &ctx).is_none());
        // Below min_share: no match.
        assert!(match_pattern(spec, &rows, hits, 1_000_000.0, &ctx).is_none());
    }

    #[test]
    fn one_pass_hits_match_each_list_tested_alone() {
        let reg = Registry::builtin();
        let rows: Vec<KernelRow> = (0..200)
            .map(|i| {
                let names = ["softmax_kernel", "silu_and_mul", "gemm", "temperature_scale", "rotary_emb", "v"];
                let ops = ["", "aten::mm", "aten::softmax", "-"];
                row(names[i % names.len()], ["vllm/a.py:3 forward", "", "x.py:1 rope"][i % 3], ops[i % 4], i as f64)
            })
            .collect();
        let specs: Vec<&PatternSpec> = reg.patterns().iter().collect();
        let texts: Vec<RowText> = rows.iter().map(RowText::new).collect();
        // The unbatched definition: each list against every row's text.
        let alone = |list: &[String]| -> Vec<u32> {
            if list.is_empty() {
                return Vec::new();
            }
            let needles = Needle::all(list);
            (0..rows.len() as u32).filter(|&i| texts[i as usize].matches_any(&needles)).collect()
        };
        for (spec, hits) in specs.iter().zip(find_hits(&specs, &rows)) {
            assert_eq!(hits.direct, alone(&spec.keywords), "{}", spec.name);
            let groups: Vec<Vec<u32>> = spec.split_groups.iter().map(|g| alone(g)).collect();
            assert_eq!(hits.groups, groups, "{}", spec.name);
        }
    }
}
