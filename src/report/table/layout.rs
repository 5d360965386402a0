//! Column fitting: a [`Table`] of columns (header, alignment, what may
//! shrink and what may go) and rows of multi-line cells, laid out to fit a
//! terminal width. When the natural layout is too wide, the name columns
//! (kernel, pattern, location) shrink first, widest first, down to their
//! minimum, their cells shortened in the middle; then the columns with the
//! lowest keep rank are dropped one at a time (one dropped while wider ones
//! still overflowed comes back if it fits beside those kept); as a last resort the name
//! columns shrink below their minimum, and a line under the table names the
//! columns left out. Also word-wrapping of prose lines.

use std::collections::HashMap;

use super::names::{columns, shorten_apart, shorten_middle, take_columns};

/// Space between columns.
const GAP: &str = "  ";

/// Cell alignment: text left, numbers right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column.
#[derive(Clone, Debug)]
pub struct Column {
    pub header: String,
    pub align: Align,
    /// The narrowest a name column shrinks to before other columns go;
    /// `None`: the column keeps its natural width.
    pub shrink_to: Option<usize>,
    /// Columns with a lower rank are dropped first when the table does not
    /// fit; 0 is never dropped.
    pub keep: u8,
    /// Shortened by cutting the head (`…` then the tail: a location's file
    /// and line) rather than the middle.
    pub keep_tail: bool,
}

impl Column {
    /// A text column.
    pub fn text(header: &str, keep: u8) -> Column {
        Column { header: header.to_string(), align: Align::Left, shrink_to: None, keep, keep_tail: false }
    }
    /// A number column.
    pub fn num(header: &str, keep: u8) -> Column {
        Column { header: header.to_string(), align: Align::Right, shrink_to: None, keep, keep_tail: false }
    }
    /// A name column that shrinks to `min` characters.
    pub fn name(header: &str, min: usize, keep: u8) -> Column {
        Column { header: header.to_string(), align: Align::Left, shrink_to: Some(min), keep, keep_tail: false }
    }
    /// A location column that shrinks to `min` characters, keeping the
    /// end of each line (file, line, function).
    pub fn location(header: &str, min: usize, keep: u8) -> Column {
        Column { keep_tail: true, ..Column::name(header, min, keep) }
    }
}

/// Columns and rows; each cell is one or more lines (a list: one item per
/// line, the row's other cells blank on the extra lines).
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Vec<String>>>,
}

