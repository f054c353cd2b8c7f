"""`fslab report --contrast`: a pair of cells of which one side has no run with a number
(every run failed) is left out and said so, never reported as "no pair"."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fslab.runner import run_study
from null_studies import null_workload, write_null_study


def _workloads(bad: str, good: str = "") -> str:
    """A good workload and a bad one (``fail = ...``), each on value = 1.0 and 2.0."""
    return (null_workload("good", good, axes="value = [1.0, 2.0]")
            + null_workload("bad", f"fail = {bad}", axes="value = [1.0, 2.0]"))


def _report(results: Path, contrast: str = "value=2.0/1.0") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fslab.cli", "report", "-r", str(results), "--contrast",
                           contrast], capture_output=True, text=True, timeout=300,
                          env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})


def test_a_pair_with_a_failed_side_is_left_out_and_named(tmp_path: Path) -> None:
    study = write_null_study(tmp_path, _workloads(bad="true"), name="contrast")
    run_study(str(study), results_dir=tmp_path / "r")
    done = _report(tmp_path / "r")
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stderr
    assert "│ good │ all │ 2.00x [2.00–2.00] (n=2/2) │" in said, said  # the good pair: 2.0 / 1.0
    # the folder it was read from (which failed run is the example follows the shuffled order)
    hint = r"\(run id (\d+): `fslab report -r " + re.escape(str(tmp_path / "r")) + r" --run \1`\)"
    assert re.search(hint, said), said
    assert "left out: null bad: value=2.0 has no run with a number (2 runs failed), value=1.0 has no run " \
           "with a number (2 runs failed)" in said, said


def test_only_failed_pairs_are_named_in_the_error(tmp_path: Path) -> None:
    study = write_null_study(tmp_path, _workloads(bad="true", good="fail = true"), name="contrast")
    run_study(str(study), results_dir=tmp_path / "r")
    done = _report(tmp_path / "r")
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no pair of cells that differs only in value = 2.0 vs 1.0 has numbers on both sides" in said, said
    assert "null good: value=2.0 has no run with a number (2 runs failed)" in said, said
    assert "no pair of cells differs only" not in said


def test_a_side_not_run_yet_is_said_so(tmp_path: Path) -> None:
    import sqlite3

    from fslab.store import DB_NAME, Store

    study = write_null_study(tmp_path, _workloads(bad="false"), name="contrast")
    outcome = run_study(str(study), results_dir=tmp_path / "r")
    with Store(tmp_path / "r", read_only=True) as store:  # as an interrupted study holds it
        (cell,) = [c for c in store.cells(outcome.study_id) if c["workload"] == "bad" and c["axes"]["value"] == 1.0]
    db = sqlite3.connect(tmp_path / "r" / DB_NAME)
    with db:
        db.execute("DELETE FROM metrics WHERE run_id IN (SELECT id FROM runs WHERE cell_id = ?)", (cell["id"],))
        db.execute("DELETE FROM runs WHERE cell_id = ?", (cell["id"],))
        db.execute("UPDATE studies SET status = 'interrupted'")
    db.close()
    said = " ".join(_report(tmp_path / "r").stdout.split())
    assert "left out: null bad: value=1.0 not run yet" in said, said


def test_a_contrast_of_no_pair_says_what_the_axis_takes(tmp_path: Path) -> None:
    study = write_null_study(tmp_path, _workloads(bad="false"), name="contrast")
    run_study(str(study), results_dir=tmp_path / "r")
    for contrast, says in (
            ("value=3.0/1.0", "no pair of cells differs only in value = 3.0 vs 1.0 (value takes 1.0, 2.0)"),
            ("direct=true/false", "no pair of cells differs only in direct = true vs false (direct is not an axis "
                                  "(axes: value))"),
            ("value=1.0/1.0", "'value=1.0/1.0': A and B are the same value; a contrast compares two values of value")):
        done = _report(tmp_path / "r", contrast)
        said = " ".join(done.stderr.split())
        assert done.returncode == 2 and says in said, said
