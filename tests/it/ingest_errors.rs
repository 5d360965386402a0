//! Bad input to `stats`: each case exits 2 with one line on stderr naming
//! the file and the byte offset, and prints nothing on stdout.

use crate::common;

use std::io::Write;
use std::path::PathBuf;

fn write_temp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Runs `stats` on `path` and checks the failure contract.
fn assert_bad(path: &std::path::Path, offset: Option<u64>, needle: &str) {
    let out = common::run(&["stats", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code for {}: {stderr}", path.display());
    assert!(out.stdout.is_empty(), "no partial result on stdout");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {stderr}");
    assert!(lines[0].contains(&path.display().to_string()), "names the file: {stderr}");
    if let Some(o) = offset {
        assert!(lines[0].contains(&format!("byte {o}:")), "names byte {o}: {stderr}");
    }
    assert!(lines[0].contains(needle), "mentions {needle:?}: {stderr}");
}

const GOOD: &[u8] = br#"{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 8, "dur": 1, "args": {"correlation": 1, "External id": 3}}
]}"#;

#[test]
fn good_input_parses() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "good.json", GOOD);
    let out = common::run(&["stats", "--json", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["events"], 2);
    // A relative path is named absolute, as triage names it.
    let out = common::run_in(dir.path(), &["stats", "--json", "good.json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["file"].as_str(), p.canonicalize().unwrap().to_str(), "{v}");
    let out = common::run_stdin(&["stats", "--json", "-"], GOOD);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["file"], "-");
    let gz = write_temp(&dir, "good.json.gz", &gzip(GOOD));
    let out = common::run(&["stats", "--json", gz.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = common::run_stdin(&["stats", "--json", "-"], GOOD);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn truncated_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let cut = &GOOD[..GOOD.len() - 40];
    let p = write_temp(&dir, "cut.json", cut);
    assert_bad(&p, Some(cut.len() as u64), "truncated");
}

#[test]
fn truncated_gzip_file() {
    let dir = tempfile::tempdir().unwrap();
    let gz = gzip(GOOD);
    let p = write_temp(&dir, "cut.json.gz", &gz[..gz.len() / 2]);
    assert_bad(&p, None, "truncated");
}

#[test]
fn missing_file_is_worded_as_triage_words_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("missing.json");
    assert_bad(&p, None, "cannot open input: No such file");
    let out = common::run(&["triage", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open input: No such file"));
}

#[test]
fn not_json() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "notes.json", b"hello world\n");
    assert_bad(&p, Some(0), "not a JSON trace");
}

#[test]
fn data_in_another_format_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let bz2 = write_temp(&dir, "trace.json.bz2", b"BZh91AY&SY\x00\x01");
    assert_bad(
        &bz2,
        Some(0),
        "it is bzip2 data, which torchtriage does not read: decompress it first with `bzip2 -dc`",
    );
    let twice = write_temp(&dir, "trace.json.gz", &gzip(&gzip(GOOD)));
    assert_bad(&twice, Some(0), "it is gzip data (compressed twice?): decompress it first with `gzip -dc`");
    let utf16: Vec<u8> = b"\xff\xfe".iter().copied().chain(GOOD.iter().flat_map(|&b| [b, 0])).collect();
    let wide = write_temp(&dir, "trace.json", &utf16);
    assert_bad(&wide, Some(0), "it is UTF-16 text: convert it to UTF-8 first");
    let bare = write_temp(&dir, "bare.json", &utf16[2..]);
    assert_bad(
        &bare,
        Some(1),
        "it is UTF-16 text without a byte-order mark: convert it to UTF-8 first with `iconv -f UTF-16LE",
    );
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "empty.json", b"");
    assert_bad(&p, Some(0), "empty input");
}

#[test]
fn no_trace_events() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "meta.json", br#"{"schemaVersion": 1, "deviceProperties": []}"#);
    assert_bad(&p, None, "no traceEvents");
}

#[test]
fn trace_events_not_an_array() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "obj.json", br#"{"traceEvents": {"ph": "X"}}"#);
    assert_bad(&p, Some(16), "not an array");
}

#[test]
fn event_not_an_object() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "num.json", br#"{"traceEvents": [{"ph": "M"}, 42]}"#);
    assert_bad(&p, Some(30), "not an object");
}

#[test]
fn trailing_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "tail.json", br#"{"traceEvents": []} {"#);
    assert_bad(&p, Some(20), "after the end");
}

