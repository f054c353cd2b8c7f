"""External commands: failures keep argv, exit code and stderr; a timeout kills the whole
tree, including descendants that left the process group (as fio's job processes do)."""

import os
import subprocess
import time

import pytest

from fslab.commands import require_tool, run_command, tool_version
from fslab.errors import CommandFailed, MissingCapability


def test_failure_keeps_argv_status_and_stderr():
    with pytest.raises(CommandFailed) as info:
        run_command(["sh", "-c", "echo oops >&2; exit 3"])
    exc = info.value
    assert exc.argv == ["sh", "-c", "echo oops >&2; exit 3"]
    assert exc.returncode == 3 and "oops" in exc.stderr and "status 3" in str(exc)


def test_missing_tool_names_the_package(monkeypatch):
    from fslab.workloads import WORKLOADS

    WORKLOADS.get("fio")  # fio's plug-in declares its package when it registers

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingCapability, match="'fio' is not installed.*apt-get install fio"):
        require_tool("fio")


def test_timeout_kills_descendants_in_other_sessions():
    marker = "31.41592"  # a unique sleep duration to find the grandchild by
    started = time.monotonic()
    with pytest.raises(CommandFailed) as info:
        run_command(["sh", "-c", f"setsid sleep {marker} & wait"], timeout=1)
    assert info.value.timed_out
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def _versioned_tool(folder, version):
    """A tool that prints ``version`` and counts its starts in a file beside it."""
    tool = folder / "fakever"
    tool.write_text(f"#!/bin/sh\necho x >> {folder / 'starts'}\necho 'fakever {version}'\n")
    tool.chmod(0o755)
    return tool


def test_tool_version_is_asked_once_until_the_binary_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    tool = _versioned_tool(tmp_path, "1.0")
    assert tool_version(["fakever", "--version"]) == "fakever 1.0"
    assert tool_version(["fakever", "--version"]) == "fakever 1.0"
    assert (tmp_path / "starts").read_text().count("x") == 1
    os.utime(tool, ns=(1, 1))  # another binary in its place (here: another mtime and size)
    _versioned_tool(tmp_path, "2.00")
    os.utime(tool, ns=(2, 2))
    assert tool_version(["fakever", "--version"]) == "fakever 2.00"
    assert (tmp_path / "starts").read_text().count("x") == 2


def test_a_version_another_process_asked_is_taken_only_for_the_same_binary(tmp_path, monkeypatch):
    """What a host hands a guest that sees its root: the guest's server takes the version
    instead of starting the tool, for the very file it was asked of (size and mtime; the
    inode numbers differ across 9p), and asks itself for anything else."""
    from fslab import commands

    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    tool = _versioned_tool(tmp_path, "1.0")
    monkeypatch.setattr(commands, "_VERSIONS", {})
    assert tool_version(["fakever", "--version"]) == "fakever 1.0"
    known = commands.versions_known()
    assert known == [{"argv": ["fakever", "--version"], "path": str(tool), "size": tool.stat().st_size,
                      "mtime_ns": tool.stat().st_mtime_ns, "version": "fakever 1.0"}]
    monkeypatch.setattr(commands, "_VERSIONS", {})  # another process: nothing asked yet
    commands.take_versions([{**known[0], "version": "as the host said"}])
    assert tool_version(["fakever", "--version"]) == "as the host said"
    assert (tmp_path / "starts").read_text().count("x") == 1  # not started again
    monkeypatch.setattr(commands, "_VERSIONS", {})
    os.utime(tool, ns=(5, 5))  # not the file the host asked of: asked here
    commands.take_versions([{**known[0], "version": "as the host said"}])
    assert tool_version(["fakever", "--version"]) == "fakever 1.0"
    assert (tmp_path / "starts").read_text().count("x") == 2


FORKS_AWAY = """
import os, sys, time
# A parent that keeps forking children that leave for sessions of their own (as fio's job
# processes do) and hold the pipes: a child forked between a read of the process tree and
# the kill of the group would outlive both.
while True:
    if os.fork() == 0:
        os.setsid()
        time.sleep({hold})
        os._exit(0)
    time.sleep(0.0005)
"""


def test_a_tree_that_keeps_forking_into_new_sessions_is_killed_whole():
    """The kill stops the tree before reading it: nothing forked meanwhile is missed. A
    child missed would keep the command's pipes open (until the bounded wait for them gives
    up) and outlive the kill."""
    import sys

    hold = f"600.{os.getpid()}"  # far beyond the test's time, and unique to this run
    driver = ("import sys, time\nfrom fslab.commands import run_command\nfrom fslab.errors import CommandFailed\n"
              "for _ in range(4):\n"
              "    started = time.monotonic()\n"
              "    try:\n"
              f"        run_command([sys.executable, '-c', {FORKS_AWAY.format(hold=hold)!r}], timeout=0.3)\n"
              "    except CommandFailed as exc:\n"
              "        assert exc.timed_out\n"
              "    print(f'{time.monotonic() - started:.2f}', flush=True)\n")
    try:
        done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=120)
    finally:
        time.sleep(0.2)
        left = subprocess.run(["pgrep", "-f", f"time.sleep\\({hold}\\)"], capture_output=True, text=True)
        strays = [int(pid) for pid in left.stdout.split()]
        for pid in strays:
            os.kill(pid, 9)
    tries = [float(line) for line in done.stdout.split()]
    assert len(tries) == 4, done.stderr
    assert max(tries) < 8, tries  # each returned at the kill, not after waiting on a stray's pipes
    assert strays == []