/// Terminal columns of `s` ([`columns`]): what aligns a table.
fn chars(s: &str) -> usize {
    columns(s)
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table { columns, rows: Vec::new() }
    }

    /// Adds a row of single-line cells.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells.into_iter().map(|c| vec![c]).collect());
    }

    /// Adds a row whose cells may have several lines.
    pub fn row_lines(&mut self, cells: Vec<Vec<String>>) {
        self.rows.push(cells);
    }

    /// The table's lines, header and rule first, each at most `width`
    /// characters.
    pub fn render(&self, width: usize) -> Vec<String> {
        let n = self.columns.len();
        let values: Vec<usize> = (0..n)
            .map(|c| self.rows.iter().flat_map(|r| r.get(c).into_iter().flatten()).map(|s| chars(s)).max().unwrap_or(0))
            .collect();
        let natural: Vec<usize> = (0..n).map(|c| values[c].max(chars(&self.columns[c].header))).collect();
        let mut shown: Vec<bool> = vec![true; n];
        let mut widths = natural.clone();
        let total = |widths: &[usize], shown: &[bool]| -> usize {
            let cols: Vec<usize> = (0..n).filter(|&c| shown[c]).map(|c| widths[c]).collect();
            cols.iter().sum::<usize>() + GAP.len() * cols.len().saturating_sub(1)
        };
        let shrink = |widths: &mut Vec<usize>, shown: &[bool], floor: &dyn Fn(usize) -> Option<usize>| {
            while total(widths, shown) > width {
                let pick = (0..n)
                    .filter(|&c| shown[c] && floor(c).is_some_and(|f| widths[c] > f))
                    .max_by_key(|&c| (widths[c], std::cmp::Reverse(c)));
                match pick {
                    Some(c) => widths[c] -= 1,
                    None => break,
                }
            }
        };
        let word: Vec<usize> =
            (0..n).map(|c| self.columns[c].header.split_whitespace().map(chars).max().unwrap_or(0)).collect();
        // Name columns shrink to their minimum before any column is left out.
        let fit = |widths: &mut Vec<usize>, shown: &[bool]| shrink(widths, shown, &|c| self.columns[c].shrink_to);
        fit(&mut widths, &shown);
        let mut dropped = Vec::new();
        while total(&widths, &shown) > width {
            let drop = (0..n)
                .filter(|&c| shown[c] && self.columns[c].keep > 0)
                .min_by_key(|&c| (self.columns[c].keep, std::cmp::Reverse(c)));
            let Some(c) = drop else { break };
            shown[c] = false;
            dropped.push(c);
            // A dropped column may leave room: the others grow back.
            widths = natural.clone();
            fit(&mut widths, &shown);
        }
        // A column left out while wider ones still overflowed may fit beside
        // the ones kept: the most kept first.
        if total(&widths, &shown) <= width {
            for &c in dropped.iter().rev() {
                shown[c] = true;
                let mut tried = natural.clone();
                fit(&mut tried, &shown);
                if total(&tried, &shown) <= width {
                    widths = tried;
                } else {
                    shown[c] = false;
                }
            }
        }
        shrink(&mut widths, &shown, &|c| self.columns[c].shrink_to.map(|_| 8));
        // The last resort: a name column's header wraps to its longest
        // word, and a number keeps all its digits (cut in the middle it
        // would read as another number); other text is shortened down to
        // three characters.
        shrink(&mut widths, &shown, &|c| {
            let text = if self.columns[c].align == Align::Right { values[c] } else { 3 };
            Some(word[c].max(text))
        });
        // Floors that still do not fit: any column down to three characters,
        // rather than every line cut in the middle across its columns.
        shrink(&mut widths, &shown, &|_| Some(3));
        let visible: Vec<usize> = (0..n).filter(|&c| shown[c]).collect();
        let apart = self.kept_apart(&visible, &widths);
        let line = |cells: &[String]| -> String {
            let mut out = String::new();
            for (i, &c) in visible.iter().enumerate() {
                let w = widths[c];
                let cell = cells.get(c).map_or("", String::as_str);
                let text = if self.columns[c].keep_tail {
                    shorten_location(cell, w)
                } else if let Some(text) = apart.get(&(c, cell)) {
                    text.clone()
                } else {
                    shorten_middle(cell, w)
                };
                let pad = w.saturating_sub(chars(&text));
                let last = i + 1 == visible.len();
                if i > 0 {
                    out.push_str(GAP);
                }
                match self.columns[c].align {
                    Align::Left if last => out.push_str(&text),
                    Align::Left => {
                        out.push_str(&text);
                        out.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        out.extend(std::iter::repeat_n(' ', pad));
                        out.push_str(&text);
                    }
                }
            }
            let trimmed = out.trim_end().to_string();
            shorten_middle(&trimmed, width)
        };
        // A header wider than its column goes on as many lines as it needs.
        let headers: Vec<Vec<String>> = (0..n)
            .map(|c| if shown[c] { header_lines(&self.columns[c].header, widths[c]) } else { Vec::new() })
            .collect();
        let height = headers.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let mut lines: Vec<String> = (0..height)
            .map(|k| {
                // Bottom-aligned, so the last line of each header sits on the rule.
                let cells: Vec<String> = headers
                    .iter()
                    .map(|h| h.get((k + h.len()).wrapping_sub(height)).cloned().unwrap_or_default())
                    .collect();
                line(&cells)
            })
            .collect();
        let rule: Vec<String> = visible.iter().map(|&c| "─".repeat(widths[c])).collect();
        lines.push(shorten_middle(&rule.join(GAP), width));
        for row in &self.rows {
            let height = visible.iter().map(|&c| row.get(c).map_or(0, Vec::len)).max().unwrap_or(0).max(1);
            for k in 0..height {
                let cells: Vec<String> =
                    (0..n).map(|c| row.get(c).and_then(|l| l.get(k)).cloned().unwrap_or_default()).collect();
                lines.push(line(&cells));
            }
        }
        // The legend under a table describes every column: say which ones
        // this width left out.
        let hidden: Vec<&str> = (0..n).filter(|&c| !shown[c]).map(|c| self.columns[c].header.as_str()).collect();
        if !hidden.is_empty() {
            let note = format!("Left out at {width} columns: {} (a wider terminal shows them).", hidden.join(", "));
            lines.extend(wrap(&note, width, "  "));
        }
        lines
    }
}

