"""`make test` runs its two tiers side by side (tests/run_tiers.py): both run at once, the
logged tier's output comes after the live one's, a failing tier fails the whole, and an
interrupt reaches each tier once even when the runner was started with SIGINT ignored."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from run_tiers import Tier, run_side_by_side

HERE = Path(__file__).parent


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_both_tiers_run_at_once_and_a_failing_one_fails_the_whole(tmp_path: Path) -> None:
    # Each tier waits for the file the other writes: they can only both end if they ran together.
    waits_for = """
        import pathlib, sys, time
        mine, theirs = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
        mine.touch()
        for _ in range(200):
            if theirs.exists():
                print("{name} saw the other tier")
                sys.exit({code})
            time.sleep(0.05)
        sys.exit(99)
    """
    a, b = tmp_path / "a", tmp_path / "b"
    log = tmp_path / "guest.log"
    guest = Tier("guest", _python(waits_for.format(name="guest", code=0)) + [str(a), str(b)], log=log)
    host = Tier("host", _python(waits_for.format(name="host", code=3)) + [str(b), str(a)])
    out = io.StringIO()
    assert run_side_by_side([guest, host], out=out) == 3
    printed = out.getvalue()
    assert "guest saw the other tier" in log.read_text()
    assert printed.index("its output:") < printed.index("--- guest tier") < printed.index("guest saw the other tier")
    assert "guest passed, host failed (3)" in printed


def test_an_interrupt_reaches_each_tier_once_though_the_runner_ignored_sigint(tmp_path: Path) -> None:
    tier = """
        import pathlib, sys, time
        try:
            pathlib.Path(sys.argv[1] + ".started").touch()
            time.sleep(60)
        except KeyboardInterrupt:
            with open(sys.argv[1], "a") as f:
                f.write("interrupted\\n")
            sys.exit(1)
    """
    driver = f"""
        import shlex, sys
        sys.path.insert(0, {str(HERE)!r})
        from pathlib import Path
        from run_tiers import Tier, run_side_by_side
        tier = {[sys.executable, "-c", textwrap.dedent(tier)]!r}
        d = Path({str(tmp_path)!r})
        # The host tier as make gives it: a shell that runs the command as its child.
        host = ["sh", "-c", shlex.join(tier + [str(d / "h")]) + "; exit 5"]
        sys.exit(run_side_by_side([Tier("guest", tier + [str(d / "g")], log=d / "g.log"),
                                   Tier("host", host)]))
    """
    # Started as a background job or under nohup starts it: SIGINT ignored.
    runner = subprocess.Popen(_python(driver), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(200):
            if (tmp_path / "g.started").exists() and (tmp_path / "h.started").exists():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the tiers did not start")
        # The runner restores its handlers itself; SIGINT twice, as make passes it on again.
        runner.send_signal(signal.SIGINT)
        runner.send_signal(signal.SIGINT)
        output, _ = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, output
    assert (tmp_path / "g").read_text() == "interrupted\n"
    assert (tmp_path / "h").read_text() == "interrupted\n"
    assert "guest failed (1), host failed" in output


def test_main_runs_the_host_tier_on_workers_and_the_guest_tier_alone(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    import run_tiers

    seen: list[Tier] = []

    def record(tiers: list[Tier], out: object = None) -> int:
        seen.extend(tiers)
        return 0

    monkeypatch.setattr(run_tiers, "run_side_by_side", record)
    assert run_tiers.main(["--workers", "2", "--guest-log", str(tmp_path / "g.log")]) == 0
    assert run_tiers.main(["--workers", "0", "--guest-log", str(tmp_path / "g.log")]) == 0
    assert run_tiers.main(["--first", "make lint", "--first", "exit 4"]) == 0
    guest, host, _, serial_host, _, with_first = seen
    # What runs first runs in the host tier's shell, and a failure there ends the tier.
    assert with_first.command[:2] == ["sh", "-c"]
    assert subprocess.run(with_first.command[:2] + [with_first.command[2].replace("make lint", "true")]).returncode == 4
    assert with_first.command[2].startswith("make lint && exit 4 && exec ")
    assert guest.command[-2:] == ["-m", "guest"] and guest.log == tmp_path / "g.log"
    assert host.command[-4:] == ["--dist", "loadfile", "-m", "not guest"] and "-n" in host.command
    assert serial_host.command[serial_host.command.index("-n") + 1] == "0" and serial_host.log is None
    assert os.path.basename(host.command[0]).startswith("python")
