"""torchtriage: where GPU time goes in a PyTorch-profiler (Kineto) trace.

Each function returns the document that the command line prints with
``--format json`` (see docs/json-schema.md), as plain Python data in a
:class:`Report` (a ``dict`` with DataFrame accessors)::

    import torchtriage
    r = torchtriage.triage("trace.json.gz")
    print(r.kernels_df().head())

Bad input raises :class:`TraceError` (a ``ValueError``) with ``path`` (the
trace as given, or the file of a directory given) and ``offset`` (byte
offset in the decompressed JSON, or ``None``); a missing trace, directory
or pattern file raises ``FileNotFoundError`` and a file that cannot be
read ``OSError``; bad options raise ``ValueError``, and ``None`` for an
option means its default. What the command line notes on stderr (a
directory of which one rank was analysed, events skipped, a pid filter
that kept nothing, a rank held by two files of a batch, files a batch
skipped or could not triage, the stages a gate tripped on, a gate that
compared nothing) is issued as a Python warning (``UserWarning``) worded
as the command's line, and is in the report too.
"""

import contextlib
import errno
import functools
import json
import os
import re
import shlex
import tempfile
import warnings

from . import _native
from ._native import TraceError

__version__ = _native.__version__

__all__ = ["Report", "TraceError", "batch", "batch_files", "diff", "merge", "stats", "summarize", "triage"]


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "torchtriage's DataFrame accessors need pandas: pip install 'torchtriage[pandas]'"
        ) from e
    return pandas


