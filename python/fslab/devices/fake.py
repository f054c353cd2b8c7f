"""A fake device: a directory (on tmpfs by default), no block device behind it. With the
``null`` file system and the ``null`` workload it lets fslab's orchestration — plan, job,
records, store, report — run and be tested without root, as fio's null engine tests fio.
Its device counters are all zero and it cannot be traced; it measures nothing real."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import NO_GRANT, DeviceHandle, DeviceKind, Grant, register_device_kind

if TYPE_CHECKING:
    from .sections import FakeSection


def _base(section: FakeSection, workdir: Path) -> Path:
    if section.directory:
        return Path(section.directory)
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and _writable(shm) else workdir


def _writable(path: Path) -> bool:
    import os

    return os.access(path, os.W_OK | os.X_OK)


@contextlib.contextmanager
def provision(section: FakeSection, workdir: Path, tag: str, grant: Grant = NO_GRANT) -> Iterator[DeviceHandle]:
    root = _base(section, workdir) / f"fslab-fake-{tag}"
    root.mkdir(parents=True)
    try:
        yield DeviceHandle(str(root), "", 0, 0, {"kind": "fake", "directory": str(root)})
    finally:
        shutil.rmtree(root, ignore_errors=True)


register_device_kind(DeviceKind(
    "fake", "FakeSection", provision, needs_root=False, traceable=False, description=__doc__ or "",
))
