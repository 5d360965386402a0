//! The report model ([`model`]) and its renderers: the reference's markdown
//! layout ([`markdown`]), versioned JSON ([`json`]) and the batch summary
//! ([`batch`]).

pub mod batch;
pub mod json;
pub mod markdown;
pub mod model;