class Report(dict):
    """A report document (the ``--format json`` output) with DataFrame views.

    Each accessor returns a table of the report's rows, with the row's keys
    as columns, after the columns that say where a row belongs (``trace``,
    ``stage``): the rows of the command's CSV file of the same name where
    there is one (``kernels.csv``, ``timeline.csv``, ``stages.csv``,
    ``idle.csv``). ``stages_df`` writes nested objects as dotted columns
    (``verdict.kind``), as that file does; elsewhere a nested list or object
    stays a Python list or dict in its cell. Columns are typed by the
    schema, whatever values a report holds: text as pandas' string dtype,
    times, shares and ratios ``float64``, counts and ranks ``int64`` (pandas'
    nullable ``Int64`` where one is null), ``rendered`` ``bool``, lists and
    objects ``object``. A null is NaN (``pd.NA`` in an ``Int64`` column).
    An accessor that does not apply to the kind of report (``ranks_df`` of
    a triage report, say) raises ``ValueError``.
    """

    def __repr__(self):
        # A notebook cell ending in a report shows what it is, not the
        # whole document (``dict(report)`` or ``json.dumps`` gives that).
        kind = self.kind()
        if kind == "triage":
            what = "%s; %s" % (_names(self.get("formal_traces") or []), _verdicts(self.get("timeline")))
        elif kind == "diff":
            gate = (self.get("gate") or {}).get("tripped")
            what = "%s vs %s; %d stages%s" % (
                _names(self.get("base_traces") or []),
                _names(self.get("new_traces") or []),
                len(self.get("stages", [])),
                "" if gate is None else "; gate tripped" if gate else "; gate passed",
            )
        elif kind == "batch":
            what = "%s; %s files, %s failed" % (self.get("dir"), self.get("files"), self.get("failed"))
        else:
            what = "%d keys" % len(self)
        return "<torchtriage.Report %s: %s>" % (kind or "document", what)

    def kind(self):
        """``"triage"``, ``"diff"`` or ``"batch"`` (also a merged report);
        ``None`` for any other document (``stats``)."""
        if "kernel_tables" in self:
            return "triage"
        if "base_traces" in self:
            return "diff"
        if "stages" in self and "files" in self:
            return "batch"
        return None

    def _need(self, accessor, kinds):
        kind = self.kind()
        if kind not in kinds:
            raise ValueError(
                "%s() reads a %s report; this is %s"
                % (accessor, " or ".join(kinds), "a %s report" % kind if kind else "not a report it reads")
            )
        return kind

    def kernels_df(self):
        """Kernel rows: of a triage report, the kernel-table rows of every
        (trace, stage), after ``trace``, ``stage`` and ``stage_total_us`` (the
        stage's kernel time, which ``share_pct`` divides by): the command's
        ``kernels.csv``, with ``location`` and ``cpu_op`` as lists; of a diff,
        every kernel of every stage (``rendered`` false for those under the
        share bar, which the text reports leave out); of a batch, the cross-rank kernel
        rows of every stage (both with a ``stage`` column first)."""
        kind = self._need("kernels_df", ["triage", "diff", "batch"])
        if kind == "triage":
            rows = [
                {"trace": t.get("trace"), "stage": t.get("stage"), "stage_total_us": t.get("total_us"), **row}
                for t in self.get("kernel_tables", [])
                for row in t.get("rows", [])
            ]
            return _frame(rows, ["trace", "stage", "stage_total_us", *_KERNEL_ROW])
        rows = [{"stage": s.get("stage"), **k} for s in self.get("stages", []) for k in s.get("kernels", [])]
        keys = _DIFF_KERNEL_ROW if kind == "diff" else _BATCH_KERNEL_ROW
        return _frame(rows, ["stage", *keys])

    def overlap_df(self):
        """The overlap action rows of a triage report."""
        self._need("overlap_df", ["triage"])
        rows = list(self.get("overlap", []))
        return _frame(rows, _OVERLAP_ROW)

    def timeline_df(self):
        """Of a triage report, the rows of the command's ``timeline.csv``: the
        whole trace's figures first, as the stage ``"trace"`` (``pid`` and
        ``rank`` null), then one row per (stage, GPU), each with the
        timeline's ``basis``; then the lists the CSV leaves out
        (``idle_by_stream``, ``host_wait_calls``). Of a diff, three rows per
        stage (``side`` ``base``, ``new`` and ``delta``) of the stage's
        figures."""
        if self._need("timeline_df", ["triage", "diff"]) == "diff":
            rows = [
                {"stage": s.get("stage"), "side": side, **(s.get("timeline") or {}).get(side, {})}
                for s in self.get("stages", [])
                for side in ("base", "new", "delta")
            ]
            return _frame(rows, ["stage", "side", *_DIFF_FIGURES])
        return _frame(_timeline_rows(self.get("timeline")), _TIMELINE_ROW)

    def stages_df(self):
        """Of a triage report, one row per stage of the timeline (the whole
        trace first, as the stage ``"trace"``) with its launch statistics,
        steps and verdict as dotted columns (``launch.delay_p50_us``,
        ``verdict.kind``, ``verdict.host_wait_call.name``; the list
        ``steps.slowest`` stays a list): the command's ``stages.csv``."""
        self._need("stages_df", ["triage"])
        timeline = self.get("timeline") or {}
        rows = []
        if timeline:
            rows.append(_flat({"stage": "trace", "launch": timeline.get("launch"), "verdict": timeline.get("verdict")}))
        for st in timeline.get("stages", []):
            rows.append(_flat({k: v for k, v in st.items() if k != "gpus"}))
        # A null object (no host-wait call) gives no column of its own: its
        # dotted columns stay empty, as in the CSV.
        for row in rows:
            for key in [k for k, v in row.items() if v is None and any(c.startswith(k + ".") for c in _STAGE_ROW)]:
                del row[key]
        return _frame(rows, _STAGE_ROW)

    def idle_df(self):
        """Of a triage report, the idle time between consecutive kernels of
        each stream, one row per (stage, GPU, stream), by cause
        (``host_wait_us``, ``kernel_wait_us``, ``other_us``): the command's
        ``idle.csv``, HTA's idle time breakdown."""
        self._need("idle_df", ["triage"])
        rows = [
            {"stage": st.get("stage"), "pid": gpu.get("pid"), "rank": gpu.get("rank"), **stream}
            for st in (self.get("timeline") or {}).get("stages", [])
            for gpu in st.get("gpus", [])
            for stream in gpu.get("idle_by_stream", [])
        ]
        return _frame(rows, ["stage", "pid", "rank", "stream", "host_wait_us", "kernel_wait_us", "other_us"])

    def ranks_df(self):
        """Batch reports: one row per (stage, rank file), with a ``stage`` column first."""
        self._need("ranks_df", ["batch"])
        rows = [
            {"stage": s.get("stage"), **r} for s in self.get("stages", []) for r in s.get("ranks", [])
        ]
        return _frame(rows, ["stage", *_RANK_ROW])


def _timeline_rows(timeline):
    # The whole trace, then each stage's GPUs, as timeline.csv has them.
    if not timeline:
        return []
    basis = timeline.get("basis")
    whole = {"stage": "trace", "pid": None, "rank": None, **(timeline.get("trace") or {}), "basis": basis}
    gpus = [
        {"stage": st.get("stage"), **gpu, "basis": basis}
        for st in timeline.get("stages", [])
        for gpu in st.get("gpus", [])
    ]
    return [whole] + gpus


def _flat(obj, prefix=""):
    # Nested dicts as dotted keys, as the command's CSV writes them; lists
    # and nulls stay values (stages_df drops a null whose dotted columns
    # the CSV has).
    out = {}
    for k, v in obj.items():
        name = prefix + k
        if isinstance(v, dict):
            out.update(_flat(v, name + "."))
        else:
            out[name] = v
    return out


