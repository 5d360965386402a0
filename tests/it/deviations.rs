//! Each deliberate departure from the reference tool (docs/deviations.md)
//! has a test here showing our behaviour and, where a compatibility switch
//! exists, the reference's.

use crate::common;

use std::path::PathBuf;

fn kernel(name: &str, ts: u64, corr: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 10, "args": {{"stream": 7, "correlation": {corr}, "External id": {corr}}}}}"#
    )
}

fn write_trace(dir: &tempfile::TempDir, events: &[String]) -> PathBuf {
    let p = dir.path().join("trace.json");
    std::fs::write(&p, format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"))).unwrap();
    p
}

fn triage(args: &[&str]) -> String {
    let out = common::run(args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Deviation 1: tile shapes such as `MT160x64x64` are not "hex addresses".
/// The reference masks their `0x64` and merges kernels that differ only in
/// tile size into one row; we keep them apart.
#[test]
fn tile_shapes_are_not_masked_as_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(
        &dir,
        &[kernel("Cijk_Alik_MT160x64x64_MI16", 100, 1), kernel("Cijk_Alik_MT160x128x64_MI16", 200, 2)],
    );
    let ours = triage(&["-q", "triage", p.to_str().unwrap()]);
    assert!(ours.contains("| Cijk_Alik_MT160x64x64_MI16 |"), "{ours}");
    assert!(ours.contains("| Cijk_Alik_MT160x128x64_MI16 |"), "{ours}");
    let reference = triage(&["-q", "triage", "--compat", "reference", p.to_str().unwrap()]);
    assert!(reference.contains("| Cijk_Alik_MT160xADDRx64_MI16 |"), "{reference}");
    assert!(!reference.contains("MT160x128x64"), "{reference}");
}

/// Real addresses are still masked.
#[test]
fn addresses_are_still_masked() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, &[kernel("void k<0x7f00>(int) at 0x7f3a2c", 100, 1)]);
    let ours = triage(&["-q", "triage", p.to_str().unwrap()]);
    assert!(ours.contains("0xADDR"), "{ours}");
    assert!(!ours.contains("0x7f3a2c"), "{ours}");
}

/// Deviation 2: in single-trace mode the reference prints no overlap rows;
/// we use the trace as its own mapping trace and print them.
#[test]
fn single_trace_mode_prints_overlap_rows() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(
        &dir,
        &[
            kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 100, 1),
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_cublas", 200, 2),
        ],
    );
    let ours = triage(&["-q", "triage", p.to_str().unwrap()]);
    let overlap = ours.split("Overlap Opportunity Table").nth(1).unwrap_or("");
    let overlap = overlap.split("Fuse Opportunity Table").next().unwrap_or("");
    assert!(overlap.contains("ncclDevKernel_AllReduce"), "{ours}");
    assert!(!overlap.contains("Use mapping/formal mode"), "{ours}");
}

/// Deviation 3: the fuse table's Rationale is our own wording; every other
/// column equals the reference (checked by tests/parity.rs).
#[test]
fn fuse_rationale_is_our_wording() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let ours = triage(&["-q", "triage", fixture]);
    let fuse = ours.split("Fuse Opportunity Table").nth(1).unwrap_or("");
    assert!(fuse.contains("| vLLM fused activation-and-mul |"), "{ours}");
    assert!(fuse.contains("The fused kernel already runs here"), "{ours}");
    assert!(!fuse.contains("Matches an upstream path"), "{ours}");
}

/// Deviation 4: invalid UTF-8 in a string (the reference crashes reading
/// the file) is read; the bad string becomes U+FFFD.
#[test]
fn invalid_utf8_is_read_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad_utf8.json");
    let mut bytes = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k"#.to_vec();
    bytes.extend_from_slice(b"\xff\xfe");
    bytes.extend_from_slice(br#"", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}]}"#);
    std::fs::write(&p, bytes).unwrap();
    let out = triage(&["-q", "triage", p.to_str().unwrap()]);
    assert!(out.contains('\u{FFFD}'), "{out}");
}

