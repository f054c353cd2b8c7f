"""Exporters: one record per run (study, cell parameters, file system, workload,
repetition, status, error, metrics). Each exporter is one registry entry with one method.

Numbering is the one people read everywhere: ``repetition`` counts from 1 (the console's
"#1" is repetition 1). Units use the one vocabulary of fslab.report.units ("IOPS")."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from .registry import Registry
from .report.units import canonical_unit
from .stored import Params, StoredMetric, StoredRun, StudyRow

Exporter = Callable[[StudyRow, list[StoredRun]], "str | bytes"]  # bytes: a binary format
EXPORTERS: Registry[Exporter] = Registry("export format")


# The configuration a run was measured in, as columns: a comparison of two data= options
# (or kernels, backends) can be read from the export without opening SQLite.
PROVENANCE_COLUMNS = {
    "kernel": "kernel", "host": "host", "backend": "backend", "mkfs_command": "mkfs command",
    "mkfs_version": "mkfs version", "mount_options_requested": "mount options requested",
    "mount_options_in_effect": "mount options in effect", "device_kind": "device kind",
    "worker": "worker",
}


def run_provenance(run: StoredRun, quick: bool) -> dict[str, str]:
    """The run's configuration facts ('' when not recorded, e.g. a run that failed early)."""
    from .report.provenance_facts import run_facts

    facts = run_facts(run, quick)
    return {key: "" if facts.get(name, "—") == "—" else facts[name] for key, name in PROVENANCE_COLUMNS.items()}


class ExportRecord(TypedDict):
    """One run as every exporter writes it (JSON as is; CSV and Parquet flattened)."""
    study_id: int
    study: str
    quick: bool
    run_id: int
    filesystem: str
    fs_type: str
    workload: str
    workload_kind: str
    backend: str
    params: Params
    axes: Params
    repetition: int  # from 1
    sequence: int
    status: str
    error: str | None
    started_at: float
    finished_at: float
    provenance: dict[str, str]  # PROVENANCE_COLUMNS key -> text ('' when not recorded)
    metrics: dict[str, StoredMetric]


def run_records(study: StudyRow, runs: list[StoredRun]) -> list[ExportRecord]:
    out: list[ExportRecord] = []
    for run in runs:
        cell = run["cell"]
        out.append({
            "study_id": study.id,
            "study": study.name,
            "quick": study.quick,
            "run_id": run["run_id"],
            "filesystem": cell["filesystem"],
            "fs_type": cell["fs_type"],
            "workload": cell["workload"],
            "workload_kind": cell["workload_kind"],
            "backend": cell["backend"],
            "params": cell["params"],
            "axes": cell["axes"],
            "repetition": run["repetition"] + 1,  # 1-based, as the console prints it
            "sequence": run["sequence"],
            "status": run["status"],
            "error": run["error"],
            "started_at": run["started_at"],
            "finished_at": run["finished_at"],
            "provenance": run_provenance(run, study.quick),
            "metrics": {name: StoredMetric(
                value=m["value"], unit=canonical_unit(m["unit"]), note=m["note"],
                higher_is_better=m["higher_is_better"])
                for name, m in run["metrics"].items()},
        })
    return out


def to_json(study: StudyRow, runs: list[StoredRun]) -> str:
    return json.dumps(run_records(study, runs), indent=2, default=str) + "\n"


FIXED = ["study_id", "study", "quick", "run_id", "filesystem", "fs_type", "workload",
         "workload_kind", "backend", "repetition", "sequence", "status", "error"]