def _verdicts(timeline):
    # Each stage's verdict; the whole trace's when no stage has kernels (a
    # CPU-only trace is "trace no_gpu_kernels").
    if not timeline:
        return "no timeline"
    stages = [
        "%s %s" % (st.get("stage"), (st.get("verdict") or {}).get("kind")) for st in timeline.get("stages", [])
    ]
    return ", ".join(stages) or "trace %s" % (timeline.get("verdict") or {}).get("kind")


def _names(paths):
    # Trace paths as a short list: the first file's name, and how many more.
    names = [os.path.basename(str(p)) for p in paths]
    if not names:
        return "-"
    return names[0] if len(names) == 1 else "%s and %d more" % (names[0], len(names) - 1)


# The keys of each kind of row, in the report's order (docs/json-schema.md),
# so a DataFrame has the same columns whether or not the report has rows.
_KERNEL_ROW = [
    "kernel", "category", "total_us", "share_pct", "launches", "max_us", "avg_us", "location", "cpu_op", "rendered",
]
_OVERLAP_ROW = [
    "stage", "priority", "verdict", "kernel", "category", "total_us", "share_pct", "exclusive_ratio", "hidden_ratio",
    "python_scope", "launch_op", "mapping_ratio", "dependency_signal", "prev_neighbor", "next_neighbor",
    "recommendation", "suggestion", "representative_idx", "rendered",
]
# The command's timeline.csv columns, then the lists it leaves out.
_TIMELINE_ROW = [
    "stage", "pid", "rank", "kernels", "window_us", "busy_us", "idle_us", "compute_us", "non_compute_us",
    "idle_pct", "compute_pct", "non_compute_pct", "comm_us", "memory_us", "comm_comp_overlap_pct",
    "exposed_comm_us", "idle_host_wait_us", "idle_short_gap_us", "longest_idle_gap_us", "device_wait_us", "basis",
    "idle_by_stream", "host_wait_calls",
]
_DIFF_KERNEL_ROW = [
    "kernel", "category", "base_us", "new_us", "delta_us", "delta_pct", "base_count", "new_count", "status",
    "normalized", "location", "cpu_op", "rendered",
]
_DIFF_FIGURES = [
    "window_us", "busy_us", "idle_us", "idle_pct", "compute_us", "comm_us", "comm_comp_overlap_pct", "steps",
    "step_p50_us", "step_p90_us", "launch_delay_p50_us", "kernels_per_step", "kernel_us", "clock_offset_us",
]
_BATCH_KERNEL_ROW = [
    "kernel", "category", "leads_ranks", "ranks_with_kernel", "min_us", "median_us", "max_us", "max_rank",
]
_RANK_ROW = [
    "rank", "rank_source", "file", "bundle", "busy_us", "overlap_us", "overlap_pct", "gpu_time_us", "compute_us",
    "exposed_comm_us", "exposed_comm_pct", "idle_us", "steps", "top_exposed_comm", "top_headroom", "leading_kernel",
    "role", "waits_on", "straggler",
]


# The command's stages.csv columns.
_STAGE_ROW = [
    "stage", "launch.launches", "launch.kernels", "launch.cpu_us", "launch.delay_p50_us", "launch.delay_p90_us",
    "launch.delay_p99_us", "launch.kernel_p50_us", "launch.launch_p50_us", "launch.short_kernel_pct",
    "launch.kernels_per_step", "launch.clock_offset_us", "steps.source", "steps.count", "steps.mean_us",
    "steps.p50_us", "steps.p90_us", "steps.max_us", "steps.slowest", "steps.without_gpu_work", "verdict.kind",
    "verdict.window_us", "verdict.idle_pct", "verdict.host_wait_pct", "verdict.exposed_comm_pct", "verdict.kernel_p50_us",
    "verdict.launch_p50_us", "verdict.delay_p50_us", "verdict.kernels_per_launch", "verdict.clock_offset_us",
    "verdict.steps_us", "verdict.steps_idle_pct", "verdict.host_cause", "verdict.longest_gap_us",
    "verdict.device_wait_pct", "verdict.host_wait_call.name", "verdict.host_wait_call.calls",
    "verdict.host_wait_call.wait_us",
]