#[test]
fn a_broken_trace_in_a_directory_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_trace(&dir, &[kernel("gemm", 10, 1)]);
    let text = std::fs::read(&good).unwrap();
    let broken = dir.path().join("rank1.json");
    std::fs::write(&broken, &text[..text.len() / 2]).unwrap();
    std::fs::write(dir.path().join("notes.json"), b"{\"hello\": 1}").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_torchtriage"))
        .args(["-q", "batch", "--format", "json", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], 2);
    assert_eq!(v["failed"], 1);
    assert!(v["failures"][0]["file"].as_str().unwrap().ends_with("rank1.json"));
    // Plain JSON that is not a trace is still left out, with a reason.
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
}

/// Under each kernel table, one line says how many kernels the share cut-off
/// hid and what share of the stage's time they hold; `--compat reference`
/// keeps the reference's table as it was.
#[test]
fn hidden_kernel_rows_are_counted_under_the_table() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let ours = triage(&["-q", "triage", fixture]);
    assert!(ours.contains("2 more kernels below the 1.0% share cut-off hold 0.5% of this stage's GPU time"), "{ours}");
    assert!(ours.contains("1 more kernel below the 1.0% share cut-off holds"), "{ours}");
    let all = triage(&["-q", "triage", "--min-share", "0", fixture]);
    assert!(!all.contains("share cut-off"), "{all}");
    let reference = triage(&["-q", "triage", "--compat", "reference", fixture]);
    assert!(!reference.contains("share cut-off"), "{reference}");
}

/// Deviation 14: exclusive and hidden ratios are fractions. Summing many
/// intervals in floating point puts some a hair above 1 on real traces; by
/// default they are shown as at most 1, as the schema promises, and
/// `--compat reference` keeps the reference's values.
#[test]
fn overlap_ratios_stay_fractions() {
    let trace =
        common::Corpus::bundled().traces_dir().join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let ratios = |args: &[&str]| -> Vec<f64> {
        let mut all = vec!["-q", "triage", "--format", "json"];
        all.extend_from_slice(args);
        all.push(trace.to_str().unwrap());
        let v: serde_json::Value = serde_json::from_str(&triage(&all)).unwrap();
        v["overlap"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| [r["exclusive_ratio"].as_f64().unwrap(), r["hidden_ratio"].as_f64().unwrap()])
            .collect()
    };
    let ours = ratios(&[]);
    assert!(!ours.is_empty() && ours.iter().all(|r| (0.0..=1.0).contains(r)), "{ours:?}");
    let reference = ratios(&["--compat", "reference"]);
    assert!(reference.iter().any(|&r| r > 1.0), "the reference's rows no longer pass 1: {reference:?}");
    assert_eq!(ours.len(), reference.len());
}

