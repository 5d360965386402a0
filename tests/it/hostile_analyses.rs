//! Hostile input past the tokenizer: values that the analyses sort and
//! sweep (NaN, infinities, huge and negative times), names and argument
//! objects of hostile size, directories with link cycles and FIFOs, and
//! output to a closed pipe. Every run must succeed or fail with exit 2 (1
//! for a batch with failures), within the time and memory limits of
//! `tests/common/measure.rs`; never a panic.

use crate::common;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::measure::{assert_sane, run_measured, Outcome};
use serde_json::Value;

/// Small real traces with Python frames, CPU ops, launches, kernels and
/// annotations.
const SMALL: [&str; 2] = [
    "tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "tests/data/traces/tracelens/inference/vllm_decode_full/graph_execution.json.gz",
];

fn load_gz(path: &str) -> Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn triage(path: &Path, extra: &[&str]) -> Outcome {
    let mut args: Vec<&OsStr> = vec!["triage".as_ref(), "--quiet".as_ref()];
    args.extend(extra.iter().map(OsStr::new));
    args.push(path.as_os_str());
    run_measured(&args)
}

/// Tiny xorshift generator (deterministic per seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A number the serializer writes as itself, replaced afterwards by a
/// literal serde_json cannot write (NaN, Infinity).
const MARK: f64 = -7_777_777.5;

/// Sets `field` of about one in `every` events of category `cat` to the
/// value `literal` (JSON text), writes the trace to `dir`.
fn mutated(
    trace: &Value,
    dir: &Path,
    name: &str,
    (cat, field, literal): (&str, &str, &str),
    every: usize,
    rng: &mut Rng,
) -> PathBuf {
    let mut trace = trace.clone();
    let mut hits = 0;
    for e in trace["traceEvents"].as_array_mut().unwrap() {
        if e["cat"] == cat && e.get(field).is_some() && (rng.below(every) == 0 || hits == 0) {
            e[field] = Value::from(MARK);
            hits += 1;
        }
    }
    let text = trace.to_string().replace(&MARK.to_string(), literal);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn non_finite_huge_and_negative_times_never_panic_an_analysis() {
    let traces: Vec<Value> = SMALL.iter().map(|p| load_gz(p)).collect();
    let dir = tempfile::tempdir().unwrap();
    let cats = ["python_function", "cuda_runtime", "user_annotation", "cpu_op", "kernel", "gpu_memcpy"];
    let values = ["NaN", "Infinity", "-Infinity", "1e308", "-1e308", "-5", "0", "\"nan\"", "\"1e999\"", "\"x\""];
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for round in 0..72 {
        let trace = &traces[round / 6 % traces.len()];
        let cat = cats[round % cats.len()];
        let field = if round % 3 == 2 { "dur" } else { "ts" };
        let value = values[rng.below(values.len())];
        let every = [1, 3, 20, 2][rng.below(4)];
        let name = format!("r{round}-{cat}-{field}");
        let path = mutated(trace, dir.path(), &name, (cat, field, value), every, &mut rng);
        let json = round % 2 == 1;
        let o = triage(&path, if json { &["--format", "json"] } else { &[] });
        let what = format!("{name} = {value} (1 in {every})");
        assert_sane(&o, &what);
        assert_eq!(o.code, Some(0), "{what}: {}", o.stderr);
        if json {
            assert!(o.json().get("schema_version").is_some(), "{what}: no JSON report");
        }
    }
}

/// A trace whose only kernel starts at no finite time has a kernel: the
/// headline says the timeline could not place it, not that nothing ran on
/// a GPU, in every text format.
#[test]
fn kernels_the_timeline_cannot_place_are_not_called_absent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inf_ts.json");
    std::fs::write(
        &path,
        r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":1e400,"dur":5,"args":{"stream":7}}]}"#,
    )
    .unwrap();
    for format in ["markdown", "table", "html"] {
        let out = common::run(&["triage", "-q", "-f", format, path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("nothing ran on a GPU"), "{format}: {text}");
        assert!(
            text.contains("no GPU kernel with times the timeline can place: 1 GPU event has a start or end that is not a finite number"),
            "{format}: {text}"
        );
        assert!(text.contains("gemm_kernel"), "{format}: {text}");
    }
}

/// A directory holding two small real traces.
fn trace_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (i, src) in SMALL.iter().enumerate() {
        std::fs::copy(src, dir.path().join(format!("rank{i}.trace.json.gz"))).unwrap();
    }
    dir
}

