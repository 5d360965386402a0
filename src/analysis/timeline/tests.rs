//! Timeline tests over small hand-made traces read by the real ingest.

use super::*;
use crate::analysis::stage::StageRule;
use crate::ingest::load_bytes;
use launch::is_launch_call;

fn kernel(name: &str, ts: f64, dur: f64, stream: i64, corr: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"stream":{stream},"correlation":{corr}}}}}"#
    )
}

fn launch(ts: f64, dur: f64, corr: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"correlation":{corr}}}}}"#
    )
}

fn annotation(cat: &str, name: &str, ts: f64, dur: f64) -> String {
    format!(r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#)
}

fn trace_of(events: &[String]) -> Trace {
    let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    load_bytes(text.as_bytes()).expect("test trace parses")
}

fn run(t: &Trace, basis: Basis) -> Timeline {
    timeline(t, &RowStages::build(t, StageRule::Default), &TimelineOptions { basis, rank: None })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// 10 µs `gemm` kernels on stream 7, each after its launch call: one
/// `(launch start, launch duration, kernel start)` per kernel.
fn launched_gemms(kernels: &[(f64, f64, f64)]) -> Vec<String> {
    let mut events = Vec::new();
    for (i, &(launch_ts, launch_dur, start)) in kernels.iter().enumerate() {
        let corr = i as i64 + 1;
        events.push(launch(launch_ts, launch_dur, corr));
        events.push(kernel("gemm", start, 10.0, 7, corr));
    }
    events
}

/// Four kernels on one stream, each gap of a different cause.
fn four_kernels() -> Vec<String> {
    launched_gemms(&[(-5.0, 2.0, 0.0), (2.0, 2.0, 15.0), (50.0, 2.0, 100.0), (20.0, 2.0, 200.0)])
}

#[test]
fn a_kernel_held_on_the_device_after_its_launch_waits_for_the_host_only_until_the_launch() {
    // The second kernel's launch begins 40 µs into a 5 ms gap and ends 5 µs
    // later, yet the kernel starts only at the gap's end (a stream waiting
    // for an event): the host's part ends a millisecond after the call.
    // The third kernel's launch call itself takes 3 ms (a first launch
    // loading its module): its whole gap is the host's.
    let t = trace_of(&launched_gemms(&[(-5.0, 2.0, 0.0), (50.0, 5.0, 5010.0), (5030.0, 3000.0, 8040.0)]));
    let f = &run(&t, Basis::Trace).trace;
    assert!(close(f.idle_us, 5000.0 + 3020.0), "{f:?}");
    assert!(close(f.idle_host_wait_us, (55.0 + 1000.0 - 10.0) + 3020.0), "{f:?}");
    assert!(close(f.idle_short_gap_us, 0.0));
    let s = &f.idle_by_stream[0];
    assert!(close(s.host_wait_us, 1045.0 + 3020.0) && close(s.other_us, 5000.0 - 1045.0), "{s:?}");
    // HTA's per-stream breakdown counts the whole gap.
    let hta = &run(&t, Basis::HtaExact).trace;
    assert!(close(hta.idle_by_stream[0].host_wait_us, 8020.0), "{hta:?}");
    assert!(close(hta.idle_host_wait_us, 4065.0), "{hta:?}");
}

#[test]
fn short_gaps_not_waiting_for_the_host_are_counted_whole_gpu() {
    // Kernels on two streams take turns: each stream's own gaps are 35 µs,
    // the GPU's 5 µs, their launches long issued.
    let mut events = Vec::new();
    for i in 0..4 {
        let stream = 7 + i % 2;
        events.push(launch(-100.0 + i as f64, 1.0, i + 1));
        events.push(kernel("gemm", 30.0 * i as f64, 25.0, stream, i + 1));
    }
    let f = &run(&trace_of(&events), Basis::Trace).trace;
    assert!(close(f.idle_us, 15.0) && close(f.idle_short_gap_us, 15.0) && close(f.idle_host_wait_us, 0.0), "{f:?}");
    assert!(f.idle_by_stream.iter().all(|s| close(s.other_us, 35.0) && close(s.kernel_wait_us, 0.0)), "{f:?}");
}

#[test]
fn temporal_figures_and_idle_causes() {
    let t = trace_of(&four_kernels());
    for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
        let tl = run(&t, basis);
        let f = &tl.trace;
        assert_eq!(f.kernels, 4, "{basis:?}");
        assert!(close(f.window_us, 210.0) && close(f.busy_us, 40.0) && close(f.idle_us, 170.0), "{f:?}");
        assert!(close(f.compute_us, 40.0) && close(f.non_compute_us, 0.0));
        assert!(close(f.idle_pct.unwrap(), 100.0 * 170.0 / 210.0));
        assert_eq!(f.comm_comp_overlap_pct, None);
        // The 75 µs gap before the third kernel waited for its launch.
        assert!(close(f.idle_host_wait_us, 75.0));
        let s = &f.idle_by_stream;
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].stream, "7");
        assert!(close(s[0].host_wait_us, 75.0) && close(s[0].kernel_wait_us, 5.0) && close(s[0].other_us, 90.0));
        assert_eq!(tl.stages.len(), 1);
        assert_eq!(tl.stages[0].stage, Stage::All);
        assert_eq!(tl.verdict, tl.stages[0].verdict);
        assert_eq!(tl.launch, tl.stages[0].launch);
        // 80 % idle, 75 of the 170 idle µs waiting for the host: under half.
        assert_eq!(tl.verdict.kind, VerdictKind::GpuIdle);
        assert_eq!(tl.stages[0].gpus[0].figures, {
            let mut g = f.clone();
            g.idle_by_stream = f.idle_by_stream.clone();
            g
        });
    }
}

