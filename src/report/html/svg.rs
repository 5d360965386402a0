//! The SVG charts of the HTML pages, drawn as text: a stacked horizontal
//! bar (a window split into parts), a horizontal bar chart (top kernels),
//! paired bars (before / after) and grouped columns (per rank). Every
//! coordinate goes through [`n`], so a missing or zero figure draws as an
//! empty bar, never as `NaN`.

use std::fmt::Write;

use super::{esc, finite};
use crate::report::table::names::shorten_apart;

/// A coordinate or size with one decimal; non-finite values as 0.
pub fn n(x: f64) -> String {
    format!("{:.1}", finite(x))
}

/// `value / max` scaled to `width`, 0 when `max` is not positive.
fn scale(value: f64, max: f64, width: f64) -> f64 {
    let (v, m) = (finite(value).max(0.0), finite(max));
    if m > 0.0 {
        (v / m * width).min(width)
    } else {
        0.0
    }
}

/// Labels in bar charts are cut to this many characters (in the middle,
/// or where two would otherwise look alike).
const LABEL_CHARS: usize = 48;

/// One part of a stacked bar.
pub struct Segment<'a> {
    pub label: &'a str,
    pub value: f64,
    pub colour: &'a str,
}

/// One horizontal bar, `width` wide, split into `segments` in proportion to
/// their values; each part has a tooltip (`<title>`) with its label and
/// `fmt(value)`.
pub fn stacked_bar(segments: &[Segment], fmt: &dyn Fn(f64) -> String) -> String {
    let (width, height) = (1000.0, 34.0);
    let total: f64 = segments.iter().map(|s| finite(s.value).max(0.0)).sum();
    let mut out = format!(
        "<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
        n(width),
        n(height),
        n(width),
        n(height)
    );
    let _ = write!(out, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#eef2f6\"/>", n(width), n(height));
    let mut x = 0.0;
    for s in segments {
        let w = scale(s.value, total, width);
        if w <= 0.0 {
            continue;
        }
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>",
            n(x),
            n(w),
            n(height),
            s.colour,
            esc(s.label),
            esc(&fmt(s.value))
        );
        if w > 60.0 {
            let share = 100.0 * finite(s.value) / total;
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" style=\"fill:#fff\">{}%</text>",
                n(x + w / 2.0),
                n(height / 2.0 + 4.0),
                n(share)
            );
        }
        x += w;
    }
    out.push_str("</svg>\n");
    out
}

/// One bar of [`hbars`]: the label (full text in the tooltip) and value.
pub struct Bar<'a> {
    pub label: &'a str,
    pub value: f64,
}

/// A horizontal bar chart, one bar per item, scaled to the largest value;
/// the value is written after each bar as `fmt(value)`.
pub fn hbars(items: &[Bar], colour: &str, fmt: &dyn Fn(f64) -> String) -> String {
    let (label_w, bar_w, row_h) = (380.0, 520.0, 22.0);
    let width = label_w + bar_w + 100.0;
    let height = row_h * items.len().max(1) as f64 + 6.0;
    let max = items.iter().map(|b| finite(b.value)).fold(0.0, f64::max);
    let mut out = format!(
        "<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
        n(width),
        n(height),
        n(width),
        n(height)
    );
    if items.is_empty() {
        let _ = write!(out, "<text x=\"4\" y=\"16\" class=\"muted\">no kernels</text>");
    }
    let labels = shorten_apart(&items.iter().map(|b| b.label).collect::<Vec<_>>(), LABEL_CHARS);
    for (i, (b, label)) in items.iter().zip(&labels).enumerate() {
        let y = 3.0 + row_h * i as f64;
        let w = scale(b.value, max, bar_w);
        let _ = write!(
            out,
            "<g><title>{}: {}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\" class=\"muted\">{}</text></g>",
            esc(b.label),
            esc(&fmt(b.value)),
            n(label_w - 6.0),
            n(y + 14.0),
            esc(label),
            n(label_w),
            n(y + 2.0),
            n(w),
            n(row_h - 6.0),
            n(label_w + w + 5.0),
            n(y + 14.0),
            esc(&fmt(b.value))
        );
    }
    out.push_str("</svg>\n");
    out
}

/// One pair of [`paired_bars`]: the label and the values before and after.
pub struct Pair<'a> {
    pub label: &'a str,
    /// `None` on a side where it did not run (a kernel only one side has),
    /// drawn as `-` with no bar.
    pub base: Option<f64>,
    pub new: Option<f64>,
}