#[test]
fn link_cycles_in_a_trace_directory_are_walked_once() {
    let dir = trace_dir();
    std::os::unix::fs::symlink(".", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("b")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("..", dir.path().join("sub/up")).unwrap();
    for cmd in ["batch", "triage"] {
        let o = run_measured(&[cmd.as_ref(), "--quiet".as_ref(), dir.path().as_os_str()]);
        assert_sane(&o, cmd);
        assert_eq!(o.code, Some(0), "{cmd}: {}", o.stderr);
        if cmd == "batch" {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("Files: 2 triaged, 0 failed"), "{out}");
        }
    }
}

#[test]
fn a_deep_folder_tree_is_walked_in_time_and_a_path_too_long_to_open_is_named() {
    // 1,000 nested folders: resolving each folder's full path cost a
    // system call per level (14 s for this tree). Then, below a rank, 20
    // folders of 240-character names with a rank at the bottom, whose path
    // is longer than the system opens: it used to be left out in silence.
    let dir = trace_dir();
    let deep: PathBuf = std::iter::once(dir.path().to_path_buf()).chain((0..1000).map(|_| "d".into())).collect();
    std::fs::create_dir_all(&deep).unwrap();
    // SAFETY: valid NUL-terminated names, descriptors owned and closed here.
    unsafe {
        let mut fd = libc::open(std::ffi::CString::new(dir.path().to_str().unwrap()).unwrap().as_ptr(), libc::O_RDONLY);
        assert!(fd >= 0);
        let name = std::ffi::CString::new("n".repeat(240)).unwrap();
        for _ in 0..20 {
            assert_eq!(libc::mkdirat(fd, name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            libc::close(fd);
            assert!(next >= 0);
            fd = next;
        }
        let file = std::ffi::CString::new("rank7.trace.json").unwrap();
        let out = libc::openat(fd, file.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        assert!(out >= 0);
        let tiny =
            br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]}"#;
        assert_eq!(libc::write(out, tiny.as_ptr().cast(), tiny.len()), tiny.len() as isize);
        libc::close(out);
        libc::close(fd);
    }
    let o = run_measured(&["batch".as_ref(), dir.path().as_os_str()]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("the batch is incomplete: 1 directory below it could not be listed"), "{}", o.stderr);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("Files: 2 triaged, 0 failed"), "{out}");
    assert_sane(&Outcome { code: Some(0), ..o }, "batch of a deep tree");
}

/// A pipe with a rank's name is never opened (without a writer it would
/// block the run), and a batch that lacks the rank it stands for says so
/// with exit code 1; `triage` picks from the rest.
#[test]
fn a_fifo_in_a_trace_directory_is_not_read() {
    let dir = trace_dir();
    let fifo = dir.path().join("rank9.trace.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for cmd in ["batch", "triage"] {
        let o = run_measured(&[cmd.as_ref(), "--quiet".as_ref(), dir.path().as_os_str()]);
        let expected = if cmd == "batch" { 1 } else { 0 };
        assert_eq!(o.code, Some(expected), "{cmd}: {}", o.stderr);
        assert_sane(&Outcome { code: Some(0), ..o }, cmd);
    }
}

