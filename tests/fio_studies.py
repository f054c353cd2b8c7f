"""The study file many tests write: one fio workload on ext4 on a 256 MiB image, the images
in the test's own folder, runs in the order written."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """
[study]
name = "{name}"
repetitions = {repetitions}
order = "in-order"
{study_extra}

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "w"
{workload}
"""


def write_fio_study(folder: Path, workload: str, *, name: str = "fio on ext4", repetitions: int = 1,
                    study_extra: str = "") -> Path:
    """``folder``/study.toml with ``workload`` (TOML lines of the fio workload) and
    ``study_extra`` (lines of its [study] section)."""
    path = folder / "study.toml"
    path.write_text(TEMPLATE.format(name=name, repetitions=repetitions, study_extra=study_extra,
                                    images=folder / "images", workload=workload))
    return path
