//! `torchtriage stats`: what ingest saw in one trace — event counts per
//! `cat` and `ph`, processes, threads, kernel streams, time span, top-level
//! metadata, and the rows and bytes held in each column. It builds the same
//! columns the triage uses.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::Global;
use crate::columns::Trace;
use crate::error::Result;

#[derive(Clone, Debug, clap::Args)]
pub struct StatsArgs {
    /// Trace file (`.json`, `.json.gz`, `.json.zst`, detected by content) or `-` for stdin.
    pub input: PathBuf,
    /// Output format. Default: `json` when `--output` names a `.json`
    /// file, else `text`.
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<StatsFormat>,
    /// Print JSON instead of text (`--format json`).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the statistics to this file, in a directory that exists,
    /// instead of stdout; `-` is stdout. Written atomically, and never over
    /// the trace.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// What `stats` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Aligned text for a terminal (`table`, as the other commands call
    /// theirs, is the same).
    #[value(alias = "table")]
    Text,
    /// The JSON document.
    Json,
}

pub fn run(args: &StatsArgs, global: &Global) -> Result<i32> {
    let output = super::output::Output::plain(args.output.as_deref(), global.quiet)?;
    let format = resolve_format(args)?;
    output.check_not_input([args.input.as_path()])?;
    let trace = crate::run::progress::load_trace(&args.input, global.quiet, crate::input::ReadMode::Map)?;
    if !global.quiet {
        super::warn_skipped(&args.input, trace.counts.skipped);
    }
    let v = stats_json(&trace, &file_name(&args.input));
    let json = format == StatsFormat::Json;
    let text = if json { serde_json::to_string_pretty(&v).unwrap_or_default() } else { stats_text(&v) };
    output.emit(crate::report::render::Rendered::Text(text))?;
    Ok(0)
}

/// The format asked for (`--format`, `--json`), else the one the
/// `--output` file's extension names: `.json` JSON, any other name text;
/// an HTML or CSV name is refused, as `stats` writes neither.
fn resolve_format(args: &StatsArgs) -> Result<StatsFormat> {
    if args.json {
        return Ok(StatsFormat::Json);
    }
    if let Some(f) = args.format {
        return Ok(f);
    }
    let Some(out) = args.output.as_deref().filter(|p| p.as_os_str() != "-") else { return Ok(StatsFormat::Text) };
    let ext = out.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
    match ext.as_str() {
        "json" => Ok(StatsFormat::Json),
        "html" | "htm" | "csv" => Err(crate::error::Error::usage(format!(
            "--output: stats writes text or JSON, not .{ext}: name the file .txt or .json, or give --format"
        ))
        .in_file(out)),
        _ => Ok(StatsFormat::Text),
    }
}

/// The file as `triage` names it in its report: absolute, symbolic links
/// resolved (`-` for stdin stays as given).
pub fn file_name(input: &std::path::Path) -> String {
    let shown = if input.as_os_str() == "-" {
        input.to_path_buf()
    } else {
        input.canonicalize().unwrap_or_else(|_| input.to_path_buf())
    };
    shown.display().to_string()
}

fn count_map(trace: &Trace, m: &crate::columns::FxIndexMap<u32, u64>) -> Map<String, Value> {
    m.iter().map(|(k, v)| (trace.s(*k).to_string(), json!(v))).collect()
}

/// Version of the `stats --json` document (its own, apart from the
/// triage report's).
pub const STATS_SCHEMA_VERSION: u32 = 1;

/// A kernel's stream as `kernel_streams` counts it: `args.stream` read as
/// an integer (stream 0 is a stream), else the text of `args.stream` or
/// `args.cuda_stream`.
#[derive(PartialEq, Eq, Hash)]
enum StreamKey {
    Int(i32),
    Text(u32),
}

/// The distinct streams of the kernel-like rows.
fn kernel_streams(trace: &Trace) -> usize {
    let key = |k: &crate::columns::KernelRow| match k.stream_int {
        n if n >= 0 => Some(StreamKey::Int(n)),
        _ => k.stream.or(k.cuda_stream).map(StreamKey::Text),
    };
    trace.kernels.iter().filter_map(|k| key(&k)).collect::<HashSet<_>>().len()
}

