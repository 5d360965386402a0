//! The report model ([`model`]) and its renderers behind one trait
//! ([`render`]): the markdown layout ([`markdown`], with the timeline's
//! headline and section in [`timeline`]), versioned JSON ([`json`]), the
//! terminal table ([`table`]), HTML ([`html`]) and CSV ([`csv`]); the
//! batch summary ([`batch`]) and the comparison of two reports ([`diff`]).

pub mod batch;
pub mod csv;
pub mod diff;
pub mod html;
pub mod json;
pub mod labels;
pub mod markdown;
pub mod model;
pub mod render;
pub mod table;
pub mod timeline;

pub use crate::error::is_hidden_char;

/// Items as a sentence lists them: `a`, `a and b`, `a, b and c`.
pub fn listed(items: &[String]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// `n` and the noun for it: `1 file`, `2 files`.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_read_as_a_sentence() {
        let items = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(super::listed(&items(&[])), "");
        assert_eq!(super::listed(&items(&["3"])), "3");
        assert_eq!(super::listed(&items(&["3", "5"])), "3 and 5");
        assert_eq!(super::listed(&items(&["3", "5", "6 more"])), "3, 5 and 6 more");
    }
}
