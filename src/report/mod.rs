//! Rendering of a [`crate::analysis::triage::TriageReport`]: the reference's
//! markdown layout ([`markdown`]) and a full-precision JSON form ([`json`]).

pub mod json;
pub mod markdown;
