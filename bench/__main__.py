"""Run every bench/bench_*.py (or those named on the command line: `python -m bench fio`),
then repeat each target's verdict line (PASS or FAIL), so a long run ends with the answer."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from fslab.units import counted

# A target's verdict; one marked "(derived)" (a model-validation corner derived from the
# figure it is checked against) is shown in its table but is no check.
VERDICT = re.compile(r"\b(PASS|FAIL)\b(?! \(derived\))")


class _Tee(io.TextIOBase):
    """Writes through to ``out`` and keeps every complete line written."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.partial = out, ""  # partial: the line being written
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.out.write(text)
        *done, self.partial = (self.partial + text).split("\n")
        self.lines += done
        return len(text)

    def flush(self) -> None:
        self.out.flush()


UNFINISHED = "did not finish"


def run(benches: Sequence[tuple[str, Callable[[], None]]]) -> int:
    """Runs each bench, printing its output as it goes, then every verdict line again under
    its bench's name; 1 when a bench stopped early. A bench that stops with
    ``SystemExit("FAIL: ...")`` (the soak's way) has said its verdict; any other exception,
    or an exit status that is not a verdict, leaves it unfinished."""
    stopped_early = 0
    verdicts: list[tuple[str, str]] = []
    for name, bench in benches:
        print(f"== {name}", flush=True)
        started = time.monotonic()
        tee = _Tee(sys.stdout)
        stopped: str | None = None
        try:
            with contextlib.redirect_stdout(tee):
                bench()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                stopped = str(exc.code) if VERDICT.search(str(exc.code)) else f"{UNFINISHED}: exit {exc.code!r}"
        except Exception as exc:  # one broken bench must not hide the others' results
            stopped = f"{UNFINISHED}: {exc!r}"
        if tee.partial:
            print()  # its last line, unended, must not run into what follows
        lines = [*tee.lines, tee.partial]
        if stopped is not None:
            stopped_early += 1
            print(f"{name} stopped: {stopped}")
            lines.append(stopped)
        verdicts += [(name, line.strip()) for line in lines if VERDICT.search(line) or line.startswith(UNFINISHED)]
        print(f"({name}: {time.monotonic() - started:.0f} s)\n", flush=True)
    said = [m.group(1) for _, line in verdicts if (m := VERDICT.search(line))]
    unfinished = sum(1 for _, line in verdicts if line.startswith(UNFINISHED))
    print(f"== verdicts: {said.count('PASS')} of {len(said)} targets met"
          + (f"; {counted(unfinished, 'bench', 'benches')} {UNFINISHED}" if unfinished else ""))
    for name, line in verdicts:
        print(f"{name}: {line}")
    return 1 if stopped_early else 0  # a missed target is a measurement, not an error


def main(argv: list[str]) -> int:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    # Options ("--published", "--markdown") are the benches' own: they read sys.argv.
    argv = [a for a in argv if not a.startswith("-")]
    if argv:
        if unknown := [a for a in argv if not any(a in n for n in names)]:
            print(f"no bench matches {' or '.join(map(repr, unknown))}: the benches are {', '.join(names)}",
                  file=sys.stderr)
            return 2
        names = [n for n in names if any(a in n for a in argv)]
    return run([(name, _runner(name)) for name in names])


def _runner(name: str) -> Callable[[], None]:
    """Imports bench ``name`` when it runs, so that one that cannot import fails alone."""
    def go() -> None:
        importlib.import_module(f"bench.{name}").main()
    return go


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
