#!/usr/bin/env python3
"""Generate the hostile-input cases for torchtriage into OUTDIR.

    scripts/hostile/make-cases.py OUTDIR          # default set
    BIG=1 scripts/hostile/make-cases.py OUTDIR    # also the 500 MB kernel-name case

Every case is a file or folder directly under OUTDIR. OUTDIR/cases.tsv lists
one command per line: `id<TAB>description<TAB>shell command`. Commands use
`$TT` for the binary and paths relative to OUTDIR (run them from OUTDIR with
bash; scripts/hostile/run.sh does this). A command may append a remark to the
file named by `$NOTE`.

Standard library only, no network, deterministic output (gzip mtime 0, no
randomness). Re-running replaces the cases it writes.
"""

import gzip
import io
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "tests", "data", "traces")
FIXTURE = os.path.join(REPO, "fixtures", "synthetic_vllm_small.json")
# Small real traces bundled in the repository (see tests/data/SOURCES.md).
REAL_A = os.path.join(DATA, "param_dlrm_8rank", "worker0_step_12.1694128201545.pt.trace.json.gz")
REAL_B = os.path.join(DATA, "param_dlrm_8rank", "worker1_step_12.1694128201556.pt.trace.json.gz")
REAL_VLLM = os.path.join(DATA, "tracelens", "inference", "vllm_decode_full", "graph_execution.json.gz")

PID, TID = 4242, 4242
T0 = 1700000000000.0

CASES = []  # (id, description, command)


def case(cid, desc, cmd):
    assert "\t" not in desc and "\n" not in desc and "\t" not in cmd and "\n" not in cmd
    CASES.append((cid, desc, cmd))


def fresh(out, name):
    p = os.path.join(out, name)
    if os.path.islink(p) or os.path.isfile(p):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)
    return p


def dumps(ev):
    # allow_nan: NaN / Infinity are written as the bare JS literals.
    return json.dumps(ev, separators=(",", ":"), allow_nan=True)


# ---------------------------------------------------------------- event makers

def py_frame(name, ts, dur, pyid, parent):
    return {"ph": "X", "cat": "python_function", "name": name, "pid": PID, "tid": TID,
            "ts": ts, "dur": dur, "args": {"Python parent id": parent, "Python id": pyid, "Python thread": 0}}


def cpu_op(name, ts, dur, ext):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Record function id": 0, "Sequence number": ext,
                     "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}


def launch(ts, dur, corr, ext):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": TID,
            "ts": ts, "dur": dur, "args": {"External id": ext, "cbid": 211, "correlation": corr}}


def kernel(name, ts, dur, corr, stream=7, ext=None):
    args = {"correlation": corr, "stream": stream, "device": 0}
    if ext is not None:
        args["External id"] = ext
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def annotation(name, ts, dur, ext):
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur,
            "args": {"External id": ext}}


def header_obj(rank=0):
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045673984,
                                  "computeMajor": 9}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}


KNAMES = ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
          "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
          "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>",
          "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"]
OPS = ["aten::mm", "aten::fill_", "aten::_flash_attention_forward", "aten::sum"]


