"""One running study per results directory, and what a reader may say about it.

``study_lock`` is held by the process running a study (two processes resuming the same
study would measure the same runs twice); ``study_running`` and ``shown_status`` let a
reading command (`fslab report`, `fslab list`) tell a study that is running from one that
was interrupted, without importing the runner. The kernel drops the lock when its holder
dies, so a stale lock file never blocks anyone."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import FslabError

LOCK_NAME = ".lock"  # in the results directory; holds the pid of the process running a study


@contextlib.contextmanager
def study_lock(results_dir: Path) -> Iterator[None]:
    """Hold the results directory's study lock; an FslabError naming the holder's pid when
    another process holds it."""
    path = results_dir / LOCK_NAME
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "?"
            raise FslabError(
                f"another fslab (pid {owner}) is running a study in {results_dir}: wait for it, "
                "or use another --results directory"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield


def study_running(results_dir: Path) -> bool:
    """Whether an fslab process holds this results directory's study lock right now. A
    study stored as "running" whose lock nobody holds was interrupted (its process died)."""
    path = results_dir / LOCK_NAME
    try:
        with open(path) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def shown_status(stored: str, results_dir: Path, runs: int = 0, failed: int = 0) -> str:
    """The status to show a person: "running" only while a process holds the lock; a
    study that ran to its end says how many of its ``runs`` stored runs ``failed`` (a
    study whose every run failed is not a success, whatever the runner got through)."""
    if stored == "running" and not study_running(results_dir):
        return "interrupted"
    if stored == "complete" and failed:
        return ("complete, but every run failed" if failed == runs
                else f"complete, {failed} of {runs} runs failed")
    return stored
