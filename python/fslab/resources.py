"""The state file: every resource fslab creates — image files, loop devices, mounts,
tracefs instances, cgroups, guest processes, md arrays — is written down before it is created and
struck off once it is released. A process killed with SIGKILL leaves its state file
behind, and ``fslab cleanup`` releases exactly what it lists (newest first), never
anything of a process that is still alive.

One file per process: ``<state dir>/fslab-<pid>-<start time>.json`` (the start time tells
a reused pid from the original one). The state dir is ``$FSLAB_STATE_DIR``, else
``/run/fslab`` for root, else ``$XDG_RUNTIME_DIR/fslab`` or the temp dir.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .datarecords import asdict, datarecord

KINDS = ("image", "mount", "tracefs", "cgroup", "directory", "guests", "md")
_lock = threading.Lock()
_counter = itertools.count(1)


@datarecord(frozen=True)
class Resource:
    """One thing fslab made and must release, as its state file lists it."""

    kind: str  # one of KINDS
    ident: str  # image path, mount point, instance path, cgroup path, guests' run folder or md device
    under: str = ""  # the work directory it belongs to (for `cleanup --under`)
    info: dict[str, Any] | None = None  # e.g. a process's command line, to check it is ours


def state_dir() -> Path:
    if os.environ.get("FSLAB_STATE_DIR"):
        return Path(os.environ["FSLAB_STATE_DIR"])
    if os.geteuid() == 0:
        return Path("/run/fslab")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "fslab"
    import tempfile  # only here: it loads random, which a job (run as root) never needs

    return Path(tempfile.gettempdir()) / f"fslab-{os.getuid()}"


def process_start_time(pid: int) -> int | None:
    """The start time of a process in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, start_time: int | None) -> bool:
    """The process is still the one that wrote the file (not a reuse of its pid)."""
    now = process_start_time(pid)
    return now is not None and (start_time is None or now == start_time)


class _StateFile:
    """This process's state file (written atomically on every change)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.start_time = process_start_time(self.pid)
        self.entries: dict[int, Resource] = {}

    @property
    def path(self) -> Path:
        return state_dir() / f"fslab-{self.pid}-{self.start_time}.json"

    def write(self) -> None:
        path = self.path
        if not self.entries:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {"pid": self.pid, "start_time": self.start_time,
                "resources": [asdict(r) for _, r in sorted(self.entries.items())]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)


_state: _StateFile | None = None


def _current() -> _StateFile:
    global _state
    if _state is None or _state.pid != os.getpid():  # a forked child starts its own file
        _state = _StateFile()
    return _state


def register(resource: Resource) -> int:
    """Write ``resource`` down (before creating it); returns a token for ``release``."""
    with _lock:
        state = _current()
        token = next(_counter)
        state.entries[token] = resource
        state.write()
        return token


def release(token: int) -> None:
    """Strike a resource off (after releasing it)."""
    with _lock:
        state = _current()
        if state.entries.pop(token, None) is not None:
            state.write()


@contextlib.contextmanager
def tracked(kind: str, ident: str, under: Path | str = "", **info: Any) -> Iterator[None]:
    """Register for the duration of the block: wrap creation and release of one
    resource, so the state file lists it exactly while it may exist."""
    token = register(Resource(kind, ident, str(under), info or None))
    try:
        yield
    finally:
        release(token)


@datarecord(frozen=True)
class Leftover:
    """A state file of a process that is gone, and what it lists."""

    path: Path
    pid: int
    resources: list[Resource]


def leftovers(under: Path | None = None) -> tuple[list[Leftover], list[int]]:
    """(state files of dead processes, pids of live fslab processes that have one).
    With ``under``, only the processes that made something below that folder (all of
    what such a process made is its leftover: its cgroups and traces too), dead or live."""
    dead: list[Leftover] = []
    live: list[int] = []
    directory = state_dir()
    if not directory.is_dir():
        return dead, live
    prefix = str(under.resolve()).rstrip("/") + "/" if under is not None else None
    for path in sorted(directory.glob("fslab-*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        resources = [Resource(**r) for r in data.get("resources", [])]
        if prefix is not None and not any((r.under.rstrip("/") + "/").startswith(prefix)
                                          or r.ident.startswith(prefix) for r in resources):
            continue
        if alive(int(data["pid"]), data.get("start_time")):
            if data["pid"] != os.getpid():
                live.append(int(data["pid"]))
            continue
        dead.append(Leftover(path, int(data["pid"]), resources))
    return dead, live
