"""What `fslab plan` shows of a plan, as texts and a table the command prints (or as JSON):
the cells, the runs, the devices, where each file system runs and what was left out."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from .units import assignments_text, counted

if TYPE_CHECKING:
    from .forecast import Forecast
    from .plan import Plan
    from .spec import StudySpec


def cell_rows(plan: Plan) -> list[dict[str, object]]:
    return [
        {"cell": c.id, "filesystem": c.filesystem, "fs_type": c.fs_type, "workload": c.workload,
         "kind": c.workload_kind, "axes": c.axes, "params": c.params, "backend": c.backend,
         "aging": c.aging}
        for c in plan.cells
    ]


def plan_json(spec: StudySpec, source: str, quick: bool, p: Plan, outlook: Forecast) -> dict[str, Any]:
    """`fslab plan --json`."""
    return {
        "study": spec.study.name, "source": source, "quick": quick,
        "repetitions": p.repetitions, "order": p.order, "fresh": p.fresh,
        # A seed this listing drew is not the one a run will draw: only a fixed one is shown.
        "seed": spec.study.seed,
        "cells": cell_rows(p),
        "runs": [{"cell": r.cell.id, "repetition": r.repetition} for r in p.runs],
        "skipped": [{"filesystem": s.filesystem, "reason": s.reason} for s in p.skipped],
        "placed": [{"filesystem": w.filesystem, "backend": w.backend, "reason": w.reason} for w in p.placed],
        "not_compared": p.uncompared(),
        "auto": p.auto.to_json() if p.auto else None,
        "forecast": outlook.to_json(),
    }


def cells_table(spec: StudySpec, source: str, quick: bool, p: Plan) -> Table:
    """One row per cell: file system, its options, backend, workload and parameters."""
    table = Table(title=f"{spec.study.name} ({source}){' — quick' if quick else ''}",
                  title_justify="left")
    for col in ("#", "file system", "mkfs options", "mount options", "backend", "workload", "parameters"):
        table.add_column(col)
    for i, c in enumerate(p.cells):
        params = assignments_text(c.params.items(), " ")
        if c.aging is not None:
            params += " aging=" + assignments_text(((k, v) for k, v in c.aging.items() if v is not None), ",")
        table.add_row(str(i + 1), c.filesystem, escape(" ".join(c.mkfs) or "(defaults)"),
                      escape(",".join(c.mount) or "(defaults)"), c.backend + (f" {c.kernel}" if c.kernel else ""),
                      escape(c.label), escape(params))
    return table


def seed_text(seed: int | None, order: str) -> str:
    """The order's seed as `fslab plan` can honestly state it."""
    if seed is not None:
        return f"seed {seed}"
    if order == "in-order":
        return "no shuffle"
    return "seed drawn when the study runs and recorded with it; set study.seed to fix it"


def runs_text(spec: StudySpec, p: Plan, outlook: Forecast) -> str:
    """'12 cells x 3 repetitions = 36 runs, order shuffled (...), fresh file system per run'."""
    repetitions = (f"{p.auto.min_n}–{p.auto.max_n} repetitions (auto: {p.auto.describe()}) = "
                   f"{outlook.runs_min} to {len(p.runs)} runs" if p.auto else
                   f"{counted(p.repetitions, 'repetition')} = {counted(len(p.runs), 'run')}")
    return (f"{counted(len(p.cells), 'cell')} x {repetitions}, "
            f"order {p.order} ({seed_text(spec.study.seed, p.order)}), fresh file system per {p.fresh}"
            + (", each set of files laid out once per pass (reuse_layout)" if spec.study.reuse_layout else ""))


def device_lines(spec: StudySpec, p: Plan) -> list[str]:
    """Each device the jobs make (with its file systems when there are several), and the
    confirmations the user's own disks need (markup-escaped)."""
    from .named_disks import named_disks
    from .report.provenance_facts import device_text

    users: dict[str, list[str]] = {}  # a device (as text) -> the file systems on it
    for job in p.jobs:
        device = job.settings.device
        # An array of named members has no member images: their size would mislead.
        shown = {k: v for k, v in device.items()
                 if v is not None and not (k == "member_size" and device.get("members"))}
        text = device_text(shown)
        if job.cell.filesystem not in users.setdefault(text, []):
            users[text].append(job.cell.filesystem)
    # in the study file's order of file systems, not the jobs' (shuffled by a drawn seed)
    place = {name: i for i, name in enumerate(dict.fromkeys(c.filesystem for c in p.cells))}
    for names in users.values():
        names.sort(key=place.__getitem__)
    lines = [escape("device: " + text + (f" ({', '.join(names)})" if len(users) > 1 else ""))
             for text, names in sorted(users.items(), key=lambda item: place[item[1][0]])]
    disks = list(dict.fromkeys(d.path for d in named_disks(spec)))
    if disks:
        lines.append(escape(f"your disks, formatted by `fslab run` only when each is confirmed: "
                            f"{' '.join(f'--destroy-data-on {shlex.quote(d)}' for d in disks)}"))
    return lines


def placement_lines(p: Plan) -> list[tuple[str, bool]]:
    """Where the file systems run and why (one line for those placed alike), those left
    out, and what is not compared: (rich markup, whether rich highlights it)."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for w in p.placed:
        by_reason.setdefault((w.backend, w.reason), []).append(w.filesystem)
    lines = []
    for (backend, reason), names in by_reason.items():
        where = "on the host" if backend == "host" else f"in the {backend}"
        lines.append((escape(f"{', '.join(names)} {'runs' if len(names) == 1 else 'run'} {where}: {reason}"), False))
    lines += [(f"[yellow]{s.filesystem}: {s.reason}[/yellow]", True) for s in p.skipped]
    if p.uncompared():
        lines.append((f"[yellow]{escape(p.uncompared() or '')}[/yellow]", False))
    return lines
