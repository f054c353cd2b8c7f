"""--retry-failed after a study file was changed and then changed back: the first
definition is adopted again (it is stored already), not inserted twice."""

from __future__ import annotations

from pathlib import Path

from fslab.runner import run_study
from fslab.store import Store
from null_studies import null_study_text, null_workload


def _text(folder: Path, ops: int) -> str:
    """Every run fails; ``ops`` changes the definition and nothing else."""
    return null_study_text(folder, null_workload(lines=f"fail = true\nops = {ops}"), name="revert")


def test_a_change_undone_is_retried_under_the_first_definition(tmp_path: Path) -> None:
    study, results = tmp_path / "s.toml", tmp_path / "r"
    first_text = _text(tmp_path, 10)
    study.write_text(first_text)
    first = run_study(str(study), results_dir=results)
    assert first.runs_failed == 2
    study.write_text(_text(tmp_path, 20))
    notices: list[str] = []
    second = run_study(str(study), results_dir=results, retry_failed=True, on_notice=notices.append)
    assert (second.study_id, second.runs_done, second.runs_retried) == (first.study_id, 2, 2)
    study.write_text(first_text)  # the change undone
    third = run_study(str(study), results_dir=results, retry_failed=True, on_notice=notices.append)
    assert (third.study_id, third.runs_done, third.runs_retried) == (first.study_id, 2, 2)
    with Store(results, read_only=True) as store:
        cells = store.cells(first.study_id, replaced_too=True)
        in_effect = store.cells(first.study_id)
        runs = store.runs(first.study_id)
        row = store.study(first.study_id)
    assert len(cells) == 2  # the first definition and the second, each once
    assert [c["id"] for c in in_effect] == [cells[0]["id"]]  # the first, taken up again
    assert {r["cell"]["params"]["ops"] for r in runs} == {10}  # the runs now are the first definition's
    assert [list(r["replaced_cells"].values())[0] for r in row.facts["revisions"]] == [cells[1]["id"], cells[0]["id"]]
    assert row.spec_text == first_text


def test_runs_failing_again_are_retried_again_and_no_run_id_names_two_runs(tmp_path: Path) -> None:
    study, results = tmp_path / "s.toml", tmp_path / "r"
    study.write_text(_text(tmp_path, 10))
    first = run_study(str(study), results_dir=results)
    for _ in range(2):  # every run fails again: each retry retires the runs of the one before
        again = run_study(str(study), results_dir=results, retry_failed=True)
        assert (again.study_id, again.runs_done, again.runs_retried) == (first.study_id, 2, 2)
    with Store(results, read_only=True) as store:
        retired_rows = store.retired_runs(first.study_id)
        retired = [r["id"] for r in retired_rows]
        current = [r["run_id"] for r in store.runs(first.study_id)]
    assert len(retired) == 4 and len(set(retired)) == 4 and not set(retired) & set(current)
    assert sorted(retired + current) == list(range(1, 7))
    folders = [r["artifact_dir"] for r in retired_rows]
    assert len(set(folders)) == 4 and all((results / f).is_dir() for f in folders)  # each failure's files kept


def test_the_report_reads_the_definition_in_effect_and_says_the_study_was_revised(tmp_path: Path) -> None:
    from fslab.report.sections.definitions import study_statements, workload_tables

    study, results = tmp_path / "s.toml", tmp_path / "r"
    study.write_text(_text(tmp_path, 10))
    first = run_study(str(study), results_dir=results)
    study.write_text(_text(tmp_path, 20))
    run_study(str(study), results_dir=results, retry_failed=True)
    with Store(results, read_only=True) as store:
        row = store.study(first.study_id)
        cells, runs = store.cells(row.id), store.runs(row.id)
        assert len(store.cells(row.id, replaced_too=True)) == 2
    assert [c["params"]["ops"] for c in cells] == [20]
    (table,) = workload_tables(cells, runs)
    assert ["ops", "20"] in table.rows
    (revised,) = [s for s in study_statements(row, runs) if s.startswith("revised by --retry-failed at ")]
    assert "workloads[0].ops: 10 -> 20" in revised, revised


def test_a_retired_attempt_is_shown_by_its_run_id_and_its_folder(tmp_path: Path) -> None:
    import subprocess
    import sys

    study, results = tmp_path / "s.toml", tmp_path / "r"
    study.write_text(_text(tmp_path, 10))
    first = run_study(str(study), results_dir=results)
    run_study(str(study), results_dir=results, retry_failed=True)
    with Store(results, read_only=True) as store:
        old = store.retired_runs(first.study_id)[0]
    for wanted in (str(old["id"]), Path(str(old["artifact_dir"])).name):
        done = subprocess.run([sys.executable, "-m", "fslab.cli", "report", "-r", str(results), "--run", wanted],
                              capture_output=True, text=True, timeout=120,
                              env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
        said = " ".join(done.stdout.split())
        assert done.returncode == 0, done.stderr
        assert f"run {old['id']} of study {first.study_id} (revert)" in said, said
        assert "(a failed attempt, run again by --retry-failed at " in said and "— failed" in said
        assert "the null workload failed, as its parameters asked" in said


def test_resuming_the_first_text_of_a_revised_study_names_the_revision(tmp_path: Path) -> None:
    import pytest

    from fslab.errors import FslabError

    study, results = tmp_path / "s.toml", tmp_path / "r"
    first_text = _text(tmp_path, 10)
    study.write_text(first_text)
    first = run_study(str(study), results_dir=results)
    study.write_text(_text(tmp_path, 20))
    run_study(str(study), results_dir=results, retry_failed=True)
    with Store(results) as store:
        store.set_status(first.study_id, "interrupted")
    study.write_text(first_text)
    with pytest.raises(FslabError) as refused:
        run_study(str(study), results_dir=results, resume=True)
    said = str(refused.value)
    assert f"study {first.study_id} of {study} in {results} stands at the text --retry-failed adopted at " in said
    assert "workloads[0].ops: 20 -> 10" in said, said


def test_a_retry_with_no_failed_run_says_so(tmp_path: Path) -> None:
    study, results = tmp_path / "s.toml", tmp_path / "r"
    study.write_text(null_study_text(tmp_path, null_workload(), name="fine"))
    first = run_study(str(study), results_dir=results)
    notices: list[str] = []
    again = run_study(str(study), results_dir=results, retry_failed=True, on_notice=notices.append)
    assert (again.study_id, again.runs_done, again.runs_retried) == (first.study_id, 0, 0)
    assert notices == [f"--retry-failed: study {first.study_id} holds no failed run to run again"]
