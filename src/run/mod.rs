//! Drivers: which files an input stands for ([`discover`]), loading them and
//! running the analyses into a report ([`triage`]), batches of per-rank
//! traces under a memory budget ([`batch`]), the allocator policy
//! ([`memory`]), and progress and phase timing on
//! stderr ([`progress`]), and reading far enough into a rank's file to
//! tell whether it is a trace ([`sniff`]). Options arrive as values; nothing here renders.

pub mod atomic;
pub mod batch;
pub mod discover;
pub mod memory;
pub mod progress;
pub mod sniff;
pub mod triage;