/// Deviation 15: a directory of rank traces given to `triage` analyses one
/// rank, as the reference does, but says so on stderr and points to `batch`.
#[test]
fn a_directory_of_ranks_names_the_rank_analysed() {
    let dir = common::Corpus::bundled().traces_dir().join("param_dlrm_8rank");
    let d = dir.to_str().unwrap();
    let out = common::run(&["triage", d]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("torchtriage: note: ")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("analysed rank 0 only (worker0_step_12."), "{}", notes[0]);
    assert!(notes[0].contains("7 other traces left out") && notes[0].contains("torchtriage batch"), "{}", notes[0]);
    // One file, or --quiet: no note.
    let one = dir.join("worker3_step_12.1694128201557.pt.trace.json.gz");
    let out = common::run(&["triage", one.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("note:"));
    let out = common::run(&["-q", "triage", d]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The JSON report carries the note, `--quiet` or not.
    let out = common::run(&["-q", "triage", d, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let note = notes[0].strip_prefix("torchtriage: ").unwrap();
    assert_eq!(v["notes"], serde_json::json!([note]), "{}", v["notes"]);
    let out = common::run(&["-q", "triage", one.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["notes"], serde_json::json!([]));
}

/// Deviation 15, for a folder of runs: the traces of the folders not
/// chosen (the one with the newest trace is) count as left out, and the
/// note names the analysed trace by its path below the input.
#[test]
fn a_folder_of_runs_counts_the_other_folders_as_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    for (run, name) in [("run_a", "a.json"), ("run_b", "b.json"), ("run_c", "c.json")] {
        std::fs::create_dir(tmp.path().join(run)).unwrap();
        std::fs::copy(fixture, tmp.path().join(run).join(name)).unwrap();
        // Distinct modification times: run_c is the newest.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = common::run(&["triage", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("torchtriage: note: ")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("(run_c/c.json); 2 other traces left out"), "{}", notes[0]);
}

/// Deviation 18: a fuse row without evidence kernels, or resting on
/// keywords found inside longer words, is not printed. On HTA's sampled
/// trace the reference confirms an NSA pattern with no evidence at all.
#[test]
fn fuse_rows_need_evidence_and_whole_tokens() {
    let trace = common::Corpus::bundled().traces_dir().join("hta/trace_filter/sampled_rank-0.json.gz");
    let trace = trace.to_str().unwrap();
    let nsa = "NSA fused quantize + indexed K-cache store";
    let ours = triage(&["-q", "triage", trace]);
    assert!(!ours.contains(nsa), "{ours}");
    let reference = triage(&["-q", "triage", "--compat", "reference", trace]);
    assert!(reference.contains(&format!("| {nsa} | Confirmed |")), "{reference}");
}

/// Deviation 19: on HTA's MTIA trace the launches of `dma_request` run side
/// by side on several streams; the reference divides their summed time by
/// the stage's busy time (112.9 %), we divide the time any of them runs.
#[test]
fn an_overlap_share_never_exceeds_the_busy_time() {
    let trace =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/edge_cases/hta_mtia/mtia_inference_rank_0.json.gz");
    let share = |extra: &[&str]| -> f64 {
        let mut args = vec!["-q", "triage", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(trace);
        let report: serde_json::Value = serde_json::from_str(&triage(&args)).unwrap();
        let row = report["overlap"].as_array().unwrap().iter().find(|r| r["kernel"] == "dma_request").unwrap();
        row["share_pct"].as_f64().unwrap()
    };
    let ours = share(&[]);
    assert!((ours - 100.0).abs() < 1e-9, "{ours}");
    let reference = share(&["--compat", "reference"]);
    assert!((reference - 112.9458).abs() < 1e-3, "{reference}");
}

/// Deviation 20: the reference files a kernel under communication when its
/// name holds `dispatch`, `combine` or `broadcast` anywhere, so vLLM's MoE
/// routing kernel `_combined_routing_compute` counts as communication in
/// the kernel table (and in `batch`'s compute time); we need the word of
/// its own. A synthetic trace adds DeepEP's notify step and a group norm.
#[test]
fn weak_communication_words_need_a_word_of_their_own() {
    let category = |trace: &str, kernel: &str, extra: &[&str]| -> String {
        let mut args = vec!["-q", "triage", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(trace);
        let report: serde_json::Value = serde_json::from_str(&triage(&args)).unwrap();
        let rows = report["kernel_tables"].as_array().unwrap().iter().flat_map(|t| t["rows"].as_array().unwrap());
        let row = rows.into_iter().find(|r| r["kernel"] == kernel).unwrap_or_else(|| panic!("no row {kernel}"));
        row["category"].as_str().unwrap().to_string()
    };
    let vllm = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/tracelens/inference/vllm_decode_full/graph_execution.json.gz"
    );
    assert_eq!(category(vllm, "_combined_routing_compute", &[]), "other");
    assert_eq!(category(vllm, "_combined_routing_compute", &["--compat", "reference"]), "communication");

    let dir = tempfile::tempdir().unwrap();
    let notify = "void dpsk::ep::internode::cached_notify<false>";
    let norm = "void groupnorm_kernel_dispatch_down<float>";
    let p = write_trace(&dir, &[kernel(notify, 100, 1), kernel(norm, 200, 2)]);
    let p = p.to_str().unwrap();
    assert_eq!(category(p, notify, &[]), "communication");
    assert_eq!(category(p, notify, &["--compat", "reference"]), "other");
    assert_eq!(category(p, norm, &[]), "norm");
    assert_eq!(category(p, norm, &["--compat", "reference"]), "communication");
}

/// Deviation 20: ROCm's profiler writes its runtime calls with a `stream`
/// argument, which the reference takes for a kernel: on HTA's MI250 trace
/// `hipLaunchKernel` heads the kernel table. A runtime or driver call is
/// not a kernel for us, as on the timeline.
#[test]
fn host_calls_are_not_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let launch = |ts: u64, corr: u64| {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 40, "args": {{"stream": "0x0", "correlation": {corr}, "External id": {corr}}}}}"#
        )
    };
    let p = write_trace(&dir, &[launch(100, 1), kernel("Cijk_Alik_Bljk_SB_MT64x16x32", 150, 1), launch(300, 2)]);
    let kernels = |extra: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["-q", "triage", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(p.to_str().unwrap());
        let report: serde_json::Value = serde_json::from_str(&triage(&args)).unwrap();
        let rows = report["kernel_tables"].as_array().unwrap().iter().flat_map(|t| t["rows"].as_array().unwrap());
        rows.map(|r| (r["kernel"].as_str().unwrap().to_string(), r["category"].as_str().unwrap().to_string())).collect()
    };
    assert_eq!(kernels(&[]), [("Cijk_Alik_Bljk_SB_MT64x16x32".to_string(), "gemm".to_string())]);
    let reference = kernels(&["--compat", "reference"]);
    assert_eq!(reference, [("hipLaunchKernel".to_string(), "other".to_string())]);
}

/// Deviation 21: the reference takes any annotation holding `decode` for a
/// decode stage, so HTA's DLRM training rank, annotated
/// `## decoder fp8 None ##` for its decoder tower, gets a decode stage of
/// 209 of its 1,204 kernels and an `all` stage without them. Deviation 20
/// rides along: FBGEMM's namespace in the embedding kernels' arguments
/// made them GEMMs.
#[test]
fn a_decoder_tower_is_no_decode_stage() {
    let trace = common::Corpus::bundled().traces_dir().join("hta/trace_filter/sampled_rank-0.json.gz");
    let report = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["-q", "triage", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(trace.to_str().unwrap());
        serde_json::from_str(&triage(&args)).unwrap()
    };
    let stages = |r: &serde_json::Value| -> Vec<String> {
        r["kernel_tables"].as_array().unwrap().iter().map(|t| t["stage"].as_str().unwrap().to_string()).collect()
    };
    let embedding = |r: &serde_json::Value| -> String {
        let rows = r["kernel_tables"].as_array().unwrap().iter().flat_map(|t| t["rows"].as_array().unwrap());
        let row = rows.into_iter().find(|row| {
            row["kernel"].as_str().unwrap().starts_with("void split_embedding_codegen_forward_unweighted_kernel")
        });
        row.unwrap()["category"].as_str().unwrap().to_string()
    };
    let ours = report(&[]);
    assert_eq!(stages(&ours), ["all"]);
    assert_eq!(embedding(&ours), "other");
    let kernels: u64 = ours["timeline"]["stages"][0]["gpus"][0]["kernels"].as_u64().unwrap();
    assert_eq!(kernels, ours["timeline"]["trace"]["kernels"].as_u64().unwrap());
    let reference = report(&["--compat", "reference"]);
    assert_eq!(stages(&reference), ["decode", "all"]);
    assert_eq!(embedding(&reference), "gemm");
}

/// Deviation 23: a folder named for a setting (`chunked_prefill_off/`)
/// does not relabel a trace whose annotations mark its steps as decode,
/// and a folder named for both stages (`…_prefilldecode/`) names neither;
/// `--compat reference` reads both names as prefill. A diff of two copies
/// of one trace, one under such a folder, compares their stage.
#[test]
fn a_folder_named_for_a_setting_or_a_mix_does_not_relabel_a_trace() {
    let source =
        common::Corpus::bundled().traces_dir().join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let dir = tempfile::tempdir().unwrap();
    // A copy of `trace` as `folder/file.json.gz`.
    let copy = |trace: &std::path::Path, folder: &str| -> String {
        let run = dir.path().join(folder);
        std::fs::create_dir_all(&run).unwrap();
        let p = run.join("file.json.gz");
        std::fs::copy(trace, &p).unwrap();
        p.to_str().unwrap().to_string()
    };
    let place = |folder: &str| copy(&source, folder);
    let (base, setting, mix) =
        (place("exp/baseline"), place("exp/chunked_prefill_off"), place("exp/run_prefilldecode"));
    let stages = |extra: &[&str], trace: &str| -> Vec<String> {
        let mut args = vec!["-q", "triage", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(trace);
        let r: serde_json::Value = serde_json::from_str(&triage(&args)).unwrap();
        r["kernel_tables"].as_array().unwrap().iter().map(|t| t["stage"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(stages(&[], &base), ["decode"]);
    assert_eq!(stages(&[], &setting), ["decode"]);
    assert_eq!(stages(&[], &mix), ["decode"]);
    assert_eq!(stages(&["--compat", "reference"], &setting), ["extend"]);
    assert_eq!(stages(&["--compat", "reference"], &mix), ["extend"]);
    let gate = common::run(&["-q", "diff", "--gate", "5", &base, &setting]);
    assert_eq!(gate.status.code(), Some(0), "{}", String::from_utf8_lossy(&gate.stderr));
    // A trace whose annotations name no stage takes its folder's, when the
    // folder names one stage as a word.
    let unmarked =
        common::Corpus::bundled().traces_dir().join("param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz");
    let (one, both) = (copy(&unmarked, "train_prefill"), copy(&unmarked, "train_prefilldecode"));
    assert_eq!(stages(&[], &one), ["extend"]);
    assert_eq!(stages(&[], &both), ["all"]);
    assert_eq!(stages(&["--compat", "reference"], &both), ["extend"]);
}

/// Deviation 25: in the markdown tables a `<` that would open an HTML tag
/// (`FillFunctor<float>`) is written `\<`, so a rendered report shows the
/// whole name; `--compat reference` prints it raw.
#[test]
fn a_template_argument_is_not_an_html_tag_in_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, &[kernel("void fill<4, Op<float>>", 100, 1)]);
    let ours = triage(&["-q", "triage", p.to_str().unwrap()]);
    assert!(ours.contains("| void fill<4, Op\\<float>> |"), "{ours}");
    let reference = triage(&["-q", "triage", "--compat", "reference", p.to_str().unwrap()]);
    assert!(reference.contains("| void fill<4, Op<float>> |"), "{reference}");
    // The line break between a list cell's entries (Python locations, CPU
    // ops) stays one.
    let b200 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/tracelens/b200/eager_trace.json.gz");
    let ours = triage(&["-q", "triage", b200]);
    assert!(ours.contains("<br>") && !ours.contains("\\<br>"), "{ours}");
    // A folder's name in the header opens no tag either.
    let odd = dir.path().join("run<b>");
    std::fs::create_dir(&odd).unwrap();
    std::fs::copy(&p, odd.join("t.json")).unwrap();
    let ours = triage(&["-q", "triage", odd.join("t.json").to_str().unwrap()]);
    assert!(ours.contains("run\\<b>/t.json"), "{ours}");
}

/// Deviation 26: the overlap step names a kernel the kernel table calls a
/// GEMM compute, so ROCm's Tensile GEMM (its `_Bias_` reads as elementwise
/// to the reference) is the work others overlap with, and ranks after the
/// exposed elementwise kernels; `--compat reference` keeps the reference's
/// bucket.
#[test]
fn a_tensile_gemm_is_compute_in_the_overlap_table() {
    let dir = tempfile::tempdir().unwrap();
    let gemm = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1";
    let mut events = Vec::new();
    for i in 0..10u64 {
        events.push(kernel(gemm, 1000 + i * 100, 2 * i + 1));
        events.push(kernel("triton_poi_fused_add_mul_0", 1050 + i * 100, 2 * i + 2));
    }
    let p = write_trace(&dir, &events);
    let category = |args: &[&str]| -> String {
        let mut all = vec!["-q", "triage", "--format", "json"];
        all.extend_from_slice(args);
        all.push(p.to_str().unwrap());
        let v: serde_json::Value = serde_json::from_str(&triage(&all)).unwrap();
        let rows = v["overlap"].as_array().unwrap();
        let row = rows.iter().find(|r| r["kernel"].as_str().unwrap().starts_with("Cijk")).expect("a GEMM row");
        row["category"].as_str().unwrap().to_string()
    };
    assert_eq!(category(&[]), "compute");
    assert_eq!(category(&["--compat", "reference"]), "elementwise");
}

/// Deviation 27: the overlap rows of a stage are listed by priority, P1
/// first, as the legend ranks them; `--compat reference` keeps the
/// reference's order (its headroom picks, then its hidden ones), where a P1
/// can follow a P2, as on the bundled fixture.
#[test]
fn overlap_rows_come_by_priority() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let priorities = |args: &[&str]| -> Vec<(String, String, String)> {
        let mut all = vec!["-q", "triage", "--format", "json"];
        all.extend_from_slice(args);
        all.push(fixture);
        let v: serde_json::Value = serde_json::from_str(&triage(&all)).unwrap();
        v["overlap"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap().to_string();
                (text("stage"), text("priority"), text("kernel"))
            })
            .collect()
    };
    let sorted = |rows: &[(String, String, String)]| rows.windows(2).all(|w| w[0].0 != w[1].0 || w[0].1 <= w[1].1);
    let (ours, reference) = (priorities(&[]), priorities(&["--compat", "reference"]));
    assert!(sorted(&ours), "{ours:?}");
    assert!(!sorted(&reference), "{reference:?}");
    let kernels = |rows: &[(String, String, String)]| {
        let mut k: Vec<(String, String)> = rows.iter().map(|(s, _, k)| (s.clone(), k.clone())).collect();
        k.sort();
        k
    };
    assert_eq!(kernels(&ours), kernels(&reference), "the same rows");
}

/// Deviation 30: an exposed GEMM or attention kernel is deferred (P3) to
/// the kernel table instead of sent to fusion, and so comes after the
/// elementwise rows; `--compat reference` keeps the reference's advice.
#[test]
fn exposed_matrix_work_is_deferred_not_sent_to_fusion() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    let flash = |args: &[&str]| -> (String, String) {
        let mut all = vec!["-q", "triage", "--format", "json"];
        all.extend_from_slice(args);
        all.push(fixture);
        let v: serde_json::Value = serde_json::from_str(&triage(&all)).unwrap();
        let rows = v["overlap"].as_array().unwrap();
        let row = rows
            .iter()
            .find(|r| r["stage"] == "extend" && r["kernel"].as_str().unwrap().contains("flash_fwd"))
            .unwrap();
        (row["priority"].as_str().unwrap().into(), row["recommendation"].as_str().unwrap().into())
    };
    assert_eq!(flash(&[]), ("P3".to_string(), "defer".to_string()));
    assert_eq!(flash(&["--compat", "reference"]), ("P1".to_string(), "try fusion".to_string()));
}

/// Deviation 29: a host-side stage annotation holds the kernels launched
/// inside it. Here the GPU runs 30 ms behind the host: the three kernels
/// launched inside the prefill step start on the GPU nearer the next
/// decode step, where the reference files them.
#[test]
fn a_host_annotation_holds_the_kernels_launched_inside_it() {
    let annotation = |name: &str, ts: u64| {
        format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": 100}}"#
        )
    };
    let launch = |ts: u64, corr: u64| {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{"correlation": {corr}}}}}"#
        )
    };
    let mut events = vec![annotation("prefill step", 0), annotation("decode step", 40_000)];
    for (corr, (launched, ran)) in [(10, 30_000), (20, 30_020), (30, 30_040), (40_010, 40_200)].into_iter().enumerate()
    {
        let corr = corr as u64 + 1;
        events.push(launch(launched, corr));
        events.push(kernel(&format!("k{corr}"), ran, corr));
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write_trace(&dir, &events);
    let launches_by_stage = |extra: &[&str]| -> Vec<(String, u64)> {
        let mut args = vec!["-q", "triage", "--format", "json", p.to_str().unwrap()];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&triage(&args)).unwrap();
        v["kernel_tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let n = t["rows"].as_array().unwrap().iter().map(|r| r["launches"].as_u64().unwrap()).sum();
                (t["stage"].as_str().unwrap().to_string(), n)
            })
            .collect()
    };
    assert_eq!(launches_by_stage(&[]), [("extend".to_string(), 3), ("decode".to_string(), 1)]);
    assert_eq!(launches_by_stage(&["--compat", "reference"]), [("decode".to_string(), 4)]);
}
