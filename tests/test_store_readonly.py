"""Commands that only read a results folder (`fslab report`, `fslab export`, `fslab list`)
leave it as they found it: no `fslab.sqlite-wal` or `-shm` made beside a cleanly closed
store, and a store with a live WAL (a study running, or killed) read through that WAL, so
its newest rows are seen, with no file added or removed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from fslab.runner import run_study
from fslab.store import Store

STUDY = """
[study]
name = "read only"
repetitions = 2
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w"
"""


def files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def made(tmp_path: Path) -> Path:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(fake=tmp_path / "fake"))
    run_study(str(study), results_dir=tmp_path / "r")
    return tmp_path / "r"


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fslab.cli", *args], capture_output=True, text=True, timeout=300)


def test_reading_a_closed_store_makes_no_wal_or_shm(tmp_path: Path) -> None:
    results = made(tmp_path)
    before = files(results)
    assert "fslab.sqlite" in before and "fslab.sqlite-wal" not in before
    for args in (["report", "-r", str(results)], ["export", "-r", str(results), "--format", "csv"],
                 ["list", "-r", str(results)]):
        done = fslab(*args)
        assert done.returncode == 0, done.stderr
        assert files(results) == before, (args, files(results) - before)
    with Store(results, read_only=True) as store:
        assert [s.name for s in store.studies()] == ["read only"]
        assert files(results) == before


def test_reading_a_store_with_a_live_wal_sees_its_rows_and_adds_nothing(tmp_path: Path) -> None:
    results = made(tmp_path)
    writer = sqlite3.connect(results / "fslab.sqlite")  # a study still writing (or killed)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # the change stays in the WAL
        writer.execute("UPDATE studies SET name = 'renamed in the WAL'")
        writer.commit()
        before = files(results)
        assert {"fslab.sqlite-wal", "fslab.sqlite-shm"} <= before
        with Store(results, read_only=True) as store:
            assert [s.name for s in store.studies()] == ["renamed in the WAL"]
        done = fslab("export", "-r", str(results), "--format", "csv")
        assert done.returncode == 0, done.stderr
        assert files(results) == before
    finally:
        writer.close()