@dataclass
class Flat:
    """The flat table CSV and Parquet share: fixed columns, ``param.NAME`` (as the workload's
    tool read it: fio's direct as 1), ``axis.NAME`` (the cell's axis values as the study file
    wrote them: direct as true, what labels and --contrast use), ``prov.KEY``, then ``NAME
    [unit]`` per metric (values as stored: None where a run has no number)."""
    params: list[str]
    axes: list[str]
    metrics: dict[str, str]  # name -> unit
    records: list[ExportRecord]

    @property
    def header(self) -> list[str]:
        return (FIXED + [f"param.{p}" for p in self.params] + [f"axis.{a}" for a in self.axes]
                + [f"prov.{k}" for k in PROVENANCE_COLUMNS] + [f"{m} [{u}]" for m, u in self.metrics.items()])

    @property
    def fixed_width(self) -> int:
        """Columns before the metrics."""
        return len(FIXED) + len(self.params) + len(self.axes) + len(PROVENANCE_COLUMNS)

    def row(self, r: ExportRecord) -> list[Any]:
        """One run's values (a metric's entry is its stored dict, or None when absent)."""
        fields: Mapping[str, Any] = r  # FIXED names some of its keys
        return ([fields[k] for k in FIXED] + [r["params"].get(p) for p in self.params]
                + [r["axes"].get(a) for a in self.axes]
                + [r["provenance"][k] for k in PROVENANCE_COLUMNS] + [r["metrics"].get(m) for m in self.metrics])


def flat(study: StudyRow, runs: list[StoredRun]) -> Flat:
    records = run_records(study, runs)
    metric_units: dict[str, str] = {}
    for r in records:
        for name, m in r["metrics"].items():
            metric_units.setdefault(name, m["unit"])
    return Flat(sorted({k for r in records for k in r["params"]}),
                list(dict.fromkeys(k for r in records for k in r["axes"])),
                {m: metric_units[m] for m in sorted(metric_units)}, records)


def _csv_text(value: Any) -> Any:
    """A value as a CSV cell: a flag as ``true``/``false`` (as the study file and JSON write
    it, not Python's ``True``), a list or table as JSON (what the Parquet export writes), a
    missing value as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def to_csv(study: StudyRow, runs: list[StoredRun]) -> str:
    """Flat CSV: parameters as ``param.NAME``, metrics as ``NAME [unit]`` columns; a run
    without a number has the reason (the metric's note) in its place."""
    table = flat(study, runs)
    n_fixed = table.fixed_width
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(table.header)
    for r in table.records:
        values = table.row(r)
        out = [_csv_text(v) for v in values[:n_fixed]]
        for entry in values[n_fixed:]:
            out.append("" if entry is None else entry["value"] if entry["value"] is not None
                       else entry["note"] or "")
        writer.writerow(out)
    return buffer.getvalue()


def _arrow_type(values: list[Any]) -> Any:
    """The narrowest column type that holds every value: bool, int64, float64, else string."""
    import pyarrow as pa

    present = [v for v in values if v is not None and v != ""]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def to_parquet(study: StudyRow, runs: list[StoredRun]) -> bytes:
    """The CSV's rows and columns as typed Parquet: numbers as int64/float64, flags as bool,
    a missing value as null. A metric column holds numbers only; where a run has no number,
    its reason is in the column ``NAME [unit] note`` (present only when some run has one).
    Each metric column's unit is also in its field metadata (``unit``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = flat(study, runs)
    n_fixed = table.fixed_width
    rows = [table.row(r) for r in table.records]
    fields, arrays = [], []
    for i, name in enumerate(table.header[:n_fixed]):
        values = [row[i] if row[i] != "" else None for row in rows]
        kind = _arrow_type(values)
        if kind == pa.string():
            values = [None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values]
        fields.append(pa.field(name, kind))
        arrays.append(pa.array(values, kind))
    for j, (metric, unit) in enumerate(table.metrics.items()):
        entries = [row[n_fixed + j] for row in rows]
        fields.append(pa.field(f"{metric} [{unit}]", pa.float64(), metadata={"unit": unit}))
        arrays.append(pa.array([None if e is None or e["value"] is None else float(e["value"]) for e in entries],
                               pa.float64()))
        notes = [None if e is None or e["value"] is not None else e["note"] or "no number" for e in entries]
        if any(n is not None for n in notes):
            fields.append(pa.field(f"{metric} [{unit}] note", pa.string()))
            arrays.append(pa.array(notes, pa.string()))
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), buffer)
    return buffer.getvalue()


EXPORTERS.register("json", to_json)
EXPORTERS.register("csv", to_csv)
EXPORTERS.register("parquet", to_parquet)
