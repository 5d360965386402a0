//! Options: a `--pid-substring` filter that keeps no process says so on
//! stderr, once per trace, in every command that takes it; table limits
//! choose what the tables show, not what the JSON holds; a mistyped command
//! line gets one line on stderr, and a negative number the option's own check.

use crate::common;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");

fn stderr_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().map(str::to_string).collect()
}

fn unmatched_warnings(out: &std::process::Output) -> usize {
    stderr_lines(out)
        .iter()
        .filter(|l| {
            l.starts_with("torchtriage: warning: ") && l.contains("--pid-substring \"zzzz\" matches no process")
        })
        .count()
}

#[test]
fn a_pid_filter_matching_nothing_is_warned_about() {
    let out = common::run(&["triage", "--pid-substring", "zzzz", FIXTURE]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
    assert!(stderr_lines(&out)[0].contains("synthetic_vllm_small.json"));
    // The empty overlap table says why, in the report itself.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| No process with kernels matches --pid-substring"), "{text}");
    for format in ["table", "html"] {
        let out = common::run(&["-q", "triage", "--format", format, "--pid-substring", "zzzz", FIXTURE]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("No process with kernels matches --pid-substring"));
    }
    // The reference's own layout keeps its text.
    let out = common::run(&["-q", "triage", "--compat", "reference", "--pid-substring", "zzzz", FIXTURE]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("No rows cleared the 1.0% reporting bar."));
}

#[test]
fn a_pid_filter_that_matches_is_not_warned_about() {
    let out = common::run(&["triage", "--pid-substring", "0", FIXTURE]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
}

#[test]
fn quiet_keeps_the_pid_filter_warning_off_stderr() {
    let out = common::run(&["--quiet", "triage", "--pid-substring", "zzzz", FIXTURE]);
    assert_eq!((out.status.code(), out.stderr.is_empty()), (Some(0), true));
}

#[test]
fn diff_and_batch_warn_about_the_pid_filter_too() {
    // One warning per side; the same file on both sides, one in all.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.json");
    std::fs::copy(FIXTURE, &copy).unwrap();
    let out = common::run(&["diff", "--pid-substring", "zzzz", FIXTURE, copy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert_eq!(unmatched_warnings(&out), 2, "{:?}", stderr_lines(&out));
    let out = common::run(&["diff", "--pid-substring", "zzzz", FIXTURE, FIXTURE]);
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
    // A side that fails does not take the other side's warning with it.
    let missing = dir.path().join("missing.json");
    let out = common::run(&["diff", "--pid-substring", "zzzz", FIXTURE, missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{:?}", stderr_lines(&out));
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, dir.path().join("rank0.json")).unwrap();
    let out = common::run(&["batch", "--pid-substring", "zzzz", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert_eq!(unmatched_warnings(&out), 1, "{:?}", stderr_lines(&out));
}

/// Table limits choose what the tables show, never what the JSON holds.
#[test]
fn the_overlap_table_limit_keeps_every_row_in_json() {
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["triage", "--format", "json", FIXTURE];
        args.extend_from_slice(extra);
        let out = common::run(&args);
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let all = json(&[]);
    let limited = json(&["--overlap-table-limit", "2"]);
    let rows = |v: &serde_json::Value| v["overlap"].as_array().unwrap().clone();
    assert_eq!(rows(&all).len(), rows(&limited).len());
    let stages: std::collections::BTreeSet<String> =
        rows(&all).iter().map(|r| r["stage"].as_str().unwrap().to_string()).collect();
    for stage in stages {
        let shown = |v: &serde_json::Value| -> Vec<String> {
            rows(v)
                .iter()
                .filter(|r| r["stage"] == stage.as_str() && r["rendered"] == true)
                .map(|r| r["kernel"].as_str().unwrap().to_string())
                .collect()
        };
        let (a, l) = (shown(&all), shown(&limited));
        assert!(a.len() > 2, "the fixture's {stage} stage shows more than two rows");
        assert_eq!(l, a[..2].to_vec());
    }
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    let cases: [&[&str]; 6] = [
        &["triage", "--quite", FIXTURE],
        &["triage"],
        &["triage", "--mapping", FIXTURE],
        &["diff", FIXTURE],
        &["triage", "--timeline-basis", "x", FIXTURE],
        &["no-such-command"],
    ];
    for args in cases {
        let out = common::run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].starts_with("torchtriage: ") && lines[0].ends_with(" --help'"), "{lines:?}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_negative_number_reaches_the_options_own_check() {
    for (args, want) in [
        (&["triage", "--min-share", "-1", FIXTURE][..], "torchtriage: --min-share must be a percentage from 0 to 100"),
        (&["diff", "--gate", "-3", FIXTURE, FIXTURE][..], "torchtriage: --gate must be a finite number, 0 or more"),
        (&["diff", "--gate", "inf", FIXTURE, FIXTURE][..], "torchtriage: --gate must be a finite number, 0 or more"),
        (
            &["batch", "--straggler-pct=-1", FIXTURE][..],
            "torchtriage: --straggler-pct must be a finite number, 0 or more",
        ),
    ] {
        let out = common::run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr_lines(&out), vec![want.to_string()], "{args:?}");
    }
}

/// `stats` takes `--format json` as the other commands do; `--json` stays
/// its shorthand, and the two together are a usage error.
#[test]
fn stats_takes_format_like_the_other_commands() {
    let fixture = FIXTURE;
    let format = common::run(&["-q", "stats", "--format", "json", fixture]);
    let short = common::run(&["-q", "stats", "--json", fixture]);
    assert_eq!(format.status.code(), Some(0));
    assert_eq!(format.stdout, short.stdout);
    let doc: serde_json::Value = serde_json::from_slice(&format.stdout).unwrap();
    assert_eq!(doc["events"], 1793);
    let text = common::run(&["-q", "stats", "--format", "text", fixture]);
    // The file unquoted, as messages name it.
    let first = String::from_utf8_lossy(&text.stdout).lines().next().unwrap().to_string();
    assert_eq!(
        first.split_whitespace().collect::<Vec<_>>(),
        ["file", std::fs::canonicalize(fixture).unwrap().to_str().unwrap()]
    );
    // `table`, as the other commands call their aligned text, is the same.
    let table = common::run(&["-q", "stats", "--format", "table", fixture]);
    assert_eq!((table.status.code(), &table.stdout), (Some(0), &text.stdout));
    // Counts by category, most first.
    let text = String::from_utf8_lossy(&text.stdout);
    let cats: Vec<u64> = text
        .split("events by cat\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(cats.len() > 5 && cats.windows(2).all(|w| w[0] >= w[1]), "{cats:?}");
    for bad in [&["--format", "xml"][..], &["--format", "json", "--json"][..]] {
        let mut args = vec!["-q", "stats"];
        args.extend_from_slice(bad);
        args.push(fixture);
        let out = common::run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{bad:?}");
    }
}

#[test]
fn warnings_name_a_trace_as_the_input_was_given() {
    // A relative file, a relative directory, and one event whose `ts` is
    // text (skipped, with a warning of its own).
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("job");
    std::fs::create_dir(&ranks).unwrap();
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let odd =
        r#""traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},"#;
    let with_odd = text.replacen(r#""traceEvents": ["#, odd, 1);
    assert_ne!(with_odd, text, "the fixture's traceEvents key moved");
    std::fs::write(ranks.join("rank0.json"), with_odd).unwrap();
    for (input, shown) in
        [("job/rank0.json", "job/rank0.json"), ("job", "job/rank0.json"), ("./job/", "./job/rank0.json")]
    {
        let out = common::run_in(dir.path(), &["triage", "--pid-substring", "zzzz", input]);
        assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
        let warnings: Vec<String> = stderr_lines(&out).into_iter().filter(|l| l.contains("warning: ")).collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for w in &warnings {
            assert!(w.starts_with(&format!("torchtriage: warning: {shown}: ")), "{input}: {w}");
        }
        assert!(warnings.iter().any(|w| w.contains("1 event skipped")), "{warnings:?}");
    }
}

#[test]
fn gpu_events_the_timeline_cannot_place_are_warned_about() {
    // One kernel at 1e999 µs (infinite once read), one at 100 µs: the
    // kernel table keeps both, as the reference does; the timeline counts
    // one, and says so on stderr and in the JSON's notes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let kernel = |name: &str, ts: &str, corr: u32| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 5, "args": {{"stream": 7, "correlation": {corr}}}}}"#
        )
    };
    std::fs::write(
        &path,
        format!(r#"{{"traceEvents": [{}, {}]}}"#, kernel("gemm_a", "1e999", 1), kernel("gemm_b", "100", 2)),
    )
    .unwrap();
    let out = common::run(&["triage", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let want = format!(
        "warning: {}: 1 GPU event left out of the timeline and the overlap table: its start or end is not a finite number (the kernel table keeps it)",
        path.display()
    );
    assert_eq!(stderr_lines(&out), [format!("torchtriage: {want}")]);
    let out = common::run(&["-q", "triage", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["notes"], serde_json::json!([want]));
    assert_eq!(v["timeline"]["skipped_non_finite"], 1);
    assert_eq!(v["kernel_tables"][0]["rows"].as_array().map(Vec::len), Some(2), "{}", v["kernel_tables"]);
    // The overlap step leaves it out too: its stage's busy time is the
    // other kernel's 5 µs, not infinite (shown as null).
    assert_eq!(v["overlap_stats"][0]["total_busy_us"], 5.0, "{}", v["overlap_stats"]);
    // A directory of one trace per stage: the events of every trace count,
    // not only the first's.
    let stages = tempfile::tempdir().unwrap();
    let good = format!(r#"{{"traceEvents": [{}]}}"#, kernel("gemm_b", "100", 2));
    std::fs::write(stages.path().join("t_extend.json"), &good).unwrap();
    std::fs::copy(&path, stages.path().join("t_decode.json")).unwrap();
    let out = common::run(&["-q", "triage", "--format", "json", stages.path().to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["timeline"]["skipped_non_finite"], 1, "{}", v["notes"]);
    // Named as the input gives it: the directory, then the trace.
    let named = format!("{}: 1 GPU event left out of the timeline", stages.path().join("t_decode.json").display());
    assert!(v["notes"].to_string().contains(&named), "{}", v["notes"]);
    // A batch says it of the rank file too.
    let out = common::run(&["batch", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let canonical = path.canonicalize().unwrap();
    let err = stderr_lines(&out);
    assert!(
        err.iter().any(|l| l.contains(&format!("{}: 1 GPU event left out of the timeline", canonical.display()))),
        "{err:?}"
    );
}

/// A report on HTA's timeline basis says so in every format a person
/// reads, with what the basis leaves out; the default one says nothing.
#[test]
fn the_hta_timeline_basis_is_marked_in_every_view() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/hta/trace_filter/sampled_rank-0.json.gz");
    let note =
        "timeline basis hta (Holistic Trace Analysis' figures): 602 GPU events from the last ProfilerStep's start \
                on left out; the kernel, overlap and fuse tables cover every kernel";
    let dir = tempfile::tempdir().unwrap();
    for (format, basis) in [("markdown", "hta"), ("table", "hta"), ("html", "hta"), ("markdown", "trace")] {
        let out = common::run(&["-q", "triage", trace, "--timeline-basis", basis, "--format", format]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).replace("&#39;", "'");
        // The table view wraps its lines.
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(flat.contains(note), basis == "hta", "{format} {basis}: {text}");
    }
    let csv = dir.path().join("csv");
    let out = common::run(&[
        "-q",
        "triage",
        trace,
        "--timeline-basis",
        "hta",
        "--format",
        "csv",
        "-o",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let timeline = std::fs::read_to_string(csv.join("timeline.csv")).unwrap();
    let mut lines = timeline.lines();
    assert!(lines.next().unwrap().ends_with(",basis"), "{timeline}");
    assert!(lines.all(|l| l.ends_with(",hta")), "{timeline}");
}

#[test]
fn minus_zero_is_read_as_zero() {
    // `--gate -0` passes the range check; no report says "exceeds -0%".
    let out = common::run(&["-q", "diff", "--format", "json", "--gate=-0", FIXTURE, FIXTURE]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["gate"]["threshold_pct"].as_f64().unwrap().is_sign_positive(), "{}", doc["gate"]);
    let out = common::run(&["-q", "batch", "--format", "json", "--straggler-pct=-0", FIXTURE]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["straggler_pct"].to_string(), "0.0");
    let out = common::run(&["-q", "batch", "--straggler-pct=-0", FIXTURE]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("-0%"));
}

#[test]
fn step_annotations_with_no_finite_time_are_warned_about() {
    // Three ProfilerStep annotations, one at 1e400 µs (infinite once read)
    // and one with a negative duration: two steps would vanish unsaid.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let step = |n: u32, ts: &str, dur: &str| {
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        )
    };
    let events = [
        step(1, "0", "100"),
        step(2, "1e400", "100"),
        step(3, "200", "-5"),
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":1}}"#.into(),
        r#"{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":5,"dur":50,"args":{"stream":7,"correlation":1}}"#.into(),
    ];
    std::fs::write(&path, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let out = common::run(&["triage", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let want = format!(
        "warning: {}: 2 of the trace's ProfilerStep annotations left out of the step figures: their starts or durations are missing, not finite numbers, or not positive; the steps count the other 1",
        path.display()
    );
    assert_eq!(stderr_lines(&out), [format!("torchtriage: {want}")]);
    let out = common::run(&["-q", "triage", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["notes"], serde_json::json!([want]));
    assert_eq!(v["timeline"]["stages"][0]["steps"]["count"], 1, "{}", v["timeline"]);
    assert_eq!(v["timeline"]["steps_left_out"], 2);
    // A gate over a side that lost steps is not evaluated: its per-step
    // figures would compare other steps.
    let good = dir.path().join("good.json");
    let kept =
        [step(1, "0", "100"), step(2, "110", "100"), step(3, "220", "100"), events[3].clone(), events[4].clone()];
    std::fs::write(&good, format!(r#"{{"traceEvents":[{}]}}"#, kept.join(","))).unwrap();
    let out = common::run(&["-q", "diff", good.to_str().unwrap(), path.to_str().unwrap(), "--gate", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gate: not evaluated: new left out 2 events for unusable times"), "{err}");
    // Every step annotation unplaceable: no steps, and the warning says
    // how many were dropped.
    let events = [step(1, "1e400", "100"), events[3].clone(), events[4].clone()];
    std::fs::write(&path, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let out = common::run(&["-q", "triage", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(notes.contains("1 of the trace's ProfilerStep annotations left out of the step figures: its start or duration is missing, not a finite number, or not positive; no step is made of it, so the steps come from another rule, if any"), "{notes}");
    // SGLang's step annotations: one with a negative duration, one at
    // 1e400, two kept.
    let sglang = |ts: &str, dur: &str| {
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"step[DECODE bs=1]","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        )
    };
    let events = [
        sglang("0", "100"),
        sglang("110", "-5"),
        sglang("1e400", "10"),
        sglang("300", "100"),
        events[1].clone(),
        events[2].clone(),
    ];
    std::fs::write(&path, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let out = common::run(&["-q", "triage", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(notes.contains("2 of the trace's SGLang step[...] annotations left out of the step figures: their starts or durations are missing, not finite numbers, or not positive; the steps count the other 2"), "{notes}");
    assert_eq!(v["timeline"]["steps_left_out"], 2);
    // Step marks with no duration or no start, whatever their category,
    // are left out and counted as well.
    let events = [
        step(1, "0", "100"),
        r#"{"ph":"X","cat":"cpu_op","name":"ProfilerStep#2","pid":1,"tid":1,"ts":110}"#.into(),
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"dur":100}"#.into(),
        r#"{"ph":"X","cat":"cpu_op","name":"ProfilerStep#4","pid":1,"tid":1,"dur":100}"#.into(),
        r#"{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#5","pid":0,"tid":7,"ts":110}"#.into(),
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#6","pid":1,"tid":1,"ts":400,"dur":null}"#.into(),
        r#"{"ph":"X","cat":"cpu_op","name":"ProfilerStep#7","pid":1,"tid":1,"ts":null,"dur":100}"#.into(),
        r#"{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#8","pid":0,"tid":7,"ts":110,"dur":null}"#.into(),
        events[4].clone(),
        events[5].clone(),
    ];
    std::fs::write(&path, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let out = common::run(&["-q", "triage", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(notes.contains("5 of the trace's ProfilerStep annotations left out of the step figures: their starts or durations are missing, not finite numbers, or not positive; the steps count the other 1"), "{notes}");
    assert_eq!(v["timeline"]["steps_left_out"], 5);
    // A trace whose steps all place gives no such warning.
    let events = [step(1, "0", "100"), events[8].clone(), events[9].clone()];
    std::fs::write(&path, format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))).unwrap();
    let out = common::run(&["triage", path.to_str().unwrap()]);
    assert!(stderr_lines(&out).is_empty(), "{:?}", stderr_lines(&out));
}