def small_events(steps=8, knames=None):
    """~46 events: 3 annotations, 3 root python frames, and per step 2 python
    frames, a cpu op, a launch and its kernel (with a flow pair left out)."""
    knames = knames or KNAMES
    ev = [{"name": "thread_name", "ph": "M", "ts": T0, "pid": PID, "tid": TID, "args": {"name": "python3"}},
          {"name": "process_name", "ph": "M", "ts": T0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    span = steps * 20.0
    ev.append(annotation("execute_model", T0, span + 10, 1000))
    ev.append(annotation("prefill", T0 + 1, span / 2, 1001))
    ev.append(annotation("decode", T0 + 2 + span / 2, span / 2 - 2, 1002))
    ev.append(py_frame("vllm/v1/engine/core.py(245): step", T0, span + 8, 1, 0))
    ev.append(py_frame("vllm/v1/worker/gpu_model_runner.py(1402): execute_model", T0 + 0.5, span + 6, 2, 1))
    ev.append(py_frame("vllm/model_executor/models/llama.py(343): forward", T0 + 0.7, span + 4, 3, 2))
    for i in range(steps):
        t = T0 + 1 + i * 20.0
        ev.append(py_frame("vllm/model_executor/models/llama.py(229): forward", t, 15, 10 + 2 * i, 3))
        ev.append(py_frame("torch/nn/modules/linear.py(125): forward", t + 1, 12, 11 + 2 * i, 10 + 2 * i))
        ev.append(cpu_op(OPS[i % len(OPS)], t + 2, 10, i + 1))
        ev.append(launch(t + 3, 4, i + 1, i + 1))
        ev.append(kernel(knames[i % len(knames)], t + 400, 6.5, i + 1, ext=i + 1))
    return ev


def write_trace(path, events, header=None, gz=False):
    """Write one trace, one event per line."""
    hdr = header if header is not None else header_obj()
    opener = (lambda p: gzip.GzipFile(p, "wb", mtime=0)) if gz else (lambda p: open(p, "wb"))
    with opener(path) as f:
        f.write(b"{")
        for k, v in hdr.items():
            f.write(json.dumps(k).encode() + b":" + dumps(v).encode() + b",\n")
        f.write(b'"traceEvents":[\n')
        for i, e in enumerate(events):
            f.write((dumps(e) if isinstance(e, dict) else e).encode())
            f.write(b",\n" if i + 1 < len(events) else b"\n")
        f.write(b"]}\n")


def gunzip_to(src, dst):
    with gzip.open(src, "rb") as fi, open(dst, "wb") as fo:
        shutil.copyfileobj(fi, fo)


# ---------------------------------------------------------------- cases

def c01_nan_ts(out):
    d = fresh(out, "nan-ts")
    os.makedirs(d)
    targets = {"python": "python_function", "launch": "cuda_runtime", "annotation": "user_annotation"}
    nouns = {"python": "python frames", "launch": "cudaLaunchKernel events", "annotation": "user annotations"}
    for label, cats in list(targets.items()) + [("all", None)]:
        ev = small_events()
        seen = {}
        for e in ev:
            c = e.get("cat")
            if (cats is None and c in targets.values()) or c == cats:
                seen[c] = seen.get(c, 0) + 1
                if seen[c] % 2 == 1:  # every other event of that category
                    e["ts"] = float("nan")
        nnan = sum(1 for e in ev if e["ts"] != e["ts"])
        write_trace(os.path.join(d, label + ".json"), ev)
        what = "python frames, launches and annotations" if cats is None else nouns[label]
        case(f"nan-ts-{label}", f"{len(ev)}-event trace; bare NaN as ts on every other one of the {what} ({nnan} events)",
             f"$TT triage nan-ts/{label}.json")


def many_keys_trace(path, nkeys):
    ev = small_events()
    # event index 5 (well inside the first 256) gets the huge args object
    with open(path, "wb") as f:
        f.write(b"{" + b'"schemaVersion":1,\n"traceEvents":[\n')
        for i, e in enumerate(ev):
            if i == 5:
                s = dumps(e)
                assert s.endswith('"Python thread":0}}')
                f.write(s[:-2].encode())
                buf = io.StringIO()
                for k in range(nkeys):
                    buf.write(f',"k{k}":{k}')
                f.write(buf.getvalue().encode())
                f.write(b"}}")
            else:
                f.write(dumps(e).encode())
            f.write(b",\n" if i + 1 < len(ev) else b"\n")
        f.write(b"]}\n")


def c02_many_keys(out):
    for n, label in ((300_000, "300k"), (100_000, "100k")):
        p = fresh(out, f"many-keys-{label}.json")
        many_keys_trace(p, n)
        case(f"many-keys-{label}", f"event #5 has args with {n:,} distinct keys; {os.path.getsize(p):,} bytes",
             f"$TT stats many-keys-{label}.json")


def c03_symlink_loop(out):
    d = fresh(out, "symlink-loop")
    os.makedirs(d)
    shutil.copy(REAL_A, os.path.join(d, os.path.basename(REAL_A)))
    shutil.copy(REAL_B, os.path.join(d, os.path.basename(REAL_B)))
    os.symlink(".", os.path.join(d, "a"))
    os.symlink(".", os.path.join(d, "b"))
    desc = "two real dlrm rank traces plus symlinks a -> . and b -> ."
    case("symlink-loop-batch", desc, "$TT batch symlink-loop")
    case("symlink-loop-triage", desc, "$TT triage symlink-loop")


def c04_fifo(out):
    d = fresh(out, "fifo")
    os.makedirs(d)
    gunzip_to(REAL_A, os.path.join(d, "rank0.json"))
    os.mkfifo(os.path.join(d, "rank1.json"))
    case("fifo", "one real trace rank0.json and a FIFO rank1.json that nobody writes", "$TT batch fifo")


def c05_metadata_bomb(out):
    p = fresh(out, "metadata-bomb.json.gz")
    n = 25_000_000
    with gzip.GzipFile(p, "wb", mtime=0, compresslevel=9) as f:
        f.write(b'{"deviceProperties": [0')
        chunk = b",0" * 1_000_000
        left = n - 1
        while left:
            k = min(left, 1_000_000)
            f.write(chunk if k == 1_000_000 else b",0" * k)
            left -= k
        f.write(b'],\n"traceEvents": [\n')
        ks = [kernel(KNAMES[i % 4], T0 + i * 10, 5.0, i + 1) for i in range(4)]
        f.write(b",\n".join(dumps(e).encode() for e in ks))
        f.write(b"\n]}\n")
    case("metadata-bomb", f"gzip ({os.path.getsize(p):,} bytes) of deviceProperties with 25M zeros (~50 MB) then 4 kernels",
         "$TT stats metadata-bomb.json.gz")


def wide_trace(path, nkern, name_of, streams=1, ts_of=None, dur=5.0, cpu_every=1):
    """nkern kernels, each with a cudaLaunchKernel of the same correlation id,
    and a cpu op per `cpu_every` kernels; written streaming."""
    ts_of = ts_of or (lambda i: T0 + 500 + i * 8.0)
    with open(path, "w", buffering=1 << 20) as f:
        f.write('{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":1},\n"traceEvents":[\n')
        f.write(dumps(py_frame("vllm/v1/engine/core.py(245): step", T0, nkern * 8.0 + 1000, 1, 0)))
        f.write(",\n" + dumps(annotation("execute_model", T0, nkern * 8.0 + 1000, 0)))
        for i in range(nkern):
            c = i + 1
            tc = T0 + 1 + i * 8.0
            if i % cpu_every == 0:
                f.write(',\n{"ph":"X","cat":"cpu_op","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,'
                        '"args":{"External id":%d}}' % (OPS[(i // cpu_every) % 4], PID, TID, tc, 8.0 * cpu_every - 1, c))
            f.write(',\n{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":%d,"tid":%d,"ts":%.3f,'
                    '"dur":2.0,"args":{"External id":%d,"correlation":%d}}' % (PID, TID, tc + 2, c, c))
            s = 7 + (i % streams)
            f.write(',\n{"ph":"X","cat":"kernel","name":%s,"pid":0,"tid":%d,"ts":%.3f,"dur":%s,'
                    '"args":{"External id":%d,"correlation":%d,"stream":%d,"device":0}}'
                    % (json.dumps(name_of(i)), s, ts_of(i), repr(dur), c, c, s))
        f.write("\n]}\n")


def c06_distinct_names(out):
    n = 300_000
    p = fresh(out, "distinct-names-300k.json")
    wide_trace(p, n, lambda i: f"void kern_{i:06d}<float, 128>(float*, int)", cpu_every=10)
    size = os.path.getsize(p)
    case("distinct-names-300k", f"{n:,} kernels with distinct names, matching launches, a cpu op per 10 kernels; {size/1e6:.0f} MB",
         "$TT triage distinct-names-300k.json")
    p10 = fresh(out, "distinct-names-10.json")
    wide_trace(p10, n, lambda i: f"void kern_{i % 10:06d}<float, 128>(float*, int)", cpu_every=10)
    case("distinct-names-10", f"same {n:,} kernels with only 10 names; {os.path.getsize(p10)/1e6:.0f} MB",
         "$TT triage distinct-names-10.json")
    d = fresh(out, "distinct-names-dir")
    os.makedirs(d)
    for r in range(2):
        shutil.copy(p, os.path.join(d, f"rank{r}.json"))
    case("distinct-names-batch", f"directory with two copies of the {n:,}-name trace; --mem-budget-mb 100",
         "$TT batch --mem-budget-mb 100 distinct-names-dir")


def huge_name_trace(path, nbytes):
    with open(path, "wb") as f:
        f.write(b'{"schemaVersion":1,\n"traceEvents":[\n')
        for e in (py_frame("vllm/v1/engine/core.py(245): step", T0, 100, 1, 0), cpu_op("aten::mm", T0 + 1, 20, 1),
                  launch(T0 + 2, 4, 1, 1), kernel(KNAMES[0], T0 + 30, 5.0, 2)):
            f.write(dumps(e).encode() + b",\n")
        f.write(b'{"ph":"X","cat":"kernel","name":"')
        piece = (b"abcdefghijklmnopqrstuvwxyz0123456789_" * 30000)[: 1 << 20]
        left = nbytes
        while left:
            k = min(left, len(piece))
            f.write(piece[:k])
            left -= k
        f.write(b'","pid":0,"tid":7,"ts":%.1f,"dur":5.0,"args":{"External id":1,"correlation":1,"stream":7,"device":0}}\n]}\n'
                % (T0 + 10))


def c07_huge_name(out):
    p = fresh(out, "huge-name-100m.json")
    huge_name_trace(p, 100_000_000)
    case("huge-name-100m", "one kernel (with launch and cpu op) whose name is 100,000,000 bytes", "$TT triage huge-name-100m.json")
    p5 = fresh(out, "huge-name-500m.json")
    if os.environ.get("BIG") == "1":
        huge_name_trace(p5, 500_000_000)
        case("huge-name-500m", "one kernel whose name is 500,000,000 bytes", "$TT triage huge-name-500m.json")


def c08_all_overlap(out):
    for n, label in ((100_000, "100k"), (10_000, "10k")):
        p = fresh(out, f"all-overlap-{label}.json")
        wide_trace(p, n, lambda i: KNAMES[i % 4], streams=50, ts_of=lambda i: T0 + 1e6 + i * 0.01, dur=10000.0)
        case(f"all-overlap-{label}", f"{n:,} kernels on 50 streams, ts = i*0.01 us, dur 10000 us (all overlap), launches and cpu ops; "
             f"{os.path.getsize(p)/1e6:.0f} MB", f"$TT triage all-overlap-{label}.json")


def c09_patterns_pipe(out):
    case("patterns-head", "`patterns` (full descriptions) piped to `head -1`; exit is torchtriage's",
         "$TT patterns | head -1 >/dev/null; exit ${PIPESTATUS[0]}")
    case("patterns-closed-pipe", "`patterns` writing to a pipe whose reader has already exited (sleep 1 first)",
         "{ sleep 1; $TT patterns; } | true; exit ${PIPESTATUS[0]}")
    case("patterns-devfull", "`patterns` with stdout on /dev/full (ENOSPC)", "$TT patterns > /dev/full")


def c10_bad_escape(out):
    d = fresh(out, "bad-escape")
    os.makedirs(d)
    variants = []
    # first event
    ev = small_events()
    ev[0]["args"]["junk"] = "@@BAD@@"
    variants.append(("first", ev))
    # an event ~2 MB in: pad with many ordinary kernels first
    ev = small_events()
    pad = []
    for i in range(10000):
        pad.append(kernel(KNAMES[i % 4], T0 + 1000 + i * 8.0, 5.0, 100000 + i))
    bad = kernel(KNAMES[0], T0 + 1000 + 10000 * 8.0, 5.0, 999999)
    bad["args"]["junk"] = "@@BAD@@"
    ev = ev + pad + [bad]
    variants.append(("2mb", ev))
    for label, ev in variants:
        buf = io.BytesIO()
        hdr = header_obj()
        buf.write(b"{")
        for k, v in hdr.items():
            buf.write(json.dumps(k).encode() + b":" + dumps(v).encode() + b",\n")
        buf.write(b'"traceEvents":[\n')
        buf.write(b",\n".join(dumps(e).encode() for e in ev))
        buf.write(b"\n]}\n")
        data = buf.getvalue().replace(b'"@@BAD@@"', b'"bad\\q"')
        off = data.index(b"\\q")
        with open(os.path.join(d, f"{label}.json"), "wb") as f:
            f.write(data)
        case(f"bad-escape-{label}", f"`\"junk\": \"bad\\q\"` in an unused arg; true byte offset of the backslash {off:,} (0-based)",
             f"$TT stats bad-escape/{label}.json")
        if label == "2mb":
            with gzip.GzipFile(os.path.join(d, "2mb.json.gz"), "wb", mtime=0) as f:
                f.write(data)
            case("bad-escape-2mb-gz", f"the 2mb variant gzipped; true offset of the backslash in the decompressed stream {off:,} (0-based)",
                 "$TT stats bad-escape/2mb.json.gz")


def c11_stdin(out):
    d = fresh(out, "stdin")
    os.makedirs(d)
    shutil.copy(FIXTURE, os.path.join(d, "trace.json"))
    shutil.copy(REAL_VLLM, os.path.join(d, "trace.json.gz"))
    case("stdin-json", "fixtures/synthetic_vllm_small.json on stdin", "$TT triage - < stdin/trace.json")
    case("stdin-gz", "tracelens vllm_decode_full (gzip) on stdin", "$TT triage - < stdin/trace.json.gz")
    with open(FIXTURE, "rb") as f:
        data = f.read()
    with open(os.path.join(d, "broken.json"), "wb") as f:
        f.write(data[: len(data) // 2])
    case("stdin-broken", "first half of synthetic_vllm_small.json on stdin; does the error name `-` or `<stdin>`?",
         "$TT stats - < stdin/broken.json")


def c12_many_jobs(out):
    d = fresh(out, "many-jobs")
    os.makedirs(d)
    for r in range(5000):
        write_trace(os.path.join(d, f"rank{r:04d}.json"), small_events(steps=2), header=header_obj(rank=r))
    case("many-jobs", "5,000 tiny valid traces (12 events each); --jobs 2500", "$TT batch --jobs 2500 many-jobs")


def c13_batch_closed_stdout(out):
    d = fresh(out, "closed-stdout")
    os.makedirs(d)
    gunzip_to(REAL_A, os.path.join(d, "rank0.json"))
    with open(os.path.join(d, "rank1.json"), "wb") as f:
        f.write(b'{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000.0,')
    desc = "rank0.json valid, rank1.json truncated"
    case("batch-stdout-closed", desc + "; fd 1 closed (`exec 1>&-`)", "exec 1>&-; exec $TT batch closed-stdout")
    case("batch-stdout-epipe", desc + "; stdout a pipe whose reader has already exited (sleep 1 first)",
         "{ sleep 1; $TT batch closed-stdout; } | true; exit ${PIPESTATUS[0]}")


def c14_pzstd(out):
    d = fresh(out, "pzstd")
    os.makedirs(d)
    src = os.path.join(d, "trace.json")
    gunzip_to(REAL_VLLM, src)
    subprocess.run(["pzstd", "-q", "-f", "-p", "2", "-3", src, "-o", os.path.join(d, "trace.json.zst")], check=True)
    subprocess.run(["zstd", "-q", "-f", "-3", src, "-o", os.path.join(d, "plain.json.zst")], check=True)
    with open(os.path.join(d, "trace.json.zst"), "rb") as f:
        magic = f.read(4)[::-1].hex()
    case("pzstd", f"vllm_decode_full compressed with pzstd (first frame magic 0x{magic}, a skippable frame)",
         "$TT stats pzstd/trace.json.zst")
    case("zstd-plain", "the same trace compressed with plain zstd (control)", "$TT stats pzstd/plain.json.zst")


def c15_small(out):
    d = fresh(out, "inf")
    os.makedirs(d)
    ev = small_events()
    ks = [e for e in ev if e.get("cat") == "kernel"]
    last = ks[-1]
    write_trace(os.path.join(d, "dur-1e400.json"), [dumps(e) if e is not last else dumps(e).replace('"dur":6.5', '"dur":1e400') for e in ev])
    ev2 = small_events()
    ks2 = [e for e in ev2 if e.get("cat") == "kernel"]
    ks2[-1]["ts"] = 1.5e308
    ks2[-1]["dur"] = 1.5e308
    write_trace(os.path.join(d, "end-overflow.json"), ev2)
    for label, desc in (("dur-1e400", "last kernel has `\"dur\": 1e400` (overflows f64 to inf)"),
                        ("end-overflow", "last kernel has ts 1.5e308 and dur 1.5e308 (end time = inf)")):
        for cmd in ("triage", "stats"):
            case(f"{label}-{cmd}", desc, f"$TT {cmd} inf/{label}.json")

    d = fresh(out, "gzip-trailing-zeros")
    os.makedirs(d)
    plain = os.path.join(d, "trace.json")
    shutil.copy(FIXTURE, plain)
    g = os.path.join(d, "trace.json.gz")
    with open(g, "wb") as f:
        subprocess.run(["gzip", "-n", "-c", plain], stdout=f, check=True)
        f.write(b"\0" * 1024)
    try:
        with gzip.open(g, "rb") as f:
            n = len(f.read())
        py = f"python gzip.open reads {n:,} bytes"
    except Exception as e:  # noqa: BLE001
        py = f"python gzip.open fails: {type(e).__name__}"
    case("gzip-trailing-zeros", f"gzip of synthetic_vllm_small.json plus 1024 trailing zero bytes; {py}",
         "$TT stats gzip-trailing-zeros/trace.json.gz")

    case("patterns-check-devzero", "`patterns --check /dev/zero` under timeout 20 (exit 124 = timed out)",
         "timeout 20 $TT patterns --check /dev/zero")

    d = fresh(out, "nul-name")
    os.makedirs(d)
    ev = small_events(knames=["nul\u0000in|name_kernel"] + KNAMES[1:])
    write_trace(os.path.join(d, "trace.json"), ev)
    case("nul-name", "kernel name `nul\\u0000in|name_kernel` (JSON escape); note counts raw NUL bytes and escaped/unescaped pipes in the markdown output",
         "$TT triage nul-name/trace.json > nul-name/out.md; rc=$?; "
         "echo \"raw NUL bytes in stdout: $(tr -cd '\\000' < nul-name/out.md | wc -c); "
         "lines with the pipe escaped: $(grep -acF 'in\\|name' nul-name/out.md); "
         "lines with the pipe unescaped: $(grep -acF 'in|name' nul-name/out.md)\" >> \"${NOTE:-/dev/stderr}\"; exit $rc")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-cases.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    for fn in (c01_nan_ts, c02_many_keys, c03_symlink_loop, c04_fifo, c05_metadata_bomb, c06_distinct_names,
               c07_huge_name, c08_all_overlap, c09_patterns_pipe, c10_bad_escape, c11_stdin, c12_many_jobs,
               c13_batch_closed_stdout, c14_pzstd, c15_small):
        print(f"{fn.__name__} ...", file=sys.stderr, flush=True)
        fn(out)
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case id"
    with open(os.path.join(out, "cases.tsv"), "w") as f:
        for row in CASES:
            f.write("\t".join(row) + "\n")
    print(f"{len(CASES)} cases written to {out}/cases.tsv", file=sys.stderr)


if __name__ == "__main__":
    main()
