//! The report model ([`model`]) and its renderers: the markdown layout
//! ([`markdown`], with the timeline's headline and section in
//! [`timeline`]), versioned JSON ([`json`]) and the batch summary
//! ([`batch`]).

pub mod batch;
pub mod diff;
pub mod json;
pub mod markdown;
pub mod model;
pub mod timeline;
