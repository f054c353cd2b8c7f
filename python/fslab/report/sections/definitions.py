"""What was run, so a colleague can read a report alone: the study's order and its seed,
when it ran and with which fslab, each file-system entry as made and mounted, and each
workload's whole definition (every parameter, the axes it varied, memory limit, timeout,
and the text of each job file it read). Built for every study, from the stored cells
and study row only."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from typing import Any

from ...stored import StoredCell, StoredRun, StudyRow
from ...units import utc_text
from ..aged_state import aged_state_table, aging_definition
from ..data import ModelSection, TableSection
from ..provenance_facts import bytes_text, device_text
from .base import SECTIONS, Section, StudyData


def _when(seconds: float | None) -> str:
    return "not finished" if seconds is None else utc_text(seconds)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def study_statements(row: StudyRow, runs: Sequence[StoredRun]) -> list[str]:
    """Where the study came from, how its runs were ordered (with the seed that fixes the
    order), when it ran and with which fslab version(s)."""
    versions = sorted({str(v) for r in runs if (v := ((r.get("provenance") or {}).get("host") or {}).get("fslab"))})
    repetitions = "until answered (repetitions = \"auto\")" if "auto" in row.facts else \
        f"{row.repetitions} repetition{'s' * (row.repetitions != 1)} per cell"
    return [
        f"study file: {row.source}" + (" (quick: sizes and runtimes scaled down, not for conclusions)"
                                       if row.quick else ""),
        f"{repetitions}, order {row.order} (seed {row.seed}: the same seed gives the same order), "
        f"a fresh file system per {row.fresh}" + _layout_text(runs),
        f"started {_when(row.created_at)}, finished {_when(row.finished_at)}",
        "fslab " + (", ".join(versions) if versions else "version not recorded"),
        "device ([device]): " + (device_text(_study_device(row)) or "the default image"),
        *(f"revised by {r.get('by', '--retry-failed')} at {_when(r['at'])}: {'; '.join(r['changed'])} "
          + ("(a change that touches no run)" if r.get("by") == "--resume" else "(the cases it changed, whose "
             "runs had all failed, ran again under the change; their failed runs are kept as history)")
          for r in row.facts.get("revisions", [])),
    ]


def _layout_text(runs: Sequence[StoredRun]) -> str:
    """How many runs used files an earlier run of their pass laid out (reuse_layout)."""
    layouts = [layout for r in runs if (layout := (r.get("provenance") or {}).get("layout"))]
    if not layouts:
        return ""
    reused = sum(1 for layout in layouts if layout.get("reused"))
    return (f"; each set of files laid out once per pass (reuse_layout): {reused} of {len(runs)} runs "
            "ran on files an earlier run of their pass laid out (its provenance names which)")


def _study_device(row: StudyRow) -> dict[str, Any]:
    """The study file's own [device] section, as written (entries may have their own)."""
    try:
        device = tomllib.loads(row.spec_text).get("device", {})
    except tomllib.TOMLDecodeError:
        return {}
    return device if isinstance(device, dict) else {}


def filesystem_table(cells: Sequence[StoredCell], spec_text: str = "") -> TableSection:
    """Each file-system entry once: its type, mkfs and mount options, backend and device
    (the entry's own [filesystems.NAME.device], from the cell or the stored study file)."""
    try:
        entries = tomllib.loads(spec_text).get("filesystems", {}) if spec_text else {}
    except tomllib.TOMLDecodeError:
        entries = {}
    rows: list[list[str]] = []
    seen: set[str] = set()
    for c in cells:
        if c["filesystem"] in seen:
            continue
        seen.add(c["filesystem"])
        device = c.get("device") or (entries.get(c["filesystem"]) or {}).get("device") or {}
        # .get: cells stored by older versions (and some test fixtures) lack fields.
        backend = c.get("backend", "host") + (f" {c.get('kernel')}" if c.get("kernel") else "")
        rows.append([c["filesystem"], c.get("fs_type", c["filesystem"]), " ".join(c.get("mkfs", [])) or "(defaults)",
                     ",".join(c.get("mount", [])) or "(defaults)", backend,
                     device_text(device) or "the study's [device]"])
    return TableSection("workload", "file systems as made and mounted",
                        ["entry", "type", "mkfs options", "mount options", "backend", "device"], rows)


