"""Seed 003's report section from a real study: ext2 and ext4 on loop devices, the alloc
workload on an empty and on a 50%-aged file system, 3 runs each, stored in SQLite and
rendered to HTML, Markdown and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_outputs import Parsed  # same folder, on sys.path under pytest

from fslab.report.sections import StudyData
from fslab.report.sections.alloc_figures import build
from fslab.runner import run_study
from fslab.store import Store

STUDY = """
[study]
name = "alloc report"
repetitions = 3

[device]
size = "128MiB"
image_dir = "{images}"

[filesystems.ext2]
[filesystems.ext4]

[[workloads]]
kind = "alloc"
name = "empty"
count = 50

[[workloads]]
kind = "alloc"
name = "aged"
count = 50
aging = {{ fill = 0.5, pattern = "random-holes", seed = 3, file_sizes = "lognormal:64KiB:1.5" }}
"""


@pytest.fixture(scope="module")
def alloc_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.geteuid() != 0 or not Path("/dev/loop-control").exists():
        pytest.skip("needs root and loop devices")
    tmp = tmp_path_factory.mktemp("alloc")
    path = tmp / "alloc.toml"
    path.write_text(STUDY.format(images=tmp / "images"))
    assert run_study(str(path), results_dir=tmp / "results").runs_failed == 0
    return tmp / "results"


def test_alloc_section_in_every_renderer(alloc_study: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(alloc_study), "--html", str(out),
                           "--markdown", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    page = Parsed()
    page.feed(out.read_text())
    assert "alloc" in page.sections
    # five operations + two conditions + the ratio chart; every latency bar per fs and condition
    metrics = [s["data-metric"] for s in page.svgs]
    assert metrics.count("aged_over_empty_ratio") == 1 and "rand_write_lat_mean_ns" in metrics
    for fs in ("ext2", "ext4"):
        for cond in ("empty", "aged 50% random-holes"):
            assert f"bar|{fs}|{cond}" in page.bars
    data = json.loads((tmp_path / "r.json").read_text())
    [section] = [s for s in data["sections"] if s["id"].startswith("alloc")]
    assert section["statements"] == []  # not the preset: no paper claims
    lat = next(c for c in section["charts"] if c["metric"] == "seq_write_lat_mean_ns")
    assert all(b["n"] == 3 and b["mean"] > 0 and b["low"] is not None for b in lat["bars"])
    ratio_table = section["tables"][0]
    assert ratio_table["columns"][0] == "file system" and len(ratio_table["rows"]) == 2
    assert all("×" in cell for row in ratio_table["rows"] for cell in row[1:])
    state = section["tables"][-1]
    assert state["title"].startswith("Aged state")
    aged_rows = [r for r in state["rows"] if r[1] != "empty"]
    # utilisation after aging, by statfs, in every aged row: the 50% of the device aging
    # filled with file data (fill_by = "data") plus the file system's metadata
    for row in aged_rows:
        assert 50 <= float(row[2].split("%")[0].split(" ")[0]) <= 60, row
        # the layout score, a fraction, to three decimals (not '1.00' beside '0.998'); a
        # narrower interval keeps its three figures (never '± 0.000')
        mean, _, half = row[3].split(" (n=")[0].partition(" ± ")
        assert len(mean.split(".")[1]) == 3 and 0 < float(mean) <= 1, row
        assert not half or float(half) > 0, row
    md = (tmp_path / "r.md").read_text()
    assert "## Allocation micro-benchmark: empty vs aged" in md and "| file system | case |" in md


def test_paper_verdicts_for_the_preset(alloc_study: Path) -> None:
    with Store(alloc_study, read_only=True) as store:
        runs, cells = store.runs(1), store.cells(1)
    [section] = build(StudyData(runs, cells, paper="seed-003"))
    assert len(section.statements) == 3
    for text in section.statements:
        verdict = text.split(": ", 1)[1]
        assert verdict.startswith(("holds", "does not hold", "cannot tell")), text
    assert "cannot tell (FAT32 was not measured" in section.statements[1]
    assert any(c.title.startswith("Fig. 9") for c in section.charts)
