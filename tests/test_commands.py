"""External commands: failures keep argv, exit code and stderr; a timeout kills the whole
tree, including descendants that left the process group (as fio's job processes do)."""

import subprocess
import time

import pytest

from fslab.commands import require_tool, run_command
from fslab.errors import CommandFailed, MissingCapability


def test_failure_keeps_argv_status_and_stderr():
    with pytest.raises(CommandFailed) as info:
        run_command(["sh", "-c", "echo oops >&2; exit 3"])
    exc = info.value
    assert exc.argv == ["sh", "-c", "echo oops >&2; exit 3"]
    assert exc.returncode == 3 and "oops" in exc.stderr and "status 3" in str(exc)


def test_missing_tool_names_the_package(monkeypatch):
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
