"""Exporters: one record per run (study, cell parameters, file system, workload,
repetition, status, error, metrics). Each exporter is one registry entry with one method.

Numbering is the one people read everywhere: ``repetition`` counts from 1 (the console's
"#1" is repetition 1). Units use the one vocabulary of fslab.report.units ("IOPS")."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from .registry import Registry
from .report.units import canonical_unit
from .store import StudyRow

Exporter = Callable[[StudyRow, list[dict[str, Any]]], str]
EXPORTERS: Registry[Exporter] = Registry("export format")


# The configuration a run was measured in, as columns: a comparison of two data= options
# (or kernels, backends) can be read from the export without opening SQLite.
PROVENANCE_COLUMNS = {
    "kernel": "kernel", "host": "host", "backend": "backend", "mkfs_command": "mkfs command",
    "mkfs_version": "mkfs version", "mount_options_requested": "mount options requested",
    "mount_options_in_effect": "mount options in effect", "device_kind": "device kind",
}


def run_provenance(run: dict[str, Any], quick: bool) -> dict[str, str]:
    """The run's configuration facts ('' when not recorded, e.g. a run that failed early)."""
    from .report.provenance_facts import run_facts

    facts = run_facts(run, quick)
    return {key: "" if facts.get(name, "—") == "—" else facts[name] for key, name in PROVENANCE_COLUMNS.items()}


def run_records(study: StudyRow, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
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
            "metrics": {name: {**m, "unit": canonical_unit(m["unit"])} for name, m in run["metrics"].items()},
        })
    return out


def to_json(study: StudyRow, runs: list[dict[str, Any]]) -> str:
    return json.dumps(run_records(study, runs), indent=2, default=str) + "\n"


def to_csv(study: StudyRow, runs: list[dict[str, Any]]) -> str:
    """Flat CSV: parameters as ``param.NAME``, metrics as ``NAME [unit]`` columns."""
    records = run_records(study, runs)
    params = sorted({k for r in records for k in r["params"]})
    metric_units: dict[str, str] = {}
    for r in records:
        for name, m in r["metrics"].items():
            metric_units.setdefault(name, m["unit"])
    metrics = sorted(metric_units)
    fixed = ["study_id", "study", "quick", "run_id", "filesystem", "fs_type", "workload",
             "workload_kind", "backend", "repetition", "sequence", "status", "error"]
    header = (fixed + [f"param.{p}" for p in params] + [f"prov.{k}" for k in PROVENANCE_COLUMNS]
              + [f"{m} [{metric_units[m]}]" for m in metrics])
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for r in records:
        row = [r[k] for k in fixed]
        row += [r["params"].get(p, "") for p in params]
        row += [r["provenance"][k] for k in PROVENANCE_COLUMNS]
        for m in metrics:
            entry = r["metrics"].get(m)
            if entry is None:
                row.append("")
            else:
                row.append(entry["value"] if entry["value"] is not None else entry["note"] or "")
        writer.writerow(row)
    return buffer.getvalue()


EXPORTERS.register("json", to_json)
EXPORTERS.register("csv", to_csv)
