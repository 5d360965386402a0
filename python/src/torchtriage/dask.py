"""A batch over a Dask distributed cluster: one task per trace, run where
the worker is (the trace is read from the worker's file system, so every
worker must see the paths), then one merge on the client::

    from distributed import Client
    import torchtriage.dask

    client = Client("scheduler:8786")
    report = torchtriage.dask.batch("/data/job-1234/traces", client)

A worker holds one trace's analysis per worker thread at a time; the
summaries sent back are tens of kilobytes each. The report equals
``torchtriage batch`` on the same files, but for ``jobs`` (the cluster's
worker threads) and ``memory_budget_bytes`` (0: the workers' memory is
Dask's to manage).
"""

import os
import warnings

import torchtriage


def _summarize(entry, index, options):
    # Runs on a worker.
    path, name_rank = entry
    return torchtriage.summarize(path, index, name_rank=name_rank, **options)


def _list(dir_or_paths):
    # Runs on a worker: the traces, each with the rank its name carries, and
    # what batch leaves out (with the warning that it is incomplete, when a
    # directory could not be listed); and the path given that is missing, or
    # the error a path given raised (a file listed that is empty or no
    # trace), or None. Returned, not raised, for the client to raise: the
    # worker does not log it as a failed task.
    try:
        listing = torchtriage._batch_listing(dir_or_paths)
        if not listing[0]:
            # No trace: the error batch raises, which names why.
            torchtriage.batch(dir_or_paths, jobs=1)
        if isinstance(dir_or_paths, (str, bytes, os.PathLike)):
            where = torchtriage._as_given(os.path.abspath(os.fsdecode(os.fspath(dir_or_paths))), [dir_or_paths])
        else:
            where = torchtriage._list_dir([os.path.abspath(os.fsdecode(os.fspath(p))) for p in dir_or_paths])
        return (listing, where), None
    except FileNotFoundError as e:
        return None, e.filename
    except ValueError as e:
        return None, e


def batch(
    dir_or_paths,
    client,
    *,
    framework="auto",
    min_share=1.0,
    pid_substring=None,
    timeline_basis="trace",
    straggler_pct=10.0,
):
    """``torchtriage batch`` over the cluster ``client`` is connected to
    (a :class:`distributed.Client`). ``dir_or_paths`` is a directory of
    per-rank traces or a list of traces, as the workers see them. Returns
    the batch report (a :class:`torchtriage.Report`). ``None`` for an
    option means its default. Bad options raise ``ValueError`` here, before
    any task is submitted; a path the workers do not find raises
    ``FileNotFoundError``, before any trace is read."""
    options = dict(framework=framework, min_share=min_share, pid_substring=pid_substring, timeline_basis=timeline_basis)
    straggler = torchtriage._straggler_options(straggler_pct)
    with torchtriage._keyword_names():
        torchtriage._native.check_batch_options(torchtriage._analysis_args(**options) + straggler)
    # The traces are listed where they are read: on a worker, whose file
    # system the client need not share.
    if not isinstance(dir_or_paths, (str, bytes, os.PathLike)):
        dir_or_paths = list(dir_or_paths)
        if not dir_or_paths:
            raise ValueError("batch needs at least one trace")
    listing, failed = client.submit(_list, dir_or_paths, pure=False).result()
    if isinstance(failed, Exception):
        raise failed
    if failed is not None:
        raise torchtriage._not_found(failed)
    (entries, skipped, skip_notes, incomplete), where = listing
    # The files left out that look like missing ranks, warned of first, as
    # batch does before it reads the traces.
    torchtriage._warn_notes({"notes": skip_notes}, 2)
    futures = client.map(_summarize, entries, range(len(entries)), options=options, pure=False)
    summaries = client.gather(futures)
    # merge's warnings (rank notes, failed files), at the caller's line.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = torchtriage.merge(summaries, straggler_pct=straggler_pct)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    report["skipped"] = skipped
    report["notes"] = list(skip_notes) + report["notes"]
    if incomplete is not None:
        report["notes"].append(incomplete)
        torchtriage._warn_notes({"notes": [incomplete]}, 2)
    # As batch names it: the path given, or the deepest directory holding
    # every path of a list.
    report["dir"] = where
    threads = client.nthreads()
    report["jobs"] = max(1, min(len(entries), sum(threads.values())))
    return report
