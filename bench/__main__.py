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

VERDICT = re.compile(r"\b(PASS|FAIL)\b")


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


def run(benches: Sequence[tuple[str, Callable[[], None]]]) -> int:
    """Runs each bench, printing its output as it goes, then every verdict line again under
    its bench's name; 1 when a bench raised."""
    failed = 0
    verdicts: list[tuple[str, str]] = []
    for name, bench in benches:
        print(f"== {name}", flush=True)
        started = time.monotonic()
        tee = _Tee(sys.stdout)
        try:
            with contextlib.redirect_stdout(tee):
                bench()
        except Exception as exc:  # one broken bench must not hide the others' results
            failed += 1
            verdicts.append((name, f"FAILED to run: {exc!r}"))
            print(f"{name} FAILED: {exc!r}")
        verdicts += [(name, line.strip()) for line in tee.lines + [tee.partial] if VERDICT.search(line)]
        print(f"({name}: {time.monotonic() - started:.0f} s)\n", flush=True)
    said = [m.group(1) for _, line in verdicts if (m := VERDICT.search(line))]
    print(f"== verdicts: {said.count('PASS')} of {len(said)} targets met"
          + (f"; {failed} bench{'es' * (failed != 1)} did not run" if failed else ""))
    for name, line in verdicts:
        print(f"{name}: {line}")
    return 1 if failed else 0  # a missed target is a measurement, not an error


def main(argv: list[str]) -> int:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    if argv:
        asked, names = names, [n for n in names if any(a in n for a in argv)]
        if not names:
            print(f"no bench matches {' or '.join(map(repr, argv))}: the benches are {', '.join(asked)}",
                  file=sys.stderr)
            return 2
    return run([(name, _runner(name)) for name in names])


def _runner(name: str) -> Callable[[], None]:
    """Imports bench ``name`` when it runs, so that one that cannot import fails alone."""
    def go() -> None:
        importlib.import_module(f"bench.{name}").main()
    return go


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
