"""`make bench` ends with every target's verdict again, under its bench's name."""

from __future__ import annotations

import pytest
from bench.__main__ import run


def test_the_run_ends_with_each_verdict_and_how_many_targets_were_met(capsys: pytest.CaptureFixture[str]) -> None:
    def fast() -> None:
        print("analysis: 120 M events/s (target >= 100 M) PASS")
        print("a line with no verdict", end="")
        print(" but two writes")
        print("| corner | +3% | PASS (derived) |")  # shown in its table, but no check

    def slow() -> None:
        print("a FAILED word is not a verdict")
        print("boot: 3.7 s; target < 3 s: FAIL", end="")  # the last line, unended

    def soak() -> None:
        print("soak: 12 planned runs, 11 stored ok")
        raise SystemExit("FAIL: 11 ok of 12 stored runs for 12 planned")

    def broken() -> None:
        print("reads: 41 M requests/s PASS")
        raise RuntimeError("no qemu")

    benches = [("bench_fast", fast), ("bench_slow", slow), ("bench_soak", soak), ("bench_broken", broken)]
    assert run(benches) == 1
    out = capsys.readouterr().out
    head, summary = out.split("== verdicts: ")
    assert "a line with no verdict but two writes" in head  # the benches' own output, as it went
    assert "target < 3 s: FAIL\n(bench_slow: " in head  # an unended last line is ended
    assert summary.splitlines() == [
        "2 of 4 targets met; 1 bench did not finish",
        "bench_fast: analysis: 120 M events/s (target >= 100 M) PASS",
        "bench_slow: boot: 3.7 s; target < 3 s: FAIL",
        "bench_soak: FAIL: 11 ok of 12 stored runs for 12 planned",
        "bench_broken: reads: 41 M requests/s PASS",
        "bench_broken: did not finish: RuntimeError('no qemu')",
    ]
    assert run([("bench_slow", slow)]) == 0  # a missed target is a measurement, not an error


def test_a_name_that_matches_no_bench_is_refused_with_the_names_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    assert main(["no_such_bench"]) == 2
    err = capsys.readouterr().err
    assert "no bench matches 'no_such_bench'" in err and "bench_guest" in err and "bench_trace" in err
    assert main(["trace", "typo"]) == 2  # one name that matches is not enough: nothing runs
    assert "no bench matches 'typo'" in capsys.readouterr().err
    # An option is a bench's own (it reads sys.argv), never a name; the name is still checked.
    assert main(["no_such_bench", "--published"]) == 2
    assert "no bench matches 'no_such_bench':" in capsys.readouterr().err
