"""`make bench` ends with every target's verdict again, under its bench's name."""

from __future__ import annotations

import pytest
from bench.__main__ import run


def test_the_run_ends_with_each_verdict_and_how_many_targets_were_met(capsys: pytest.CaptureFixture[str]) -> None:
    def fast() -> None:
        print("analysis: 120 M events/s (target >= 100 M) PASS")
        print("a line with no verdict", end="")
        print(" but two writes")

    def slow() -> None:
        print("a FAILED word is not a verdict")
        print("boot: 3.7 s; target < 3 s: FAIL", end="")  # the last line, unended

    def broken() -> None:
        raise RuntimeError("no qemu")

    assert run([("bench_fast", fast), ("bench_slow", slow), ("bench_broken", broken)]) == 1
    out = capsys.readouterr().out
    head, summary = out.split("== verdicts: ")
    assert "a line with no verdict but two writes" in head  # the benches' own output, as it went
    assert summary.splitlines() == [
        "1 of 2 targets met; 1 bench did not run",
        "bench_fast: analysis: 120 M events/s (target >= 100 M) PASS",
        "bench_slow: boot: 3.7 s; target < 3 s: FAIL",
        "bench_broken: FAILED to run: RuntimeError('no qemu')",
    ]
    assert run([("bench_slow", slow)]) == 0  # a missed target is a measurement, not an error


def test_a_name_that_matches_no_bench_is_refused_with_the_names_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    assert main(["no_such_bench"]) == 2
    err = capsys.readouterr().err
    assert "no bench matches 'no_such_bench'" in err and "bench_guest" in err and "bench_trace" in err