#[test]
fn cpu_only_trace_is_empty_not_nan() {
    let t = trace_of(&[annotation("user_annotation", "ProfilerStep#1", 0.0, 10.0), launch(1.0, 1.0, 5)]);
    let tl = run(&t, Basis::Trace);
    assert_eq!(tl.trace.kernels, 0);
    assert_eq!((tl.trace.window_us, tl.trace.idle_pct, tl.trace.comm_comp_overlap_pct), (0.0, None, None));
    assert!(tl.stages.is_empty());
    assert_eq!(tl.verdict.kind, VerdictKind::NoGpuKernels);
    let json = serde_json::to_string(&tl).unwrap();
    assert!(!json.contains("NaN"), "{json}");
    let empty = trace_of(&[]);
    assert_eq!(run(&empty, Basis::Hta).trace.kernels, 0);
}

#[test]
fn stream_zero_is_a_stream() {
    let t = trace_of(&[kernel("a", 0.0, 5.0, 0, 1), kernel("b", 10.0, 5.0, 0, 2)]);
    assert_eq!(t.kernels.iter().map(|k| k.stream_int).collect::<Vec<_>>(), vec![0, 0]);
    assert_eq!(t.kernels.get(0).stream, None, "stream 0 is falsy: no stream symbol");
    for basis in [Basis::Trace, Basis::Hta] {
        let tl = run(&t, basis);
        assert_eq!(tl.trace.kernels, 2, "{basis:?}");
        assert_eq!(tl.trace.idle_by_stream[0].stream, "0");
    }
}

#[test]
fn hta_rounds_to_whole_microseconds() {
    let t = trace_of(&[kernel("a", 0.5, 10.0, 7, 1), kernel("b", 20.2, 0.5, 7, 2)]);
    assert!(t.counts.ts_fractional && !t.counts.ts_text);
    let r = run(&t, Basis::Hta);
    assert!(r.rounded_to_us);
    // [1, 10] and [21, 20]: the sub-µs kernel gets an end before its start.
    assert!(close(r.trace.window_us, 19.0) && close(r.trace.busy_us, 8.0), "{:?}", r.trace);
    let e = run(&t, Basis::HtaExact);
    assert!(!e.rounded_to_us);
    assert!(close(e.trace.window_us, 20.2) && close(e.trace.busy_us, 10.5));
    // Integer times are never rounded.
    let t = trace_of(&[kernel("a", 1.0, 10.0, 7, 1).replace("1.0", "1")]);
    assert!(!t.counts.ts_fractional);
}

/// [`four_kernels`] and CPU-side `ProfilerStep`s at (ts, dur).
fn four_kernels_in_steps(steps: &[(f64, f64)]) -> Trace {
    let mut ev = four_kernels();
    for (i, &(ts, dur)) in steps.iter().enumerate() {
        ev.push(annotation("user_annotation", &format!("ProfilerStep#{}", i + 1), ts, dur));
    }
    trace_of(&ev)
}

#[test]
fn hta_drops_the_last_profiler_step() {
    let t = four_kernels_in_steps(&[(-10.0, 40.0), (40.0, 100.0)]);
    let hta = run(&t, Basis::Hta);
    // Launches 3 (at 50) and 4 (at 20)... launch 3 is after the last step's start.
    assert_eq!(hta.trace.kernels, 3);
    assert_eq!(hta.step_filter, Some(StepFilter { last_step_start_us: 40.0, kernels_dropped: 1 }));
    assert_eq!(run(&t, Basis::Trace).trace.kernels, 4);
    assert_eq!(run(&t, Basis::Trace).step_filter, None);
    // One step name only: nothing is filtered.
    let t = trace_of(&[four_kernels(), vec![annotation("user_annotation", "ProfilerStep#1", 40.0, 10.0)]].concat());
    assert_eq!(run(&t, Basis::Hta).trace.kernels, 4);
}

#[test]
fn communication_overlap_and_kernel_classes() {
    let t = trace_of(&[
        kernel("ncclKernel_AllReduce", 0.0, 10.0, 1, 1),
        kernel("gemm", 5.0, 15.0, 2, 2),
        kernel("Memcpy DtoD", 30.0, 4.0, 3, 3),
        kernel("cudaStreamSynchronize Sync", 40.0, 2.0, 3, 4),
    ]);
    let f = run(&t, Basis::Trace).trace;
    assert!(close(f.comm_us, 10.0) && close(f.compute_us, 15.0) && close(f.memory_us, 4.0));
    assert!(close(f.comm_comp_overlap_pct.unwrap(), 50.0) && close(f.exposed_comm_us, 5.0));
    assert!(close(f.busy_us, 26.0) && close(f.window_us, 42.0));
    assert!(close(f.non_compute_us, 26.0 - 15.0));
    assert_eq!(f.idle_by_stream.iter().map(|s| s.stream.as_str()).collect::<Vec<_>>(), ["1", "2", "3"]);
}

#[test]
fn named_communication_counts_on_the_trace_basis() {
    // vLLM's custom all-reduce beside a GEMM, then DeepEP's kernels, named
    // for their step rather than a collective: communication on the trace
    // basis; computation under HTA's rule.
    let all_reduce = [
        kernel("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>", 0.0, 10.0, 1, 1),
        kernel("gemm", 5.0, 15.0, 2, 2),
        kernel("void groupnorm_kernel_dispatch_down<float>", 20.0, 5.0, 2, 3),
    ];
    let deep_ep = [
        kernel("void dpsk::ep::internode::cached_notify<false>", 0.0, 10.0, 1, 1),
        kernel("void deep_ep::intranode::combine<__nv_bfloat16, 8>", 10.0, 10.0, 1, 2),
        kernel("gemm", 25.0, 10.0, 1, 3),
    ];
    for (events, comm, compute, all) in [(&all_reduce, 10.0, 20.0, 25.0), (&deep_ep, 20.0, 10.0, 30.0)] {
        let t = trace_of(events);
        let f = run(&t, Basis::Trace).trace;
        assert!(close(f.comm_us, comm) && close(f.compute_us, compute), "{f:?}");
        let h = run(&t, Basis::HtaExact).trace;
        assert!(close(h.comm_us, 0.0) && close(h.compute_us, all), "{h:?}");
    }
    let f = run(&trace_of(&all_reduce), Basis::Trace).trace;
    assert!(close(f.comm_comp_overlap_pct.unwrap(), 50.0) && close(f.exposed_comm_us, 5.0));
}