/// The `stats --json` document (schema in docs/json-schema.md).
pub fn stats_json(trace: &Trace, file: &str) -> Value {
    let pids: HashSet<u32> = trace.threads.iter().map(|t| t.pid).collect();
    let c = &trace.counts;
    let span = match (c.min_ts, c.max_end) {
        (Some(a), Some(b)) => json!({"min_ts_us": number(a), "max_end_us": number(b), "span_us": number(b - a)}),
        _ => Value::Null,
    };
    let m = &trace.meta;
    let columns: Vec<Value> = trace
        .column_bytes()
        .into_iter()
        .map(|(name, rows, bytes)| json!({"name": name, "rows": rows, "bytes": bytes}))
        .collect();
    json!({
        "schema_version": STATS_SCHEMA_VERSION,
        "file": file,
        "events": c.events,
        "cat": count_map(trace, &c.by_cat),
        "ph": count_map(trace, &c.by_ph),
        "pids": pids.len(),
        "threads": trace.threads.len(),
        "kernel_streams": kernel_streams(trace),
        "time_span": span,
        "skipped_events": c.skipped,
        "metadata": {
            "top_level_keys": m.top_level_keys,
            "top_level_array": m.top_level_array,
            "schemaVersion": m.schema_version,
            "deviceProperties": m.device_properties,
            "distributedInfo": m.distributed_info,
            "with_stack": m.with_stack,
            "baseTimeNanoseconds": m.base_time_nanoseconds,
            "oversized_keys": m.oversized_keys,
        },
        "columns": columns,
    })
}

/// A float as JSON: a number when finite, else the string `inf`, `-inf`
/// or `NaN` (JSON has no such numbers).
fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::String(x.to_string())
    }
}

fn stats_text(v: &Value) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, val: &Value| out.push_str(&format!("{k:<16}{val}\n"));
    // The file as the error messages name it: unquoted, control characters
    // escaped so the line stays one line.
    let file = v["file"].as_str().map_or_else(String::new, |f| crate::error::shown(std::path::Path::new(f)));
    out.push_str(&format!("{:<16}{file}\n", "file"));
    for k in ["events", "pids", "threads", "kernel_streams", "skipped_events"] {
        line(&mut out, k, &v[k]);
    }
    match &v["time_span"]["span_us"] {
        Value::Number(n) => out.push_str(&format!("{:<16}{:.3} ms\n", "time_span", n.as_f64().unwrap_or(0.0) / 1000.0)),
        Value::String(s) => out.push_str(&format!("{:<16}{s} (a time in the trace is not finite)\n", "time_span")),
        _ => {}
    }
    // Most events first; equal counts keep the trace's order.
    for (title, key) in [("events by cat", "cat"), ("events by ph", "ph")] {
        out.push_str(&format!("\n{title}\n"));
        if let Some(m) = v[key].as_object() {
            let mut counts: Vec<(&String, u64)> = m.iter().map(|(k, n)| (k, n.as_u64().unwrap_or(0))).collect();
            counts.sort_by_key(|c| std::cmp::Reverse(c.1));
            for (k, n) in counts {
                out.push_str(&format!("  {n:>12}  {k}\n"));
            }
        }
    }
    out.push_str("\ncolumns\n");
    if let Some(cols) = v["columns"].as_array() {
        for c in cols {
            out.push_str(&format!(
                "  {:<16}{:>12} rows {:>14} bytes\n",
                c["name"].as_str().unwrap_or(""),
                c["rows"].as_u64().unwrap_or(0),
                c["bytes"].as_u64().unwrap_or(0)
            ));
        }
    }
    let meta = &v["metadata"];
    out.push_str(&format!("\ntop-level keys  {}\n", meta["top_level_keys"]));
    if meta["oversized_keys"].as_array().is_some_and(|k| !k.is_empty()) {
        out.push_str(&format!("not read        {} (values over 1 MiB)\n", meta["oversized_keys"]));
    }
    if let Some(d) = meta["distributedInfo"].as_object() {
        out.push_str(&format!("distributedInfo {}\n", Value::Object(d.clone())));
    }
    out
}
