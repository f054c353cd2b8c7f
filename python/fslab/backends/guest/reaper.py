"""Finding and killing QEMU processes whose fslab process died without stopping them.

Every guest writes a state file (``fslab-guest.json``) into its run folder before it
waits for the boot: the QEMU pid and its start time (so a recycled pid is never taken
for it), and the pid and start time of the fslab process that owns it. Ctrl-C, SIGTERM
and exceptions are handled by the guest's own teardown; only SIGKILL of the owner (or a
power loss) leaves a state file behind, and ``cleanup_guests`` reads those.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ...datarecords import asdict
from ...resources import alive, process_start_time
from . import paths

STATE_NAME = "fslab-guest.json"


# One notion of "the same process still runs" for every state file fslab keeps.
process_start_ticks = process_start_time


@dataclass(frozen=True)
class GuestState:
    qemu_pid: int
    qemu_start_ticks: int | None
    owner_pid: int
    owner_start_ticks: int | None
    folder: str

    def write(self) -> Path:
        path = Path(self.folder) / STATE_NAME
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)) + "\n")
        tmp.rename(path)
        return path

    @classmethod
    def read(cls, path: Path) -> GuestState:
        return cls(**json.loads(path.read_text()))


def kill_qemu(state: GuestState, wait_s: float = 10.0) -> bool:
    """SIGKILL the guest's QEMU (its whole process group) if it is still that process;
    waits until it is gone. Returns whether anything was killed."""
    if not alive(state.qemu_pid, state.qemu_start_ticks):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(state.qemu_pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(state.qemu_pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and alive(state.qemu_pid, state.qemu_start_ticks):
        # A child of ours stays a zombie until reaped; a zombie counts as gone.
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(state.qemu_pid, os.WNOHANG)
        if _zombie(state.qemu_pid):
            break
        time.sleep(0.05)
    return True


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def state_files(under: Path | None = None) -> list[Path]:
    """State files of guests: those in fslab's run folder, or below ``under``."""
    if under is None:
        folder = paths.run_dir()
        return sorted(folder.glob(f"*/{STATE_NAME}")) if folder.exists() else []
    return sorted(under.rglob(STATE_NAME)) if under.exists() else []


def cleanup_guests(under: Path | None = None, dry_run: bool = False) -> list[str]:
    """Kill the QEMU of every guest whose owning fslab process is gone and remove its run
    folder (control share, state file). Guests of live fslab processes are left alone.
    Returns a line per thing done (or that would be, with ``dry_run``)."""
    done: list[str] = []
    for path in state_files(under):
        try:
            state = GuestState.read(path)
        except (OSError, ValueError, TypeError):
            continue
        if state.owner_pid != os.getpid() and alive(state.owner_pid, state.owner_start_ticks):
            done.append(f"leave guest {state.folder}: its fslab process {state.owner_pid} "
                        "is still running")
            continue
        if alive(state.qemu_pid, state.qemu_start_ticks):
            done.append(f"kill QEMU pid {state.qemu_pid} (guest {state.folder})")
            if not dry_run:
                kill_qemu(state)
        done.append(f"remove guest folder {state.folder}")
        if not dry_run:
            shutil.rmtree(state.folder, ignore_errors=True)
    return done
