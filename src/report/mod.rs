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
pub mod markdown;
pub mod model;
pub mod render;
pub mod table;
pub mod timeline;

pub use crate::error::is_hidden_char;

/// `n` and the noun for it: `1 file`, `2 files`.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