# The columns of each type, by the last part of their name (``window_us``
# of ``verdict.window_us``); besides _FLOAT_COLUMNS, a column whose name
# ends in _us, _pct or _ratio is a float.
_INT_COLUMNS = {
    "launches", "representative_idx", "rank", "kernels", "base_count", "new_count", "steps", "ranks_with_kernel",
    "max_rank", "waits_on", "count", "calls", "without_gpu_work",
}
_FLOAT_COLUMNS = {"kernels_per_step", "kernels_per_launch"}
_TEXT_COLUMNS = {
    "trace", "stage", "side", "pid", "stream", "basis", "kernel", "category", "status", "priority", "verdict",
    "python_scope", "launch_op", "dependency_signal", "prev_neighbor", "next_neighbor", "recommendation",
    "suggestion", "source", "kind", "host_cause", "name", "rank_source", "file", "bundle", "role",
}
_OBJECT_COLUMNS = {
    "location", "cpu_op", "idle_by_stream", "host_wait_calls", "slowest", "normalized", "leads_ranks",
    "top_exposed_comm", "top_headroom", "leading_kernel", "straggler",
}


def _frame(rows, first):
    """A DataFrame of ``rows`` with the columns ``first`` (then any other
    key), each typed by the schema rather than by the values present (see
    :func:`_column_type`), with NaN for every null but in ``Int64``
    columns, so frames of several reports, an empty one among them,
    concatenate with their types."""
    df = _pandas().DataFrame(rows, columns=_columns(rows, first))
    for col in df.columns:
        present = [row[col] for row in rows if row.get(col) is not None]
        dtype = _column_type(col, present, nulls=len(present) < len(rows))
        if dtype is not None:
            df[col] = df[col].astype(dtype)
        if df[col].dtype == object:
            # A JSON null is None, a key a row lacks NaN: one null, NaN.
            df[col] = df[col].where(df[col].notna(), float("nan"))
    return df


def _column_type(col, present, nulls):
    """The dtype of a column named ``col`` holding the non-null values
    ``present``: text pandas' string dtype, a number ``float64``, an
    integer ``int64`` (``Int64``, pandas' nullable integers, when it holds
    a null), ``rendered`` ``bool``, a list or object ``object``; None (as
    pandas reads it) for a column the schema does not name or whose values
    are not of its type."""
    base = col.rsplit(".", 1)[-1]
    if base in _INT_COLUMNS:
        return ("Int64" if nulls else "int64") if all(type(v) is int for v in present) else None
    if col == "rendered":
        return "bool" if not nulls and all(type(v) is bool for v in present) else None
    if base in _TEXT_COLUMNS:
        return _text_dtype() if all(isinstance(v, str) for v in present) else None
    if base in _OBJECT_COLUMNS:
        return "object"
    if base in _FLOAT_COLUMNS or base.endswith(("_us", "_pct", "_ratio")):
        return "float64" if all(type(v) in (int, float) for v in present) else None
    return None


@functools.lru_cache(maxsize=None)
def _text_dtype():
    # The dtype pandas gives a column of strings: ``str`` from pandas 3 on,
    # ``object`` before.
    return _pandas().Series(["text"]).dtype


def _columns(rows, first):
    # The columns `first`, with any other key of the rows after the key it
    # follows in its row: a field the schema adds lands where the report
    # (and the command's CSV file) has it.
    cols = list(first)
    for row in rows:
        at = 0
        for k in row:
            if k in cols:
                at = cols.index(k) + 1
            else:
                cols.insert(at, k)
                at += 1
    return cols


# The command-line options the keyword arguments set (longest first), as the
# command line's messages name them: with the placeholder of the value after
# the option (`--framework <FRAMEWORK>`).
_OPTIONS = re.compile(
    r"--(overlap-table-limit|kernel-table-limit|timeline-basis|pid-substring|straggler-pct|min-share|framework|gate-on|patterns|jobs|gate)\b(?: <[A-Z_]+>)?"
)


@contextlib.contextmanager
def _keyword_names():
    """Names a bad option in a ``ValueError`` from the command line's
    checks by the keyword argument that set it (``--min-share`` becomes
    ``min_share``)."""
    try:
        yield
    except ValueError as e:
        text = str(e)
        named = _in_python_terms(text)
        # A bad trace (TraceError) keeps its type and its path.
        if type(e) is not ValueError or named == text:
            raise
        raise ValueError(named) from None


def _run_json(args):
    """Runs a report command with ``--format json`` into a temporary file;
    returns (exit code, parsed document)."""
    with tempfile.TemporaryDirectory(prefix="torchtriage-") as tmp:
        out = os.path.join(tmp, "report.json")
        with _keyword_names():
            code = _native.run(["--quiet"] + list(args) + ["--format", "json", "--output", out])
        with open(out, encoding="utf-8") as f:
            return code, Report(json.load(f))