/// Paired horizontal bars, base above new, all scaled to the largest value.
pub fn paired_bars(items: &[Pair], colours: (&str, &str), fmt: &dyn Fn(f64) -> String) -> String {
    let (label_w, bar_w, bar_h, gap) = (380.0, 500.0, 11.0, 10.0);
    let width = label_w + bar_w + 120.0;
    let pair_h = 2.0 * bar_h + gap;
    let height = pair_h * items.len().max(1) as f64 + 6.0;
    let max = items.iter().flat_map(|p| [p.base, p.new]).flatten().map(finite).fold(0.0, f64::max);
    let text = |v: Option<f64>| v.map_or_else(|| "-".to_string(), fmt);
    let mut out = format!(
        "<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
        n(width),
        n(height),
        n(width),
        n(height)
    );
    if items.is_empty() {
        let _ = write!(out, "<text x=\"4\" y=\"16\" class=\"muted\">no kernels</text>");
    }
    let labels = shorten_apart(&items.iter().map(|p| p.label).collect::<Vec<_>>(), LABEL_CHARS);
    for (i, (p, label)) in items.iter().zip(&labels).enumerate() {
        let y = 3.0 + pair_h * i as f64;
        let _ = write!(
            out,
            "<g><title>{}: base {}, new {}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            esc(p.label),
            esc(&text(p.base)),
            esc(&text(p.new)),
            n(label_w - 6.0),
            n(y + bar_h + 4.0),
            esc(label)
        );
        for (j, (value, colour)) in [(p.base, colours.0), (p.new, colours.1)].into_iter().enumerate() {
            let yy = y + bar_h * j as f64;
            let w = value.map_or(0.0, |v| scale(v, max, bar_w));
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"/>\
                 <text x=\"{}\" y=\"{}\" class=\"muted\" style=\"font-size:10px\">{}</text>",
                n(label_w),
                n(yy),
                n(w),
                n(bar_h - 1.0),
                n(label_w + w + 5.0),
                n(yy + bar_h - 2.0),
                esc(&text(value))
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
    out
}

/// The ticks of a value axis from 0 to at least `max`: about four steps of
/// 1, 2 or 5 times a power of ten; just 0 for an axis with no positive
/// finite value.
pub fn axis_ticks(max: f64) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0];
    }
    let rough = max / 4.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|&s| s >= rough).unwrap_or(10.0 * power);
    let steps = (max / step).ceil().max(1.0) as usize;
    (0..=steps).map(|i| step * i as f64).collect()
}

/// One group of [`grouped_columns`]: its label, whether to mark it (drawn
/// in red with `mark` under the label), and one value per series.
pub struct Group<'a> {
    pub label: String,
    /// What a column's hover text names the group by (the label, with the
    /// file when ranks share numbers).
    pub hover: String,
    pub mark: Option<&'a str>,
    /// One value per series; `None` (a figure not measured) draws no
    /// column.
    pub values: Vec<Option<f64>>,
}

/// A chart this wide (px) or wider keeps its size and scrolls sideways
/// instead of being shrunk to the page, which would leave its labels too
/// small to read.
pub const SCROLL_WIDTH: f64 = 1200.0;

/// Vertical grouped columns: one group per item, one column per series
/// (name, colour), all scaled to the largest value; a marked group gets a
/// red outline and label. A chart of many groups scrolls sideways
/// ([`SCROLL_WIDTH`]).
pub fn grouped_columns(groups: &[Group], series: &[(&str, &str)], fmt: &dyn Fn(f64) -> String) -> String {
    let (plot_h, top, bottom, left) = (240.0, 14.0, 44.0, 78.0);
    let col_w = 16.0;
    let group_w = col_w * series.len().max(1) as f64 + 18.0;
    let width = (left + 10.0 + group_w * groups.len().max(1) as f64).max(400.0);
    let height = top + plot_h + bottom;
    let largest = groups.iter().flat_map(|g| g.values.iter().flatten().copied().map(finite)).fold(0.0, f64::max);
    let ticks = axis_ticks(largest);
    // The axis ends at its last tick, so the tallest column stays under it.
    let max = ticks.last().copied().unwrap_or(largest).max(largest);
    let wide = width >= SCROLL_WIDTH;
    let mut out = format!(
        "{}<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\"{}>",
        if wide { "<div class=\"wrap\">" } else { "" },
        n(width),
        n(height),
        n(width),
        n(height),
        if wide { " class=\"wide\"" } else { "" }
    );
    let base_y = top + plot_h;
    // The value axis: a gridline and a label at each tick.
    for &t in &ticks {
        let y = base_y - scale(t, max, plot_h);
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e4e7eb\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            n(left),
            n(y),
            n(width - 10.0),
            n(y),
            n(left - 6.0),
            n(y + 4.0),
            esc(&fmt(t))
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#9aa5b1\"/>",
        n(left),
        n(top),
        n(left),
        n(base_y)
    );
    let _ = write!(
        out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#9aa5b1\"/>",
        n(left),
        n(base_y),
        n(width - 10.0),
        n(base_y)
    );
    for (i, g) in groups.iter().enumerate() {
        let gx = left + group_w * i as f64 + 9.0;
        if g.mark.is_some() {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fdecea\" stroke=\"#c62828\" stroke-width=\"1.5\"/>",
                n(gx - 5.0),
                n(top - 8.0),
                n(group_w - 8.0),
                n(plot_h + 8.0)
            );
        }
        for (j, (name, colour)) in series.iter().enumerate() {
            let Some(v) = g.values.get(j).copied().flatten() else {
                // A figure not measured: no column.
                continue;
            };
            let h = scale(v, max, plot_h);
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"><title>{} {}: {}</title></rect>",
                n(gx + col_w * j as f64),
                n(base_y - h),
                n(col_w - 2.0),
                n(h),
                esc(&g.hover),
                esc(name),
                esc(&fmt(v))
            );
        }
        let cx = gx + col_w * series.len() as f64 / 2.0;
        let class = if g.mark.is_some() { " class=\"slow\"" } else { "" };
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\"{class}>{}</text>",
            n(cx),
            n(base_y + 16.0),
            esc(&g.label)
        );
        if let Some(mark) = g.mark {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"slow\">{}</text>",
                n(cx),
                n(base_y + 32.0),
                esc(mark)
            );
        }
    }
    out.push_str(if wide { "</svg></div>\n" } else { "</svg>\n" });
    out
}
