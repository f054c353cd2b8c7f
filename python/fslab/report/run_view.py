"""One stored run, whole (`fslab report --run ID`): its cell's parameters, status and error,
every metric with its unit, its provenance, the artifact files with their sizes, and the
workload's raw output — fio's JSON as one summary line per job and direction, other text
outputs as they are — each cut to a few lines with the path to the full file.

ID is the run's id (`run_id` in `fslab export`, shown beside failed runs) or its artifact
folder's name (``<cell>-r<repetition>``) in the study asked for (the newest by default)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FslabError
from ..stored import STATUS_OK, RetiredRun, StoredCell, StoredMetric, StoredRun, StudyRow
from ..units import assignments_text, counted, utc_text, value_text
from .labels import cell_label, fs_column
from .provenance_facts import bytes_text, run_facts
from .units import display_scale, fmt

if TYPE_CHECKING:
    from rich.console import RenderableType

MAX_LINES = 25  # per raw output shown; the path to the full file is given beside it
# Files that describe how the run was set up rather than what the workload printed: listed, not shown.
CONTEXT_FILES = frozenset({"mkfs.txt", "fsinfo.txt", "fio-layout.json", "bonnie-sizes.json", "trace.parquet"})


@dataclass
class RawOutput:
    name: str
    path: str
    what: str  # "as written" | "summary of fio's JSON"
    lines: list[str]
    total_lines: int  # lines in the file (or in the summary): more than shown means cut

    @property
    def truncated(self) -> bool:
        return self.total_lines > len(self.lines)


@dataclass
class RunView:
    run_id: int
    study_id: int
    study_name: str
    title: str
    status: str
    error: str | None
    parameters: list[tuple[str, str]]
    metrics: list[tuple[str, str, str, str]]  # name, value in display unit, stored unit, note
    provenance: list[tuple[str, str]]
    artifact_dir: str
    artifacts: list[tuple[str, int]]  # file name, size in bytes
    raw: list[RawOutput] = field(default_factory=list)


def _ranges(ids: list[int]) -> str:
    """1, 2, 3, 7 -> '1–3, 7'."""
    out: list[str] = []
    for i in sorted(ids):
        if out and out[-1].split("–")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('–')[0]}–{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def _retired(old: RetiredRun, cell: StoredCell) -> StoredRun:
    """A retired attempt in a stored run's shape (its metrics were not kept: it failed)."""
    return StoredRun(run_id=old["id"], cell=cell, repetition=old["repetition"], sequence=old["sequence"],
                     status=old["status"], error=old["error"], started_at=old["started_at"],
                     finished_at=old["finished_at"], provenance=json.loads(old["provenance_json"]),
                     artifact_dir=old["artifact_dir"], metrics={}, retired_at=old["retired_at"])


def find_run(results: Path, wanted: str, study_id: int | None) -> tuple[StudyRow, StoredRun]:
    """(study row, run) for an id or artifact folder name; an FslabError naming the runs
    that exist when there is none."""
    from ..store import Store

    with Store(results, read_only=True) as store:
        studies = [store.study(study_id)] if study_id is not None or not wanted.isdigit() else store.studies()
        if not studies:
            store.study(None)  # raises: no studies
        known: dict[int, list[int]] = {}
        folders: list[str] = []
        for study in studies:
            for run in store.runs(study.id):
                known.setdefault(study.id, []).append(run["run_id"])
                folder = Path(run["artifact_dir"] or "").name
                if folder:
                    folders.append(folder)
                if (wanted.isdigit() and run["run_id"] == int(wanted)) or (folder and folder == wanted):
                    return study, run
        for study in studies:  # a failed attempt --retry-failed ran again, kept as history
            cells = {c["id"]: c for c in store.cells(study.id, replaced_too=True)}
            for old in store.retired_runs(study.id):
                folder = Path(old["artifact_dir"] or "").name
                if ((wanted.isdigit() and old["id"] == int(wanted)) or (folder and folder == wanted)) \
                        and old["cell_id"] in cells:
                    return study, _retired(old, cells[old["cell_id"]])
    exists = "; ".join(f"study {s}: run ids {_ranges(ids)}" for s, ids in known.items()) or "no stored runs"
    example = f" or an artifact folder name such as {folders[0]}" if folders else ""
    raise FslabError(f"--run {wanted}: no such run in {results} ({exists}). Pass a run id{example}; "
                     f"`fslab export -r {shlex.quote(str(results))} --format csv` lists every run with its run_id")


def fio_summary(text: str) -> list[str]:
    """One line per fio job and direction that did I/O: IOPS, bandwidth, data moved, runtime
    and completion latency (mean, p99), in fio's own JSON fields."""
    start = text.find("{")  # fio may print notes before its JSON
    data = json.loads(text[start:]) if start >= 0 else {}
    lines = [f"fio {data.get('fio version', '?')}, {counted(len(data.get('jobs', [])), 'job')}"]
    for job in data.get("jobs", []):
        for direction in ("read", "write", "trim"):
            d = job.get(direction) or {}
            if not d.get("io_bytes"):
                continue
            bw_div, bw_unit = display_scale("B/s", d.get("bw_bytes", 0))
            io_div, io_unit = display_scale("B", d["io_bytes"])
            clat = d.get("clat_ns") or {}
            p99 = (clat.get("percentile") or {}).get("99.000000")
            lat_div, lat_unit = display_scale("ns", clat.get("mean") or 0)
            lat = f", clat mean {fmt(clat['mean'] / lat_div)} {lat_unit}" if clat.get("mean") else ""
            lat += f", p99 {fmt(p99 / lat_div)} {lat_unit}" if p99 else ""
            lines.append(f"{job.get('jobname', '?')}: {direction}: {fmt(d.get('iops', 0))} IOPS, "
                         f"{fmt(d.get('bw_bytes', 0) / bw_div)} {bw_unit}, {fmt(d['io_bytes'] / io_div)} {io_unit} "
                         f"in {fmt(d.get('runtime', 0))} ms{lat}")
        sync = (job.get("sync") or {}).get("lat_ns") or {}
        if sync.get("N"):
            div, unit = display_scale("ns", sync.get("mean") or 0)
            lines.append(f"{job.get('jobname', '?')}: sync: {sync['N']:,} calls, mean {fmt(sync['mean'] / div)} {unit}")
    return lines


