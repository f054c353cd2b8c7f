"""Dropping the page cache: a run starts cold (fslab.job.execute), and so does each timed
read operation of the alloc workload (its reads must come from the device)."""

from __future__ import annotations

from pathlib import Path

from .commands import run_command

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches() -> None:
    """Write back dirty pages, then drop page cache, dentries and inodes (needs root)."""
    run_command(["sync"], timeout=600)
    DROP_CACHES.write_text("3\n")
