"""The exact command that continues an interrupted study: what fslab prints after a
Ctrl-C, a full disk, or beside an unfinished study."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path


def resume_command(study: str, results: Path, quick: bool, devices: list[str],
                   allow_exec: bool = False, executor: str | None = None,
                   executor_flags: Sequence[str] = ()) -> str:
    """The exact command that continues a study (same file, results, quick mode, devices,
    executor with its --tls or --insecure)."""
    parts = ["fslab", "run", study.removeprefix("preset "), "-r", str(results)]
    parts += ["--quick"] if quick else []
    parts += ["--allow-exec"] if allow_exec else []
    parts += ["--executor", executor, *executor_flags] if executor else []
    for device in devices:
        parts += ["--destroy-data-on", device]
    return shlex.join(parts + ["--resume"])  # pasted into a shell: every part quoted