#[test]
fn stages_share_the_window() {
    let t = trace_of(&[
        annotation("gpu_user_annotation", "prefill", 0.0, 50.0),
        annotation("gpu_user_annotation", "decode", 60.0, 200.0),
        kernel("a", 0.0, 20.0, 7, 1),
        kernel("b", 30.0, 20.0, 7, 2),
        kernel("c", 70.0, 10.0, 7, 3),
        kernel("d", 100.0, 10.0, 7, 4),
    ]);
    let tl = run(&t, Basis::Trace);
    let stages: Vec<Stage> = tl.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, [Stage::Extend, Stage::Decode]);
    let (e, d) = (&tl.stages[0].gpus[0].figures, &tl.stages[1].gpus[0].figures);
    // Extend: 40 busy + the 10 µs gap before b; decode: 20 busy + gaps of 20 and 20.
    assert!(close(e.window_us, 50.0) && close(e.idle_us, 10.0), "{e:?}");
    assert!(close(d.window_us, 60.0) && close(d.idle_us, 40.0), "{d:?}");
    assert!(close(e.window_us + d.window_us, tl.trace.window_us));
    assert_eq!((tl.stages[0].verdict.kind, tl.stages[1].verdict.kind), (VerdictKind::GpuIdle, VerdictKind::GpuIdle));
}

