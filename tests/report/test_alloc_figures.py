"""Seed 003's report section: figures with intervals, aged/empty ratios (Fieller) and the
verdicts on the paper's three conclusions. Verdict logic on stored-run data of known
shape (no root); the whole section from a real ext2/ext4 study in test_alloc_report."""

from __future__ import annotations

from typing import Any

from fslab.report.sections import StudyData
from fslab.report.sections.alloc_figures import OPS, _state_table, build

AGING = {"fill": 0.5, "pattern": "random-holes", "seed": 3}


def _cell(fs: str, fs_type: str, aged: bool, backend: str = "host") -> dict[str, Any]:
    return {"id": f"{fs}-{aged}", "filesystem": fs, "fs_type": fs_type, "workload_kind": "alloc",
            "workload": "alloc-aged" if aged else "alloc-empty", "backend": backend, "axes": {},
            "params": {"count": 100, "bs": 4096, "sync": "fsync"}, "aging": AGING if aged else None}


def _runs(cell: dict[str, Any], lat_us: dict[str, float], spread: float = 0.02) -> list[dict[str, Any]]:
    out = []
    for k in (-1, 0, 1):
        metrics = {f"{op}_lat_mean_ns": {"value": v * 1000 * (1 + k * spread)} for op, v in lat_us.items()}
        out.append({"status": "ok", "cell": cell, "metrics": metrics, "provenance": {}})
    return out


def _study(spec: dict[str, tuple[str, str, dict[str, float], dict[str, float]]]):
    cells, runs = [], []
    for fs, (fs_type, backend, empty, aged) in spec.items():
        for is_aged, lat in ((False, empty), (True, aged)):
            c = _cell(fs, fs_type, is_aged, backend)
            cells.append(c)
            runs += _runs(c, lat)
    return runs, cells


def _lat(write: float, read: float = 2.0, delete: float = 10.0) -> dict[str, float]:
    return {"seq_read": read, "rand_read": read, "delete": delete, "seq_write": write, "rand_write": write * 2}


def test_paper_claims_hold_when_the_intervals_say_so() -> None:
    runs, cells = _study({
        "fat32": ("vfat", "guest", _lat(300), _lat(420)),
        "ext2": ("ext2", "guest", _lat(500), _lat(900)),
        "ext4": ("ext4", "guest", _lat(400), _lat(440)),
    })
    [section] = build(StudyData(runs, cells, paper="seed-003"))
    a, b, c = section.statements
    assert a.startswith("(a)") and ": holds" in a and "130×" in a
    assert ": holds" in b and ": holds" in c
    assert any(ch.title.startswith("Fig. 4") for ch in section.charts)
    ratio = next(ch for ch in section.charts if ch.metric == "aged_over_empty_ratio")
    bar = next(x for x in ratio.bars if x.filesystem == "ext4 (guest)" and x.case == "allocation+write, sequential")
    assert abs(bar.mean - 1.1) < 1e-9 and bar.low is not None and bar.low < 1.1 < bar.high
    # one latency chart per operation plus one per condition, and the ratio chart
    assert len(section.charts) == len(OPS) + 2 + 1


def test_claims_that_fail_or_cannot_be_told() -> None:
    runs, cells = _study({
        "fat32": ("vfat", "guest", _lat(600), _lat(700)),  # ext2 is faster: (b) does not hold
        "ext2": ("ext2", "guest", _lat(300), _lat(330)),  # loses least: (c) does not hold
        "ext4": ("ext4", "guest", _lat(400), _lat(800)),
        "xfs": ("xfs", "host", _lat(100), _lat(100)),  # another backend: never compared
    })
    [section] = build(StudyData(runs, cells, paper="seed-003"))
    _, b, c = section.statements
    assert ": does not hold" in b and "ext2 (guest) / fat32 (guest)" in b
    assert "Not compared (another backend" in b and "xfs" in b
    assert ": does not hold" in c
    # a write as fast as a read: allocation+write does not dominate
    runs, cells = _study({"ext4": ("ext4", "host", _lat(2.0, read=20.0), _lat(2.0, read=20.0))})
    [section] = build(StudyData(runs, cells, paper="seed-003"))
    a, b, c = section.statements
    assert ": does not hold" in a
    assert "cannot tell (FAT32 was not measured" in b
    assert "cannot tell (ext4 is the only file system on its backend)" in c


def test_a_users_study_gets_figures_without_the_papers_claims() -> None:
    runs, cells = _study({"ext4": ("ext4", "host", _lat(400), _lat(440))})
    [section] = build(StudyData(runs, cells))
    assert section.statements == []
    assert not any("Fig." in ch.title for ch in section.charts)
    assert [t.title for t in section.tables][0].startswith("aged 50% random-holes / empty")
    # a study that reproduces another paper gets none of seed 003's labels either
    assert build(StudyData(runs, cells, paper="seed-000")) == [section]


def test_variants_are_labelled_by_the_parameters_they_differ_in() -> None:
    """Two alloc variants (count 100 and 200) are told apart by what differs between
    them, read generically: nothing outside the plug-in names alloc's parameters."""
    from fslab.report.sections.alloc_figures import _groups

    def cell(cell_id: int, count: int, aging: dict | None) -> dict:
        return {"id": cell_id, "workload_kind": "alloc", "filesystem": "ext4", "fs_type": "ext4",
                "backend": "host", "axes": {}, "aging": aging,
                "params": {"count": count, "bs": 4096, "sync": "fsync", **({"aging": aging} if aging else {})}}

    aged = {"fill": 0.5, "pattern": "random-holes"}
    cells = [cell(1, 100, None), cell(2, 100, aged), cell(3, 200, None), cell(4, 200, aged)]
    groups = _groups([], cells)  # type: ignore[arg-type]
    assert [g.label for g in groups] == ["count=100", "count=200"]
    assert [g.conditions for g in groups] == [["empty", "aged 50% random-holes"]] * 2
    assert _groups([], cells[:2])[0].label == ""  # one variant: no label  # type: ignore[arg-type]


def test_the_layout_score_keeps_three_decimals_and_a_narrow_interval_its_figures() -> None:
    # scores 0.9981–0.9984: the mean to three decimals, the ± not rounded to 0.000
    cell = _cell("ext4", "ext4", True)
    runs = [{"status": "ok", "cell": cell, "provenance": {},
             "metrics": {"aging_layout_score": {"value": v}}} for v in (0.9981, 0.9982, 0.9984, 0.9983)]
    runs += [{"status": "ok", "cell": _cell("xfs", "xfs", True), "provenance": {},
              "metrics": {"aging_layout_score": {"value": 1.0}}}] * 3
    table = _state_table(runs, [cell, _cell("xfs", "xfs", True)])  # type: ignore[arg-type]
    assert table is not None
    scores = {row[0]: row[3] for row in table.rows}
    mean, half = scores["ext4"].removesuffix(" (n=4)").split(" ± ")
    assert mean == "0.998" and 0.0001 < float(half) < 0.0005
    assert scores["xfs"] == "1.000 (n=3)"
