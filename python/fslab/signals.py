"""Signals: SIGTERM unwinds like Ctrl-C, and teardown cannot be cut short by a second one.

fslab's cleanup lives in context managers. Turning SIGTERM (and SIGHUP) into
KeyboardInterrupt makes every kind of interruption run the same ``finally`` blocks;
``shielded()`` defers signals while a mount or loop device is being released so that
an impatient second Ctrl-C cannot leave it half done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM or SIGHUP."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"received signal {signal.Signals(signum).name}")


def install_handlers() -> None:
    """Make SIGTERM and SIGHUP unwind the stack (call once, from the CLI). A signal that
    is ignored (``nohup fslab run ...`` ignores SIGHUP) stays ignored."""
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(s) is not signal.SIG_IGN:
                signal.signal(s, _raise_terminated)


@contextmanager
def shielded() -> Iterator[None]:
    """Defer SIGINT/SIGTERM/SIGHUP until the block ends, then deliver the first one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    # Signals the process ignores (a background job's SIGINT, nohup's SIGHUP) stay ignored.
    caught = tuple(s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                   if signal.getsignal(s) is not signal.SIG_IGN)
    previous = {s: signal.getsignal(s) for s in caught}

    def remember(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    for s in caught:
        signal.signal(s, remember)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            if pending[0] == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(f"received signal {signal.Signals(pending[0]).name}")


# How long a job process gets to release its mounts and devices after SIGTERM.
TEARDOWN_GRACE_S = 120.0


def stop_job_process(child: subprocess.Popen[bytes], grace_s: float = TEARDOWN_GRACE_S) -> None:
    """SIGTERM a job's process (it unwinds and releases what it made), wait, and SIGKILL its
    whole process group if it is still there after the grace."""
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()

