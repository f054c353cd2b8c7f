"""Backends: where a job executes. One module each, registering itself; the runner asks
the registry and never imports a concrete backend.

Contract of an entry (``Backend``): ``unavailable()`` says why it cannot run here (None
when it can); ``supports(fs, device, section)`` says why it cannot run that file system on
that device kind's parsed ``[device]`` section (None when it can); ``execute(job, folder,
work_dir, on_record)`` runs one job through the job entry (``fslab job run``: records and
artifacts in the job folder, fslab.job.folder) and hands each record to ``on_record`` as
it is read back. A backend that can read a record back only when the job ends (a guest,
whose facts are known when it exits) hands it to ``on_progress``, when given, as soon as
the run ends, to be shown, not stored; ``on_record`` still gets it afterwards.

``choose_backend`` is what a plan is handed to pick each file system's backend
(fslab.plan.BackendChooser): planning itself knows no backend.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..backend_names import BACKEND_PREFERENCE
from ..registry import Registry

if TYPE_CHECKING:
    from ..devices import DeviceKind
    from ..filesystems import FilesystemType
    from ..job.folder import JobFolder
    from ..jobdata.model import Job
    from ..jobdata.record import RunRecord

# `auto` tries these in order: the host kernel where it can, a guest where it cannot.
PREFERENCE = BACKEND_PREFERENCE


class Backend(Protocol):
    name: str

    def unavailable(self) -> str | None: ...

    def supports(self, fs: FilesystemType, device: DeviceKind, section: Any) -> str | None: ...

    def execute(self, job: Job, folder: JobFolder, work_dir: Path,
                on_record: Callable[[RunRecord], None],
                on_progress: Callable[[RunRecord], None] | None = None) -> None: ...


BACKENDS: Registry[Backend] = Registry("backend")


def choose_backend(fs: FilesystemType, device: DeviceKind, section: Any,
                   requested: str) -> tuple[str | None, str | None]:
    """(backend name, why there) or (None, why the file system is skipped). ``requested``
    is ``host``, ``guest`` or ``auto`` (the first of PREFERENCE that can); ``section`` is
    the device kind's parsed ``[device]``. Why there: why the backends before it in
    PREFERENCE could not, or what this host's kernel has that a guest would otherwise
    provide; None when there is nothing to explain."""
    names = PREFERENCE if requested == "auto" else (requested,)
    reasons = []
    for name in names:
        if name not in BACKENDS:
            reasons.append(f"the {name} backend is not part of this fslab yet")
            continue
        backend = BACKENDS.get(name)
        why = backend.unavailable() or backend.supports(fs, device, section)
        if why is None:
            return name, "; ".join(reasons) or (_host_has(fs, device, section) if name == "host" else None)
        reasons.append(f"{name}: {why}")
    if fs.needs_guest and "guest" not in BACKENDS:
        return None, f"{fs.name} needs the guest backend (QEMU), which this fslab does not have yet: skipped"
    return None, "; ".join(reasons) + ": skipped"


def _host_has(fs: FilesystemType, device: DeviceKind, section: Any) -> str | None:
    """What this host's kernel has that lets a guest-marked file system or device run here."""
    found = []
    if fs.needs_guest:
        found.append(f"this host kernel has {fs.kernel_type or fs.kernel_name}")
    if device.needs_guest and device.host_probe is not None:
        found.append(device.host_probe(section).finding)
    return "; ".join(found) or None


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
