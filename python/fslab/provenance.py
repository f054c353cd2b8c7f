"""Provenance: the facts that make a number reproducible (kernel, CPU, memory, tool
versions). Host facts are gathered once per study; run facts come from the executor."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from . import __version__
from .commands import tool_version
from .filesystems import FILESYSTEMS


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _core_version() -> str | None:
    try:
        from . import _core

        return _core.core_version()
    except ImportError:
        return None


@cache
def host_facts() -> dict[str, Any]:
    # os.uname and sys.version give what platform.uname() and python_version() do on
    # Linux; importing platform cost a TCG guest's job entry 0.04 s (its regular expressions).
    uname = os.uname()
    return {
        "hostname": uname.nodename,
        "kernel": uname.release,
        "kernel_version": uname.version,
        "machine": uname.machine,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": _mem_total_bytes(),
        "python": sys.version.split()[0],
        "fslab": __version__,
        "fslab_core": _core_version(),
    }


@cache
def fs_tool_version(fs_type: str) -> str | None:
    entry = FILESYSTEMS.get(fs_type)
    return tool_version(list(entry.version_argv)) if entry.version_argv else None
