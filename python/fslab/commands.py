"""Running external commands: output captured, a timeout that kills the whole process
group, and failures turned into CommandFailed (argv, exit code, stderr kept)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .datarecords import datarecord
from .errors import CommandFailed, FslabError, MissingCapability


@datarecord(frozen=True)
class Tool:
    """An executable some part of fslab runs, the Debian package that provides it, and
    what needs it (for `fslab doctor`). Declared by the plug-in that runs it."""

    name: str
    package: str
    needed_for: str


TOOLS: dict[str, Tool] = {}


def declare_tools(packages: dict[str, str], needed_for: str) -> None:
    """Declare executables (name -> Debian package). Called where a plug-in registers, so
    preflight and `fslab doctor` know every tool and its fix without a central table."""
    for name, package in packages.items():
        known = TOOLS.get(name)
        if known is not None and known.package != package:
            raise ValueError(f"tool {name!r} declared from two packages: {known.package!r} and {package!r}")
        if known is None:
            TOOLS[name] = Tool(name, package, needed_for)
        elif needed_for not in known.needed_for.split(", "):
            TOOLS[name] = Tool(name, package, f"{known.needed_for}, {needed_for}")


declare_tools({"sync": "coreutils"}, "flushing dirty pages before a run")


def require_tool(name: str) -> str:
    """Path of an executable, or MissingCapability saying how to install it."""
    path = shutil.which(name)
    if path is None:
        tool = TOOLS.get(name)
        fix = f"apt-get install {tool.package}" if tool else None
        raise MissingCapability(f"the tool {name!r} is not installed", fix=fix)
    return path


@datarecord(frozen=True)
class Completed:
    """A command that ran to its end: its exit status and output."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float


def run_command(
    argv: Sequence[str],
    *,
    timeout: float | None = 600,
    check: bool = True,
    preexec: Callable[[], None] | None = None,
    cwd: str | None = None,
    input_text: str | None = None,
) -> Completed:
    """Run argv to completion. The child gets its own session so that a timeout or a
    Ctrl-C can kill it and everything it started; the caller then unwinds normally."""
    import time

    require_tool(argv[0])
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=preexec,
        cwd=cwd,
    )
    try:
        stdout, stderr = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        stdout, stderr = _output_after_kill(proc)
        raise CommandFailed(argv, None, stderr or "", timed_out=True, timeout_s=timeout,
                            stdout=stdout or "") from None
    except BaseException:
        # KeyboardInterrupt / SystemExit: never leave the child running behind us.
        _kill_group(proc)
        _output_after_kill(proc)
        raise
    wall = time.monotonic() - started
    if check and proc.returncode != 0:
        raise CommandFailed(argv, proc.returncode, stderr or stdout or "", stdout=stdout or "")
    return Completed(list(argv), proc.returncode, stdout or "", stderr or "", wall)


def run_command_stamped(
    argv: Sequence[str],
    *,
    timeout: float | None = 600,
    preexec: Callable[[], None] | None = None,
    cwd: str | None = None,
) -> tuple[Completed, list[tuple[int, str]]]:
    """Like ``run_command`` (check=True), and also each piece of stderr as it arrived,
    stamped with ``time.monotonic_ns()`` (CLOCK_MONOTONIC, the clock of a block trace's
    times: its ``mono`` trace_clock, or its ``x86-tsc`` stamps mapped onto CLOCK_MONOTONIC):
    a tool's progress messages then mark when its phases ran."""
    import threading
    import time

    require_tool(argv[0])
    started = time.monotonic()
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec, cwd=cwd)
    out: list[bytes] = []
    pieces: list[tuple[int, bytes]] = []

    def drain_stdout() -> None:
        assert proc.stdout is not None
        out.append(proc.stdout.read())

    def drain_stderr() -> None:
        assert proc.stderr is not None
        fd = proc.stderr.fileno()
        # os.read returns what the child has written so far: stderr is unbuffered in C,
        # so each progress message arrives when it is printed.
        while chunk := os.read(fd, 65536):
            pieces.append((time.monotonic_ns(), chunk))

    readers = [threading.Thread(target=f, daemon=True) for f in (drain_stdout, drain_stderr)]
    for t in readers:
        t.start()

    def collected(limit_s: float | None = None) -> tuple[str, str, list[tuple[int, str]]]:
        for t in readers:
            t.join(limit_s)  # after a kill, bounded: see _output_after_kill
        text = [(ns, chunk.decode("utf-8", "replace")) for ns, chunk in pieces]
        return b"".join(out).decode("utf-8", "replace"), "".join(t for _, t in text), text

    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        stdout, stderr, _ = collected(DRAIN_AFTER_KILL_S)
        raise CommandFailed(argv, None, stderr, timed_out=True, timeout_s=timeout, stdout=stdout) from None
    except BaseException:
        _kill_group(proc)  # Ctrl-C / SystemExit: never leave the child running behind us
        proc.wait()
        collected(DRAIN_AFTER_KILL_S)
        raise
    stdout, stderr, stamped = collected()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise CommandFailed(argv, proc.returncode, stderr or stdout, stdout=stdout)
    return Completed(list(argv), proc.returncode, stdout, stderr, wall), stamped


