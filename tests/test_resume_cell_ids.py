"""--resume and --retry-failed continue a stored study only where this fslab plans its
cells under the ids they were stored with: a study stored by an fslab that named cells
otherwise is refused, naming the cells, and nothing is measured again."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.runner import StudyOutcome, run_study
from fslab.store import DB_NAME, Store
from null_studies import null_study_text, null_workload, write_null_study

WORKLOADS = null_workload(axes="value = [1.0, 2.0]")


def _write(folder: Path) -> Path:
    return write_null_study(folder, WORKLOADS, name="ids", file_name="ids.toml")


def _interrupted(folder: Path) -> tuple[Path, Path, StudyOutcome]:
    """The study written, run whole and marked as an interrupted run leaves it:
    (study file, results folder, its outcome)."""
    study, results = _write(folder), folder / "r"
    first = run_study(str(study), results_dir=results)
    with Store(results) as store:
        store.set_status(first.study_id, "interrupted")
    return study, results, first


def _rename_cell(results: Path, study_id: int, cell_id: str, backend: str | None = None) -> None:
    """Give a stored cell (and its runs) the id an earlier naming would have; with
    ``backend``, as if it had been planned on that backend then."""
    db = sqlite3.connect(results / DB_NAME)
    with db:
        db.execute("UPDATE runs SET cell_id = 'old-' || cell_id WHERE study_id = ? AND cell_id = ?",
                   (study_id, cell_id))
        db.execute("UPDATE cells SET cell_json = json_set(cell_json, '$.id', 'old-' || id, '$.backend', "
                   "coalesce(?, json_extract(cell_json, '$.backend'))), id = 'old-' || id "
                   "WHERE study_id = ? AND id = ?", (backend, study_id, cell_id))
    db.close()


@pytest.mark.parametrize("flag,backend,differs", [
    ("--resume", None, "defined alike, stored under another id"),
    ("--retry-failed", None, "defined alike, stored under another id"),
    ("--resume", "guest", "backend: guest -> host"),
])
def test_a_study_stored_under_other_cell_ids_is_refused_and_nothing_runs(
        tmp_path: Path, flag: str, backend: str | None, differs: str) -> None:
    study, results, first = _interrupted(tmp_path)
    with Store(results, read_only=True) as store:
        cells = store.cells(first.study_id)
    assert len(cells) == 2
    _rename_cell(results, first.study_id, cells[1]["id"], backend)
    with pytest.raises(FslabError) as refused:
        run_study(str(study), results_dir=results, resume=flag == "--resume", retry_failed=flag == "--retry-failed")
    said = str(refused.value)
    assert said.startswith(f"{flag}: 1 of the 2 cells ")
    assert f"1 of the 2 cells this fslab plans for ids.toml are not stored under the ids study {first.study_id} " \
           f"in {results} has: null w [value=2.0] (cell {cells[1]['id']}): {differs}." in said, said
    assert f"It was started here, with this fslab ({os.uname().nodename}, kernel {os.uname().release}" in said
    assert f"undo that, or run without {flag} to start a new study" in said, said
    with Store(results, read_only=True) as store:
        assert len(store.runs(first.study_id)) == 4  # nothing measured again
        assert len(store.studies()) == 1
        assert store.studies()[0].status == "interrupted"


def test_the_same_ids_resume_as_before(tmp_path: Path) -> None:
    study, results, first = _interrupted(tmp_path)
    again = run_study(str(study), results_dir=results, resume=True)
    assert (again.study_id, again.runs_done, again.runs_skipped_as_stored) == (first.study_id, 0, 4)


def test_a_new_run_beside_an_unfinished_study_says_how_to_continue_that_one(tmp_path: Path) -> None:
    study, results, first = _interrupted(tmp_path)
    notices: list[str] = []
    second = run_study(str(study), results_dir=results, on_notice=notices.append)
    assert second.study_id != first.study_id and second.runs_done == 4
    (said,) = notices
    assert said == (f"study {first.study_id} of this study file is unfinished (4 of 4 runs stored, interrupted): "
                    f"this starts a new study beside it; `fslab run {study} -r {results} --resume` continues "
                    "that one instead")
    # The command carries what this invocation was given, so it runs as pasted.
    notices.clear()
    run_study(str(study), results_dir=results, on_notice=notices.append, allow_exec=True)
    assert f"`fslab run {study} -r {results} --allow-exec --resume` continues that one" in notices[0], notices


def test_a_renamed_study_resumes_under_its_new_name_and_says_so(tmp_path: Path) -> None:
    from fslab.report.sections.definitions import study_statements

    study = _write(tmp_path)
    results = tmp_path / "r"
    first = run_study(str(study), results_dir=results)
    db = sqlite3.connect(results / DB_NAME)
    with db:  # as an interrupted run leaves it: one run to do
        db.execute("DELETE FROM metrics WHERE run_id = (SELECT max(id) FROM runs)")
        db.execute("DELETE FROM runs WHERE id = (SELECT max(id) FROM runs)")
        db.execute("UPDATE studies SET status = 'interrupted'")
    db.close()
    study.write_text("# a comment\n" + null_study_text(tmp_path, WORKLOADS, name="ids, v2"))
    notices: list[str] = []
    again = run_study(str(study), results_dir=results, resume=True, on_notice=notices.append)
    assert (again.study_id, again.runs_done, again.runs_skipped_as_stored) == (first.study_id, 1, 3)
    assert any('study.name: "ids" -> "ids, v2"' in n and "touches no run" in n for n in notices), notices
    with Store(results, read_only=True) as store:
        row = store.study(first.study_id)
        statements = study_statements(row, store.runs(row.id))
    assert row.name == "ids, v2" and row.status == "complete"
    assert any(s.startswith("revised by --resume at ") and "(a change that touches no run)" in s
               for s in statements), statements


def test_a_change_that_touches_how_runs_are_measured_is_still_refused(tmp_path: Path) -> None:
    study, results, first = _interrupted(tmp_path)
    # the same cells, but every run would now be measured after a cache drop
    study.write_text(null_study_text(tmp_path, WORKLOADS, name="ids").replace("drop_caches = false",
                                                                               "drop_caches = true"))
    with pytest.raises(FslabError, match=r"study\.drop_caches: false -> true"):
        run_study(str(study), results_dir=results, resume=True)