#[test]
fn launch_statistics() {
    let mut ev = four_kernels();
    // A graph launch starting two kernels counts once.
    ev.push(
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":300,"dur":20,"args":{"correlation":9}}"#.to_string());
    ev.push(kernel("g1", 330.0, 5.0, 7, 9));
    ev.push(kernel("g2", 336.0, 5.0, 7, 9));
    let t = trace_of(&ev);
    let l = &run(&t, Basis::Trace).stages[0].launch;
    assert_eq!((l.launches, l.kernels), (5, 6));
    assert!(close(l.cpu_us, 4.0 * 2.0 + 20.0));
    // Delays: 3, 11, 48, 178, 10, 16.
    assert!(close(l.delay_p50_us.unwrap(), 13.5), "{l:?}");
    assert!(close(l.kernel_p50_us.unwrap(), 10.0) && close(l.launch_p50_us.unwrap(), 2.0));
    assert!(close(l.short_kernel_pct.unwrap(), 100.0 * 2.0 / 6.0));
    assert_eq!(l.kernels_per_step, None);
}

#[test]
fn launches_of_an_older_runtime_category() {
    // Older profilers write launches with category `Runtime`.
    let old = r#"{"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":4,"args":{"correlation":1}}"#;
    let memcpy = r#"{"ph":"X","cat":"Runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":10,"dur":4,"args":{"correlation":2}}"#;
    let t = trace_of(&[old.to_string(), memcpy.to_string(), kernel("a", 6.0, 1.0, 7, 1), kernel("b", 20.0, 1.0, 7, 2)]);
    assert_eq!((t.launches.len(), t.runtime.len()), (0, 2));
    let tl = run(&t, Basis::Trace);
    let l = &tl.stages[0].launch;
    assert_eq!((l.launches, l.kernels), (1, 1));
    assert!(close(l.delay_p50_us.unwrap(), 2.0));
    // Both calls are host sides: b's memcpy started (10) after a ended (7).
    assert!(close(tl.trace.idle_by_stream[0].host_wait_us, 13.0));
}

#[test]
fn launches_of_the_mtia_runtime() {
    // The MTIA runtime submits device work with `runFunction`; its copies,
    // records and waits are correlated host calls but not launches.
    let call = |name: &str, ts: f64, corr: i64| {
        format!(
            r#"{{"ph":"X","cat":"mtia_runtime","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":4,"args":{{"correlation":{corr}}}}}"#
        )
    };
    let device = |name: &str, ts: f64, corr: i64| {
        format!(
            r#"{{"ph":"X","cat":"mtia_ccp_events","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":10,"args":{{"stream":7,"correlation":{corr}}}}}"#
        )
    };
    let t = trace_of(&[
        call("runFunction - job_prep_and_submit_for_execution", 0.0, 1),
        call("enqueueCommand memcpyHtoDAsync", 1.0, 2),
        call("recordEvent", 2.0, 3),
        device("merge", 6.0, 1),
        device("dma_request", 20.0, 2),
        device("event_record", 40.0, 3),
    ]);
    let tl = run(&t, Basis::Trace);
    let l = &tl.stages[0].launch;
    assert_eq!((l.launches, l.kernels), (1, 1), "{l:?}");
    assert!(close(l.delay_p50_us.unwrap(), 2.0));
    assert!(!is_launch_call("recordEvent") && is_launch_call("cudaGraphLaunch") && is_launch_call("hipLaunchKernel"));
}

#[test]
fn kernels_per_step_counts_the_kernels_launched_inside_the_steps() {
    // One step covers three of the four launches: a profile longer than
    // its steps does not spread its other kernels over them.
    // The second step launched nothing (cut by the profiler's end): it is
    // no step of any stage, nor of the whole trace.
    let t = four_kernels_in_steps(&[(-10.0, 31.0), (300.0, 10.0)]);
    let tl = run(&t, Basis::Trace);
    assert_eq!((tl.stages[0].steps.count, tl.stages[0].steps.without_gpu_work), (1, 1));
    let line = crate::report::timeline::steps_line(&tl.stages[0]);
    assert!(line.ends_with("; 1 more step launched no GPU work, so no stage counts it"), "{line}");
    assert!(close(tl.stages[0].launch.kernels_per_step.unwrap(), 3.0), "{:?}", tl.stages[0].launch);
    assert!(close(tl.launch.kernels_per_step.unwrap(), 3.0), "{:?}", tl.launch);
}

#[test]
fn a_step_written_twice_is_one_step() {
    // The same ProfilerStep as a user annotation and as an operator.
    let mut ev = four_kernels();
    ev.push(annotation("user_annotation", "ProfilerStep#1", -10.0, 100.0));
    ev.push(annotation("cpu_op", "ProfilerStep#1", -10.0, 100.0));
    let tl = run(&trace_of(&ev), Basis::Trace);
    let s = &tl.stages[0].steps;
    assert_eq!((s.count, s.without_gpu_work), (1, 0), "{s:?}");
    assert!(close(tl.launch.kernels_per_step.unwrap(), 4.0), "{:?}", tl.launch);
}

#[test]
fn a_short_step_inside_a_longer_one_leaves_it_the_launches_after_its_end() {
    // Launches at -5, 2, 20 and 50 µs, all inside the step at -10..90; a
    // 1 µs step starts inside it at 0 and holds none of them. The launches
    // after 1 µs are still the long step's.
    let t = four_kernels_in_steps(&[(-10.0, 100.0), (0.0, 1.0)]);
    let tl = run(&t, Basis::Trace);
    assert_eq!(tl.stages[0].steps.count, 1);
    assert!(close(tl.launch.kernels_per_step.unwrap(), 4.0), "{:?}", tl.launch);
    // Steps that nest: each launch is the innermost step's.
    let t = four_kernels_in_steps(&[(-10.0, 100.0), (1.0, 60.0), (10.0, 5.0)]);
    let tl = run(&t, Basis::Trace);
    assert_eq!(tl.stages[0].steps.count, 2);
    assert!(close(tl.launch.kernels_per_step.unwrap(), 2.0), "{:?}", tl.launch);
}

#[test]
fn a_step_named_for_a_stage_belongs_to_it_and_counts_its_kernels() {
    // An SGLang extend step launches five kernels; the GPU runs the last
    // three 100 ms later, past the prefill annotation on the GPU, and the
    // step's name names no kernel stage (stage `all`). The step is the
    // extend stage's, by its name, and counts the two extend kernels it
    // launched. A decode step launches one kernel that runs 100 ms after
    // the step: the host-side annotation holds it, so it is a decode kernel.
    let mut ev = vec![
        annotation("gpu_user_annotation", "prefill", 0.0, 50.0),
        annotation("user_annotation", "step[EXTEND bs=4 toks=64]", -10.0, 30.0),
        annotation("user_annotation", "step[DECODE bs=4]", 200_000.0, 30.0),
    ];
    for (i, ts) in [0.0, 30.0, 100_000.0, 110_000.0, 120_000.0, 300_000.0].into_iter().enumerate() {
        let corr = i as i64 + 1;
        let host = if i < 5 { -5.0 + i as f64 } else { 200_001.0 };
        ev.push(launch(host, 0.5, corr));
        ev.push(kernel("gemm", ts, 10.0, 7, corr));
    }
    let tl = run(&trace_of(&ev), Basis::Trace);
    let stages: Vec<Stage> = tl.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, [Stage::Extend, Stage::Decode, Stage::All]);
    let (extend, decode, all) = (&tl.stages[0], &tl.stages[1], &tl.stages[2]);
    assert_eq!((extend.kernels(), decode.kernels(), all.kernels()), (2, 1, 3));
    assert_eq!(extend.steps.count, 1);
    assert_eq!(extend.steps.slowest[0].name, "step[EXTEND bs=4 toks=64]");
    assert!(close(extend.launch.kernels_per_step.unwrap(), 2.0), "{:?}", extend.launch);
    assert_eq!(decode.steps.count, 1);
    assert_eq!(decode.steps.slowest[0].name, "step[DECODE bs=4]");
    assert!(close(decode.launch.kernels_per_step.unwrap(), 1.0), "{:?}", decode.launch);
    assert_eq!(all.steps.count, 0);
    // Over the whole trace, every kernel launched inside a step counts.
    assert!(close(tl.launch.kernels_per_step.unwrap(), 3.0), "{:?}", tl.launch);
}

#[test]
fn step_detection_rules() {
    let mut ev = four_kernels();
    ev.push(annotation("user_annotation", "step[DECODE bs=1]", -10.0, 30.0));
    ev.push(annotation("user_annotation", "step[DECODE bs=2]", 40.0, 100.0));
    ev.push(annotation("gpu_user_annotation", "ProfilerStep#9", 0.0, 300.0));
    let t = trace_of(&ev);
    let s = &run(&t, Basis::Trace).stages[0].steps;
    // GPU-side ProfilerStep annotations do not count; SGLang steps do.
    assert_eq!((s.source, s.count), (Some(StepSource::SglangStep), 2));
    assert!(close(s.max_us.unwrap(), 100.0) && close(s.mean_us.unwrap(), 65.0));
    assert_eq!(
        s.slowest.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        ["step[DECODE bs=2]", "step[DECODE bs=1]"]
    );
    assert_eq!(s.slowest[0].start_us, 40.0);
    assert!(close(run(&t, Basis::Trace).stages[0].launch.kernels_per_step.unwrap(), 2.0));

    ev.push(annotation("user_annotation", "ProfilerStep#3", -10.0, 300.0));
    let t = trace_of(&ev);
    let s = &run(&t, Basis::Trace).stages[0].steps;
    assert_eq!((s.source, s.count), (Some(StepSource::ProfilerStep), 1));

    let t = trace_of(
        &[four_kernels(), vec![annotation("user_annotation", "execute_context_1(8)_generation_0(0)", -10.0, 300.0)]]
            .concat(),
    );
    assert_eq!(run(&t, Basis::Trace).stages[0].steps.source, Some(StepSource::VllmExecute));
    let t = trace_of(&four_kernels());
    assert_eq!(run(&t, Basis::Trace).stages[0].steps, Steps::default());
}

