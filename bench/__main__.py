"""Run every bench/bench_*.py (or those named on the command line: `python -m bench fio`)."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    if argv:
        names = [n for n in names if any(a in n for a in argv)]
    failed = 0
    for name in names:
        print(f"== {name}", flush=True)
        started = time.monotonic()
        try:
            importlib.import_module(f"bench.{name}").main()
        except Exception as exc:  # one broken bench must not hide the others' results
            failed += 1
            print(f"{name} FAILED: {exc!r}")
        print(f"({name}: {time.monotonic() - started:.0f} s)\n", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
