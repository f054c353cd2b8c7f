"""Where the guest backend keeps what it fetches, builds and runs: one cache folder."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/fslab/guest``, or ``~/.cache/fslab/guest``. Overridable with
    ``FSLAB_GUEST_CACHE`` (tests and CI point it at a shared, warm folder)."""
    explicit = os.environ.get("FSLAB_GUEST_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fslab" / "guest"


def debs_dir(root: Path | None = None) -> Path:
    """Downloaded kernel packages (.deb), kept so a rebuild needs no network."""
    return (root or cache_root()) / "debs"


def kernels_dir(root: Path | None = None) -> Path:
    """Unpacked kernel packages, one folder per package and version."""
    return (root or cache_root()) / "kernels"


def builds_dir(root: Path | None = None) -> Path:
    """Built guest roots (initramfs + manifest), one folder per cache key."""
    return (root or cache_root()) / "builds"


def run_dir(root: Path | None = None) -> Path:
    """Live guests: one folder per guest with its state file and control share."""
    return (root or cache_root()) / "run"