#[test]
fn profiler_steps_recorded_as_operators() {
    let ev = [
        annotation("Operator", "ProfilerStep#1", 0.0, 10.0),
        annotation("cpu_op", "ProfilerStep#2", 10.0, 10.0),
        kernel("a", 1.0, 1.0, 7, 1),
    ];
    let t = trace_of(&ev);
    assert_eq!(t.step_marks.len(), 2);
    assert_eq!(t.annotations.len(), 0);
    assert!(trace_of(&[annotation("user_annotation", "ProfilerStep#1", 0.0, 10.0)]).step_marks.is_empty());
}

#[test]
fn runtime_calls_are_kept_once() {
    let t = trace_of(&[
        launch(0.0, 1.0, 1),
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":2}}"#.to_string(),
        r#"{"ph":"X","cat":"mtia_runtime","name":"enqueueCommand","pid":1,"tid":1,"ts":3,"dur":1,"args":{"correlation":3}}"#.to_string(),
        r#"{"ph":"X","cat":"python_function","name":"f","pid":1,"tid":1,"ts":3,"dur":1,"args":{"correlation":4}}"#.to_string(),
        // A zero-length device row is neither a kernel nor a runtime call.
        r#"{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":7,"ts":3,"dur":0,"args":{"stream":7,"correlation":5}}"#.to_string(),
        kernel("a", 5.0, 1.0, 7, 2),
    ]);
    assert_eq!(t.launches.len(), 1);
    assert_eq!(t.kernels.len(), 1);
    let names: Vec<&str> = t.runtime.name.iter().map(|&s| t.s(s)).collect();
    assert_eq!(names, ["cudaMemcpyAsync", "enqueueCommand"]);
    // The memcpy call is the kernel's host side: it started (2) before the kernel.
    let tl = run(&t, Basis::Trace);
    assert_eq!(tl.trace.kernels, 1);
}

#[test]
fn runtime_rows_with_a_text_stream_are_host_calls() {
    // ROCm runtime calls carry `stream: "0x0"`: kernel-like rows, but host calls.
    let hip = r#"{"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"stream":"0x0","correlation":1}}"#;
    let t = trace_of(&[hip.to_string(), kernel("a", 50.0, 1.0, 7, 1), kernel("b", 60.0, 1.0, 7, 2)]);
    assert_eq!(t.kernels.len(), 3);
    assert_eq!(t.kernels.get(0).stream_int, -1);
    for basis in [Basis::Trace, Basis::Hta] {
        let tl = run(&t, basis);
        assert_eq!(tl.trace.kernels, 2, "{basis:?}");
        assert_eq!(tl.stages[0].launch.launches, 1);
    }
}

#[test]
fn non_finite_times_never_panic() {
    let bad =
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":NaN,"dur":5,"args":{"stream":7,"correlation":1}}"#;
    let inf = r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":Infinity,"args":{"stream":7,"correlation":2}}"#;
    let t = trace_of(&[bad.to_string(), inf.to_string(), kernel("a", 1.0, 1.0, 7, 3), launch(f64::MAX, 1e308, 3)]);
    for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
        let tl = run(&t, basis);
        // The infinite-dur kernel is not complete, so not a kernel row.
        assert_eq!((tl.trace.kernels, tl.skipped_non_finite), (1, 1), "{basis:?}");
        let json = serde_json::to_string(&tl).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    }
}

#[test]
fn stream_int_follows_python_int() {
    use crate::columns::builder::stream_int;
    use crate::pysem::Scalar;
    assert_eq!(stream_int(Scalar::Num("7")), 7);
    assert_eq!(stream_int(Scalar::Num("0")), 0);
    assert_eq!(stream_int(Scalar::Num("7.9")), 7);
    assert_eq!(stream_int(Scalar::Num("NaN")), -1);
    assert_eq!(stream_int(Scalar::Str(" 7 ")), 7);
    assert_eq!(stream_int(Scalar::Str("7.0")), -1);
    assert_eq!(stream_int(Scalar::Str("0x0")), -1);
    assert_eq!(stream_int(Scalar::Bool(true)), 1);
    assert_eq!(stream_int(Scalar::Missing), -1);
    assert_eq!(stream_int(Scalar::Num("99999999999")), i32::MAX);
}