impl Table {
    /// Cells that shortening in the middle would make look alike (two
    /// kernels that differ only inside the cut), each shortened instead
    /// around where it first differs from the others: (column, cell) →
    /// text.
    fn kept_apart(&self, visible: &[usize], widths: &[usize]) -> HashMap<(usize, &str), String> {
        let mut out = HashMap::new();
        for &c in visible.iter().filter(|&&c| !self.columns[c].keep_tail) {
            let cells: Vec<&str> = self.rows.iter().filter_map(|r| r.get(c)).flatten().map(String::as_str).collect();
            for (cell, text) in cells.iter().zip(shorten_apart(&cells, widths[c])) {
                out.insert((c, *cell), text);
            }
        }
        out
    }
}

/// A Python location (`dir/file.py:12 function`, perhaps followed by a
/// note such as `(site share 95%)`) cut to at most `width` characters,
/// keeping what tells sites apart: whole trailing path components first
/// (`…/file.py:12 function (site share 95%)`), then with the note's words
/// dropped (`(95%)`, which the column's header names), and only then the
/// start of the file name.
pub fn shorten_location(text: &str, width: usize) -> String {
    if chars(text) <= width {
        return text.to_string();
    }
    let (main, note) = match text.rfind(" (") {
        Some(i) if text.ends_with(')') => text.split_at(i),
        _ => (text, ""),
    };
    // `(site share 95%)` → `(95%)`.
    let short_note = match note.rsplit_once(' ') {
        Some((_, last)) if note.len() > 2 => format!(" ({last}"),
        _ => note.to_string(),
    };
    for note in [note, short_note.as_str()] {
        if chars(main) + chars(note) <= width {
            return format!("{main}{note}");
        }
        // The longest tail of the path that starts at a `/` and fits.
        let path_end = main.find(' ').unwrap_or(main.len());
        for (i, _) in main[..path_end].match_indices('/') {
            let tail = &main[i..];
            if 1 + chars(tail) + chars(note) <= width {
                return format!("…{tail}{note}");
            }
        }
    }
    shorten_head(&format!("{main}{short_note}"), width)
}

