//! Synthetic Kineto trace generator for benchmarks and fixtures.
//!
//! Writes a vLLM-eager-like trace of roughly the requested size: about 70%
//! python_function frames (with Python id / parent id), 10% cpu_op, 8% CUDA
//! runtime launches, 10% kernels on several streams plus memcpy / memset,
//! user and GPU annotations for prefill and decode steps, flow events, long
//! C++ template kernel names and escaped strings.
//!
//! Usage: gen_trace (--size-mb N | --size-kb N) [--format json|gz|zst] [--seed S]
//!                  [--gpu-bound] [--slow-kernel TEXT] [--drop-kernel TEXT]
//!                  [--overlapping-frames [--threads N]] OUT
//!
//! Each step ends with a stream synchronize, as a serving engine's step does
//! when it reads back the sampled tokens, so a step lasts as long as the
//! slower of host and GPU. By default kernels are shorter than the host's
//! time per launch (the host sets the step time); `--gpu-bound` makes the
//! GEMM four times as long, so the GPU does.
//!
//! `--slow-kernel` makes every kernel whose name contains TEXT run twice as
//! long; `--drop-kernel` leaves out every kernel whose name contains TEXT
//! (its CPU op and launch stay). The trace then has as many steps as the
//! trace without them for the same seed and size, and everything but those
//! kernels (and the times they shift) is the same, so the two make a pair
//! for `diff`.
//!
//! `--overlapping-frames` writes each op (its Python frames, CPU op and
//! launch) on one of eight threads (`--threads N`, at least 4) spread over
//! four processes, and makes every frame of a stack start inside the one
//! before it and end after it: frames that overlap without nesting, as a
//! sampling profiler's or an async engine's frames can.

use std::fs::File;
use std::io::{BufWriter, Write};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The engine's step and the model runner's call in it: one frame each
/// per step, spanning it.
const STEP_FRAME: &str = "vllm/v1/engine/core.py(245): step";
const EXECUTE_FRAME: &str = "vllm/v1/worker/gpu_model_runner.py(1402): execute_model";

const PY_FRAMES: &[&str] = &[
    "vllm/model_executor/models/llama.py(343): forward",
    "vllm/model_executor/models/llama.py(229): forward",
    "vllm/model_executor/layers/linear.py(510): forward",
    "vllm/model_executor/layers/layernorm.py(118): forward_cuda",
    "vllm/attention/layer.py(266): forward",
    "torch/nn/modules/module.py(1750): _call_impl",
    "torch/nn/modules/module.py(1739): _wrapped_call_impl",
    "<built-in method linear of type object at 0x7f3a2c>",
    "vllm/model_executor/layers/activation.py(84): forward_cuda",
    "threading.py(1012): run",
];

const KERNELS: &[(&str, &str)] = &[
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "aten::mm"),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", "_C::rms_norm"),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)", "_vllm_fa2_C::varlen_fwd"),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", "_C::silu_and_mul"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "vllm::all_reduce"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})", "aten::add"),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2"),
];

const USAGE: &str = "usage: gen_trace (--size-mb N | --size-kb N) [--format json|gz|zst] [--seed S]
                 [--gpu-bound] [--slow-kernel TEXT] [--drop-kernel TEXT]
                 [--overlapping-frames [--threads N]] OUT";

/// What the command line asks for.
struct Options {
    size_kb: u64,
    format: String,
    seed: u64,
    variant: Variant,
    out: String,
}

/// Reads the command line; `Ok(None)` for `--help`.
fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        size_kb: 16 << 10,
        format: "json".to_string(),
        seed: 0x9E37_79B9_7F4A_7C15,
        variant: Variant { threads: 8, ..Variant::default() },
        out: String::new(),
    };
    let mut out = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().cloned().ok_or_else(|| format!("{arg} needs {what}"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{arg}: not a number: {v}"));
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--size-mb" => o.size_kb = number(value("N")?)?.saturating_mul(1 << 10),
            "--size-kb" => o.size_kb = number(value("N")?)?,
            "--format" => {
                o.format = value("json, gz or zst")?;
                if !matches!(o.format.as_str(), "json" | "gz" | "zst") {
                    return Err(format!("unknown format {}", o.format));
                }
            }
            "--seed" => o.seed = number(value("S")?)?,
            "--gpu-bound" => o.variant.gpu_bound = true,
            "--overlapping-frames" => o.variant.overlapping = true,
            "--threads" => o.variant.threads = number(value("N")?)?,
            "--slow-kernel" => o.variant.slow = Some(value("TEXT")?),
            "--drop-kernel" => o.variant.drop = Some(value("TEXT")?),
            p if p.starts_with('-') && p != "-" => return Err(format!("unknown option {p}")),
            p if out.is_some() => return Err(format!("one output path only, not also {p}")),
            p => out = Some(p.to_string()),
        }
    }
    o.out = out.ok_or("no output path")?;
    Ok(Some(o))
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Options { size_kb, format, seed, variant, out } = match parse_args(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return Ok(());
        }
        Err(e) => {
            eprintln!("gen_trace: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let file = BufWriter::with_capacity(1 << 20, File::create(&out)?);
    let mut w: Box<dyn Write> = match format.as_str() {
        "gz" => Box::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast())),
        "zst" => Box::new(zstd::stream::write::Encoder::new(file, 3)?.auto_finish()),
        _ => Box::new(file),
    };
    let stop = if variant.slow.is_some() || variant.drop.is_some() {
        // As many steps as the trace without the changes.
        let plain = Variant {
            gpu_bound: variant.gpu_bound,
            overlapping: variant.overlapping,
            threads: variant.threads,
            ..Variant::default()
        };
        Stop::Steps(generate(&mut std::io::sink(), Stop::Bytes(size_kb << 10), seed, &plain)?.1)
    } else {
        Stop::Bytes(size_kb << 10)
    };
    let (written, _) = generate(&mut w, stop, seed, &variant)?;
    w.flush()?;
    drop(w);
    eprintln!("wrote {out}: {:.1} MB of JSON", written as f64 / 1e6);
    Ok(())
}