def _analysis_args(framework, min_share, pid_substring=None, timeline_basis="trace"):
    """The analysis options ``triage``, ``batch``, ``diff`` and ``summarize`` share."""
    # None means the default, as it does for pid_substring.
    args = [
        _option("framework", "auto" if framework is None else str(framework)),
        _option("min-share", _number("min_share", 1.0 if min_share is None else min_share)),
        _option("timeline-basis", "trace" if timeline_basis is None else str(timeline_basis)),
    ]
    if pid_substring is not None:
        args.append(_option("pid-substring", str(pid_substring)))
    return args


def _number(name, value):
    # A numeric option's value as the command line takes it; one that is no
    # number is refused naming the keyword (not float()'s bare message).
    if isinstance(value, bool):
        raise ValueError("%s must be a number, not %r" % (name, value))
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, not %r" % (name, value)) from None


def _count_options(option, name, value):
    # A count option (a whole number, 0 or more) as arguments; none for
    # None, which leaves the command's default.
    if value is None:
        return []
    if not _is_count(value):
        raise ValueError("%s must be a non-negative whole number, not %r" % (name, value))
    return [_option(option, str(value))]


def _straggler_options(straggler_pct):
    # batch's and merge's bar for slow and waiting ranks, as arguments; none
    # for None, which leaves the command's default.
    if straggler_pct is None:
        return []
    return [_option("straggler-pct", _number("straggler_pct", straggler_pct))]


def _option(name, value):
    # One word, so a value such as -5 is the option's value (and refused
    # by its check) rather than an argument of its own.
    return "--%s=%s" % (name, value)


def _path(p):
    """A path as the command takes it: every argument is a file, so one
    that starts with ``-`` (``-`` itself, which would mean stdin, or a name
    like ``-x.json``) is given as ``./-x.json``."""
    p = os.fsdecode(os.fspath(p))
    return os.path.join(os.curdir, p) if p.startswith("-") else p


def _input(p):
    """An input path as the command takes it (:func:`_path`), after
    checking that it exists: a missing input raises ``FileNotFoundError``,
    as ``open()`` does."""
    name = os.fsdecode(os.fspath(p))
    if not os.path.exists(name):
        raise _not_found(name)
    return _path(name)


@contextlib.contextmanager
def _named_as_given(paths):
    """Names the trace of a :class:`TraceError` in its ``path`` as the
    caller gave it (``-x.json``, not the ``./-x.json`` :func:`_path` passes
    on); None among ``paths`` is skipped."""
    try:
        yield
    except TraceError as e:
        if e.path is not None:
            passed = os.fspath(e.path)
            e.path = _as_given(passed, [p for p in paths if p is not None])
            # The message opens with the path too.
            if e.path != passed and e.args and str(e.args[0]).startswith(passed + ": "):
                e.args = (e.path + str(e.args[0])[len(passed) :],) + e.args[1:]
        raise


def _as_given(path, given):
    # `path` with the form _path gave one of the `given` paths (or a folder
    # of them) replaced by the path as given.
    for p in given:
        name = os.fsdecode(os.fspath(p))
        passed = _path(name)
        if passed == name:
            continue
        if path == passed:
            return name
        if path.startswith(passed + os.sep):
            return name + path[len(passed) :]
    return path


def _not_found(name):
    # The error open() raises for a missing file.
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def triage(
    path=None,
    *,
    framework="auto",
    min_share=1.0,
    pid_substring=None,
    timeline_basis="trace",
    patterns=None,
    mapping=None,
    formal=None,
    kernel_table_limit=0,
    overlap_table_limit=0,
):
    """``torchtriage triage``: kernel, overlap and fuse tables of a trace or
    profile directory, or of a graph-off ``mapping`` + graph-on ``formal`` pair.

    ``pid_substring`` restricts the overlap analysis to processes whose id
    contains it; ``timeline_basis`` is ``"trace"``, ``"hta"`` or
    ``"hta-exact"``; ``patterns`` is a fuse-pattern file (TOML) to add, or a
    list of them, as ``--patterns`` repeated; ``kernel_table_limit`` and
    ``overlap_table_limit`` are the rows of each stage's table marked
    ``rendered`` (0: all), as the command's options of the same names. A
    missing trace or pattern file raises ``FileNotFoundError``."""
    if path is not None and (mapping is not None or formal is not None):
        raise ValueError("give either path or both mapping and formal")
    if path is not None:
        inputs = [_input(path)]
    elif mapping is not None and formal is not None:
        inputs = [_option("mapping", _input(mapping)), _option("formal", _input(formal))]
    else:
        raise ValueError("give either path or both mapping and formal")
    args = ["triage"] + inputs + _analysis_args(framework, min_share, pid_substring, timeline_basis)
    args.extend(_count_options("kernel-table-limit", "kernel_table_limit", kernel_table_limit))
    args.extend(_count_options("overlap-table-limit", "overlap_table_limit", overlap_table_limit))
    if patterns is not None:
        files = [patterns] if isinstance(patterns, (str, bytes, os.PathLike)) else list(patterns)
        args.extend(_option("patterns", _input(f)) for f in files)
    with _named_as_given([path, mapping, formal]):
        _, report = _run_json(args)
    _warn_notes(report, 2)
    return report