#[test]
fn gpus_are_processes_and_keep_their_streams_apart() {
    let other = kernel("b", 5.0, 10.0, 7, 2).replace(r#""pid":0"#, r#""pid":1"#);
    let text = format!(
        r#"{{"distributedInfo":{{"rank":3}},"traceEvents":[{},{},{}]}}"#,
        kernel("a", 0.0, 10.0, 7, 1),
        other,
        kernel("c", 30.0, 10.0, 7, 3)
    );
    let t = load_bytes(text.as_bytes()).unwrap();
    assert_eq!(trace_rank(&t), Some(3));
    let tl = run(&t, Basis::Trace);
    // The whole trace merges both GPUs' busy time; streams stay per process.
    assert!(close(tl.trace.busy_us, 25.0) && close(tl.trace.window_us, 40.0));
    let labels: Vec<&str> = tl.trace.idle_by_stream.iter().map(|s| s.stream.as_str()).collect();
    assert_eq!(labels, ["0:7", "1:7"]);
    let gpus = &tl.stages[0].gpus;
    assert_eq!(gpus.iter().map(|g| (g.pid.as_str(), g.rank)).collect::<Vec<_>>(), [("0", None), ("1", None)]);
    assert!(close(gpus[0].figures.window_us, 40.0) && close(gpus[0].figures.idle_us, 20.0));
    assert!(close(gpus[1].figures.window_us, 10.0));
    // HTA reads one stream 7 across processes.
    let hta = run(&t, Basis::Hta);
    assert_eq!(hta.trace.idle_by_stream.len(), 1);
    // One GPU: it gets the trace's rank.
    let one = load_bytes(
        format!(r#"{{"distributedInfo":{{"rank":3}},"traceEvents":[{}]}}"#, kernel("a", 0.0, 1.0, 7, 1)).as_bytes(),
    )
    .unwrap();
    assert_eq!(run(&one, Basis::Trace).stages[0].gpus[0].rank, Some(3));
}

#[test]
fn random_hostile_traces_never_panic() {
    let mut rng = crate::pysem::test_rng(0x9E37_79B9_7F4A_7C15);
    let mut next = |n: usize| (rng() % n as u64) as usize;
    let times = ["0", "1", "2.5", "-3", "1e308", "-1e308", "NaN", "Infinity", "-Infinity", "100", "0.25", "7"];
    let streams = ["0", "7", "\"0x0\"", "\"7\"", "null", "7.5", "-2", "true"];
    let cats = ["kernel", "gpu_memcpy", "cuda_runtime", "cuda_driver", "user_annotation", "Runtime", "cpu_op"];
    let names = ["ncclKernel_x", "gemm", "Memcpy", "cudaLaunchKernel", "ProfilerStep#1", "ProfilerStep#2", "step[x]"];
    for _ in 0..300 {
        let n = 1 + next(12);
        let events: Vec<String> = (0..n)
            .map(|_| {
                format!(
                    r#"{{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":1,"ts":{},"dur":{},"args":{{"stream":{},"correlation":{}}}}}"#,
                    cats[next(cats.len())],
                    names[next(names.len())],
                    next(3),
                    times[next(times.len())],
                    times[next(times.len())],
                    streams[next(streams.len())],
                    next(4)
                )
            })
            .collect();
        let t = trace_of(&events);
        for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
            let tl = run(&t, basis);
            let json = serde_json::to_string(&tl).unwrap();
            assert!(!json.contains("NaN"), "{json}");
        }
    }
}

#[test]
fn gpu_events_stay_small() {
    assert!(std::mem::size_of::<events::Ev>() <= 40);
}

#[test]
fn steps_from_model_runner_frames_when_no_annotation_marks_them() {
    let frame = |name: &str, ts: f64, dur: f64| {
        format!(r#"{{"ph":"X","cat":"python_function","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#)
    };
    let mut ev = four_kernels();
    ev.push(frame("vllm/v1/worker/gpu_worker.py(263): execute_model", -10.0, 400.0));
    ev.push(frame("vllm/v1/worker/gpu_model_runner.py(1002): execute_model", -5.0, 100.0));
    // The same function called inside itself is one step.
    ev.push(frame("vllm/v1/worker/gpu_model_runner.py(1002): execute_model", -4.0, 50.0));
    ev.push(frame("vllm/v1/worker/gpu_model_runner.py(1002): execute_model", 45.0, 200.0));
    ev.push(frame("my/model_runner_helpers.py(1): execute_model", 0.0, 900.0));
    let t = trace_of(&ev);
    let s = &run(&t, Basis::Trace).stages[0].steps;
    assert_eq!(s.source, Some(StepSource::VllmExecuteModelFrame));
    assert_eq!(s.count, 2, "{s:?}");
    assert!(close(s.max_us.unwrap(), 200.0));

    let mut ev = four_kernels();
    ev.push(frame("sglang/srt/managers/tp_worker.py(445): forward_batch_generation", -10.0, 400.0));
    let s = &run(&trace_of(&ev), Basis::Trace).stages[0].steps;
    assert_eq!((s.source, s.count), (Some(StepSource::SglangForwardFrame), 1));

    // A step annotation, when there is one, wins over the frames.
    ev.push(annotation("user_annotation", "ProfilerStep#3", -10.0, 300.0));
    let s = &run(&trace_of(&ev), Basis::Trace).stages[0].steps;
    assert_eq!(s.source, Some(StepSource::ProfilerStep));
}

#[test]
fn percentiles_by_selection_equal_percentiles_of_the_sorted_values() {
    use super::intervals::{percentile, percentiles, sort_values};
    let mut next = crate::pysem::test_rng(0x2545_f491_4f6c_dd1d_u64);
    for round in 0..300 {
        let n = (next() % 200) as usize;
        // Few distinct values in some rounds (ties), a NaN in others.
        let values: Vec<f64> = (0..n)
            .map(|_| if round % 3 == 0 { (next() % 5) as f64 } else { (next() % 100_000) as f64 / 7.0 })
            .chain((round % 7 == 0).then_some(f64::NAN))
            .collect();
        let mut sorted = values.clone();
        sort_values(&mut sorted);
        let ps = [0.0, 0.5, 0.9, 0.99, 1.0];
        let want: Vec<Option<f64>> = ps.iter().map(|&p| percentile(&sorted, p)).collect();
        let mut scratch = values.clone();
        let got = percentiles(&mut scratch, ps);
        let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            (a, b) => a.is_none() && b.is_none(),
        };
        assert!(want.iter().zip(&got).all(|(w, g)| same(*w, *g)), "round {round}: {want:?} vs {got:?}");
    }
}

/// `n` kernels each starting `after` µs after its launch call ends (the
/// calls 100 µs apart, 2 µs long) and running 50 µs, so the GPU is idle
/// half the time.
fn launched(n: i64, after: f64) -> Vec<String> {
    let mut ev = Vec::new();
    for i in 0..n {
        let ts = 100.0 * i as f64;
        ev.push(launch(ts, 2.0, i + 1));
        ev.push(kernel("k", ts + 2.0 + after, 50.0, 7, i + 1));
    }
    ev
}

#[test]
fn clocks_that_agree_have_no_offset() {
    let tl = run(&trace_of(&launched(20, 5.0)), Basis::Trace);
    assert_eq!(tl.launch.clock_offset_us, None);
    assert_eq!(tl.stages[0].verdict.kind, VerdictKind::CpuLaunchBound);
}

#[test]
fn a_gpu_clock_running_late_is_an_offset_and_host_waits_are_not_judged() {
    // Every kernel starts 5 ms after its launch call, although the GPU
    // sits idle half the time: one clock cannot say that.
    let tl = run(&trace_of(&launched(20, 5000.0)), Basis::Trace);
    assert!(close(tl.launch.clock_offset_us.unwrap(), 5000.0), "{:?}", tl.launch);
    // Every stage carries the trace's offset, and its verdict does not
    // blame the host.
    let stage = &tl.stages[0];
    assert_eq!(stage.launch.clock_offset_us, tl.launch.clock_offset_us);
    assert_eq!((stage.verdict.kind, stage.verdict.clock_offset_us), (VerdictKind::GpuIdle, tl.launch.clock_offset_us));
    // The delays shown are still the measured ones.
    assert!(close(stage.launch.delay_p50_us.unwrap(), 5000.0));
}

#[test]
fn kernels_queued_behind_a_busy_gpu_are_not_an_offset() {
    // A 5 ms kernel launched before the trace began keeps the GPU busy;
    // the 20 kernels launched meanwhile then run back to back, each more
    // than 1 ms after its launch call, on one clock.
    let mut ev = vec![kernel("backlog", 0.0, 5000.0, 7, 1000)];
    for i in 0..20 {
        let ts = 100.0 * i as f64;
        ev.push(launch(ts, 2.0, i + 1));
        ev.push(kernel("k", 5000.0 + 50.0 * i as f64, 50.0, 7, i + 1));
    }
    let tl = run(&trace_of(&ev), Basis::Trace);
    assert!(tl.launch.delay_p50_us.unwrap() > 1000.0, "{:?}", tl.launch);
    assert_eq!(tl.launch.clock_offset_us, None);
    // With profiler steps, the HTA bases leave the backlog out (no launch
    // call in the trace), but the clocks are the same whatever the basis.
    let mut stepped = ev.clone();
    stepped.push(annotation("user_annotation", "ProfilerStep#1", 0.0, 3000.0));
    stepped.push(annotation("user_annotation", "ProfilerStep#2", 6000.0, 3000.0));
    for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
        let tl = run(&trace_of(&stepped), basis);
        assert!(tl.launch.delay_p50_us.unwrap() > 1000.0, "{basis:?}: {:?}", tl.launch);
        assert_eq!(tl.launch.clock_offset_us, None, "{basis:?}");
    }
    // A gap of idle GPU in the last kernel's wait, shorter than half of
    // it, does not make it one either.
    let mut gap = ev.clone();
    gap[0] = kernel("backlog", 0.0, 3000.0, 7, 1000);
    gap.push(kernel("backlog2", 4000.0, 1000.0, 7, 1001));
    assert_eq!(run(&trace_of(&gap), Basis::Trace).launch.clock_offset_us, None);
}