#[test]
fn bytes_appended_to_gzip_data_are_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = gzip(GOOD);
    bytes.extend_from_slice(b"garbage\n");
    let p = write_temp(&dir, "tail.json.gz", &bytes);
    assert_bad(&p, Some(GOOD.len() as u64), "followed by bytes that are not another gzip member");
    // Bytes that start as a member's magic number would, but not as a whole.
    let mut bytes = gzip(GOOD);
    bytes.extend_from_slice(b"\x1f\x00junk");
    let p = write_temp(&dir, "tail2.json.gz", &bytes);
    assert_bad(&p, Some(GOOD.len() as u64), "followed by bytes that are not another gzip member");
    // Zeros after the data (padding) and a second member are read.
    for tail in [vec![0u8; 100], gzip(b" ")] {
        let mut bytes = gzip(GOOD);
        bytes.extend_from_slice(&tail);
        let p = write_temp(&dir, "ok.json.gz", &bytes);
        let out = common::run(&["stats", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A trace of `events` events that compress well, as a profiler's do
/// (a few names, evenly spaced times), so that one call of the decoder
/// can deliver many times its input.
fn repetitive_trace(events: u64) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    for i in 0..events {
        let sep = if i == 0 { "" } else { ",\n" };
        s.push_str(&format!(
            r#"{sep}{{"ph": "X", "cat": "python_function", "name": "model.py({}): forward", "pid": 1, "tid": 1, "ts": {}, "dur": 5}}"#,
            100 + i % 4,
            1000 + i * 7,
        ));
    }
    s.push_str("\n]}");
    s.into_bytes()
}

/// How many bytes a decoder delivers before it fails, read a little at a
/// time.
fn intact_prefix(mut r: impl std::io::Read) -> u64 {
    let mut buf = [0u8; 64];
    let mut n = 0;
    while let Ok(k) = r.read(&mut buf) {
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    n
}

/// A compressed trace cut short, or damaged inside, fails at the end of
/// what its decoder could deliver (to within the 64 KiB it is asked for at
/// a time), not where the decoder's last large read began, whether read
/// from a file or from stdin.
#[test]
fn a_damaged_compressed_stream_fails_where_its_data_ends() {
    let dir = tempfile::tempdir().unwrap();
    let text = repetitive_trace(40_000);
    // With a checksum, as the `zstd` command writes one.
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    enc.write_all(&text).unwrap();
    let zst = enc.finish().unwrap();
    let mut damaged = Vec::new();
    for (name, packed) in [("d.json.gz", gzip(&text)), ("d.json.zst", zst)] {
        for tenths in 3..10 {
            let at = packed.len() * tenths / 10;
            damaged.push((name, packed[..at].to_vec()));
            let mut flipped = packed.clone();
            flipped[at] ^= 0xff;
            damaged.push((name, flipped));
        }
    }
    let mut checked = 0;
    for (name, bytes) in damaged {
        let intact = if name.ends_with(".gz") {
            intact_prefix(flate2::read::MultiGzDecoder::new(&bytes[..]))
        } else {
            intact_prefix(zstd::stream::read::Decoder::new(&bytes[..]).unwrap())
        };
        let p = write_temp(&dir, name, &bytes);
        for out in [common::run(&["stats", p.to_str().unwrap()]), common::run_stdin(&["stats", "-"], &bytes)] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            if !stderr.contains("corrupt or truncated compressed stream") {
                // Damage the decoder let through, found by the parser.
                continue;
            }
            let at: u64 = stderr
                .split_once(": byte ")
                .and_then(|(_, rest)| rest.split_once(':'))
                .and_then(|(n, _)| n.parse().ok())
                .unwrap_or_else(|| panic!("{name}: no offset: {stderr}"));
            assert!(at <= intact && at + (64 << 10) >= intact, "{name}: byte {at}, intact {intact}: {stderr}");
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn missing_file_and_directory() {
    let out = common::run(&["stats", "/nonexistent/trace.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/trace.json"));
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(&["stats", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2() {
    let out = common::run(&["stats"]);
    assert_eq!(out.status.code(), Some(2));
    let out = common::run(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_input_on_stdin_names_stdin() {
    let out = common::run_stdin(&["stats", "-"], b"{\"traceEvents\": [");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("torchtriage: -: byte 17:"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn a_line_break_in_the_file_name_keeps_the_error_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(&dir, "nl\nname.json", &GOOD[..40]);
    for command in ["stats", "triage"] {
        let out = common::run(&[command, "-q", p.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command}: one line on stderr: {stderr:?}");
        assert!(stderr.contains("nl\\nname.json: byte 40:"), "{command}: names the file, escaped: {stderr:?}");
    }
    // A missing path is shown the same way.
    let missing = dir.path().join("no\nsuch.json");
    let out = common::run(&["triage", "-q", missing.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr:?}");
    assert!(stderr.contains("no\\nsuch.json"), "{stderr:?}");
}

#[test]
fn stats_counts_stream_zero_as_a_kernel_stream() {
    let dir = tempfile::tempdir().unwrap();
    let k = |args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {{{args}}}}}"#
        )
    };
    let doc = format!(
        "{{\"traceEvents\": [{}]}}",
        [k(r#""stream": 0"#), k(r#""stream": 0"#), k(r#""stream": 7"#), k(r#""cuda_stream": 3"#)].join(",")
    );
    let p = write_temp(&dir, "streams.json", doc.as_bytes());
    let out = common::run(&["stats", "--json", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["kernel_streams"], 3, "streams 0, 7 and cuda_stream 3: {v}");
}

/// A run the system refuses memory to ends with one line and exit 2, not
/// an abort (exit 134, a core dump, a backtrace).
#[cfg(target_os = "linux")]
#[test]
fn running_out_of_memory_is_one_line_and_exit_2() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut text = b"{\"traceEvents\": [".to_vec();
    for i in 0..300_000u64 {
        if i > 0 {
            text.extend_from_slice(b",\n");
        }
        let ev = format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":0,"ts":{},"dur":1,"args":{{"stream":7,"correlation":{i}}}}}"#,
            i % 1000,
            2 * i
        );
        text.extend_from_slice(ev.as_bytes());
    }
    text.extend_from_slice(b"]}");
    let p = write_temp(&dir, "kernels.json", &text);
    for command in ["stats", "triage"] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_torchtriage"));
        cmd.args([command, "-q", p.to_str().unwrap()]).env("RUST_BACKTRACE", "1");
        // 40 MB of address space: enough to start, not to hold this trace.
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between
        // fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit { rlim_cur: 40_000_000, rlim_max: 40_000_000 };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command}: one line: {stderr}");
        assert!(stderr.starts_with("torchtriage: out of memory: "), "{command}: {stderr}");
        assert!(out.stdout.is_empty(), "{command}: no partial report");
    }
}

/// `triage`, `stats` and `batch` name a bad file by the path the user typed,
/// relative when it was relative, also for a trace found in a directory.
#[test]
fn errors_name_the_input_as_given() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("run")).unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    write_temp(&dir, "run/rank0.pt.trace.json", &GOOD[..GOOD.len() - 10]);
    let cut = GOOD.len() - 10;
    for (args, want) in [
        (&["triage", "run/rank0.pt.trace.json"][..], format!("torchtriage: run/rank0.pt.trace.json: byte {cut}: ")),
        (&["stats", "run/rank0.pt.trace.json"], format!("torchtriage: run/rank0.pt.trace.json: byte {cut}: ")),
        (&["triage", "run"], format!("torchtriage: run/rank0.pt.trace.json: byte {cut}: ")),
        (&["triage", "./run/"], format!("torchtriage: ./run/rank0.pt.trace.json: byte {cut}: ")),
        (&["triage", "empty"], "torchtriage: empty: no trace files in this directory or below it (a trace is a .json, .json.gz, .json.zst or .zst file that begins as a profiler trace, or whose name holds .trace.json)".to_string()),
        (&["batch", "empty"], "torchtriage: empty: no trace files in this directory or below it".to_string()),
    ] {
        let out = common::run_in(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(&want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A folder whose files have traces' names but hold something else is
/// refused naming those files, so a damaged rank is not lost in "no trace
/// files"; a folder's known non-traces (`config.json`) are not named.
#[test]
fn no_trace_files_names_the_files_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("job/sub")).unwrap();
    write_temp(&dir, "job/rank0.json", b"garbage");
    write_temp(&dir, "job/config.json", b"{\"model\": 1}");
    write_temp(&dir, "job/sub/rank1.json", b"[1, 2]");
    let lead = "no trace files in this directory or below it (a trace is a .json, .json.gz, .json.zst or .zst file that begins as a profiler trace, or whose name holds .trace.json)";
    for args in [&["triage", "job"][..], &["batch", "job"], &["triage", "job/"]] {
        let out = common::run_in(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let want = format!(
            "torchtriage: {}: {lead}; 2 files named like traces passed over, as they do not begin as one: rank0.json, sub/rank1.json\n",
            args[1]
        );
        assert_eq!(stderr, want, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A folder of batch summaries points to `merge`.
    std::fs::create_dir(dir.path().join("sums")).unwrap();
    write_temp(&dir, "sums/rank0.json.0123456789abcdef.summary.json", b"{}");
    write_temp(&dir, "sums/notes.json", b"[]");
    let out = common::run_in(dir.path(), &["batch", "sums"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.ends_with("; 1 file named like a trace passed over, as it does not begin as one: notes.json; 1 batch summary (.summary.json) here: `torchtriage merge` reads it\n"), "{stderr}");
    for n in 2..6 {
        write_temp(&dir, &format!("job/rank{n}.json"), b"{}");
    }
    let out = common::run_in(dir.path(), &["batch", "job"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.ends_with("6 files named like traces passed over, as they do not begin as one: rank0.json, rank2.json, rank3.json, and 3 more\n"), "{stderr}");
}

/// A folder `run/` holding one good trace, `rank0.pt.trace.json`.
fn run_with_one_good_rank() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("run")).unwrap();
    write_temp(&dir, "run/rank0.pt.trace.json", GOOD);
    dir
}

/// Runs `batch` in `dir` with `args`: the exit code it must give, then its
/// stdout and its stderr's lines.
fn batch_in(dir: &tempfile::TempDir, args: &[&str], code: i32) -> (Vec<u8>, Vec<String>) {
    let out = common::run_in(dir.path(), &[&["batch"][..], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    (out.stdout, stderr.lines().map(str::to_string).collect())
}

/// `batch` lists the files that failed on stderr: one bad file is one line
/// after the count, several are one line each below it.
#[test]
fn batch_failures_are_a_line_each() {
    let dir = run_with_one_good_rank();
    write_temp(&dir, "run/rank1.pt.trace.json", &GOOD[..GOOD.len() - 10]);
    let cut = GOOD.len() - 10;
    let (_, lines) = batch_in(&dir, &["-q", "run"], 1);
    let stderr = lines.join("\n");
    // The batch names its files by their full paths, as its report does.
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("torchtriage: 1 of 2 files failed: /"), "{stderr}");
    assert!(
        lines[0].ends_with(&format!(
            "/run/rank1.pt.trace.json: byte {cut}: unexpected end of input inside traceEvents (truncated file?)"
        )),
        "{stderr}"
    );

    write_temp(&dir, "run/rank2.pt.trace.json", &GOOD[..GOOD.len() - 10]);
    let (_, lines) = batch_in(&dir, &["-q", "run"], 1);
    let stderr = lines.join("\n");
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(lines[0], "torchtriage: 2 of 3 files failed:");
    assert!(
        lines[1].starts_with("  /") && lines[1].contains(&format!("/run/rank1.pt.trace.json: byte {cut}: ")),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with("  /") && lines[2].contains(&format!("/run/rank2.pt.trace.json: byte {cut}: ")),
        "{stderr}"
    );
}

/// A file named as a rank that does not read as a trace is left out of a
/// batch with a warning on stderr (a rank the report lacks); another JSON
/// file is left out quietly, listed in the report only.
#[test]
fn a_rank_named_file_that_is_no_trace_is_warned_of() {
    let dir = run_with_one_good_rank();
    write_temp(&dir, "run/rank1.json", b"\x00\x9f garbage, not JSON");
    write_temp(&dir, "run/notes.json", b"{\"hello\": 1}");
    let (stdout, lines) = batch_in(&dir, &["run", "--format", "json"], 0);
    let stderr = lines.join("\n");
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("torchtriage: warning: "), "{stderr}");
    assert!(
        lines[0].ends_with("run/rank1.json: skipped, not recognised as a trace (its name gives rank 1)"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(v["skipped"].as_array().unwrap().len(), 2, "{v}");
    // The report's notes carry what stderr warned of, for a reader of the
    // report alone (the Python package, `notes.csv`).
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert_eq!(notes.len(), 1, "{v}");
    assert!(lines[0].ends_with(notes[0]), "{notes:?}");
}

/// A `.gz` or `.zst` file cut inside the magic number that opens it is a
/// cut compressed stream, not a JSON text that begins with a stray byte.
#[test]
fn a_compressed_file_cut_inside_its_magic_number_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, want) in [
        ("a.json.gz", &b"\x1f"[..], "1 of the 2 bytes that open a gzip stream"),
        ("b.json.zst", b"\x28\xb5", "2 of the 4 bytes that open a zstd stream"),
        ("c.pt.trace.json.zst", b"\x28\xb5\x2f", "3 of the 4 bytes that open a zstd stream"),
    ] {
        let path = write_temp(&dir, name, bytes);
        let out = common::run(&["triage", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(
            stderr,
            format!(
                "torchtriage: {}: byte 0: corrupt or truncated compressed stream (the file ends after {want})\n",
                path.display()
            )
        );
        assert!(out.stdout.is_empty());
    }
    // In a folder, such a rank is a failed file, not a file passed over.
    std::fs::create_dir(dir.path().join("job")).unwrap();
    write_temp(&dir, "job/rank0.json", GOOD);
    write_temp(&dir, "job/rank1.json.gz", b"\x1f");
    let (_, lines) = batch_in(&dir, &["job"], 1);
    let failed = lines.iter().find(|l| l.contains("files failed")).cloned().unwrap_or_default();
    assert!(failed.ends_with("rank1.json.gz: byte 0: corrupt or truncated compressed stream (the file ends after 1 of the 2 bytes that open a gzip stream)"), "{lines:?}");
    // A plain file of the same bytes is judged as JSON.
    let path = write_temp(&dir, "d.json", b"\x1f");
    let out = common::run(&["triage", path.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("byte 0: not a JSON trace"));
}