def _warn_notes(report, stacklevel):
    # The report's notes are the lines the command line prints on stderr.
    for note in report.get("notes", []):
        # The category says what the command line's "warning: " or
        # "note: " does.
        text = note.split(": ", 1)[1] if note.startswith(("warning: ", "note: ")) else note
        warnings.warn(_in_python_terms(text), stacklevel=stacklevel + 1)


def _in_python_terms(text):
    # A note names the command line's options and commands; a warning names
    # the keyword arguments and functions that set or do the same.
    text = re.sub(r"`torchtriage ([a-z]+) ([^`]+)`", _call_in_python, text)
    return _OPTIONS.sub(lambda m: m.group(1).replace("-", "_"), text)


def _call_in_python(match):
    # `torchtriage diff A B --gate PCT` as `torchtriage.diff('A', 'B', gate=PCT)`:
    # the words before the first option are arguments, an option's value
    # (an upper-case placeholder kept as it is) its keyword's.
    # The command line quotes a path a shell would read otherwise.
    try:
        words = shlex.split(match.group(2))
    except ValueError:
        words = match.group(2).split()
    args, i = [], 0
    while i < len(words) and not words[i].startswith("--"):
        args.append(repr(words[i]))
        i += 1
    while i < len(words):
        name = words[i].lstrip("-").replace("-", "_")
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else "True"
        args.append("%s=%s" % (name, value if value.isupper() or value == "True" else repr(value)))
        i += 2 if value != "True" else 1
    return "`torchtriage.%s(%s)`" % (match.group(1), ", ".join(args))


def _warn_failures(report, stacklevel):
    # The command line says on stderr which files failed (and exits 1): a
    # batch report that covers fewer ranks than were given says so too.
    failures = report.get("failures", [])
    if failures:
        first = failures[0]
        warnings.warn(
            "%d of %d files failed (the report's failures lists them), %s: %s"
            % (len(failures), report.get("files", len(failures)), first["file"], first["error"]),
            stacklevel=stacklevel + 1,
        )


def stats(path):
    """``torchtriage stats --json``: event counts, metadata and column sizes of one trace."""
    with _named_as_given([path]):
        return Report(json.loads(_native.stats_json(_input(path))))


def batch(
    dir_or_paths,
    jobs=None,
    *,
    framework="auto",
    min_share=1.0,
    pid_substring=None,
    timeline_basis="trace",
    straggler_pct=10.0,
):
    """``torchtriage batch``: triage every per-rank trace below a directory
    (or of a list of trace files) and compare the ranks. Files that fail are
    listed in the report's ``failures`` and warned of. For a list, the report's ``dir`` is
    the deepest directory holding every path of the list (a directory of
    the list holds itself)."""
    options = _analysis_args(framework, min_share, pid_substring, timeline_basis)
    options.extend(_straggler_options(straggler_pct))
    if isinstance(dir_or_paths, (str, bytes, os.PathLike)):
        report = _batch(_input(dir_or_paths), jobs, options)
        report["dir"] = _as_given(report["dir"], [dir_or_paths])
        _warn_notes(report, 2)
        _warn_failures(report, 2)
        return report
    paths = [os.path.abspath(os.fsdecode(os.fspath(p))) for p in dir_or_paths]
    if not paths:
        raise ValueError("batch needs at least one trace")
    for p in paths:
        # A link to nothing would be passed over unseen: a missing trace is
        # an error here, as it is for one path.
        _input(p)
    links = {}
    with tempfile.TemporaryDirectory(prefix="torchtriage-batch-") as tmp:
        for i, p in enumerate(_listed_once(paths)):
            name = os.path.basename(p)
            if not os.path.isdir(p) and not _has_trace_suffix(name):
                # A file listed is looked at whatever its name ends with.
                name += ".json"
            link = os.path.join(tmp, "%04d-%s" % (i, name))
            os.symlink(p, link)
            links[link] = p
        try:
            report = _batch(tmp, jobs, options)
        except ValueError as e:
            raise ValueError(_listed_error(str(e), tmp, links)) from None
    # The links' folder is gone: name where the traces are instead.
    report["dir"] = _list_dir(paths)
    _named_as_listed(report, links)
    _warn_notes(report, 2)
    _warn_failures(report, 2)
    return report