def _descendants(pid: int) -> list[int]:
    """All processes below ``pid`` (children, grandchildren, ...), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


# How long a killed command's output is waited for: its pipes close when the last process
# holding them dies, and one the kill could not reach (a process that left our tree before
# it was read, e.g. reparented to init) would otherwise hold them open, and us, for good.
DRAIN_AFTER_KILL_S = 10.0


def _output_after_kill(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The killed command's stdout and stderr once its pipes close, or nothing after
    ``DRAIN_AFTER_KILL_S`` (the pipes are then closed on our side)."""
    try:
        return proc.communicate(timeout=DRAIN_AFTER_KILL_S)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()  # killed itself: only its reaping is left
        return "", ""


def kill_tree(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """Kill a command started with ``start_new_session=True`` and everything it started
    (fio's job processes, which leave its session, included), then reap it."""
    _kill_group(proc)
    proc.wait()


def _kill_group(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """SIGKILL the child, its process group and every descendant. Killing the group is
    not enough: fio's job processes call setsid() and would outlive it, holding the
    mount busy and our pipes open. The tree is stopped before it is read, so no process
    forks one the reading missed (a fio job forked in between, in its own session, lived
    on stuck on a lock of its dead parent, and held our pipes open for good). Shielded:
    a second Ctrl-C during the stopping (up to a second) must not leave it stopped."""
    from .signals import shielded

    with shielded():
        victims: set[int] = set()
        try:
            _signal(proc.pid, signal.SIGSTOP, group=True)
            _wait_stopped({proc.pid})
            while new := set(_descendants(proc.pid)) - victims:  # again until none is new
                for pid in new:
                    _signal(pid, signal.SIGSTOP)
                victims |= new
                _wait_stopped(new)
        finally:
            _signal(proc.pid, signal.SIGKILL, group=True)
            for pid in victims:
                _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_stopped(pids: set[int], limit_s: float = 1.0) -> None:
    """Until each process is stopped or gone (a signal takes effect when it next runs;
    one in a long uninterruptible wait, as fio's are on a slow device, is waited for
    only up to ``limit_s`` in all)."""
    import time

    deadline = time.monotonic() + limit_s
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "X"
            if state in ("T", "t", "Z", "X"):
                waiting.discard(pid)
        if waiting:
            time.sleep(0.001)


# Versions asked for before, keyed by argv and the executable's identity (path, inode,
# size, mtime): a job asks for its tool's version at every run, and under TCG one start of
# fio (64 shared libraries) takes 3-10 s of a 1 s run. A replaced binary is asked again.
_VERSIONS: dict[tuple[tuple[str, ...], str, int, int, int], str | None] = {}


def tool_version(argv: Sequence[str]) -> str | None:
    """First non-empty line a tool prints about its version, or None if it is missing.
    Asked once per executable (as it is on disk) and arguments in this process."""
    path = shutil.which(argv[0])
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (tuple(argv), path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _VERSIONS:
        _VERSIONS[key] = _ask_version(argv)
    return _VERSIONS[key]


def versions_known() -> list[dict[str, Any]]:
    """Every version asked in this process, each with the executable it came from as found
    on disk (real path, size, mtime): for another process that sees the same files (a
    guest, whose root is this host's over 9p) to take instead of starting each tool again."""
    return [{"argv": list(argv), "path": os.path.realpath(path), "size": size, "mtime_ns": mtime,
             "version": version}
            for (argv, path, _inode, size, mtime), version in _VERSIONS.items()]


def take_versions(known: Iterable[Mapping[str, Any]]) -> None:
    """Take versions another process asked (``versions_known``) of executables this process
    finds the same: the same real path, size and mtime (inode numbers differ across 9p). A
    version this process asked already is kept; any other executable is asked as usual."""
    for entry in known:
        path = shutil.which(entry["argv"][0])
        if path is None or os.path.realpath(path) != entry["path"]:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns) == (entry["size"], entry["mtime_ns"]):
            key = (tuple(entry["argv"]), path, st.st_ino, st.st_size, st.st_mtime_ns)
            _VERSIONS.setdefault(key, entry["version"])


def _ask_version(argv: Sequence[str]) -> str | None:
    try:
        done = run_command(argv, timeout=20, check=False)
    except CommandFailed:
        return None
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            return line.strip()
    return None


def module_loadable(module: str) -> bool:
    """Whether this kernel has ``module`` to load (``modprobe --dry-run``; a built-in one
    passes too). False without modprobe: nothing to load."""
    try:
        done = run_command(["modprobe", "--dry-run", "--quiet", module], timeout=10, check=False)
    except (FslabError, OSError):
        return False
    return done.returncode == 0