#[test]
fn a_kernel_starting_before_its_launch_call_is_an_offset() {
    let mut ev = launched(20, 5.0);
    // One kernel 3 ms before its launch call began.
    ev.push(launch(10_000.0, 2.0, 99));
    ev.push(kernel("early", 7_000.0, 1.0, 7, 99));
    let tl = run(&trace_of(&ev), Basis::Trace);
    assert!(close(tl.launch.clock_offset_us.unwrap(), -3000.0), "{:?}", tl.launch);
    // The delay shown for it is 0, as before.
    assert!(tl.launch.delay_p50_us.unwrap() >= 0.0);
}

#[test]
fn a_trace_without_matched_kernels_has_no_offset_on_any_basis() {
    let unmatched = [kernel("k", 0.0, 5.0, 7, 1)];
    for events in [&[][..], &unmatched[..]] {
        for basis in [Basis::Trace, Basis::Hta, Basis::HtaExact] {
            assert_eq!(run(&trace_of(events), basis).launch.clock_offset_us, None, "{basis:?}");
        }
    }
}

#[test]
fn too_few_matched_kernels_are_not_judged() {
    let tl = run(&trace_of(&launched(9, 5000.0)), Basis::Trace);
    assert_eq!(tl.launch.clock_offset_us, None);
}

#[test]
fn a_step_with_a_few_kernels_and_host_work_is_not_gpu_bound() {
    // Two back-to-back kernels in a 10 ms step (a CUDA-graph capture, say):
    // the window is busy throughout, the step is not.
    let ev = vec![
        annotation("user_annotation", "ProfilerStep#1", 0.0, 10_000.0),
        launch(10.0, 2.0, 1),
        kernel("fill", 20.0, 5.0, 7, 1),
        launch(13.0, 2.0, 2),
        kernel("fill", 25.0, 6.0, 7, 2),
    ];
    let tl = run(&trace_of(&ev), Basis::Trace);
    let v = &tl.stages[0].verdict;
    assert_eq!((v.kind, v.idle_pct, v.steps_us), (VerdictKind::GpuIdle, Some(0.0), Some(10_000.0)), "{v:?}");
    assert!(v.steps_idle_pct.is_some_and(|p| close(p, 100.0 * (10_000.0 - 11.0) / 10_000.0)), "{v:?}");
    // One GPU: the whole trace is judged the same way.
    assert_eq!(tl.verdict, *v);
    // The same kernels filling their step are GPU-bound.
    let ev = vec![
        annotation("user_annotation", "ProfilerStep#1", 20.0, 11.0),
        ev[1].clone(),
        ev[2].clone(),
        ev[3].clone(),
        ev[4].clone(),
    ];
    let v = &run(&trace_of(&ev), Basis::Trace).stages[0].verdict;
    assert_eq!((v.kind, v.steps_us), (VerdictKind::GpuBound, None), "{v:?}");
}