struct Counter<'a> {
    w: &'a mut dyn Write,
    n: u64,
}
impl Write for Counter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let k = self.w.write(b)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// When the trace ends: at a size, or after a number of steps.
#[derive(Clone, Copy)]
enum Stop {
    Bytes(u64),
    Steps(u64),
}

impl Stop {
    fn reached(self, bytes: u64, steps: u64) -> bool {
        match self {
            Stop::Bytes(n) => bytes >= n,
            Stop::Steps(n) => steps >= n,
        }
    }
}

/// The shape of the kernels, and kernels made slower or left out (matched
/// by a substring of the name).
#[derive(Default)]
struct Variant {
    gpu_bound: bool,
    /// Python frames on `threads` threads, overlapping without nesting.
    overlapping: bool,
    /// Threads of the overlapping shape (default 8), four processes.
    threads: u64,
    slow: Option<String>,
    drop: Option<String>,
}

/// Writes the trace; returns the bytes of JSON and the steps written.
fn generate(w: &mut dyn Write, stop: Stop, seed: u64, variant: &Variant) -> std::io::Result<(u64, u64)> {
    let mut c = Counter { w, n: 0 };
    let mut rng = Rng(seed | 1);
    write!(
        c,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045673984, \"computeMajor\": 9}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2}},\n  \"with_stack\": true,\n  \"traceEvents\": [\n"
    )?;
    let pid_cpu = 4242;
    let tid_main = 4242;
    let mut ts: u64 = 1_700_000_000_000;
    let mut gpu_ts: u64 = ts + 500;
    let mut corr: u64 = 1;
    let mut ext: u64 = 1;
    let mut pyid: u64 = 1;
    let mut first = false;
    let mut step = 0u64;
    let mut sep = |c: &mut Counter| -> std::io::Result<()> {
        if first {
            first = false;
            Ok(())
        } else {
            c.write_all(b",\n")
        }
    };
    write!(c, "  {{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": {ts}, \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"args\": {{\"name\": \"python3 \\\"main\\\"\"}}}}")?;
    while !stop.reached(c.n, step) {
        step += 1;
        let stage = if step % 8 == 1 { "prefill" } else { "decode" };
        let step_start = ts;
        let layers = 6;
        // Each step: annotation, then layers of python frames + ops + kernels.
        let mut step_events = Vec::new();
        for layer in 0..layers {
            let _ = layer;
            for k in 0..KERNELS.len() {
                // A small python stack per op: 8 frames, nested.
                let depth = 10;
                let base = ts;
                let mut parent = 0u64;
                // The thread of this op's frames, CPU op and launch: the main
                // thread, or one of `threads` in four processes.
                let (f_pid, f_tid) = if variant.overlapping {
                    let n = variant.threads.max(4);
                    let t = ext % n;
                    (pid_cpu + t % 4, tid_main + 100 + t)
                } else {
                    (pid_cpu, tid_main)
                };
                for d in 0..depth {
                    let name = PY_FRAMES[(d + k + rng.below(3) as usize) % PY_FRAMES.len()];
                    let (f_ts, f_dur) = if variant.overlapping {
                        // Starts inside the frame before and ends after it.
                        (base + 4 * d as u64, 30 + rng.below(4))
                    } else {
                        (base + d as u64, 44 - 4 * d as u64)
                    };
                    sep(&mut c)?;
                    write!(c, "  {{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"{name}\", \"pid\": {f_pid}, \"tid\": {f_tid}, \"ts\": {f_ts}, \"dur\": {f_dur}, \"args\": {{\"Python parent id\": {parent}, \"Python id\": {pyid}, \"Python thread\": 0}}}}")?;
                    parent = pyid;
                    pyid += 1;
                }
                let (kname, op) = KERNELS[k];
                let op_ts = base + depth as u64 + 1;
                sep(&mut c)?;
                write!(c, "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{op}\", \"pid\": {f_pid}, \"tid\": {f_tid}, \"ts\": {op_ts}, \"dur\": 12, \"args\": {{\"External id\": {ext}, \"Record function id\": 0, \"Sequence number\": {}, \"Fwd thread id\": 0, \"Ev Idx\": {}, \"Input Dims\": [[4096, 4096], [4096, 4096]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"], \"Input Strides\": [[4096, 1], [1, 4096]], \"Concrete Inputs\": [\"\", \"\"]}}}}", ext, ext)?;
                sep(&mut c)?;
                write!(c, "  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {f_pid}, \"tid\": {f_tid}, \"ts\": {}, \"dur\": 4, \"args\": {{\"External id\": {ext}, \"cbid\": 211, \"correlation\": {corr}}}}}", op_ts + 2)?;
                let stream = if k == 4 { 13 } else { 7 };
                let weight = if variant.gpu_bound && k == 0 { 4 } else { 1 };
                let mut kdur = (5 + rng.below(60)) * weight;
                let kts = gpu_ts.max(op_ts + 6);
                let escaped = kname.replace('"', "\\\"");
                let (ts_frac, mut dur_frac) = (rng.below(1000), rng.below(1000));
                if variant.slow.as_deref().is_some_and(|t| kname.contains(t)) {
                    let ns = 2 * (kdur * 1000 + dur_frac);
                    (kdur, dur_frac) = (ns / 1000, ns % 1000);
                }
                let dropped = variant.drop.as_deref().is_some_and(|t| kname.contains(t));
                step_events.push(format!("  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{escaped}\", \"pid\": 0, \"tid\": {stream}, \"ts\": {kts}.{ts_frac:03}, \"dur\": {kdur}.{dur_frac:03}, \"args\": {{\"External id\": {ext}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": {stream}, \"correlation\": {corr}, \"registers per thread\": 128, \"shared memory\": 0, \"blocks per SM\": 1.5, \"warps per SM\": 12.0, \"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 0}}}}"));
                if dropped {
                    step_events.pop();
                }
                if k % 2 == 0 && !dropped {
                    step_events.push(format!("  {{\"ph\": \"s\", \"id\": {corr}, \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}", op_ts + 2));
                    step_events.push(format!("  {{\"ph\": \"f\", \"id\": {corr}, \"pid\": 0, \"tid\": {stream}, \"ts\": {kts}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}"));
                }
                if k == 0 && rng.below(4) == 0 {
                    step_events.push(format!("  {{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 13, \"ts\": {}, \"dur\": 3.2, \"args\": {{\"External id\": {ext}, \"stream\": 13, \"correlation\": {}, \"bytes\": 4096, \"memory bandwidth (GB/s)\": 1.28}}}}", kts + 1, corr + 1_000_000_000));
                }
                if k == 1 && rng.below(8) == 0 {
                    step_events.push(format!("  {{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 1.1, \"args\": {{\"stream\": 7, \"correlation\": {}, \"bytes\": 512}}}}", kts + kdur + 1, corr + 2_000_000_000));
                }
                if !dropped {
                    gpu_ts = kts + kdur + 1;
                }
                ts = base + 48;
                corr += 1;
                ext += 1;
            }
        }
        for e in step_events {
            sep(&mut c)?;
            c.write_all(e.as_bytes())?;
        }
        // The step reads its result back: the host waits for the GPU.
        let sync_end = ts.max(gpu_ts) + 2;
        sep(&mut c)?;
        write!(c, "  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"ts\": {ts}, \"dur\": {}, \"args\": {{\"cbid\": 131, \"correlation\": {corr}}}}}", sync_end - ts)?;
        corr += 1;
        ts = sync_end;
        sep(&mut c)?;
        write!(c, "  {{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"{STEP_FRAME}\", \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"ts\": {step_start}, \"dur\": {}, \"args\": {{\"Python parent id\": 0, \"Python id\": {pyid}, \"Python thread\": 0}}}}", ts - step_start)?;
        sep(&mut c)?;
        write!(c, "  {{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"{EXECUTE_FRAME}\", \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"ts\": {}, \"dur\": {}, \"args\": {{\"Python parent id\": {pyid}, \"Python id\": {}, \"Python thread\": 0}}}}", step_start + 1, ts - step_start - 2, pyid + 1)?;
        pyid += 2;
        sep(&mut c)?;
        write!(c, "  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"execute_model_{stage}\", \"pid\": {pid_cpu}, \"tid\": {tid_main}, \"ts\": {step_start}, \"dur\": {}, \"args\": {{\"External id\": {ext}}}}}", ts - step_start)?;
        sep(&mut c)?;
        write!(c, "  {{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"execute_model_{stage}\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}}}}}", step_start + 400, gpu_ts.saturating_sub(step_start + 400))?;
        ext += 1;
        ts += 20;
    }
    write!(c, "\n  ],\n  \"traceName\": \"synthetic \\u00e9 trace\"\n}}\n")?;
    Ok((c.n, step))
}