#[test]
fn thousands_of_jobs_are_capped_at_what_the_machine_runs() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]}"#;
    for i in 0..400 {
        std::fs::write(dir.path().join(format!("rank{i}.trace.json")), tiny).unwrap();
    }
    let o = run_measured(&[
        "batch".as_ref(),
        "--quiet".as_ref(),
        "--jobs".as_ref(),
        "2500".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_sane(&o, "batch --jobs 2500");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    let jobs: usize = out
        .split("(jobs ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no job count in {out}"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(jobs <= 4 * cores, "{jobs} jobs on {cores} cores");
    assert!(out.contains("Files: 400 triaged, 0 failed"), "{out}");
}

#[test]
fn an_endless_pattern_file_is_refused_early() {
    let o = run_measured(&["patterns".as_ref(), "--check".as_ref(), "/dev/zero".as_ref()]);
    assert_sane(&o, "patterns --check /dev/zero");
    assert_eq!(o.code, Some(2));
    assert_eq!(o.stderr.trim_end(), "torchtriage: /dev/zero: larger than 16 MiB: not a pattern file");
    assert!(o.max_rss_kb < 100 << 10, "{} KB", o.max_rss_kb);
}

#[test]
fn control_characters_in_names_never_reach_the_table_raw() {
    let mut trace = load_gz(SMALL[0]);
    let mut renamed = 0;
    for e in trace["traceEvents"].as_array_mut().unwrap() {
        if e["cat"] == "kernel" {
            e["name"] = Value::from("evil\u{0}kernel\u{1b}[2J|x");
            renamed += 1;
        }
    }
    assert!(renamed > 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nul.json");
    std::fs::write(&path, trace.to_string()).unwrap();
    let o = triage(&path, &[]);
    assert_sane(&o, "NUL in kernel names");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(!o.stdout.iter().any(|&b| b == 0 || b == 0x1b), "raw control characters in the report");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(r"evil\u0000kernel\u001b[2J\|x"), "{text}");
}

#[test]
fn a_hundred_thousand_overlapping_kernels_sweep_in_seconds() {
    // All overlap, on 50 streams: the sweep used to visit the whole active
    // set at every start and end (82 s).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlap.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    w.write_all(br#"{"traceEvents": ["#).unwrap();
    let names = ["gemm_kernel", "nccl_allreduce", "elementwise_add", "memcpy_kernel"];
    for i in 0..100_000u64 {
        write!(
            w,
            r#"{{"ph": "X", "cat": "kernel", "name": "{}_{}", "pid": 0, "tid": {s}, "ts": {}, "dur": {}, "args": {{"stream": {s}, "correlation": {i}}}}}, "#,
            names[(i % 4) as usize],
            i % 7,
            1000.0 + i as f64 * 0.01,
            10_000.0 + (i % 13) as f64,
            s = i % 50,
        )
        .unwrap();
    }
    w.write_all(br#"{"ph": "i", "name": "end", "ts": 0}]}"#).unwrap();
    drop(w);
    let o = triage(&path, &[]);
    assert_sane(&o, "100k overlapping kernels");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Overlap"));
}

#[test]
fn a_100_mb_kernel_name_is_cut_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("name.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    w.write_all(br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 5, "args": {"stream": 7}, "name": "gemm_"#).unwrap();
    let piece = "abcdefghij".repeat(100_000);
    for _ in 0..100 {
        w.write_all(piece.as_bytes()).unwrap();
    }
    w.write_all(br#""}]}"#).unwrap();
    drop(w);
    let o = triage(&path, &[]);
    assert_sane(&o, "100 MB kernel name");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(" more bytes]"), "no cut marker");
    assert!(o.stdout.len() < 1 << 20, "{} bytes of report", o.stdout.len());
    // Only the mapped file is held whole (about 100 MB): the string table
    // and the framework-detection sample keep 64 KiB of the name. The
    // sample held it whole, and its growth, its joining and the framework
    // search copied it three times more (389 MB).
    assert!(o.max_rss_kb < 150 << 10, "peak RSS {} MB", o.max_rss_kb >> 10);
}

#[test]
fn hundreds_of_thousands_of_distinct_kernel_names_stay_bounded() {
    // Every kernel its own name, each with a launch call and, one in ten, a
    // CPU op: the kernel maps used to hold kilobytes per name (300,000
    // names: 1.4 GB, 11 s).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let n = 100_000u64;
    write!(
        w,
        r#"{{"traceEvents": [{{"ph": "X", "cat": "python_function", "name": "vllm/v1/engine/core.py(245): step", "pid": 1, "tid": 1, "ts": 0, "dur": {}, "args": {{"Python id": 1, "Python parent id": 0}}}}, "#,
        n * 8 + 1000
    )
    .unwrap();
    for i in 0..n {
        let (c, t) = (i + 1, 1 + i * 8);
        if i % 10 == 0 {
            write!(w, r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {t}, "dur": 79, "args": {{"External id": {c}}}}}, "#).unwrap();
        }
        write!(
            w,
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 2, "args": {{"External id": {c}, "correlation": {c}}}}}, {{"ph": "X", "cat": "kernel", "name": "void kern_{i:06}<float, 128>(float*, int)", "pid": 0, "tid": 7, "ts": {}, "dur": 5, "args": {{"External id": {c}, "correlation": {c}, "stream": 7}}}}, "#,
            t + 2,
            t + 500
        )
        .unwrap();
    }
    w.write_all(br#"{"ph": "i", "name": "end", "ts": 0}]}"#).unwrap();
    drop(w);
    let o = triage(&path, &[]);
    assert_sane(&o, "100k distinct kernel names");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // 100,000 names took 457 MB before the kernel maps were slimmed.
    assert!(o.max_rss_kb < 300 * 1024, "peak RSS {} MB", o.max_rss_kb / 1024);
    assert!(String::from_utf8_lossy(&o.stdout).contains("kern_000000"));
}

#[test]
fn a_kernel_of_infinite_duration_is_skipped_and_counted_not_summed() {
    // `1e400` is valid JSON and overflows to infinity, as Python reads it:
    // summed, it would make every share of the stage NaN.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("inf.json");
    let kernel = |name: &str, ts: u32, dur: &str| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":{dur},"args":{{"stream":7}}}}"#
        )
    };
    // Finite durations too long to be measurements (`1e308`, two of which
    // sum to infinity) are left out as well.
    for (other, last) in [("1e400", "NaN"), ("1e308", "1e308")] {
        let events = [kernel("k1", 1, "2"), kernel("k2", 5, other), kernel("k3", 9, last)];
        std::fs::write(&p, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
        let out = common::run(&["triage", p.to_str().unwrap()]);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!stdout.contains("nan%") && !stdout.contains("inf ms"), "{stdout}");
        assert!(stdout.contains("top kernel k1 (100.0%)"), "{stdout}");
        assert!(stderr.contains("2 events skipped"), "{stderr}");
    }
    let stderr = String::from_utf8_lossy(&common::run(&["triage", p.to_str().unwrap()]).stderr).into_owned();
    // Their times reach 1e308 µs, which the clock warning writes briefly.
    assert!(stderr.contains("where a double holds a time only to 1.996e292 µs"), "{stderr}");
}