#[test]
fn device_waits_alone_count_with_the_idle_time() {
    // Stream 8 waits 0–60 for stream 7, which works 0–40 and 60–100: from
    // 40 to 60 only the wait runs.
    let ev =
        vec![kernel("event_wait", 0.0, 60.0, 8, 1), kernel("gemm", 0.0, 40.0, 7, 2), kernel("gemm", 60.0, 40.0, 7, 3)];
    for basis in [Basis::Trace, Basis::Hta] {
        let tl = run(&trace_of(&ev), basis);
        let (f, v) = (&tl.trace, &tl.verdict);
        assert!(close(f.busy_us, 100.0) && close(f.idle_us, 0.0), "{f:?}");
        assert!(close(f.device_wait_us, 20.0), "{basis:?} {f:?}");
        // 0 % idle, but 20 % of the window only waiting: idle, by waits.
        assert_eq!(v.kind, VerdictKind::GpuIdle, "{v:?}");
        assert!(v.device_wait_pct.is_some_and(|w| close(w, 20.0)) && v.idle_by_device_waits(), "{v:?}");
    }
    // A wait that other work covers throughout is no idle time.
    let ev = vec![kernel("event_wait", 0.0, 60.0, 8, 1), kernel("gemm", 0.0, 100.0, 7, 2)];
    let tl = run(&trace_of(&ev), Basis::Trace);
    assert!(close(tl.trace.device_wait_us, 0.0));
    assert_eq!(tl.verdict.kind, VerdictKind::GpuBound);
}

#[test]
fn rounding_to_whole_microseconds_leaves_no_impossible_figure() {
    // On the `hta` basis a kernel under a µs can round to an end before its
    // start: here the memset ends at 20 and starts at 21. HTA counts that
    // group as -1 µs of busy time and then raises, its non-compute time
    // being negative; no figure is negative here instead.
    let t = trace_of(&[kernel("gemm", 0.5, 10.0, 7, 1), kernel("Memset (Device)", 20.2, 0.5, 7, 2)]);
    let f = run(&t, Basis::Hta).trace;
    assert!(close(f.busy_us, 8.0) && close(f.window_us, 19.0) && close(f.idle_us, 11.0), "{f:?}");
    // Computation is its kernels' union on HTA's clock (its kernel-type
    // figure), non-compute not negative, memory not negative.
    assert!(close(f.compute_us, 9.0) && close(f.non_compute_us, 0.0) && close(f.memory_us, 0.0), "{f:?}");
    assert!(f.non_compute_pct.unwrap() >= 0.0, "{f:?}");
    // The trace's own times: nothing to round.
    let f = run(&t, Basis::Trace).trace;
    assert!(close(f.compute_us, 10.0) && close(f.memory_us, 0.5), "{f:?}");
}

fn runtime_call(name: &str, pid: u32, tid: u32, ts: f64, dur: f64, corr: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur},"args":{{"correlation":{corr}}}}}"#
    )
}

#[test]
fn the_launching_thread_s_calls_in_host_waits_are_named() {
    // The host wait is the gap 25..100, whose kernel's launch call begins at
    // 50; the launching thread (pid 1, tid 1) is in cudaFree for 26..48 of
    // it, and before it outside every gap. After the launch call began, the
    // GPU waits on it or on other work: the copy at 55..95 is left out, and
    // so is another thread's copy in the gap.
    let mut events = four_kernels();
    events.push(runtime_call("cudaFree", 1, 1, 26.0, 22.0, 90));
    events.push(runtime_call("cudaFree", 1, 1, 11.0, 3.0, 91));
    events.push(runtime_call("cudaMemcpy", 1, 1, 55.0, 40.0, 92));
    events.push(runtime_call("cudaMemcpy", 1, 2, 30.0, 60.0, 93));
    // A host call ROCm writes with `stream: "0x0"` is one too.
    events.push(
        r#"{"ph":"X","cat":"cuda_runtime","name":"hipMemcpyWithStream","pid":1,"tid":1,"ts":120,"dur":40,"args":{"stream":"0x0","correlation":94}}"#
            .to_string(),
    );
    let t = trace_of(&events);
    for basis in [Basis::Trace, Basis::HtaExact] {
        let tl = run(&t, basis);
        let want = vec![HostWaitCall { name: "cudaFree".into(), calls: 1, wait_us: 22.0 }];
        assert_eq!(tl.trace.host_wait_calls, want, "{basis:?}");
        assert_eq!(tl.stages[0].gpus[0].figures.host_wait_calls, want, "{basis:?}");
        let v = &tl.stages[0].verdict;
        assert_eq!(v.host_wait_call.as_ref(), want.first());
        assert!(close(v.call_share().unwrap(), 22.0 / 75.0), "{v:?}");
    }
    // The gap 110..200 waits for the host once its kernel's launch call
    // begins after 110: the stream-tagged copy then counts.
    let mut late = events.clone();
    late[6] = launch(150.0, 2.0, 4);
    let tl = run(&trace_of(&late), Basis::Trace);
    let copy = HostWaitCall { name: "hipMemcpyWithStream".into(), calls: 1, wait_us: 30.0 };
    assert!(tl.trace.host_wait_calls.contains(&copy), "{:?}", tl.trace.host_wait_calls);
}

#[test]
fn host_calls_are_not_named_when_two_processes_launch() {
    let mut events = four_kernels();
    events.push(runtime_call("cudaFree", 1, 1, 30.0, 60.0, 90));
    // A second process launches too: its calls and the first's cannot be
    // told apart by GPU.
    events.push(runtime_call("cudaLaunchKernel", 5, 1, 300.0, 1.0, 93));
    let tl = run(&trace_of(&events), Basis::Trace);
    assert!(tl.trace.host_wait_calls.is_empty(), "{:?}", tl.trace.host_wait_calls);
    assert_eq!(tl.stages[0].verdict.host_wait_call, None);
}
