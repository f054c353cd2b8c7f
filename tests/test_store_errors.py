"""Results directories that are wrong in every way a user can get them wrong: each gives one
clear error naming the path and the fix (never a traceback); reading commands create
nothing; a damaged database is never rewritten; a read-only file system still reads."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fslab.cli import main
from fslab.errors import FslabError
from fslab.store import DB_NAME, SCHEMA_VERSION, Store

FIXTURE = Path(__file__).parent / "data" / "results-v1" / "fslab.sqlite"
READERS = (["report"], ["export"], ["list"])


def fslab(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    """Run the command in this process: an uncaught exception (a traceback for a user)
    fails the test by itself. Returns (exit status, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["fslab", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out + out.err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_error(text: str) -> str:
    """The message of exactly one error line (rich may wrap it; join the lines)."""
    assert text.count("error:") == 1, text
    return " ".join(text.split())


@pytest.fixture
def v2_results(tmp_path: Path) -> Path:
    """A current results directory with one stored study (the schema-1 fixture, upgraded)."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / DB_NAME)
    Store(results).close()
    return results


@pytest.mark.parametrize("command", READERS)
def test_reading_a_typo_creates_nothing(tmp_path, capsys, monkeypatch, command):
    typo = tmp_path / "reslts"
    status, text = fslab(capsys, monkeypatch, *command, "-r", str(typo))
    assert status == 2
    message = one_error(text)
    assert "no results directory" in message and str(typo) in message and "--results" in message
    assert not typo.exists()


@pytest.mark.parametrize("command", READERS)
def test_reading_a_directory_without_results_creates_no_database(tmp_path, capsys, monkeypatch, command):
    status, text = fslab(capsys, monkeypatch, *command, "-r", str(tmp_path))
    assert status == 2 and "no results in" in one_error(text)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [*READERS, ["run", "quickstart"]])
def test_results_path_that_is_a_file(tmp_path, capsys, monkeypatch, command):
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    status, text = fslab(capsys, monkeypatch, *command, "-r", str(path))
    assert status == 2
    message = one_error(text)
    assert "is a file" in message and str(path) in message and "--results" in message
    assert path.read_text() == "mine\n"


def test_results_parent_that_is_a_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("")
    status, text = fslab(capsys, monkeypatch, "run", "quickstart", "-r", str(tmp_path / "file" / "sub"))
    assert status == 2
    assert "cannot create the results directory" in one_error(text)


def _damaged(kind: str, good: Path) -> bytes:
    data = good.read_bytes()
    if kind == "empty":
        return b""
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "header only":
        return data[:100]
    if kind == "not sqlite":
        return b"study,run\n1,2\n" * 50
    if kind == "garbled pages":  # the header intact, the pages after it overwritten
        page = int.from_bytes(data[16:18], "big")
        return data[:page] + bytes([0xA5]) * (len(data) - page)
    raise AssertionError(kind)


DAMAGE = ("empty", "truncated", "header only", "not sqlite", "garbled pages")
EXPECTED = {"empty": "is empty (0 bytes)", "truncated": "is truncated", "header only": "is truncated",
            "not sqlite": "is not an SQLite database", "garbled pages": "is damaged"}


@pytest.mark.parametrize("kind", DAMAGE)
@pytest.mark.parametrize("command", [*READERS, ["run", "quickstart", "--quick"]])
def test_damaged_database_is_one_error_and_never_rewritten(v2_results, capsys, monkeypatch, kind, command):
    db = v2_results / DB_NAME
    db.write_bytes(_damaged(kind, db))
    before = digest(db)
    status, text = fslab(capsys, monkeypatch, *command, "-r", str(v2_results))
    assert status == 2
    message = one_error(text)
    assert EXPECTED[kind] in message and str(db) in message and "untouched" in message
    assert digest(db) == before
    assert not (v2_results / "artifacts").exists()


def test_a_foreign_sqlite_database_is_not_taken_over(tmp_path, capsys, monkeypatch):
    db = tmp_path / DB_NAME
    with contextlib.closing(sqlite3.connect(db)) as con:
        con.execute("CREATE TABLE photos (id INTEGER)")
        con.commit()
    before = digest(db)
    for command in (*READERS, ["run", "quickstart"]):
        status, text = fslab(capsys, monkeypatch, *command, "-r", str(tmp_path))
        assert status == 2 and "not fslab's results" in one_error(text) and "photos" in text
    assert digest(db) == before


def test_an_sqlite_database_without_tables_is_an_error_to_readers(tmp_path, capsys, monkeypatch):
    """A valid SQLite file that holds no table (made by another tool, or emptied) is not
    fslab's results: report, list and export say so instead of failing on a query."""
    db = tmp_path / DB_NAME
    with contextlib.closing(sqlite3.connect(db)) as con:
        con.execute("CREATE TABLE t (x)")
        con.execute("DROP TABLE t")
        con.commit()
    before = digest(db)
    for command in READERS:
        status, text = fslab(capsys, monkeypatch, *command, "-r", str(tmp_path))
        assert status == 2 and "without tables, not fslab's results" in one_error(text), text
        assert "Traceback" not in text
    assert digest(db) == before


def test_reading_does_not_write_the_database(v2_results, capsys, monkeypatch):
    db = v2_results / DB_NAME
    before = digest(db)
    for command in READERS:
        status, text = fslab(capsys, monkeypatch, *command, "-r", str(v2_results))
        assert status == 0, text
    assert digest(db) == before


def test_reading_a_schema_1_file_upgrades_it_once(tmp_path, capsys, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / DB_NAME)
    status, text = fslab(capsys, monkeypatch, "export", "-r", str(results), "-f", "csv")
    assert status == 0 and "fixture" in text
    with contextlib.closing(sqlite3.connect(results / DB_NAME)) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_store_read_only_refuses_to_write(v2_results):
    with Store(v2_results, read_only=True) as store, pytest.raises(FslabError, match="read-only"):
        store.set_status(store.study().id, "complete")


# ----------------------------------------------------------------- read-only file systems


@contextlib.contextmanager
def read_only_copy(tmp_path: Path, files: dict[str, Path]) -> Iterator[Path]:
    """A small tmpfs holding ``files`` (name -> source), remounted read-only; unmounted
    after the test however it ends."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a read-only file system")
    mnt = tmp_path / "ro"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "fslab-test-ro", str(mnt)], check=True)
    try:
        for name, source in files.items():
            (mnt / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, mnt / name)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_read_only_file_system(v2_results, tmp_path, capsys, monkeypatch):
    with read_only_copy(tmp_path, {f"results/{DB_NAME}": v2_results / DB_NAME,
                                   f"old/{DB_NAME}": FIXTURE}) as mnt:
        results, old = mnt / "results", mnt / "old"
        before = digest(results / DB_NAME)
        # Reading works: a WAL database on a read-only file system is opened immutable.
        for command in READERS:
            status, text = fslab(capsys, monkeypatch, *command, "-r", str(results))
            assert status == 0, text
        assert digest(results / DB_NAME) == before
        # Writing is one clear error, before anything is done.
        status, text = fslab(capsys, monkeypatch, "run", "quickstart", "-r", str(results))
        assert status == 2 and "not writable" in one_error(text) and str(results) in text
        status, text = fslab(capsys, monkeypatch, "run", "quickstart", "-r", str(mnt / "new"))
        assert status == 2 and "cannot create the results directory" in one_error(text)
        assert "Read-only file system" in text
        # A schema-1 file needs its one upgrade, which cannot be written here: say so.
        status, text = fslab(capsys, monkeypatch, "report", "-r", str(old))
        message = one_error(text)
        assert status == 2 and "schema 1" in message and "not writable" in message
        assert digest(old / DB_NAME) == digest(FIXTURE)


def test_read_only_database_file_refuses_writes(v2_results):
    """The Store API itself (not just the CLI) turns SQLite's refusal into an FslabError."""
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files; the read-only mount test covers this")
    (v2_results / DB_NAME).chmod(0o444)
    with pytest.raises(FslabError, match="read-only"):
        Store(v2_results)


def test_a_new_database_appears_whole(tmp_path):
    """A reader that finds fslab.sqlite while a study is creating it (`fslab list` as a
    study starts) must never see a 0-byte file: that is a damaged one. The file is made
    aside and linked into place."""
    import threading

    from fslab.store import check_database

    checked = 0
    for i in range(20):
        results = tmp_path / f"r{i}"
        maker = threading.Thread(target=lambda r=results: Store(r).close())
        maker.start()
        while maker.is_alive():
            if (results / DB_NAME).exists():
                assert check_database(results / DB_NAME) == SCHEMA_VERSION
                checked += 1
        maker.join()
        assert check_database(results / DB_NAME) == SCHEMA_VERSION
        assert not [p.name for p in results.iterdir() if p.name.endswith(".new")]
    assert checked > 0, "the reader never saw a file being made: the test proved nothing"
