"""The study file of tests that need stored runs but no device: the null file system on a
fake device (a directory in the test's folder) and null workloads (fslab.workloads.null:
a value, or a failure, on request), without a cache drop."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """
[study]
name = "{name}"
repetitions = {repetitions}
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]
{workloads}"""


def null_workload(name: str = "w", lines: str = "", axes: str = "") -> str:
    """One [[workloads]] table: ``lines`` its own parameters, ``axes`` its [workloads.axes]."""
    return (f'\n[[workloads]]\nkind = "null"\nname = "{name}"\n' + (lines + "\n" if lines else "")
            + (f"[workloads.axes]\n{axes}\n" if axes else ""))


def null_study_text(folder: Path, workloads: str, *, name: str = "null", repetitions: int = 2) -> str:
    return TEMPLATE.format(name=name, repetitions=repetitions, fake=folder / "fake", workloads=workloads)


def write_null_study(folder: Path, workloads: str, *, name: str = "null", repetitions: int = 2,
                     file_name: str = "study.toml") -> Path:
    """``folder``/``file_name`` with ``workloads`` (null_workload tables)."""
    path = folder / file_name
    path.write_text(null_study_text(folder, workloads, name=name, repetitions=repetitions))
    return path
