//! Measures what the timeline analysis adds to a run: loads a trace, then
//! times the stage resolution and `timeline` on each basis.
//!
//! `cargo run --release --example timeline_cost -- TRACE [--json]` (`--json`
//! prints the trace-basis result as JSON afterwards).

use std::time::Instant;

use torchtriage::analysis::stage::{RowStages, StageRule};
use torchtriage::analysis::timeline::{timeline, Basis, TimelineOptions};
use torchtriage::ingest::{load_path, IngestOptions};

fn main() {
    let path = std::env::args().nth(1).expect("usage: timeline_cost TRACE [--json]");
    let json = std::env::args().any(|a| a == "--json");
    let t0 = Instant::now();
    let trace = load_path(path.as_ref(), &IngestOptions::default()).expect("load");
    let load = t0.elapsed();
    let t1 = Instant::now();
    let stages = RowStages::build(&trace, StageRule::Default);
    let stage = t1.elapsed();
    println!(
        "load {:.3} s ({} kernels, {} launches, {} runtime rows), stages {:.3} s",
        load.as_secs_f64(),
        trace.kernels.len(),
        trace.launches.len(),
        trace.runtime.len(),
        stage.as_secs_f64()
    );
    for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
        let t = Instant::now();
        let tl = timeline(&trace, &stages, &TimelineOptions { basis, rank: None });
        let dt = t.elapsed().as_secs_f64();
        let stages: Vec<String> = tl.stages.iter().map(|s| format!("{}: {:?}", s.stage, s.verdict.kind)).collect();
        println!(
            "{basis:?}: {dt:.3} s ({:.1} % of the load), {} kernels, idle {:.2} %, {}",
            100.0 * dt / load.as_secs_f64(),
            tl.trace.kernels,
            tl.trace.idle_pct.unwrap_or(0.0),
            stages.join(", ")
        );
        if json && basis == Basis::Trace {
            println!("{}", serde_json::to_string_pretty(&tl).expect("serializes"));
        }
    }
}
