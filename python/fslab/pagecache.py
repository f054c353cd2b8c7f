"""Dropping the page cache: a run starts cold (fslab.job.execute), and so does each timed
read operation of the alloc workload (its reads must come from the device). Writing back
one file system's dirty pages (``sync_filesystem``): a traced run's window holds the
writeback of what its workload left dirty."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches() -> None:
    """Write back dirty pages, then drop page cache, dentries and inodes (needs root).
    sync(2) is called here, not sync(1) started: the same call, without a process start
    (half a second or more in a TCG guest, at every run); a sync stuck in the kernel could
    not be killed at a timeout either."""
    os.sync()
    DROP_CACHES.write_text("3\n")


def sync_filesystem(path: Path) -> None:
    """syncfs(2) on the file system holding ``path``: its dirty pages and metadata reach
    its device now (not the other file systems', as sync(2) would). Raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if libc.syncfs(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"syncfs({path}): {os.strerror(errno)}")
    finally:
        os.close(fd)
