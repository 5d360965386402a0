"""A batch as map and reduce: ``summarize`` + ``merge`` in Python, the
command's ``batch --summaries`` + ``merge``, and ``torchtriage.dask.batch``
on a local Dask cluster all give the report ``torchtriage batch`` prints;
and a long call returns on Ctrl-C."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import torchtriage

from test_api import SHARED, UNDER_CI, _binary, _cli_json

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_RANKS = ROOT / "tests" / "data" / "traces" / "param_dlrm_8rank"
SHARED_RANKS = SHARED / "traces" / "param_dlrm_8rank"

# The keys that say what the batch found; `dir`, `jobs` and
# `memory_budget_bytes` describe how it ran.
SAME = ["mode", "files", "failed", "straggler_pct", "stages", "failures", "skipped", "notes"]


def _same_report(got, want):
    for key in SAME:
        assert got[key] == want[key], key


def _batch_cli(directory):
    code, report = _cli_json("batch", str(directory))
    assert code == 0
    return report


def test_summarize_and_merge_equal_batch():
    want = _batch_cli(BUNDLED_RANKS)
    paths = torchtriage.batch_files(BUNDLED_RANKS)
    assert len(paths) == 8 and all(os.path.isabs(p) for p in paths)
    # Mapped in reverse order, as a scheduler may finish them.
    sums = [torchtriage.summarize(p, i) for i, p in reversed(list(enumerate(paths)))]
    assert all(s["kind"] == "torchtriage-rank-summary" and s["facts"] for s in sums)
    json.dumps(sums)  # plain data, ready for any serializer
    merged = torchtriage.merge(sums)
    _same_report(merged, want)
    # Not the temporary folder the summaries passed through.
    assert merged["dir"] == os.path.realpath(BUNDLED_RANKS)


def test_a_map_over_links_numbers_ranks_as_batch_does(tmp_path):
    # Links named by rank to traces named otherwise: the README's map and
    # merge recipe gives the ranks batch reads from the links' names.
    traces = sorted(BUNDLED_RANKS.iterdir())[:3]
    for rank, trace in zip([9, 1, 4], traces):
        os.symlink(trace, tmp_path / f"rank{rank}.json")
    want = _batch_cli(tmp_path)
    entries = torchtriage.batch_files(tmp_path, with_ranks=True)
    assert sorted(r for _, r in entries) == [1, 4, 9]
    merged = torchtriage.merge([torchtriage.summarize(p, i, name_rank=r) for i, (p, r) in enumerate(entries)])
    _same_report(merged, want)
    assert sorted(r["rank"] for r in merged["stages"][0]["ranks"]) == [1, 4, 9]
    with pytest.raises(ValueError, match="with_ranks"):
        torchtriage.batch_files(tmp_path, with_ranks="yes")


def test_summary_of_a_bad_trace_is_a_failure(tmp_path):
    bad = tmp_path / "worker3.pt.trace.json"
    bad.write_text('{"traceEvents": [ {"ph": "X"')
    s = torchtriage.summarize(bad, 3)
    assert s["facts"] is None and "byte" in s["error"], s["error"]
    with pytest.warns(UserWarning, match="1 of 1 files failed"):
        report = torchtriage.merge([s])
    assert report["failed"] == 1
    assert report["failures"][0]["file"] == str(bad)


def test_merge_of_nothing_raises():
    with pytest.raises(ValueError):
        torchtriage.merge([])


def _ranks_dir():
    """The shared 8-rank profile when it is there; under CI it must be."""
    if SHARED_RANKS.is_dir():
        return SHARED_RANKS
    if UNDER_CI:
        pytest.fail("CI=true but %s is missing" % SHARED_RANKS)
    pytest.skip("not run: %s is missing" % SHARED_RANKS)


def test_cli_summaries_and_merge_equal_batch_on_shared_ranks(tmp_path):
    ranks = _ranks_dir()
    want = _batch_cli(ranks)
    sums = tmp_path / "sums"
    subprocess.run([_binary(), "-q", "batch", str(ranks), "--summaries", str(sums), "--format", "json"],
                   stdout=subprocess.DEVNULL, check=True)
    assert len(list(sums.iterdir())) == 8
    code, merged = _cli_json("merge", str(sums))
    assert code == 0
    _same_report(merged, want)


@pytest.fixture(scope="module")
def dask_client():
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        if UNDER_CI:
            pytest.fail("CI=true but the distributed package is missing")
        pytest.skip("not run: the distributed package is missing")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_batch_equals_batch_on_shared_ranks(dask_client):
    import torchtriage.dask

    ranks = _ranks_dir()
    assert len(dask_client.nthreads()) == 2
    report = torchtriage.dask.batch(ranks, dask_client)
    _same_report(report, _batch_cli(ranks))
    assert report["dir"] == str(ranks)
    assert report["jobs"] == 2


def test_dask_batch_equals_batch_on_bundled_ranks(dask_client, tmp_path):
    import torchtriage.dask

    # A list of files, one of them broken: the failure is reported as batch reports it.
    ranks = tmp_path / "ranks"
    shutil.copytree(BUNDLED_RANKS, ranks)
    (ranks / "worker9.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X"')
    proc = subprocess.run([_binary(), "-q", "batch", str(ranks), "--format", "json"], stdout=subprocess.PIPE)
    assert proc.returncode == 1
    want = json.loads(proc.stdout)
    with pytest.warns(UserWarning, match="1 of 9 files failed") as caught:
        report = torchtriage.dask.batch(sorted(str(p) for p in ranks.iterdir()), dask_client)
    # Issued at the caller's line, not inside the package.
    assert [w.filename for w in caught] == [__file__]
    _same_report(report, want)
    assert report["failed"] == 1


def test_dask_batch_of_no_trace_says_so_as_batch_does(dask_client):
    import torchtriage.dask

    for call in [lambda: torchtriage.batch([]), lambda: torchtriage.dask.batch([], dask_client)]:
        with pytest.raises(ValueError, match="^batch needs at least one trace$"):
            call()
    # A generator of paths is read once, and its traces are all batched.
    paths = (str(p) for p in sorted(BUNDLED_RANKS.iterdir())[:2])
    assert torchtriage.dask.batch(paths, dask_client)["files"] == 2


def test_dask_batch_lists_the_traces_on_a_worker(dask_client, monkeypatch):
    import torchtriage.dask

    # The client need not see the traces: listing them here would fail.
    def not_here(_):
        raise AssertionError("listed on the client")

    monkeypatch.setattr(torchtriage, "batch_files", not_here)
    monkeypatch.setattr(torchtriage, "_batch_entries", not_here)
    monkeypatch.setattr(torchtriage, "_batch_listing", not_here)
    report = torchtriage.dask.batch(str(BUNDLED_RANKS), dask_client)
    assert report["files"] == len(list(BUNDLED_RANKS.iterdir()))


def test_dask_batch_reads_ranks_from_the_links_names(dask_client, tmp_path):
    import torchtriage.dask

    # rank7.pt.trace.json.gz links to worker0_...: the link's name gives the
    # rank, for the cluster as for the command.
    links = tmp_path / "links"
    links.mkdir()
    traces = sorted(BUNDLED_RANKS.iterdir())
    for i, trace in enumerate(traces):
        (links / ("rank%d.pt.trace.json.gz" % (len(traces) - 1 - i))).symlink_to(trace)
    want = _batch_cli(links)
    report = torchtriage.dask.batch(str(links), dask_client)
    _same_report(report, want)
    by_file = {os.path.basename(r["file"]): r["rank"] for r in report["stages"][0]["ranks"]}
    assert by_file[traces[0].name] == len(traces) - 1, by_file


def test_dask_batch_lists_what_batch_leaves_out(dask_client, tmp_path):
    import torchtriage.dask

    ranks = tmp_path / "ranks"
    shutil.copytree(BUNDLED_RANKS, ranks)
    (ranks / "settings.json").write_text('{"model": "x"}')
    (ranks / "rank9.json").write_text("")
    proc = subprocess.run([_binary(), "-q", "batch", str(ranks), "--format", "json"], stdout=subprocess.PIPE)
    # An empty file named for a rank leaves the batch incomplete.
    assert proc.returncode == 1
    want = json.loads(proc.stdout)
    assert [os.path.basename(s["file"]) for s in want["skipped"]] == ["rank9.json", "settings.json"]
    assert any(n.startswith("warning: the batch is incomplete: 1 file named for a rank is empty") for n in want["notes"])
    report = torchtriage.dask.batch(str(ranks), dask_client)
    _same_report(report, want)


def _as_nobody(argv, env):
    # Root lists any directory: run as an unprivileged user to meet one
    # that cannot be listed.
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + argv
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_a_directory_that_cannot_be_listed_leaves_the_cluster_batch_incomplete():
    # What dask.batch's worker lists: the directory as skipped, and the
    # warning batch gives for it. (Outside pytest's own folder, which only
    # its owner may enter.)
    with tempfile.TemporaryDirectory() as tmp:
        _unlistable_below(Path(tmp))


def _unlistable_below(tmp_path):
    os.chmod(tmp_path, 0o755)
    ranks = tmp_path / "ranks"
    shutil.copytree(BUNDLED_RANKS, ranks / "node0")
    (ranks / "node1").mkdir()
    # The package as the unprivileged user can read it (the virtual
    # environment may sit in a folder only its owner enters), run by the
    # interpreter the environment was made from.
    shutil.copytree(os.path.dirname(torchtriage.__file__), tmp_path / "lib" / "torchtriage")
    for p in tmp_path.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(ranks / "node1", 0o311)
    try:
        script = "import json, sys, torchtriage; print(json.dumps(torchtriage._batch_listing(sys.argv[1])))"
        env = dict(os.environ, PYTHONPATH=str(tmp_path / "lib"))
        proc = _as_nobody([os.path.realpath(sys.executable), "-c", script, str(ranks)], env)
    finally:
        os.chmod(ranks / "node1", 0o755)
    assert proc.returncode == 0, proc.stderr
    entries, skipped, skip_notes, note = json.loads(proc.stdout)
    assert [os.path.dirname(f) for f, _ in entries] == [str(ranks / "node0")] * len(os.listdir(BUNDLED_RANKS))
    assert skipped == [{"file": str(ranks / "node1"), "reason": "unreadable directory"}]
    assert skip_notes == ["warning: %s: skipped, unreadable directory" % (ranks / "node1")]
    assert note.startswith("warning: the batch is incomplete: 1 directory below it could not be listed")


def test_dask_batch_checks_its_options_before_submitting(dask_client):
    import torchtriage.dask

    submitted = []

    class Watched:
        def __getattr__(self, name):
            submitted.append(name)
            return getattr(dask_client, name)

    for bad in [dict(min_share=-1), dict(framework="nope"), dict(timeline_basis="x"), dict(straggler_pct=-3)]:
        with pytest.raises(ValueError):
            torchtriage.dask.batch(str(BUNDLED_RANKS), Watched(), **bad)
    assert submitted == []


def test_dask_batch_options_reach_the_workers(dask_client):
    import torchtriage.dask

    proc = subprocess.run(
        [_binary(), "-q", "batch", str(BUNDLED_RANKS), "--format", "json", "--min-share", "20", "--timeline-basis", "hta"],
        stdout=subprocess.PIPE,
    )
    want = json.loads(proc.stdout)
    report = torchtriage.dask.batch(str(BUNDLED_RANKS), dask_client, min_share=20, timeline_basis="hta")
    _same_report(report, want)


def _long_trace(path, members):
    """A gzip trace of `members` identical members of 100,000 kernels each:
    a few hundred kilobytes per member on disk, seconds of work to read."""
    ev = '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1,"args":{"stream":7}},'
    middle = gzip.compress("".join(ev % i for i in range(100000)).encode(), 1)
    with open(path, "wb") as f:
        f.write(gzip.compress(b'{"traceEvents":['))
        for _ in range(members):
            f.write(middle)
        f.write(gzip.compress(b'{"ph":"i","name":"end","pid":0,"tid":0,"ts":0}]}'))


def test_ctrl_c_interrupts_a_long_call(tmp_path):
    trace = tmp_path / "long.json.gz"
    _long_trace(trace, 10)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            torchtriage.triage(trace)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 2.0


def _failed_tasks_logged(client):
    return sum("Compute Failed" in line for logs in client.get_worker_logs().values() for _, line in logs)


def test_dask_batch_of_a_missing_path_raises_file_not_found(dask_client):
    import torchtriage.dask

    logged = _failed_tasks_logged(dask_client)
    missing = "/nonexistent/torchtriage/rank0.json"
    for given in [os.path.dirname(missing), [str(sorted(BUNDLED_RANKS.iterdir())[0]), missing]]:
        with pytest.raises(FileNotFoundError) as e:
            torchtriage.dask.batch(given, dask_client)
        assert e.value.filename in given
    # Said once, on the client: no worker logs a failed task.
    assert _failed_tasks_logged(dask_client) == logged


def test_dask_batch_takes_none_for_the_default_straggler_pct(dask_client):
    import torchtriage.dask

    report = torchtriage.dask.batch(str(BUNDLED_RANKS), dask_client, straggler_pct=None, min_share=None)
    _same_report(report, _batch_cli(BUNDLED_RANKS))


def test_a_batch_of_a_list_reads_it_as_dask_batch_does(dask_client, tmp_path):
    import torchtriage.dask

    ranks = sorted(str(p) for p in BUNDLED_RANKS.iterdir())
    # A trace in a file not named as one is read, as batch of it alone reads it.
    plain = tmp_path / "trace.txt"
    shutil.copy(ranks[0], plain)
    listed = [str(plain), ranks[1]]
    got = torchtriage.batch(listed)
    assert got["files"] == 2 and got["skipped"] == []
    _same_report(got, torchtriage.dask.batch(listed, dask_client))
    # A path given twice, or a file of a directory also given, is read once
    # and not reported as skipped.
    for twice in [[ranks[0], ranks[0]], [str(BUNDLED_RANKS), ranks[3]]]:
        got = torchtriage.batch(twice)
        assert got["skipped"] == [] and not any("torchtriage-batch-" in n for n in got["notes"]), got["notes"]
        _same_report(got, torchtriage.dask.batch(twice, dask_client))
    # An empty file listed is left out by both, and warned of as a missing rank.
    empty = tmp_path / "rank1.json"
    empty.write_bytes(b"")
    for call in [torchtriage.batch, lambda p: torchtriage.dask.batch(p, dask_client)]:
        with pytest.warns(UserWarning, match=r"rank1\.json: skipped, empty file"):
            got = call([ranks[0], str(empty)])
        assert got["skipped"] == [{"file": str(empty), "reason": "empty file"}]


def test_a_list_with_no_trace_is_refused_by_both_naming_its_paths(dask_client, tmp_path):
    import torchtriage.dask

    notrace = tmp_path / "notes.json"
    notrace.write_text("hello")
    for call in [torchtriage.batch, lambda p: torchtriage.dask.batch(p, dask_client)]:
        with pytest.raises(ValueError) as e:
            call([str(notrace)])
        message = str(e.value)
        assert message.startswith("no trace among the paths listed") and str(notrace) in message, message
        assert "torchtriage-batch-" not in message and "merge" not in message, message


def test_dask_batch_names_its_dir_as_batch_does(dask_client, tmp_path):
    import torchtriage.dask

    ranks = sorted(str(p) for p in BUNDLED_RANKS.iterdir())
    link = tmp_path / "rank5.json.gz"
    os.symlink(ranks[0], link)
    for given in [[ranks[0], ranks[1]], [str(link)], os.fsencode(str(BUNDLED_RANKS))]:
        want = torchtriage.batch(given)["dir"]
        got = torchtriage.dask.batch(given, dask_client)["dir"]
        assert isinstance(got, str) and got == want, (given, got, want)


def test_a_merge_of_summaries_made_with_other_options_names_them_by_place():
    paths = torchtriage.batch_files(BUNDLED_RANKS)[:2]
    summaries = [torchtriage.summarize(paths[0], 0), torchtriage.summarize(paths[1], 1, timeline_basis="hta")]
    with pytest.raises(ValueError, match=r"^summaries\[0\] was made with .*, summaries\[1\] with ") as e:
        torchtriage.merge(summaries)
    assert "torchtriage-merge-" not in str(e.value)
