"""A real short traced study (ext4 and xfs, fio random writes with fsync, 2 runs each, on
loop devices under tracefs), shared by the report and prediction tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

STUDY = """
[study]
name = "trace report test"
repetitions = 2
trace = true
{extra}

[device]
size = "512MiB"
image_dir = "{images}"

[filesystems.ext4]
[filesystems.xfs]

[[workloads]]
kind = "fio"
name = "randwrite"
rw = "randwrite"
bs = "4k"
size = "16M"
io_size = "4M"
fsync = 8
runtime = 1
"""


def traced_study_support() -> str | None:
    """Why a real traced study cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "needs root"
    if not Path("/dev/loop-control").exists() or shutil.which("fio") is None:
        return "needs loop devices and fio"
    from fslab.errors import MissingCapability
    from fslab.trace.capture import tracefs_root

    try:
        root = tracefs_root()
    except MissingCapability as exc:
        return str(exc)
    if not (root / "events" / "block" / "block_rq_issue").is_dir():
        return "no block tracepoints"
    return None


def run_traced_study(tmp: Path, extra: str = "") -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the study (quick) into ``tmp/results``; returns (results dir, runs, cells) as
    stored. Checks that no loop device, mount or tracefs instance of ours is left."""
    from conftest import fslab_leftovers
    from fslab.runner import run_study
    from fslab.store import Store
    from fslab.trace.capture import TRACEFS

    study = tmp / "study.toml"
    study.write_text(STUDY.format(images=tmp / "images", extra=extra))
    results = tmp / "results"
    outcome = run_study(str(study), results_dir=results, quick=True)
    assert outcome.runs_failed == 0
    # Only ours: other sessions' tests may hold loop devices at the same time.
    assert [x for x in fslab_leftovers() if str(tmp) in x] == []
    assert not [p for p in (TRACEFS / "instances").iterdir() if p.name.startswith(f"fslab-{os.getpid()}-")]
    with Store(results) as store:
        return results, store.runs(outcome.study_id), store.cells(outcome.study_id)


def rendered_text(renderables: list[Any]) -> str:
    """What rich prints for ``renderables``, as plain text."""
    from rich.console import Console

    console = Console(record=True, width=400, file=open(os.devnull, "w"))  # wide: no header wraps
    for r in renderables:
        console.print(r)
    return console.export_text()
