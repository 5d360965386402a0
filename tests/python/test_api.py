"""The Python API against the command line: every report equals the
command's ``--format json`` output for the same trace."""

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import torchtriage

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "synthetic_vllm_small.json"
SHARED = Path(os.environ.get("TORCHTRIAGE_SHARED") or ROOT.parent / "shared")
UNDER_CI = os.environ.get("CI") == "true"


def _binary():
    """The command to compare with: $TORCHTRIAGE_BIN, else the package's
    ``torchtriage`` script beside this interpreter, else one on PATH."""
    env = os.environ.get("TORCHTRIAGE_BIN")
    if env:
        return env
    beside = Path(sys.executable).parent / "torchtriage"
    if beside.exists():
        return str(beside)
    found = shutil.which("torchtriage")
    if found:
        return found
    pytest.fail("no torchtriage command found: set TORCHTRIAGE_BIN")


def _cli_json(*args):
    """(exit code, parsed JSON or None) of ``torchtriage ARGS --format json``."""
    proc = subprocess.run(
        [_binary(), "--quiet", *args, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if proc.returncode != 0:
        return proc.returncode, None
    return 0, json.loads(proc.stdout)


def _shared_traces():
    traces = SHARED / "traces"
    if not traces.is_dir():
        return []
    return sorted(
        p
        for p in traces.rglob("*")
        if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")) and p.name != "counts.json"
    )


def test_triage_fixture_equals_cli():
    code, expected = _cli_json("triage", str(FIXTURE))
    assert code == 0
    report = torchtriage.triage(FIXTURE)
    assert isinstance(report, torchtriage.Report)
    assert report == expected


def test_triage_options_reach_the_run():
    code, expected = _cli_json("triage", str(FIXTURE), "--framework", "vllm", "--min-share", "5")
    assert code == 0
    assert torchtriage.triage(str(FIXTURE), framework="vllm", min_share=5) == expected


def test_every_analysis_option_reaches_the_run(tmp_path):
    cli = ["--pid-substring", "0", "--timeline-basis", "hta", "--min-share", "3"]
    opts = dict(pid_substring="0", timeline_basis="hta", min_share=3)
    code, expected = _cli_json("triage", str(FIXTURE), *cli)
    assert code == 0
    assert torchtriage.triage(FIXTURE, **opts) == expected
    code, expected = _cli_json("diff", str(FIXTURE), str(FIXTURE), *cli, "--gate", "5", "--gate-on", "kernel")
    assert code == 0
    assert torchtriage.diff(FIXTURE, FIXTURE, gate=5, gate_on="kernel", **opts) == expected
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(FIXTURE, ranks / "rank0.json")
    code, expected = _cli_json("batch", str(ranks), *cli, "--straggler-pct", "50")
    assert code == 0
    got = torchtriage.batch(str(ranks), straggler_pct=50, **opts)
    # The default budget is half of the memory available at the time.
    for report in (got, expected):
        report.pop("memory_budget_bytes")
    assert got == expected
    # A filter that keeps nothing empties the overlap rows, as on the command line.
    with pytest.warns(UserWarning, match="zzzz"):
        assert torchtriage.triage(FIXTURE, pid_substring="zzzz")["overlap"] == []
    with pytest.raises(ValueError, match="gate"):
        torchtriage.diff(FIXTURE, FIXTURE, gate_on="busy")


def test_a_bad_option_value_raises_one_line_without_the_usage():
    for call, word in [
        (lambda: torchtriage.triage(FIXTURE, timeline_basis="foo"), "timeline basis"),
        (lambda: torchtriage.triage(FIXTURE, framework="foo"), "foo"),
        (lambda: torchtriage.diff(FIXTURE, FIXTURE, gate=5, gate_on="foo"), "possible values: busy, step, kernel"),
    ]:
        with pytest.raises(ValueError) as e:
            call()
        text = str(e.value)
        assert word in text and "\n" not in text, text
        assert "Usage" not in text and "--help" not in text and not text.startswith("error:"), text


def _slower_copy(tmp_path):
    """The fixture with every kernel twice as long."""
    slow = tmp_path / "slow.json"
    trace = json.loads(FIXTURE.read_text())
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = e["dur"] * 2
    slow.write_text(json.dumps(trace))
    return slow


def test_the_library_leaves_stderr_to_its_caller(tmp_path, capfd):
    # What the report carries (failed files, a tripped gate) is not echoed
    # on the process's stderr, which a notebook does not show.
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(FIXTURE, ranks / "rank0.json")
    (ranks / "worker9.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X"')
    with pytest.warns(UserWarning, match="1 of 2 files failed"):
        report = torchtriage.batch(str(ranks))
    assert report["failed"] == 1 and report["failures"][0]["file"].endswith("worker9.pt.trace.json")
    slow = _slower_copy(tmp_path)
    d = torchtriage.diff(FIXTURE, slow, gate=5, gate_on="kernel")
    assert any(s["gate"] and s["gate"]["tripped"] for s in d["stages"])
    assert capfd.readouterr().err == ""
    # The command line still says so.
    proc = subprocess.run([_binary(), "-q", "batch", str(ranks)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 1 and b"1 of 2 files failed" in proc.stderr


def test_a_pattern_file_reaches_the_run(tmp_path):
    patterns = tmp_path / "p.toml"
    patterns.write_text("this is not toml [")
    with pytest.raises(ValueError):
        torchtriage.triage(FIXTURE, patterns=patterns)
    # A list is --patterns given once per file: the bad one is read too.
    with pytest.raises(ValueError, match="p.toml"):
        torchtriage.triage(FIXTURE, patterns=[os.devnull, patterns])


def test_batch_of_paths_names_their_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(FIXTURE, tmp_path / "a" / "rank0.json")
    shutil.copy(FIXTURE, tmp_path / "b" / "rank1.json")
    report = torchtriage.batch([tmp_path / "a" / "rank0.json", tmp_path / "b" / "rank1.json"])
    assert report["dir"] == str(tmp_path)
    assert report["files"] == 2


def test_stats_equals_cli():
    proc = subprocess.run([_binary(), "--quiet", "stats", "--json", str(FIXTURE)], stdout=subprocess.PIPE, check=True)
    assert torchtriage.stats(FIXTURE) == json.loads(proc.stdout)


def test_files_are_named_absolute_as_the_command_names_them(tmp_path, monkeypatch):
    shutil.copy(FIXTURE, tmp_path / "-x.json")
    (tmp_path / "ranks").mkdir()
    shutil.copy(FIXTURE, tmp_path / "ranks" / "rank3.json")
    os.symlink(tmp_path / "ranks" / "rank3.json", tmp_path / "rank5.json")
    monkeypatch.chdir(tmp_path)
    assert torchtriage.stats("-x.json")["file"] == str((tmp_path / "-x.json").resolve())
    one = torchtriage.summarize("ranks/rank3.json")
    assert one["file"] == str((tmp_path / "ranks" / "rank3.json").resolve())
    # A link is named by its target, with the rank of its own name; the
    # same trace by two names merges as one.
    linked = torchtriage.summarize("rank5.json")
    assert linked["file"] == one["file"] and linked["facts"]["rank"] == 5
    merged = torchtriage.merge([one, torchtriage.summarize(tmp_path / "ranks" / "rank3.json")])
    assert [r["file"] for r in merged["stages"][0]["ranks"]] == [one["file"]]


def test_diff_equals_cli():
    code, expected = _cli_json("diff", str(FIXTURE), str(FIXTURE))
    assert code == 0
    assert torchtriage.diff(FIXTURE, FIXTURE) == expected


def test_batch_of_paths(tmp_path):
    report = torchtriage.batch([FIXTURE], jobs=1)
    assert report["mode"] == "batch"
    assert report["files"] == 1
    assert report["failed"] == 0


def test_truncated_trace_raises_trace_error(tmp_path):
    data = FIXTURE.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(torchtriage.TraceError) as info:
        torchtriage.triage(cut)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.offset is not None and err.offset > 0
    assert err.path is not None and err.path.endswith("cut.json")


def test_a_missing_input_raises_file_not_found(tmp_path):
    # As open() does: an OSError with the file name, not a ValueError.
    missing = tmp_path / "missing.json"
    for call in [
        torchtriage.triage,
        torchtriage.stats,
        torchtriage.batch,
        lambda p: torchtriage.diff(FIXTURE, p),
        lambda p: torchtriage.diff(p, FIXTURE),
        lambda p: torchtriage.triage(mapping=p, formal=FIXTURE),
    ]:
        with pytest.raises(FileNotFoundError) as e:
            call(missing)
        assert e.value.filename == str(missing) and not isinstance(e.value, ValueError)


def test_batch_of_paths_with_a_missing_trace_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file"):
        torchtriage.batch([str(FIXTURE), str(tmp_path / "typo.json")])
    with pytest.raises(ValueError, match="at least one"):
        torchtriage.batch([])


def test_a_batch_warns_of_the_ranks_it_skipped(tmp_path):
    # The command warns on stderr of a file named as a rank that is no
    # trace, and of an empty one; so does the package, for a folder or a
    # list of files.
    shutil.copy(FIXTURE, tmp_path / "rank0.json")
    (tmp_path / "rank1.json").write_text("hello")
    (tmp_path / "rank2.json").write_text("")
    for given in [tmp_path, [tmp_path / n for n in ["rank0.json", "rank1.json", "rank2.json"]]]:
        with pytest.warns(UserWarning) as caught:
            report = torchtriage.batch(given)
        texts = [str(w.message) for w in caught]
        assert any(t.endswith("rank1.json: skipped, not recognised as a trace (its name gives rank 1)") for t in texts), texts
        assert any(t.endswith("rank2.json: skipped, empty file (its name gives rank 2)") for t in texts), texts
        assert len(report["skipped"]) == 2 and report["files"] == 1


def test_a_tripped_gate_is_warned_of_as_the_command_line_prints_it():
    # Rank 7's GPU is busy 2.66 ms, rank 1's 12.32 ms.
    base = ROOT / "tests/data/traces/param_dlrm_8rank/worker7_step_12.1694128201553.pt.trace.json.gz"
    new = ROOT / "tests/data/traces/param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz"
    proc = subprocess.run(
        [_binary(), "diff", str(base), str(new), "--gate", "0.5", "--format", "json"], capture_output=True
    )
    assert proc.returncode == 1, proc.stderr
    want = [line[len("torchtriage: ") :] for line in proc.stderr.decode().splitlines() if "gate: " in line]
    assert want, proc.stderr
    with pytest.warns(UserWarning) as caught:
        d = torchtriage.diff(base, new, gate=0.5)
    assert d["gate"]["tripped"] is True
    assert [str(w.message) for w in caught if str(w.message).startswith("gate: ")] == want


def test_a_diff_frame_holds_every_kernel_marked_rendered_or_not():
    pytest.importorskip("pandas")
    base = ROOT / "tests/data/traces/param_dlrm_8rank/worker7_step_12.1694128201553.pt.trace.json.gz"
    new = ROOT / "tests/data/traces/param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz"
    d = torchtriage.diff(base, new)
    frame = d.kernels_df()
    hidden = sum(s["kernels_hidden"] for s in d["stages"])
    assert hidden > 0 and len(frame) == len(torchtriage.diff(base, new, min_share=0).kernels_df())
    assert int((~frame["rendered"]).sum()) == hidden and frame["rendered"].dtype == bool


def test_a_suggested_command_is_given_as_a_python_call():
    ranks = ROOT / "tests/data/traces/param_dlrm_8rank"
    with pytest.raises(ValueError) as e:
        torchtriage.diff(ranks, ranks, gate=5)
    assert "`torchtriage.diff('BASE/FILE', 'NEW/FILE', gate=PCT)`" in str(e.value), e.value


def test_none_means_the_default_option():
    assert torchtriage.triage(FIXTURE, framework=None, timeline_basis=None, min_share=None) == torchtriage.triage(FIXTURE)


def test_a_report_shows_a_short_summary():
    r = torchtriage.triage(FIXTURE)
    assert repr(r) == "<torchtriage.Report triage: synthetic_vllm_small.json; extend gpu_bound, decode cpu_launch_bound>"
    d = torchtriage.diff(FIXTURE, FIXTURE, gate=5)
    assert repr(d).endswith("; gate passed>") and len(repr(d)) < 200
    assert isinstance(r, dict) and json.loads(json.dumps(r)) == dict(r)


def test_a_path_starting_with_a_dash_is_a_path(tmp_path, monkeypatch):
    shutil.copy(FIXTURE, tmp_path / "-x.json")
    shutil.copy(FIXTURE, tmp_path / "-")
    monkeypatch.chdir(tmp_path)
    want = torchtriage.triage(FIXTURE)
    for name in ["-x.json", "-", b"-x.json"]:
        got = torchtriage.triage(name)
        assert [t["rows"] for t in got["kernel_tables"]] == [t["rows"] for t in want["kernel_tables"]]
        assert torchtriage.stats(name)["events"] == torchtriage.stats(FIXTURE)["events"]
    assert torchtriage.diff("-x.json", "-")["stages"]


def test_a_bad_option_is_refused_and_named_as_its_keyword():
    for call, name in [
        (lambda: torchtriage.triage(FIXTURE, min_share=-5), "min_share"),
        (lambda: torchtriage.diff(FIXTURE, FIXTURE, gate=-1), "gate"),
        (lambda: torchtriage.batch(str(FIXTURE), jobs=-1), "jobs"),
        (lambda: torchtriage.batch(str(FIXTURE), straggler_pct=float("inf")), "straggler_pct"),
        (lambda: torchtriage.summarize(FIXTURE, min_share=200), "min_share"),
        (lambda: torchtriage.triage(FIXTURE, framework="bogus"), "framework"),
        (lambda: torchtriage.triage(FIXTURE, timeline_basis="x"), "timeline_basis"),
    ]:
        with pytest.raises(ValueError) as e:
            call()
        assert "unexpected argument" not in str(e.value), e.value
        # Named as the keyword argument, not as the command line's option.
        assert name in str(e.value) and "--" not in str(e.value), e.value
        assert "<" not in str(e.value), e.value  # no placeholder of the command line's help
    with pytest.raises(ValueError, match="whole number"):
        torchtriage.batch(str(FIXTURE), jobs=2.7)
    with pytest.raises(ValueError, match="^jobs must be at least 1$"):
        torchtriage.batch(str(FIXTURE), jobs=-1)
    # A trace's position: a whole number 0 to 2**64 - 1, named when not.
    for index in [-1, 2**70, "x", None, 1.7, True]:
        with pytest.raises(ValueError, match="^index must be a non-negative whole number"):
            torchtriage.summarize(FIXTURE, index)
    # A value that is no number at all, named too.
    for call, name in [
        (lambda: torchtriage.triage(FIXTURE, min_share="abc"), "min_share"),
        (lambda: torchtriage.diff(FIXTURE, FIXTURE, gate=[5]), "gate"),
        (lambda: torchtriage.batch(str(FIXTURE), straggler_pct=True), "straggler_pct"),
        (lambda: torchtriage.merge([{}], straggler_pct="x"), "straggler_pct"),
    ]:
        with pytest.raises(ValueError, match="^%s must be a number" % name):
            call()


def test_a_missing_pattern_file_raises_file_not_found(tmp_path):
    # As a missing trace does, before the trace is read.
    cut = tmp_path / "cut.json"
    cut.write_text('{"traceEvents": [ {"ph": "X"')
    missing = tmp_path / "nope.toml"
    for patterns in [missing, [os.devnull, missing]]:
        with pytest.raises(FileNotFoundError) as e:
            torchtriage.triage(cut, patterns=patterns)
        assert e.value.filename == str(missing) and not isinstance(e.value, ValueError)


def test_cli_help_and_version():
    out = subprocess.run([_binary(), "--version"], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert out.startswith("torchtriage ")
    out = subprocess.run([_binary(), "--help"], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert "triage" in out


def test_dataframes_have_the_schema_columns():
    pd = pytest.importorskip("pandas")
    report = torchtriage.triage(FIXTURE)
    kernels = report.kernels_df()
    assert isinstance(kernels, pd.DataFrame)
    for col in ["trace", "stage", "kernel", "category", "total_us", "share_pct", "launches", "max_us", "avg_us",
                "location", "cpu_op", "rendered"]:
        assert col in kernels.columns
    assert len(kernels) == sum(len(t["rows"]) for t in report["kernel_tables"])
    overlap = report.overlap_df()
    assert len(overlap) == len(report["overlap"])
    for col in ["category", "hidden_ratio", "recommendation"]:
        assert col in overlap.columns or not report["overlap"]
    timeline = report.timeline_df()
    assert {"stage", "pid", "rank", "busy_us", "kernels"} <= set(timeline.columns)
    ranks = torchtriage.batch([FIXTURE]).ranks_df()
    assert {"stage", "rank", "rank_source", "file", "busy_us"} <= set(ranks.columns)


def test_the_frames_hold_what_the_csv_files_hold(tmp_path):
    # kernels_df, stages_df, idle_df and timeline_df against the command's
    # kernels.csv, stages.csv, idle.csv and timeline.csv of the same trace:
    # same columns (timeline_df then adds the lists the CSV leaves out),
    # same rows, same cells.
    pd = pytest.importorskip("pandas")
    ranks = ROOT / "tests/data/traces/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    cpu_only = ROOT / "tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    for trace, basis in [(FIXTURE, "trace"), (ranks, "hta"), (cpu_only, "trace")]:
        out = tmp_path / trace.name
        subprocess.run([_binary(), "-q", "triage", str(trace), "--timeline-basis", basis, "--format", "csv",
                        "-o", str(out)], check=True)
        report = torchtriage.triage(trace, timeline_basis=basis)
        for accessor, name in [("kernels_df", "kernels.csv"), ("stages_df", "stages.csv"), ("idle_df", "idle.csv"),
                               ("timeline_df", "timeline.csv")]:
            got = getattr(report, accessor)()
            want = pd.read_csv(out / name, keep_default_na=False, dtype=str)
            extra = ["idle_by_stream", "host_wait_calls"] if accessor == "timeline_df" else []
            assert list(got.columns) == list(want.columns) + extra, (accessor, list(got.columns), list(want.columns))
            _same_cells(pd, got, want, accessor)
        stages = report.stages_df()
        assert stages["stage"].iloc[0] == "trace"
        assert str(stages["steps.count"].dtype) in ("int64", "Int64") and stages["verdict.window_us"].dtype == "float64"
    decode = torchtriage.triage(ranks).stages_df()
    assert list(decode["verdict.host_wait_call.name"]) == ["hipMemcpyWithStream"] * 2


def _same_cells(pd, got, want, accessor):
    # A frame's cells as the CSV file writes them.
    assert len(got) == len(want), accessor
    for col in want.columns:
        if col in ("steps.slowest", "location", "cpu_op"):
            continue  # lists: JSON text in the CSV
        for g, w in zip(got[col], want[col]):
            if w == "":
                assert pd.isna(g), (accessor, col, g)
            elif isinstance(g, (bool,)) or str(g) in ("True", "False"):
                assert str(g).lower() == w.lower(), (accessor, col, g, w)
            else:
                try:
                    assert float(g) == pytest.approx(float(w), rel=1e-12), (accessor, col, g, w)
                except ValueError:
                    assert str(g) == w, (accessor, col, g, w)


def test_empty_and_full_dataframes_have_the_same_columns(tmp_path):
    # A report with rows and one without (a CPU-only trace): the same
    # columns, so code written against one runs on the other.
    pytest.importorskip("pandas")
    cpu_only = ROOT / "tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    full, empty = torchtriage.triage(FIXTURE), torchtriage.triage(cpu_only)
    for accessor in ["kernels_df", "overlap_df", "timeline_df", "idle_df"]:
        with_rows, without = getattr(full, accessor)(), getattr(empty, accessor)()
        # The timeline has the whole trace's row, kernels or not.
        rows = 1 if accessor == "timeline_df" else 0
        assert len(with_rows) > rows and len(without) == rows, accessor
        assert list(with_rows.columns) == list(without.columns), accessor
    assert "total_us" in empty.kernels_df().sort_values("total_us").columns
    slow = _slower_copy(tmp_path)
    d, none = torchtriage.diff(FIXTURE, slow), torchtriage.diff(cpu_only, cpu_only)
    for accessor in ["kernels_df", "timeline_df"]:
        assert list(getattr(d, accessor)().columns) == list(getattr(none, accessor)().columns), accessor
    b = torchtriage.batch([FIXTURE])
    nothing = torchtriage.batch([cpu_only])
    for accessor in ["kernels_df", "ranks_df"]:
        assert list(getattr(b, accessor)().columns) == list(getattr(nothing, accessor)().columns), accessor


def test_a_gate_that_compared_nothing_is_warned_of():
    cpu_only = ROOT / "tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    with pytest.warns(UserWarning, match="^gate: not evaluated: no stage is present on both sides"):
        d = torchtriage.diff(cpu_only, FIXTURE, gate=5)
    assert d["gate"]["tripped"] is None and d["gate"]["not_evaluated"].startswith("no stage")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torchtriage.diff(FIXTURE, FIXTURE, gate=5)["gate"]["tripped"] is False


def test_table_limits_mark_the_rows_rendered():
    code, expected = _cli_json("triage", str(FIXTURE), "--kernel-table-limit", "2", "--overlap-table-limit", "1")
    assert code == 0
    report = torchtriage.triage(FIXTURE, kernel_table_limit=2, overlap_table_limit=1)
    assert report == expected
    for table in report["kernel_tables"]:
        assert sum(row["rendered"] for row in table["rows"]) <= 2
    assert report != torchtriage.triage(FIXTURE)
    for bad in [-1, 1.5, True, "2"]:
        with pytest.raises(ValueError, match="kernel_table_limit"):
            torchtriage.triage(FIXTURE, kernel_table_limit=bad)


def test_dataframe_columns_are_typed_by_the_schema_not_the_values(tmp_path):
    # An empty report's frame, and a column holding nulls, keep the column's
    # number type, so frames of several reports concatenate and sort.
    pd = pytest.importorskip("pandas")
    cpu_only = ROOT / "tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    full, empty = torchtriage.triage(FIXTURE), torchtriage.triage(cpu_only)
    for df in [empty.kernels_df(), full.kernels_df()]:
        assert str(df["total_us"].dtype) == "float64" and str(df["share_pct"].dtype) == "float64"
        assert str(df["launches"].dtype) == "int64" and str(df["rendered"].dtype) == "bool"
    both = pd.concat([full.kernels_df(), empty.kernels_df()])
    assert str(both["total_us"].dtype) == "float64"
    assert both.nlargest(1, "total_us")["total_us"].iloc[0] == max(
        r["total_us"] for t in full["kernel_tables"] for r in t["rows"]
    )
    assert str(empty.overlap_df()["exclusive_ratio"].dtype) == "float64"
    # The MTIA trace has no rank and no communication: nulls.
    timeline = torchtriage.triage(ROOT / "tests/data/traces/edge_cases/hta_mtia/mtia_inference_rank_0.json.gz").timeline_df()
    assert timeline["rank"].isna().all() and str(timeline["rank"].dtype) == "Int64"
    assert str(timeline["comm_comp_overlap_pct"].dtype) == "float64"
    assert str(timeline["kernels"].dtype) == "int64"
    ranks = torchtriage.batch([FIXTURE]).ranks_df()
    assert str(ranks["busy_us"].dtype) == "float64"
    assert str(ranks["waits_on"].dtype) == "Int64"
    slow = _slower_copy(tmp_path)
    d = torchtriage.diff(FIXTURE, slow)
    assert str(d.timeline_df()["busy_us"].dtype) == "float64"
    assert str(d.kernels_df()["base_count"].dtype) == "int64"


def test_each_accessor_reads_its_kinds_of_report(tmp_path):
    pytest.importorskip("pandas")
    slow = _slower_copy(tmp_path)
    d = torchtriage.diff(FIXTURE, slow)
    assert d.kind() == "diff"
    kernels = d.kernels_df()
    assert len(kernels) == sum(len(s["kernels"]) for s in d["stages"]) > 0
    assert {"stage", "kernel", "base_us", "new_us", "delta_pct", "status"} <= set(kernels.columns)
    timeline = d.timeline_df()
    assert len(timeline) == 3 * len(d["stages"]) and {"stage", "side", "busy_us"} <= set(timeline.columns)
    b = torchtriage.batch([FIXTURE])
    assert b.kind() == "batch" and {"stage", "kernel", "median_us"} <= set(b.kernels_df().columns)
    for report, accessor in [(torchtriage.triage(FIXTURE), "ranks_df"), (d, "overlap_df"), (d, "ranks_df"),
                             (b, "timeline_df"), (b, "overlap_df")]:
        with pytest.raises(ValueError, match=accessor):
            getattr(report, accessor)()


def test_notes_are_python_warnings(tmp_path):
    ranks = ROOT / "tests" / "data" / "traces" / "param_dlrm_8rank"
    with pytest.warns(UserWarning, match="analysed rank 0 only"):
        report = torchtriage.triage(ranks)
    assert any("7 other traces left out" in n for n in report["notes"])
    with pytest.warns(UserWarning, match="matches no process with kernels"):
        torchtriage.triage(FIXTURE, pid_substring="no-such-process")
    two = tmp_path / "two"
    two.mkdir()
    for name in ["worker0_step_12.pt.trace.json", "worker0_step_13.pt.trace.json"]:
        shutil.copy(FIXTURE, two / name)
    with pytest.warns(UserWarning, match="rank 0 in stages? .* held by more than one file"):
        report = torchtriage.batch(str(two))
    # Both copies are rank 0 of a job of two: rank 1 is in neither.
    assert len(report["notes"]) == 2 and "held by more than one file" in report["notes"][0]
    assert report["notes"][1] == "warning: the traces give a world size of 2, and no file triaged holds rank 1"
    # diff says what each side's triage says.
    with pytest.warns(UserWarning, match="analysed rank 0 only"):
        report = torchtriage.diff(ranks, FIXTURE)
    assert any("analysed rank 0 only" in n for n in report["notes"])
    # Files a batch could not triage, as the command line says on stderr.
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(FIXTURE, mixed / "rank0.pt.trace.json")
    (mixed / "rank1.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X"')
    for call in [
        lambda: torchtriage.batch(str(mixed)),
        lambda: torchtriage.batch([str(p) for p in sorted(mixed.iterdir())]),
        lambda: torchtriage.merge([torchtriage.summarize(p, i) for i, p in enumerate(sorted(mixed.iterdir()))]),
    ]:
        with pytest.warns(UserWarning, match=r"1 of 2 files failed .*rank1\.pt\.trace\.json: byte"):
            report = call()
        assert len(report["failures"]) == 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torchtriage.triage(FIXTURE)["notes"] == []
        assert torchtriage.batch(str(FIXTURE))["failures"] == []


def test_a_bad_summary_is_named_by_its_place_in_the_list():
    good = torchtriage.summarize(FIXTURE)
    with pytest.raises(ValueError, match=r"^summaries\[1\] is not a summary") as e:
        torchtriage.merge([good, {"a": 1}])
    assert "torchtriage-merge-" not in str(e.value)
    # The first item that is no summary is named, whatever follows it.
    for items, first in [([{}, 1], 1), ([1, {}], 0), ([good, "x", 2], 1)]:
        with pytest.raises(ValueError, match=r"^summaries\[%d\] is not a summary" % first):
            torchtriage.merge(items)
    for whole in ["abc", b"abc", good, None, 5]:
        with pytest.raises(ValueError, match="^summaries must be a list of summaries"):
            torchtriage.merge(whole)


def test_warnings_name_keywords_and_functions(tmp_path):
    # The notes name the command line's options and commands; their
    # warnings name what the Python caller wrote instead.
    with pytest.warns(UserWarning) as caught:
        torchtriage.triage(FIXTURE, pid_substring="no-such-process")
    texts = [str(w.message) for w in caught]
    assert any('pid_substring "no-such-process" matches no process' in t for t in texts), texts
    assert not any("--" in t for t in texts), texts
    ranks = ROOT / "tests" / "data" / "traces" / "param_dlrm_8rank"
    with pytest.warns(UserWarning) as caught:
        torchtriage.triage(ranks)
    texts = [str(w.message) for w in caught]
    assert any("`torchtriage.batch('%s')` reads every trace" % ranks in t for t in texts), texts
    # A folder a shell would split is quoted on the command line, and read
    # back whole.
    spaced = tmp_path / "sp ace"
    spaced.mkdir()
    for p in sorted(ranks.iterdir())[:2]:
        shutil.copy(p, spaced / p.name)
    with pytest.warns(UserWarning) as caught:
        torchtriage.triage(spaced)
    texts = [str(w.message) for w in caught]
    assert any("`torchtriage.batch(%r)` reads every trace" % str(spaced) in t for t in texts), texts


_TRACES = _shared_traces()


@pytest.mark.skipif(bool(_TRACES) or UNDER_CI, reason="not run: %s is missing" % (SHARED / "traces"))
def test_shared_traces_not_run():
    """Stands for the shared-trace cases when ../shared is missing."""


def test_shared_traces_present_under_ci():
    if UNDER_CI and not _TRACES:
        pytest.fail("CI=true but %s has no traces" % (SHARED / "traces"))


@pytest.mark.parametrize("trace", _TRACES, ids=lambda p: str(p.relative_to(SHARED / "traces")))
def test_shared_trace_equals_cli(trace):
    code, expected = _cli_json("triage", str(trace))
    if code != 0:
        with pytest.raises((torchtriage.TraceError, OSError, ValueError)):
            torchtriage.triage(trace)
        return
    assert torchtriage.triage(trace) == expected


def test_batch_warns_of_each_traces_notes():
    # What triage() warns of for one trace, batch() warns of for each, and
    # its report's notes hold.
    ranks = ROOT / "tests" / "data" / "traces" / "param_dlrm_8rank"
    with pytest.warns(UserWarning, match='pid_substring "no-such-process" matches no process') as caught:
        report = torchtriage.batch(str(ranks), pid_substring="no-such-process")
    assert sum("matches no process" in str(w.message) for w in caught) == 8
    assert sum("matches no process" in n for n in report["notes"]) == 8


CPU_ONLY = ROOT / "tests/data/traces/edge_cases/hta_cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
RANKS = ROOT / "tests" / "data" / "traces" / "param_dlrm_8rank"


def test_none_means_the_default_of_every_option():
    assert torchtriage.triage(FIXTURE, kernel_table_limit=None, overlap_table_limit=None) == torchtriage.triage(FIXTURE)
    both = [torchtriage.batch(str(FIXTURE), straggler_pct=None, jobs=None), torchtriage.batch(str(FIXTURE))]
    for report in both:
        report.pop("memory_budget_bytes")
    assert both[0] == both[1]
    one = [torchtriage.summarize(FIXTURE, framework=None, min_share=None, timeline_basis=None)]
    assert torchtriage.merge(one, straggler_pct=None) == torchtriage.merge(one)
    assert torchtriage.diff(FIXTURE, FIXTURE, gate=None, gate_on=None) == torchtriage.diff(FIXTURE, FIXTURE)
    assert torchtriage.batch_files(RANKS, with_ranks=None) == torchtriage.batch_files(RANKS)


def test_a_missing_path_given_to_batch_files_raises_file_not_found(tmp_path):
    missing = tmp_path / "nope"
    for given in [missing, [RANKS / "worker0_step_12.1694128201545.pt.trace.json.gz", missing]]:
        with pytest.raises(FileNotFoundError) as e:
            torchtriage.batch_files(given)
        assert e.value.filename == str(missing) and not isinstance(e.value, ValueError)


def test_the_summary_of_a_trace_without_stages_names_its_verdict():
    # A CPU-only trace has a timeline, whose verdict says there are no kernels.
    assert repr(torchtriage.triage(CPU_ONLY)).endswith(".pt.trace.json.gz; trace no_gpu_kernels>")


def test_a_batch_of_a_listed_directory_names_that_directory(tmp_path):
    assert torchtriage.batch([RANKS])["dir"] == str(RANKS)
    # A directory and a trace beside it: their common folder.
    (tmp_path / "ranks").mkdir()
    shutil.copy(FIXTURE, tmp_path / "ranks" / "rank0.json")
    shutil.copy(FIXTURE, tmp_path / "rank1.json")
    assert torchtriage.batch([tmp_path / "ranks", tmp_path / "rank1.json"])["dir"] == str(tmp_path)


def test_a_trace_error_names_the_path_as_given(tmp_path, monkeypatch):
    # A name starting with "-" reaches the command as ./-x.json; the error's
    # path is still the caller's.
    (tmp_path / "-x.json").write_text('{"traceEvents": [ {"ph": "X"')
    (tmp_path / "-ranks").mkdir()
    (tmp_path / "-ranks" / "rank0.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X"')
    monkeypatch.chdir(tmp_path)
    for call, path in [
        (lambda: torchtriage.triage("-x.json"), "-x.json"),
        (lambda: torchtriage.triage(b"-x.json"), "-x.json"),
        (lambda: torchtriage.stats("-x.json"), "-x.json"),
        (lambda: torchtriage.diff(FIXTURE, "-x.json"), "-x.json"),
        (lambda: torchtriage.triage(mapping=FIXTURE, formal="-x.json"), "-x.json"),
        (lambda: torchtriage.triage("-ranks"), os.path.join("-ranks", "rank0.pt.trace.json")),
    ]:
        with pytest.raises(torchtriage.TraceError) as e:
            call()
        assert e.value.path == path, (path, e.value.path)
        # The message names it so too.
        assert str(e.value).startswith(path + ": byte "), str(e.value)
    # So does a batch report of a folder given so.
    shutil.copy(FIXTURE, tmp_path / "-ranks" / "rank0.pt.trace.json")
    assert torchtriage.batch("-ranks")["dir"] == "-ranks"


def test_text_columns_are_typed_as_text_by_the_schema(tmp_path):
    # Text columns have pandas' string dtype whether they hold text, only
    # nulls or no row at all; every null is NaN (pd.NA in Int64 columns).
    pd = pytest.importorskip("pandas")
    text = pd.Series(["x"]).dtype
    full, empty = torchtriage.triage(FIXTURE), torchtriage.triage(CPU_ONLY)
    stages = empty.stages_df()
    for col in ["stage", "steps.source", "verdict.kind", "verdict.host_cause", "verdict.host_wait_call.name"]:
        assert stages[col].dtype == text, (col, stages[col].dtype)
    assert not stages["steps.source"].str.startswith("profiler").any()  # .str reads a column of nulls
    assert full.stages_df()["steps.source"].dtype == text
    slow = _slower_copy(tmp_path)
    reports = [full, empty, torchtriage.diff(FIXTURE, slow), torchtriage.diff(CPU_ONLY, CPU_ONLY),
               torchtriage.batch([FIXTURE]), torchtriage.batch([CPU_ONLY])]
    text_columns = {
        "kernels_df": ["stage", "kernel", "category"], "overlap_df": ["stage", "priority", "verdict", "kernel"],
        "timeline_df": ["stage"], "idle_df": ["stage", "pid", "stream"], "ranks_df": ["stage", "rank_source", "file"],
    }
    for report in reports:
        for accessor, columns in text_columns.items():
            try:
                df = getattr(report, accessor)()
            except ValueError:
                continue  # not an accessor of this kind of report
            for col in columns:
                assert df[col].dtype == text, (report.kind(), accessor, col, df[col].dtype)
            for col in df.columns:
                if df[col].dtype == object:
                    assert not any(v is None for v in df[col]), (report.kind(), accessor, col)
    both = pd.concat([full.kernels_df(), empty.kernels_df()])
    assert both["kernel"].dtype == text and both["category"].dtype == text


def _cli_gate_lines(*args):
    """The gate lines `torchtriage diff ARGS` prints on stderr, without
    their leading `torchtriage: `."""
    proc = subprocess.run([_binary(), "diff", *map(str, args), "--format", "json"], capture_output=True, text=True)
    prefix = "torchtriage: gate: "
    return [line[len("torchtriage: ") :] for line in proc.stderr.splitlines() if line.startswith(prefix)]


def test_gate_warnings_are_the_commands_stderr_lines(tmp_path):
    sampled = ROOT / "tests/data/traces/hta/trace_filter/sampled_rank-0.json.gz"
    worker0 = RANKS / "worker0_step_12.1694128201545.pt.trace.json.gz"
    slow = _slower_copy(tmp_path)
    for base, new, gate, gate_on in [
        (worker0, sampled, 0, "step"),  # the step median
        (worker0, sampled, 1e-7, "busy"),  # per step; a threshold Rust prints without an exponent
        (FIXTURE, slow, 2.5, "kernel"),  # the extend stage, named extend/prefill
        (CPU_ONLY, FIXTURE, 5, None),  # not evaluated
    ]:
        want = _cli_gate_lines(base, new, "--gate", gate, *(["--gate-on", gate_on] if gate_on else []))
        assert want, (base, new, gate, gate_on)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torchtriage.diff(base, new, gate=gate, gate_on=gate_on)
        assert [str(w.message) for w in caught if str(w.message).startswith("gate: ")] == want


def test_paths_that_are_not_utf8_are_read_as_the_command_reads_them(tmp_path):
    # A name a Latin-1 system wrote, given as bytes or as os.fsdecode gives
    # it: every function reads it, as the command line does.
    odd = os.path.join(os.fsencode(str(tmp_path)), b"run\xff.json")
    shutil.copy(FIXTURE, odd)
    for given in [odd, os.fsdecode(odd)]:
        report = torchtriage.triage(given)
        assert report["kernel_tables"], report
        assert torchtriage.diff(given, given)["stages"]
        assert "facts" in torchtriage.summarize(given)
    folder = os.path.join(os.fsencode(str(tmp_path)), b"job\xfe")
    os.mkdir(folder)
    shutil.copy(FIXTURE, os.path.join(folder, b"rank0.json"))
    assert torchtriage.batch(folder)["files"] == 1
