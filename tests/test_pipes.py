"""`fslab run ... | head`: a reader that goes away costs the output, never the study. Every
run is still made and stored, and a closed stdout is said on stderr."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from fslab.store import Store

STUDY = """
[study]
name = "piped"
repetitions = 4
drop_caches = false
[device]
kind = "fake"
directory = "{fake}"
[filesystems.null]
[[workloads]]
kind = "null"
name = "w"
sleep = 0.3
"""


def piped(tmp_path: Path, redirect: str, reader: str = "head -2") -> subprocess.CompletedProcess[str]:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(fake=tmp_path / "fake"))
    fslab = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "fslab.cli", "run", str(study),
                                             "-r", str(tmp_path / "r")))
    # bash: PIPESTATUS gives fslab's own exit code, not head's.
    return subprocess.run(["bash", "-c", f"{fslab} {redirect} | {reader}; exit ${{PIPESTATUS[0]}}"],
                          capture_output=True, text=True, timeout=300)


def stored(tmp_path: Path) -> tuple[str, int]:
    with Store(tmp_path / "r", read_only=True) as store:
        [study] = store.studies()
        return study.status, store.run_counts(study.id)[0]


def test_a_closed_stderr_pipe_stops_nothing(tmp_path: Path) -> None:
    done = piped(tmp_path, "2>&1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert stored(tmp_path) == ("complete", 4)


def test_a_closed_stdout_is_said_on_stderr_and_every_run_is_stored(tmp_path: Path) -> None:
    # A reader that reads nothing and is gone before fslab has started: fslab's writes to
    # stdout meet a closed pipe every time (`head -2` raced a busy machine: fslab could fill
    # the pipe's buffer and finish before head had read its two lines and closed it).
    done = piped(tmp_path, "", reader="head -c 0")
    assert done.returncode == 0, done.stderr
    assert stored(tmp_path) == ("complete", 4)
    assert "stdout was closed" in done.stderr and "Traceback" not in done.stderr
