"""The results store: yesterday's files still read. tests/data/results-v1/fslab.sqlite was
written by fslab 0.1.0 (schema 1: an ext4 vs xfs study, 2 ok runs and 2 failed ones);
opening it migrates it in place to the current schema, and reports read it."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.export import EXPORTERS
from fslab.report.tables import build_table
from fslab.store import SCHEMA_VERSION, Store
from fslab.stored import StudyRow

FIXTURE = Path(__file__).parent / "data" / "results-v1" / "fslab.sqlite"


@pytest.fixture
def v1_results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / "fslab.sqlite")  # never touch the fixture itself
    return results


def test_fixture_is_schema_1():
    db = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    columns = {row[1] for row in db.execute("PRAGMA table_info(metrics)")}
    assert "higher_is_better" not in columns


def test_schema_1_database_migrates_and_reads(v1_results: Path):
    with Store(v1_results) as store:
        study = store.study()
        runs = store.runs(study.id)
        cells = store.cells(study.id)
    db = sqlite3.connect(v1_results / "fslab.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert study.name == "fixture: ext4 vs xfs, schema v1" and study.facts == {}
    assert study.paper is None  # a study file of its own, stored before papers were recorded
    assert [r["status"] for r in runs] == ["ok", "failed", "ok", "failed"]
    assert all(c["primary_metric"] == "iops" for c in cells)  # filled from the fio plug-in
    ok = [r for r in runs if r["status"] == "ok"]
    iops = ok[0]["metrics"]["read_iops"]
    assert iops["unit"] == "IO/s" and iops["higher_is_better"] is True and iops["value"] > 0
    assert ok[0]["metrics"]["read_clat_p99_ns"]["higher_is_better"] is False
    table = build_table(runs, None, cells)
    (row,) = table.rows
    assert row.metric == "iops" and row.summaries["ext4"].n == 2 and row.failed == {"xfs": 2}
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(EXPORTERS.get("csv")(study, runs))))
    assert [r["status"] for r in rows] == ["ok", "failed", "ok", "failed"]
    assert "mkfs.xfs" in rows[1]["error"]


def test_migration_is_done_once_and_keeps_every_value(v1_results: Path):
    before = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True).execute(
        "SELECT run_id, name, value, unit FROM metrics ORDER BY run_id, name").fetchall()
    for _ in range(2):
        with Store(v1_results):
            pass
    after = sqlite3.connect(v1_results / "fslab.sqlite").execute(
        "SELECT run_id, name, value, unit FROM metrics ORDER BY run_id, name").fetchall()
    assert after == before


def test_newer_schema_is_refused(v1_results: Path):
    db = sqlite3.connect(v1_results / "fslab.sqlite")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    with pytest.raises(FslabError, match="newer fslab"):
        Store(v1_results)


def _study_row(source: str, facts: dict[str, object]) -> StudyRow:
    return StudyRow(1, "s", source, "h", False, "in-order", 1, "run", 2, 2, [], {}, "complete", 0.0, 1.0, "", facts)


def test_the_paper_a_study_reproduces():
    """Recorded with the study when it was created (``[study] paper``); a study stored
    before it was reads it from the shipped preset it was run from, so yesterday's
    seed-003 results keep the paper's labels and verdicts."""
    assert _study_row("mine.toml", {"paper": "seed-003"}).paper == "seed-003"
    assert _study_row("preset seed-003", {"paper": None, "device_identity": None}).paper is None  # recorded wins
    assert _study_row("preset seed-003-usb", {}).paper == "seed-003"
    assert _study_row("preset seed-000", {"device_identity": None}).paper == "seed-000"
    assert _study_row("preset quickstart", {}).paper is None
    assert _study_row("preset no-longer-shipped", {}).paper is None
    assert _study_row("presets/seed-003.toml", {}).paper is None  # a file, whatever its name