def _raw(path: Path) -> RawOutput | None:
    """A text artifact as shown: fio's JSON summarised, any other text file as it is."""
    data = path.read_bytes()
    if b"\0" in data[:4096]:
        return None  # binary: listed only
    text = data.decode("utf-8", errors="replace")
    if path.name == "fio.json":
        try:
            lines, what = fio_summary(text), "summary of fio's JSON"
        except (ValueError, TypeError, KeyError, AttributeError):
            lines, what = text.splitlines(), "as written (not valid fio JSON)"
    else:
        lines, what = text.splitlines(), "as written"
    if not lines:
        return None
    return RawOutput(path.name, str(path), what, lines[:MAX_LINES], len(lines))


def _metric_rows(metrics: dict[str, StoredMetric]) -> list[tuple[str, str, str, str]]:
    out = []
    for name in sorted(metrics):
        m = metrics[name]
        value = m["value"]
        if value is None:
            out.append((name, "—", m["unit"], m["note"] or ""))
            continue
        divisor, unit = display_scale(m["unit"], value)
        out.append((name, f"{fmt(value / divisor)} {unit}", m["unit"], m["note"] or ""))
    return out


def run_view(results: Path, wanted: str, study_id: int | None = None) -> RunView:
    study, run = find_run(results, wanted, study_id)
    cell = run["cell"]
    params = [("file system", fs_column(cell)), ("workload", f"{cell_label(cell)} ({cell['workload_kind']})"),
              ("repetition", str(run["repetition"] + 1)), ("sequence in the study", str(run["sequence"])),
              ("mkfs options", " ".join(cell.get("mkfs") or []) or "(defaults)"),
              ("mount options", ",".join(cell.get("mount") or []) or "(defaults)")]
    params += [(k, value_text(v)) for k, v in cell["params"].items()]
    aging = cell.get("aging")
    if aging:
        params.append(("aging", assignments_text((k, v) for k, v in aging.items() if v is not None)))
    params.append(("wall time", f"{run['finished_at'] - run['started_at']:.1f} s"))
    folder = results / run["artifact_dir"] if run["artifact_dir"] else None
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder and folder.is_dir() else []
    retired = run.get("retired_at")
    history = "" if retired is None else (f" (a failed attempt, run again by --retry-failed at {utc_text(retired)}; "
                                          "kept as history, never reported as a result)")
    view = RunView(
        run["run_id"], study.id, study.name,
        f"run {run['run_id']} of study {study.id} ({study.name}): {fs_column(cell)}, {cell_label(cell)}, "
        f"repetition {run['repetition'] + 1}{history}",
        run["status"], run["error"], params,
        _metric_rows(run["metrics"]), list(run_facts(run, study.quick).items()),
        str(folder) if folder else "",
        [(str(p.relative_to(folder)), p.stat().st_size) for p in files] if folder else [])
    first = [p for p in files if p.name == "error.txt"]  # why it failed comes first
    for path in first + [p for p in files if p.name not in CONTEXT_FILES and p.name != "error.txt"]:
        raw = _raw(path)
        if raw is not None:
            view.raw.append(raw)
    return view


def render_run(view: RunView) -> list[RenderableType]:
    """Rich renderables of one run, in reading order."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    def table(title: str, columns: list[str], rows: Sequence[tuple[str, ...]]) -> Table:
        t = Table(title=escape(title) or None, title_justify="left")
        for c in columns:
            t.add_column(escape(c))
        for r in rows:
            t.add_row(*[Text(v) for v in r])
        return t

    ok = view.status == STATUS_OK
    out: list[RenderableType] = [Text(view.title + " — " + view.status, style="bold" if ok else "bold red")]
    if view.error:
        out.append(Text("error: " + view.error, style="red"))
    out.append(table("parameters", ["parameter", "value"], view.parameters))
    out.append(table("metrics (value in the unit shown; stored in the base unit)",
                     ["metric", "value", "stored unit", "note"], view.metrics) if view.metrics
               else Text("no metrics stored for this run"))
    out.append(table("provenance", ["fact", "value"], view.provenance))
    if view.artifacts:
        out.append(Text(f"artifacts in {view.artifact_dir}:"))
        out.append(table("", ["file", "size"], [(name, bytes_text(size)) for name, size in view.artifacts]))
    else:
        out.append(Text(f"no artifact files stored{' in ' + view.artifact_dir if view.artifact_dir else ''}"))
    for raw in view.raw:
        shown = (f"first {len(raw.lines)} of {raw.total_lines} lines" if raw.truncated else
                 counted(raw.total_lines, "line"))
        out.append(Text(f"\n── {raw.name} ({raw.what}; {shown}; full file: {raw.path})", style="bold"))
        out.append(Text("\n".join(raw.lines)))
    return out