def _list_dir(paths):
    # The report's dir for a list of (absolute) paths: the deepest directory
    # holding every one (a directory of the list holds itself).
    return os.path.commonpath([p if os.path.isdir(p) else os.path.dirname(p) for p in paths])


def _listed_error(message, tmp, links):
    # batch's error about the folder of links to a list's paths, worded
    # about the paths listed, each named as listed.
    message = message.replace(tmp + ": no trace files in this directory or below it", "no trace among the paths listed")
    # The error names a file of the folder by its name there.
    return _as_listed(_as_listed(message, links), {os.path.basename(link): p for link, p in links.items()})


def _listed_once(paths):
    # The paths of a list as batch_files reads them: each once, and a file
    # below a directory of the list as that directory's.
    dirs = [os.path.realpath(p) for p in paths if os.path.isdir(p)]
    seen = set()
    for p in paths:
        real = os.path.realpath(p)
        if real in seen or (not os.path.isdir(p) and any(real.startswith(d + os.sep) for d in dirs)):
            continue
        seen.add(real)
        yield p


def _has_trace_suffix(name):
    # The names batch looks at in a directory.
    return name.lower().endswith((".json", ".json.gz", ".json.zst", ".zst"))


def _as_listed(text, links):
    # `text` with each link of `links` (the longest first) named as the path
    # it stands for.
    for link in sorted(links, key=len, reverse=True):
        text = text.replace(link, links[link])
    return text


def _named_as_listed(report, links):
    # A batch of a list ran over links to its paths: name what the report
    # names by a link as the path listed.
    for entry in report.get("skipped", []):
        entry["file"] = _as_listed(entry["file"], links)
    report["notes"] = [_as_listed(n, links) for n in report.get("notes", [])]


def _batch(directory, jobs, options):
    args = ["batch", directory] + options
    if jobs is not None:
        if isinstance(jobs, bool) or not isinstance(jobs, int):
            raise ValueError("jobs must be a whole number")
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        args.append(_option("jobs", jobs))
    _, report = _run_json(args)
    return report


def batch_files(dir_or_paths, *, with_ranks=False):
    """The traces ``batch`` would triage, as absolute paths in its order: the
    traces below a directory, or of a list of files and directories (a
    missing one raises ``FileNotFoundError``).

    With ``with_ranks=True``, ``(path, name_rank)`` pairs: the rank the name
    each trace was found by carries (a link named ``rank2.json`` to a trace
    named otherwise), or None, to pass to ``summarize(path, index,
    name_rank=...)`` so a map and merge numbers the ranks as ``batch``
    does."""
    if with_ranks is None:
        with_ranks = False
    if not isinstance(with_ranks, bool):
        raise ValueError("with_ranks must be True or False")
    entries = _batch_entries(dir_or_paths)
    return entries if with_ranks else [path for path, _ in entries]


def _batch_entries(dir_or_paths):
    # batch_files with the rank each trace's name carries as batch reads it:
    # a symbolic link's own name (rank2.json) before its target's.
    if isinstance(dir_or_paths, (str, bytes, os.PathLike)):
        dir_or_paths = [dir_or_paths]
    found = []
    for p in dir_or_paths:
        found.extend(_native.batch_files(_input(p)))
    return _in_batch_order(found)


def _in_batch_order(found):
    # (path, rank) pairs once each, the first rank found kept, in batch's
    # order.
    first = {}
    for f, rank in found:
        first.setdefault(os.fspath(f), rank)
    return sorted(first.items(), key=lambda entry: _path_key(entry[0]))


def _batch_listing(dir_or_paths):
    # What batch reads below the directories given, one walk of each: the
    # traces as _batch_entries gives them, what it leaves out as its
    # report's "skipped" entries, its warnings about those that look like
    # missing ranks, and the warning that it is incomplete (or None). A
    # missing path raises FileNotFoundError.
    if isinstance(dir_or_paths, (str, bytes, os.PathLike)):
        dir_or_paths = [dir_or_paths]
    found, skipped, skip_notes, note = _native.batch_listing([_input(p) for p in dir_or_paths])
    return _in_batch_order(found), [{"file": f, "reason": why} for f, why in skipped], skip_notes, note


def _path_key(path):
    # The order of Rust's PathBuf: component by component.
    return [part for part in path.split(os.sep) if part]