def _limits_in_effect(runs: Sequence[StoredRun]) -> dict[str, set[str]]:
    """Workload -> the memory limits its runs ran under, as their provenance records them:
    the study's cgroup (``memory_limit``), or one the workload made itself (Bonnie++'s
    ``ram``: ``tool_info.memory_limit``), so the report never says 'none' of a run that ran
    in a cgroup."""
    out: dict[str, set[str]] = {}
    for run in runs:
        provenance = run.get("provenance") or {}
        study_limit = provenance.get("memory_limit") or {}
        own = (provenance.get("tool_info") or {}).get("memory_limit") or {}
        if study_limit.get("limit_bytes"):
            text = bytes_text(int(study_limit["limit_bytes"]))
        elif own.get("limit_bytes"):
            text = f"{bytes_text(int(own['limit_bytes']))}, the workload's own cgroup ({own.get('source', 'its own')})"
        else:
            text = "none"
        out.setdefault(run["cell"]["workload"], set()).add(text)
    return out


def workload_tables(cells: Sequence[StoredCell], runs: Sequence[StoredRun] = ()) -> list[TableSection]:
    """Per workload: every parameter (an axis's values listed together), the memory limit
    its runs ran under (the cells' own where no run is stored yet), timeout and aging (what
    its fill measured); the aged state its runs started from (both measures, from ``runs``);
    then the text of each file it read (a fio job file), line by line."""
    in_effect = _limits_in_effect(runs)
    by_workload: dict[str, list[StoredCell]] = {}
    for c in cells:
        by_workload.setdefault(c["workload"], []).append(c)
    tables: list[TableSection] = []
    for name, group in by_workload.items():
        first = group[0]
        axes: dict[str, list[str]] = {}
        for c in group:
            for key, value in c.get("axes", {}).items():
                if _value(value) not in axes.setdefault(key, []):
                    axes[key].append(_value(value))
        rows = [["kind", first.get("workload_kind", "?")]]
        rows += [[key, _value(value)] for key, value in first.get("params", {}).items() if key not in axes]
        rows += [[key, "axis: " + " | ".join(values)] for key, values in axes.items()]
        memory = {c.get("memory_bytes") for c in group}
        asked = ", ".join("none" if m is None else bytes_text(m) for m in sorted(
            memory, key=lambda m: -1 if m is None else m))
        rows.append(["memory limit", ", ".join(sorted(in_effect[name])) if name in in_effect else asked])
        timeouts = {c.get("timeout_s") for c in group}
        rows.append(["timeout", ", ".join("the workload's default" if t is None else f"{t:g} s"
                                          for t in sorted(timeouts, key=lambda t: -1 if t is None else t))])
        agings = {json.dumps(c.get("aging"), sort_keys=True): c.get("aging") for c in group}
        if any(agings.values()):
            rows.append(["aging", "; ".join(aging_definition(a) for a in agings.values())])
        tables.append(TableSection("workload", f"workload {name}", ["parameter", "value"], rows,
                                   note="as the workload's tool reads them: sizes in bytes (fio's own reading "
                                   "of '4k' or '16M'), times in seconds"))
        state = aged_state_table(name, group, runs)
        if state is not None:
            tables.append(state)
        for file_name, text in (first.get("inputs") or {}).items():
            lines = [[str(k + 1), line] for k, line in enumerate(text.splitlines())]
            tables.append(TableSection("workload", f"workload {name}: {file_name} as run", ["line", "text"],
                                       lines, note="the file's text was read when the study was planned "
                                       "and travelled with each job; it is part of the cells' identity"))
    return tables


def build(study: StudyData) -> list[ModelSection]:
    if study.study is None or not study.cells:
        return []
    return [ModelSection("definitions", "What was run",
                         "Everything that defines this study's numbers, as stored with it.",
                         study_statements(study.study, study.runs),
                         tables=[filesystem_table(study.cells, study.study.spec_text),
                                 *workload_tables(study.cells, study.runs)])]


SECTIONS.register("definitions", Section(build, order=100))