/// `text` cut to at most `width` characters by replacing its start with
/// `…`.
pub fn shorten_head(text: &str, width: usize) -> String {
    if chars(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    format!("…{}", super::names::take_tail_columns(text, width - 1))
}

/// A column header as lines of at most `width` characters, words kept whole
/// where they fit (one longer than the column is shortened in the middle).
fn header_lines(header: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in header.split_whitespace() {
        match lines.last_mut() {
            Some(last) if chars(last) + 1 + chars(word) <= width => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(shorten_middle(word, width)),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// `text` word-wrapped to `width` characters; continuation lines start
/// with `indent`; a word longer than a line is broken.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(chars(indent) + 8);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let sep = usize::from(!cur.is_empty() && cur != indent);
            if chars(&cur) + sep + chars(&word) <= width {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if cur.is_empty() || cur == indent {
                // The word alone is too long: break it.
                let room = width.saturating_sub(chars(&cur));
                let mut head = take_columns(word.chars(), room);
                if head.is_empty() {
                    // Not one character fits the room left (a wide one in
                    // one column): it goes on a line of its own.
                    head = word.chars().take(1).collect();
                }
                cur.push_str(&head);
                word = word[head.len()..].to_string();
            }
            lines.push(std::mem::replace(&mut cur, indent.to_string()));
            if word.is_empty() {
                break;
            }
        }
    }
    if !cur.is_empty() && cur != indent {
        lines.push(cur);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Column::name("Kernel", 24, 0),
            Column::num("GPU time (ms)", 0),
            Column::text("Category", 2),
            Column::num("Max (µs)", 1),
        ]);
        t.row(vec![
            "a_very_long_kernel_name_that_will_not_fit_anywhere_at_all".into(),
            "1.00".into(),
            "gemm".into(),
            "3.0".into(),
        ]);
        t.row_lines(vec![vec!["short".into()], vec!["2.00".into()], vec!["memory".into(), "second".into()], vec![]]);
        t
    }

    #[test]
    fn wide_characters_and_combining_marks_keep_the_columns_aligned() {
        let mut t = Table::new(vec![Column::name("Kernel", 10, 0), Column::num("GPU time (ms)", 0)]);
        for name in ["正規化::rms_norm_kernel<Ω> 🚀", "ядро_é\u{301}", "plain_kernel"] {
            t.row(vec![name.into(), "1.00".into()]);
        }
        for w in [80, 30, 24] {
            let lines = t.render(w);
            // The number column ends in the same terminal column on every
            // row, and no line is wider than asked.
            let ends: Vec<usize> = lines[2..].iter().map(|l| columns(l)).collect();
            assert!(ends.iter().all(|&e| e == ends[0] && e <= w), "{w}: {lines:#?}");
        }
        let cut = shorten_middle("正規化正規化正規化", 9);
        assert!(columns(&cut) <= 9 && cut.contains('…'), "{cut}");
        assert_eq!(shorten_head("正規化正規化", 6), "…規化");
    }

    #[test]
    fn a_narrow_column_left_out_comes_back_when_it_fits() {
        let mut t =
            Table::new(vec![Column::name("Kernel", 6, 0), Column::num("N", 1), Column::num("A much wider header", 2)]);
        t.row(vec!["abcdefghij".into(), "7".into(), "123".into()]);
        // N goes first, the wide column after it; N then fits beside the
        // kernel again.
        let lines = t.render(12);
        assert_eq!(lines[0], "Kernel     N", "{lines:?}");
        assert_eq!(lines[2], "abcd…ghij  7", "{lines:?}");
        let note = lines[3..].join(" ");
        assert!(note.starts_with("Left out at") && !note.contains(" N,"), "{lines:?}");
    }

    #[test]
    fn fits_and_aligns() {
        let t = sample();
        let wide = t.render(200);
        assert_eq!(wide[0].trim_end(), wide[0]);
        assert!(wide[1].starts_with('─'));
        assert!(wide[0].contains("Max (µs)"));
        // The continuation line has the other cells blank.
        assert!(wide[4].trim_start().starts_with("second"), "{wide:?}");
        for w in [20, 40, 60, 80] {
            for l in t.render(w) {
                assert!(l.chars().count() <= w, "{w}: {l}");
            }
        }
        // Name shrinks first, then Max (keep 1) goes before Category.
        let narrow = t.render(24 + 2 + 13 + 2 + 8);
        assert!(narrow[0].contains("Category") && !narrow[0].contains("Max"), "{narrow:?}");
        assert!(narrow[2].contains('…'));
        assert_eq!(shorten_head("a/b/c.py:12 f", 8), "…py:12 f");
        // A dropped list column leaves no blank continuation lines.
        let only = t.render(24 + 2 + 13);
        assert_eq!(only.iter().take_while(|l| !l.starts_with("Left out")).count(), 4, "{only:?}");
        // The columns left out are named under the table, and only then.
        let note = only[4..].join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(note.contains("Max (µs)") && note.contains("Category"), "{only:?}");
        assert!(!wide.iter().any(|l| l.starts_with("Left out")), "{wide:?}");
    }

    #[test]
    fn a_narrow_column_wraps_its_header_and_keeps_its_digits() {
        let mut t = Table::new(vec![
            Column::text("Rank", 0),
            Column::num("Busy (ms)", 0),
            Column::num("Exposed comm (ms)", 0),
            Column::text("Role", 0),
        ]);
        t.row(vec!["0".into(), "1234.56".into(), "987654.32".into(), "slowest".into()]);
        let lines = t.render(36);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 36 && !l.contains('…')), "{lines:?}");
        assert!(lines[0].trim_end().ends_with("Exposed") && lines[1].contains("comm (ms)"), "{lines:?}");
        assert!(lines[3].contains("1234.56") && lines[3].contains("987654.32"), "{lines:?}");
        // Header words longer than the column are still cut, never the
        // whole table wider than asked.
        assert_eq!(header_lines("Exposed comm (ms)", 5), ["Ex…ed", "comm", "(ms)"]);
        // Narrower than the floors: columns, not lines, are cut, so the
        // columns stay aligned under the rule.
        let lines = t.render(30);
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        let rule = lines.iter().find(|l| l.starts_with('─')).expect("rule");
        let gaps: Vec<usize> = rule.char_indices().filter(|&(_, c)| c == ' ').map(|(i, _)| i).collect();
        let row = lines.last().unwrap();
        for i in gaps {
            assert_eq!(row[..].chars().nth(rule[..i].chars().count()), Some(' '), "{lines:?}");
        }
    }

    #[test]
    fn kernels_that_differ_inside_the_cut_stay_apart() {
        let mut t = Table::new(vec![Column::name("Kernel", 20, 0), Column::num("GPU time", 0)]);
        for (name, ms) in [
            ("void split_embed_kernel_cta_per_row<float, float, 5ul>", "1.00 ms"),
            ("void split_embed_kernel_warp_per_row<float, float, 5ul>", "2.00 ms"),
            ("void other_kernel_with_a_long_enough_name<float>", "3.00 ms"),
        ] {
            t.row(vec![name.to_string(), ms.to_string()]);
        }
        let lines = t.render(20 + 2 + 8);
        let names: Vec<&str> = lines[2..].iter().map(|l| l.split("  ").next().unwrap().trim_end()).collect();
        assert_eq!(names, ["void…el_cta_per…5ul>", "void…el_warp_pe…5ul>", "void other…me<float>"], "{lines:?}");
    }

    #[test]
    fn wraps_words() {
        let lines = wrap("one two three four five six", 12, "  ");
        assert_eq!(lines, vec!["one two", "  three four", "  five six"]);
        let lines = wrap("abcdefghijklmnopqrstuvwxyz", 10, "");
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        assert_eq!(lines.concat(), "abcdefghijklmnopqrstuvwxyz");
    }

    #[test]
    fn locations_keep_their_file_name_before_their_path() {
        let site = "vllm/model_executor/layers/linear.py:428 call (site share 95%)";
        assert_eq!(shorten_location(site, 80), site);
        assert_eq!(shorten_location(site, 40), "…/linear.py:428 call (site share 95%)");
        assert_eq!(shorten_location(site, 30), "…/linear.py:428 call (95%)");
        assert_eq!(shorten_location(site, 20), "…r.py:428 call (95%)");
        assert_eq!(shorten_location("a/b/c.py:12 f", 8), "…py:12 f");
        assert_eq!(shorten_location("a/b/c.py:12 f", 11), "…/c.py:12 f");
        for w in 0..70 {
            assert!(shorten_location(site, w).chars().count() <= w, "{w}");
        }
    }
}