def summarize(
    path, index=0, *, framework="auto", min_share=1.0, pid_substring=None, timeline_basis="trace", name_rank=None
):
    """The map step of a batch: one trace triaged as ``batch`` triages it, as
    its summary (the document ``batch --summaries`` writes: ``facts``, or
    ``error`` when the trace failed; it never raises for a bad trace).
    ``index`` is the trace's position in the job (see :func:`batch_files`),
    its rank when neither its file name nor its ``distributedInfo`` gives one.
    ``name_rank`` is the rank the name the trace was found by carries, when
    that is not its path's own (a link named ``rank2.json`` to a trace named
    otherwise); it is read before the path's name."""
    if name_rank is not None and not _is_count(name_rank):
        raise ValueError("name_rank must be a non-negative whole number or None")
    if not _is_count(index):
        raise ValueError("index must be a non-negative whole number, not %r" % (index,))
    with _keyword_names():
        text = _native.summarize(
            _path(path), int(index), _analysis_args(framework, min_share, pid_substring, timeline_basis), name_rank
        )
    return json.loads(text)


def _is_count(value):
    # A whole number a position or rank can be (0 to 2**64 - 1), not a bool.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def merge(summaries, *, straggler_pct=10.0):
    """The reduce step: the cross-rank report ``batch`` prints, from any
    list of :func:`summarize` results (in any order; a trace given twice
    counts once). Traces that failed are in ``failures``. The report's
    ``dir`` is the deepest directory holding the summaries' traces."""
    if isinstance(summaries, (str, bytes, dict)) or not hasattr(summaries, "__iter__"):
        raise ValueError("summaries must be a list of summaries, not a %s" % type(summaries).__name__)
    summaries = list(summaries)
    if not summaries:
        raise ValueError("merge needs at least one summary")
    for i, s in enumerate(summaries):
        if not isinstance(s, dict):
            raise ValueError("summaries[%d] is not a summary: a %s, not a dict" % (i, type(s).__name__))
    with tempfile.TemporaryDirectory(prefix="torchtriage-merge-") as tmp:
        for i, s in enumerate(summaries):
            with open(os.path.join(tmp, "%06d.summary.json" % i), "w", encoding="utf-8") as f:
                json.dump(s, f)
        try:
            _, report = _run_json(["merge", tmp, *_straggler_options(straggler_pct)])
        except ValueError as e:
            raise _summary_error(e, tmp) from None
    # The summaries' folder is gone: name where the traces are instead.
    files = [s["file"] for s in summaries if isinstance(s, dict) and isinstance(s.get("file"), str)]
    report["dir"] = os.path.commonpath([os.path.abspath(os.path.dirname(f)) for f in files]) if files else None
    _warn_notes(report, 2)
    _warn_failures(report, 2)
    return report


def _summary_error(error, tmp):
    # The error names the files merge wrote the summaries to: name the items
    # of the caller's list instead.
    path = os.fspath(getattr(error, "path", None) or "")
    text = str(error)
    written = re.compile(re.escape(tmp + os.sep) + r"(\d{6})\.summary\.json")
    if os.path.dirname(path) == tmp:
        text = text[len(path) + 2 :] if text.startswith(path + ": ") else text
        text = written.sub(lambda m: "summaries[%d]" % int(m.group(1)), text)
        return ValueError("summaries[%d] is not a summary: %s" % (int(os.path.basename(path)[:6]), text))
    if written.search(text) is None:
        return error
    return ValueError(written.sub(lambda m: "summaries[%d]" % int(m.group(1)), text))


def diff(
    base,
    new,
    *,
    gate=None,
    gate_on=None,
    framework="auto",
    min_share=1.0,
    pid_substring=None,
    timeline_basis="trace",
):
    """``torchtriage diff``: compare two traces or profile directories stage
    by stage. With ``gate`` (percent), the report's gate verdicts say which
    stages regressed past it; ``gate_on`` (``"busy"``, ``"step"`` or
    ``"kernel"``) picks the figure compared. A gate that could compare no
    stage has ``report["gate"]["tripped"]`` None, not False, and is warned
    of (``UserWarning``) with the reason in ``report["gate"]["not_evaluated"]``;
    a gate that tripped is warned of once per stage it tripped on. The
    warnings are the lines the command prints on stderr, without their
    leading ``torchtriage: ``."""
    args = ["diff", _input(base), _input(new)] + _analysis_args(framework, min_share, pid_substring, timeline_basis)
    if gate is not None:
        args.append(_option("gate", _number("gate", gate)))
    if gate_on is not None:
        if gate is None:
            raise ValueError("gate_on needs gate")
        args.append(_option("gate-on", str(gate_on)))
    with _named_as_given([base, new]):
        _, report = _run_json(args)
    _warn_notes(report, 2)
    for line in _gate_failures(report):
        # The lines the command prints on stderr as it exits 1.
        warnings.warn(line, stacklevel=2)
    return report


def _gate_failures(report):
    # The lines the command prints on stderr for a gate that tripped (one
    # per stage it tripped on) or compared no stage, without their leading
    # "torchtriage: ": the report's gate.messages.
    return list((report.get("gate") or {}).get("messages") or [])
