"""`make test`'s two tiers side by side: the guest tier (one QEMU guest at a time, so one
emulated CPU busy) runs beside the host tier's pytest-xdist workers instead of after them,
which takes the suite's time from their sum to about the longer of the two.

The host tier prints as it goes; the guest tier's output goes to a log file and is printed
whole when it ends, so the two never interleave. The exit status fails when either tier
fails. Ctrl-C (or SIGTERM) is passed on once to each tier, which then tears its fixtures
down (guests, mounts, loop devices) as pytest does on an interrupt; a tier started with
SIGINT ignored (a background job, `nohup`) gets its default handler back first, so the
interrupt reaches it.

The host tier ends minutes before the guest tier, which then has the machine to itself
with one of its two cores idle: the guest test files named with --guest-tail run on the
host tier's lane after its own tests instead (a guest of their own, beside the guest
tier's), so the two lanes end closer together.

    python tests/run_tiers.py [--workers N] [--guest-log FILE] [--first COMMAND ...]
                              [--guest-tail FILE ...]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

_PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 120.0  # a guest test's teardown (QEMU's exit, its images) fits well inside


@dataclass(frozen=True)
class Tier:
    name: str
    command: list[str]
    log: Path | None = None  # None: print as it goes
    # Commands run after ``command`` has ended, whether it passed or not (their results are
    # wanted too); the tier's status is its first failing command's.
    then: tuple[list[str], ...] = ()

    def steps(self) -> list[list[str]]:
        return [self.command, *self.then]


@dataclass
class _Running:
    tier: Tier
    proc: subprocess.Popen[bytes]
    step: int = 0
    status: int = 0  # the first failing step's


_LIBC = ctypes.CDLL(None, use_errno=True)


def _child_setup() -> None:
    # exec resets a caught handler but keeps an ignored one: the tier takes Ctrl-C even where
    # this runner was started with SIGINT ignored; and a runner killed outright does not
    # leave a tier running on its own.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _signal_tier(proc: subprocess.Popen[bytes], sig: int) -> None:
    """To the tier's whole process group, as a terminal's Ctrl-C would reach it: the shell
    of a tier that runs commands first, the command it is in, pytest-xdist's workers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def run_side_by_side(tiers: Sequence[Tier], out: TextIO | None = None) -> int:
    """Runs every tier at once and returns 0 when all passed, else the first failing
    tier's status (130 after an interrupt). A tier that fails while another still runs is
    said at once; the others go on (their results are wanted too), and Ctrl-C stops them."""
    out = out or sys.stdout
    running: list[_Running] = []
    stop_by: list[float] = []  # set once, at the first interrupt: the tiers' shared grace period

    def stop(signum: int, _frame: FrameType | None) -> None:
        if stop_by:
            return  # make passes a Ctrl-C on again: one interrupt per tier is enough
        stop_by.append(time.monotonic() + STOP_GRACE_S)
        for r in running:
            if r.proc.poll() is None:
                _signal_tier(r.proc, signal.SIGINT)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        started = time.monotonic()
        try:
            for tier in tiers:
                running.append(_Running(tier, _start(tier, tier.command)))
                if stop_by:  # interrupted while the tiers were starting
                    _signal_tier(running[-1].proc, signal.SIGINT)
                if tier.log:
                    print(f"{tier.name} tier running beside the others; its output: {tier.log}",
                          file=out, flush=True)
        except BaseException:
            stop(signal.SIGINT, None)  # a tier that could not start: stop those that did
            _wait_all(running, stop_by, out)
            raise
        statuses = _wait_all(running, stop_by, out)
        for tier in tiers:  # after every tier has ended, so no log lands inside live output
            if tier.log:
                print(f"\n--- {tier.name} tier ({tier.log}) ---", file=out, flush=True)
                print(tier.log.read_text(errors="replace"), end="", file=out, flush=True)
        elapsed = time.monotonic() - started
        summary = ", ".join(f"{name} {_said(status)}" for name, status in statuses.items())
        print(f"\ntiers side by side in {elapsed:.0f} s: {summary}", file=out, flush=True)
        if stop_by:
            return 130
        return next((status for status in statuses.values() if status != 0), 0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _start(tier: Tier, command: list[str], append: bool = False) -> subprocess.Popen[bytes]:
    stdout = None
    if tier.log:
        tier.log.parent.mkdir(parents=True, exist_ok=True)
        stdout = tier.log.open("ab" if append else "wb")
    try:
        # Own session and group: a terminal's Ctrl-C reaches the tier once, through stop().
        return subprocess.Popen(command, stdout=stdout, stderr=subprocess.STDOUT if stdout else None,
                                preexec_fn=_child_setup, start_new_session=True)
    finally:
        if stdout:
            stdout.close()


def _wait_all(running: Sequence[_Running], stop_by: list[float], out: TextIO) -> dict[str, int]:
    """Each tier's exit status, in the tiers' order, once each has run its steps (none
    starts after an interrupt). After an interrupt, a tier that has not ended within the
    grace period is killed (its guests die with it: PDEATHSIG)."""
    statuses: dict[str, int] = {}
    while len(statuses) < len(running):
        for r in running:
            code = r.proc.poll()
            if r.tier.name in statuses or code is None:
                continue
            r.status = r.status or _status(code)
            steps = r.tier.steps()
            if r.step + 1 < len(steps) and not stop_by:
                r.step += 1
                r.proc = _start(r.tier, steps[r.step], append=True)
                if stop_by:  # interrupted while it was starting
                    _signal_tier(r.proc, signal.SIGINT)
                continue
            statuses[r.tier.name] = r.status
            still = [o.tier.name for o in running if o.tier.name not in statuses]
            if r.status != 0 and still and not stop_by:
                print(f"\n{r.tier.name} tier {_said(r.status)}; the {' and '.join(still)} tier "
                      "goes on (Ctrl-C stops it)", file=out, flush=True)
        if stop_by and time.monotonic() > stop_by[0]:
            for r in running:
                if r.tier.name not in statuses:
                    _signal_tier(r.proc, signal.SIGKILL)
        time.sleep(0.2)
    return {r.tier.name: statuses[r.tier.name] for r in running}


def _said(status: int) -> str:
    return "passed" if status == 0 else f"failed ({status})"


def _status(code: int) -> int:
    return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N


def main(argv: Sequence[str] | None = None) -> int:
    tiers = make_tiers(argv)
    for tier in tiers:
        for command in tier.then:
            print(f"the {tier.name} tier then runs: {shlex.join(command[1:])}", flush=True)
    return run_side_by_side(tiers)


def make_tiers(argv: Sequence[str] | None = None) -> list[Tier]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="2", help="the host tier's pytest-xdist workers (0: serially)")
    parser.add_argument("--guest-log", type=Path, default=Path(".pytest-guest-tier.log"))
    parser.add_argument("--first", action="append", default=[], metavar="COMMAND",
                        help="a shell command the host tier runs first (lint, the Rust tests); "
                             "the host tier stops if it fails")
    parser.add_argument("--guest-tail", action="append", default=[], metavar="FILE",
                        help="a guest test file the host tier runs after its own tests, not the "
                             "guest tier: the host tier ends first, and its core would idle")
    args = parser.parse_args(argv)
    pytest = [sys.executable, "-m", "pytest", "-q"]
    host = pytest + ["-n", args.workers, "--dist", "loadfile", "--no-loadscope-reorder", "-m", "not guest"]
    if args.first:
        # The guest tier is the longer one: what must run anyway runs beside it, not before.
        host = ["sh", "-c", " && ".join([*args.first, "exec " + shlex.join(host)])]
    # The guest tests' own cache folder would race the host tier's on a write.
    guest = pytest + ["-p", "no:cacheprovider", "-m", "guest"]
    tail = tuple([guest + args.guest_tail] if args.guest_tail else [])
    guest += [f"--ignore={path}" for path in args.guest_tail]
    return [Tier("guest", guest, log=args.guest_log), Tier("host", host, then=tail)]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