/// A trace of `n` events written by `event`, one per line.
fn write_events(path: &Path, n: usize, event: &dyn Fn(usize) -> String) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(b"{\"traceEvents\": [\n").unwrap();
    for i in 0..n {
        if i > 0 {
            w.write_all(b",\n").unwrap();
        }
        w.write_all(event(i).as_bytes()).unwrap();
    }
    w.write_all(b"]}\n").unwrap();
}

#[test]
fn kernels_all_overlapping_on_a_hundred_streams_stay_bounded() {
    // 50,000 kernels of 10 ms started 10 ns apart, one stream in a hundred
    // each: all of them run at once, and the strongest overlapper changes
    // at every kernel's end. The sweep logged every change for every
    // stream (268 MB, 1.6 s).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlap.json");
    write_events(&path, 50_000, &|i| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":{s},"ts":{:.2},"dur":10000,"args":{{"stream":{s},"correlation":{i}}}}}"#,
            i % 50,
            i as f64 * 0.01,
            s = i % 100
        )
    });
    let o = triage(&path, &[]);
    assert_sane(&o, "50,000 overlapping kernels on 100 streams");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.max_rss_kb < 120 * 1024, "peak RSS {} MB", o.max_rss_kb / 1024);
    assert!(String::from_utf8_lossy(&o.stdout).contains("| k0 |"), "no overlap row for k0");
}

#[test]
fn hundreds_of_thousands_of_distinct_strings_cost_little_more_than_their_bytes() {
    // 300,000 thread names (24 MB) and 300,000 step annotations (31 MB),
    // each string its own: the string table held about a hundred bytes a
    // string besides its text (134 and 75 MB).
    let dir = tempfile::tempdir().unwrap();
    let threads = dir.path().join("threads.json");
    write_events(&threads, 300_000, &|i| {
        format!(r#"{{"ph":"M","name":"thread_name","pid":0,"tid":{i},"args":{{"name":"t{i}"}}}}"#)
    });
    let steps = dir.path().join("steps.json");
    write_events(&steps, 300_000, &|i| {
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"step[DECODE bs={i}]","pid":1,"tid":1,"ts":{},"dur":1}}"#,
            i * 2
        )
    });
    for (path, limit_mb) in [(&threads, 100), (&steps, 60)] {
        let o = run_measured(&["triage".as_ref(), "--quiet".as_ref(), path.as_os_str()]);
        assert_sane(&o, &path.display().to_string());
        assert!(o.max_rss_kb < limit_mb << 10, "{}: peak RSS {} MB", path.display(), o.max_rss_kb >> 10);
    }
}
