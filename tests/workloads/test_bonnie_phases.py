"""Bonnie++'s test boundaries from its progress messages, on a capture of a real bonnie++
2.00a run (tests/data/bonnie/progress-64m.json: stderr pieces as they arrived, stamped in
ns from the first), and the split of a request list by those boundaries. Pure."""

from __future__ import annotations

import json
from pathlib import Path

from fslab.phase_predictions import split_by_spans
from fslab.workloads.bonnie import PHASE_BY_KEY, PHASES
from fslab.workloads.bonnie_phases import parse_progress, phase_spans

DATA = Path(__file__).parents[1] / "data" / "bonnie"
MIB = 1 << 20


def pieces(name: str = "progress-64m.json") -> list[tuple[int, str]]:
    return [(int(ns), text) for ns, text in json.loads((DATA / name).read_text())["pieces"]]


def test_every_test_of_a_real_run_is_found_in_order_without_overlap() -> None:
    spans = parse_progress(pieces())
    assert [key for key, _, _ in spans] == [p.key for p in PHASES]
    for (_, start, end), (_, next_start, _) in zip(spans, spans[1:]):
        assert start < end <= next_start
    by_key = {k: (s, e) for k, s, e in spans}
    # The capture's own numbers: putc's name came with "Using uid" at 0 and its "done" at 1182 ms;
    # getc's "done" and block read's name came in one piece, so one moment ends and starts them.
    assert by_key["putc"] == (0, 1_182_447_096)
    assert by_key["getc"][1] == by_key["block_read"][0] == 2_139_202_321
    # The seek test ends at the last of its five seekers' "done...", not the first.
    assert by_key["seeks"] == (5_168_038_113, 5_455_221_080)


def test_a_test_bonnie_did_not_finish_is_left_out() -> None:
    cut = [p for p in pieces() if p[0] < 5_400_000_000]  # stopped while seeking: 4 of 5 seekers done
    assert parse_progress(cut)[-1] == ("seeks", 5_168_038_113, 5_389_159_876)  # its last "done..." so far
    truncated = [p for p in pieces() if p[0] < 5_168_038_113 + 1]  # only "start 'em..." of the seeks
    assert "seeks" not in [k for k, _, _ in parse_progress(truncated)]
    assert [k for k, _, _ in parse_progress(truncated)][-1] == "block_read"


def test_copies_printing_the_same_test_make_one_span_over_all() -> None:
    stamped = [(10, "Writing intelligently..."), (12, "Writing intelligently..."), (50, "done\n"),
               (70, "done\n"), (71, "Rewriting..."), (90, "done\n")]
    assert parse_progress(stamped) == [("block_write", 10, 70), ("rewrite", 71, 90)]


def test_work_of_each_test_comes_from_the_sizes_the_run_used() -> None:
    choice = {"size_bytes": 64 * MIB, "char_size_bytes": MIB, "files": "1", "seeks": 8192}
    spans = {s.key: s for s in phase_spans(pieces(), choice)}
    assert spans["block_write"].work == 64 * MIB and spans["block_write"].writes_bytes == 64 * MIB
    assert spans["rewrite"].writes_bytes == spans["rewrite"].reads_bytes == 64 * MIB
    assert spans["getc"].work == spans["getc"].reads_bytes == MIB
    assert "system call per byte" in spans["getc"].note
    assert spans["seeks"].work == 8192 and spans["seeks"].work_unit == "seeks"
    assert spans["random_delete"].work == 1024 and spans["random_delete"].work_unit == "files"
    for span in spans.values():  # the metric each test's prediction is named after is Bonnie++'s own
        assert span.metric == PHASE_BY_KEY[span.key].rate_metric
    doubled = {s.key: s for s in phase_spans(pieces(), choice, concurrency=2)}
    assert doubled["block_read"].work == 128 * MIB


def test_requests_split_by_issue_time_add_up_to_all() -> None:
    spans = [(100, 200), (200, 300), (400, 500)]
    times = [50, 100, 150, 200, 250, 350, 450, 600]
    inside, outside = split_by_spans(times, spans)
    assert inside == [[1, 2, 3], [4], [6]]  # a request on a shared bound goes to the earlier test
    assert outside == [0, 5, 7]
    assert sum(map(len, inside)) + len(outside) == len(times)
