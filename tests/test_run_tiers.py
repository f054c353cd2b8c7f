"""`make test` runs its two tiers side by side (tests/run_tiers.py): both run at once, the
logged tier's output comes after the live one's, a failing tier is said at once and fails
the whole, and an interrupt reaches each tier's processes even when the runner was started
with SIGINT ignored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from run_tiers import Tier, make_tiers

HERE = Path(__file__).parent


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _driver(guest: list[str], host: list[str], log: Path) -> list[str]:
    """A runner of the two tiers in a process of its own, so its whole output (the live
    tier's included, which goes to the real stdout) can be read in order."""
    return _python(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from pathlib import Path
        from run_tiers import Tier, run_side_by_side
        sys.exit(run_side_by_side([Tier("guest", {guest!r}, log=Path({str(log)!r})), Tier("host", {host!r})]))
    """)


WAITS_FOR = """
    import pathlib, sys, time
    mine, theirs = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    mine.touch()
    for _ in range(400):
        if theirs.exists():
            print("{name} saw the other tier", flush=True)
            sys.exit({code})
        time.sleep(0.05)
    sys.exit(99)
"""


def test_both_tiers_run_at_once_and_the_logged_one_is_printed_after(tmp_path: Path) -> None:
    # Each tier waits for the file the other writes: they can only both end if they ran together.
    a, b, log = tmp_path / "a", tmp_path / "b", tmp_path / "logs" / "guest.log"  # its folder made
    guest = _python(WAITS_FOR.format(name="guest", code=0)) + [str(a), str(b)]
    host = _python(WAITS_FOR.format(name="host", code=0)) + [str(b), str(a)]
    done = subprocess.run(_driver(guest, host, log), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout
    assert (printed.index("its output:") < printed.index("host saw the other tier")
            < printed.index("--- guest tier") < printed.index("guest saw the other tier")), printed
    assert "guest passed, host passed" in printed


def test_a_tier_that_fails_is_said_at_once_and_fails_the_whole(tmp_path: Path) -> None:
    # The guest tier ends only once the test has read that the host tier failed.
    go = tmp_path / "go"
    guest = _python(WAITS_FOR.format(name="guest", code=0)) + [str(tmp_path / "g"), str(go)]
    host = _python("import sys; print('lint failed', flush=True); sys.exit(3)")
    runner = subprocess.Popen(_driver(guest, host, tmp_path / "g.log"), stdout=subprocess.PIPE, text=True)
    try:
        assert runner.stdout is not None
        lines = []
        for line in runner.stdout:
            lines.append(line)
            if "host tier failed (3); the guest tier goes on" in line:
                go.touch()
                break
        rest, _ = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert go.exists(), "".join(lines)
    assert runner.returncode == 3
    assert "guest passed, host failed (3)" in rest
    # and the other way round: a failing guest tier fails the whole too
    guest = _python("import sys; sys.exit(4)")
    host = _python("pass")
    assert subprocess.run(_driver(guest, host, tmp_path / "g2.log"), capture_output=True, timeout=60).returncode == 4


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
    assert host.command[-5:] == ["--dist", "loadfile", "--no-loadscope-reorder", "-m", "not guest"]
    assert "-n" in host.command
    assert serial_host.command[serial_host.command.index("-n") + 1] == "0" and serial_host.log is None
    assert os.path.basename(host.command[0]).startswith("python")


def test_a_tiers_later_step_runs_after_a_failure_and_its_output_joins_the_log(tmp_path: Path) -> None:
    log = tmp_path / "g.log"
    driver = _python(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from pathlib import Path
        from run_tiers import Tier, run_side_by_side
        first = [sys.executable, "-c", "print('first step', flush=True); raise SystemExit(6)"]
        then = [sys.executable, "-c", "print('second step', flush=True)"]
        host_then = [sys.executable, "-c", "import sys; print('host tail', flush=True); sys.exit(7)"]
        sys.exit(run_side_by_side([Tier("guest", first, log=Path({str(log)!r}), then=(then,)),
                                   Tier("host", [sys.executable, "-c", "pass"], then=(host_then,))]))
    """)
    done = subprocess.run(driver, capture_output=True, text=True, timeout=60)
    # each tier's status is its first failing step's, and the whole's the first failing tier's
    assert done.returncode == 6, done.stdout + done.stderr
    assert "guest failed (6), host failed (7)" in done.stdout
    assert log.read_text().splitlines() == ["first step", "second step"]
    assert done.stdout.index("host tail") < done.stdout.index("--- guest tier")


def test_a_guest_tail_file_moves_from_the_guest_tier_to_the_host_tiers_end() -> None:
    guest, host = make_tiers(["--first", "lint", "--guest-tail", "tests/guest/test_x.py"])
    assert "--ignore=tests/guest/test_x.py" in guest.command
    assert host.command[:2] == ["sh", "-c"] and host.command[2].startswith("lint && exec ")
    [tail] = host.then
    assert tail[-1] == "tests/guest/test_x.py" and ("-m", "guest") in zip(tail, tail[1:])
    assert not any(arg.startswith("--ignore") for arg in tail)
    # without a tail, the host tier is one step
    assert make_tiers([])[1].then == ()
