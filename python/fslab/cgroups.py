"""Memory-limited cgroups, so workloads that go through the page cache keep the seed
papers' data-to-RAM ratio. Detects v1 (memory controller) or v2 once; where neither
works, asking for a limit raises MissingCapability (it is never silently ignored)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import MissingCapability
from .resources import Resource, register, release

V1_ROOT = Path("/sys/fs/cgroup/memory")
V2_ROOT = Path("/sys/fs/cgroup")
PREFIX = "fslab-"


@dataclass(frozen=True)
class MemoryLimit:
    """A created cgroup: ``enter`` is given to the child as its preexec function."""

    path: Path
    version: int
    limit_bytes: int

    def enter(self) -> None:
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_kills(self) -> int:
        """Processes the kernel killed for exceeding this cgroup's limit (0 if unknown)."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def describe(self) -> dict[str, object]:
        return {"cgroup": str(self.path), "cgroup_version": self.version, "limit_bytes": self.limit_bytes}


def detect_version() -> int | None:
    """1 or 2 for the memory controller fslab can use, or None."""
    if (V1_ROOT / "memory.limit_in_bytes").exists():
        return 1
    # v2: fslab makes its cgroups under the root, so the root must delegate "memory".
    enabled = V2_ROOT / "cgroup.subtree_control"
    if enabled.exists() and "memory" in enabled.read_text().split():
        return 2
    return None


@contextlib.contextmanager
def memory_limit(limit_bytes: int) -> Iterator[MemoryLimit]:
    """A fresh cgroup limited to ``limit_bytes`` of memory (page cache included)."""
    version = detect_version()
    if version is None:
        raise MissingCapability(
            "a memory limit was asked for, but no cgroup memory controller is available",
            fix="mount the cgroup v1 memory controller or enable 'memory' in cgroup v2",
        )
    root = V1_ROOT if version == 1 else V2_ROOT
    path = root / f"{PREFIX}{os.urandom(6).hex()}"
    token = register(Resource("cgroup", str(path)))
    path.mkdir()
    try:
        if version == 1:
            (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        else:
            (path / "memory.max").write_text(str(limit_bytes))
            (path / "memory.swap.max").write_text("0") if (path / "memory.swap.max").exists() else None
        yield MemoryLimit(path, version, limit_bytes)
    finally:
        remove_cgroup(path)
        release(token)


def remove_cgroup(path: Path, attempts: int = 50) -> None:
    """rmdir a cgroup once its processes are gone (they may still be exiting)."""
    for _ in range(attempts):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    raise OSError(f"could not remove cgroup {path}: processes still in it")


def leftover_cgroups() -> list[Path]:
    roots = [V1_ROOT, V2_ROOT]
    return [p for root in roots if root.exists() for p in root.glob(f"{PREFIX}*") if p.is_dir()]

