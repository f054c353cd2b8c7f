"""--resume and --retry-failed continue a stored study only where this fslab plans its
cells under the ids they were stored with: a study stored by an fslab that named cells
otherwise is refused, naming the cells, and nothing is measured again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.runner import run_study
from fslab.store import DB_NAME, Store

STUDY = """
[study]
name = "ids"
repetitions = 2
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w"
[workloads.axes]
value = [1.0, 2.0]
"""


def _rename_cells(results: Path, study_id: int, only: str | None = None) -> None:
    """Give the stored cells (and their runs) the ids an earlier naming would have."""
    db = sqlite3.connect(results / DB_NAME)
    with db:
        where = "study_id = ?" + (" AND id = ?" if only else "")
        args = (study_id, only) if only else (study_id,)
        db.execute(f"UPDATE runs SET cell_id = 'old-' || cell_id WHERE study_id = ?"
                   f"{' AND cell_id = ?' if only else ''}", args)
        db.execute(f"UPDATE cells SET cell_json = json_set(cell_json, '$.id', 'old-' || id), id = 'old-' || id "
                   f"WHERE {where}", args)
    db.close()


@pytest.mark.parametrize("flag", ["--resume", "--retry-failed"])
def test_a_study_stored_under_other_cell_ids_is_refused_and_nothing_runs(tmp_path: Path, flag: str) -> None:
    study = tmp_path / "ids.toml"
    study.write_text(STUDY.format(fake=tmp_path / "fake"))
    results = tmp_path / "r"
    first = run_study(str(study), results_dir=results)
    with Store(results) as store:
        store.set_status(first.study_id, "interrupted")
        cells = store.cells(first.study_id)
    assert len(cells) == 2
    _rename_cells(results, first.study_id, only=cells[1]["id"])
    with pytest.raises(FslabError) as refused:
        run_study(str(study), results_dir=results, resume=flag == "--resume", retry_failed=flag == "--retry-failed")
    said = str(refused.value)
    assert said.startswith(f"{flag}: study {first.study_id} ")
    assert f"1 of the 2 cells planned now (null w [value=2.0] (cell {cells[1]['id']}))" in said, said
    assert f"without {flag}" in said
    with Store(results, read_only=True) as store:
        assert len(store.runs(first.study_id)) == 4  # nothing measured again
        assert len(store.studies()) == 1
        assert store.studies()[0].status == "interrupted"


def test_the_same_ids_resume_as_before(tmp_path: Path) -> None:
    study = tmp_path / "ids.toml"
    study.write_text(STUDY.format(fake=tmp_path / "fake"))
    results = tmp_path / "r"
    first = run_study(str(study), results_dir=results)
    with Store(results) as store:
        store.set_status(first.study_id, "interrupted")
    again = run_study(str(study), results_dir=results, resume=True)
    assert (again.study_id, again.runs_done, again.runs_skipped_as_stored) == (first.study_id, 0, 4)
