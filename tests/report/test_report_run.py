"""`fslab report --run ID`: one stored run whole. A real fio run on ext4 on a loop device
shows its parameters, metrics in their units, provenance, artifact files with their sizes
and fio's JSON as summary lines whose numbers are fio's own; a failed run (no-root tier:
null workload told to fail) shows its error first and its long output cut with the path to
the whole; an unknown id is an error naming the runs that exist."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.report.provenance_facts import bytes_text
from fslab.report.units import fmt
from fslab.runner import run_study
from fslab.store import Store

FIO_STUDY = """
[study]
name = "one run"
repetitions = 1

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]
mount = ["noatime"]

[[workloads]]
kind = "fio"
name = "rw4k"
rw = "randwrite"
bs = "4k"
size = "8M"
runtime = 1
time_based = 1
"""

NULL_STUDY = """
[study]
name = "failing"
repetitions = 2
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "broken"
fail = true
"""


def _report(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["report", *args], terminal_width=250)
    return done.exit_code, done.output


def test_one_real_fio_run_whole(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("fio") is None or not Path("/dev/loop-control").exists():
        pytest.skip("needs root, loop devices and fio")
    (tmp_path / "s.toml").write_text(FIO_STUDY.format(images=tmp_path / "images"))
    results = tmp_path / "results"
    assert run_study(str(tmp_path / "s.toml"), results_dir=results).runs_failed == 0
    with Store(results) as store:
        [run] = store.runs(1)
    status, text = _report("-r", str(results), "--run", str(run["run_id"]))
    assert status == 0, text
    assert f"run {run['run_id']} of study 1 (one run): ext4, rw4k, repetition 1 — ok" in text
    assert re.search(r"│ mount options\s+│ noatime", text)
    assert re.search(r"│ rw\s+│ randwrite", text)
    iops = run["metrics"]["iops"]["value"]
    assert re.search(rf"│ iops\s+│ {re.escape(fmt(iops))} IOPS\s+│ IOPS", text)
    assert re.search(r"│ mount options in effect\s+│ [^│]*noatime", text)
    folder = results / run["artifact_dir"]
    fio_json = folder / "fio.json"
    assert re.search(rf"│ fio.json\s+│ {re.escape(bytes_text(fio_json.stat().st_size))}", text)
    # fio's summary line carries fio's own numbers, and the path to the whole file.
    job = json.loads(fio_json.read_text())["jobs"][0]
    assert f"{job['jobname']}: write: {fmt(job['write']['iops'])} IOPS" in text
    assert f"full file: {fio_json}" in text
    # The artifact folder's name finds the same run.
    status, again = _report("-r", str(results), "--run", folder.name)
    assert status == 0 and again == text


def test_fio_summary_counts_its_jobs_in_the_right_number() -> None:
    from fslab.report.run_view import fio_summary

    one = {"fio version": "fio-3.33", "jobs": [{"jobname": "t"}]}
    assert fio_summary("note: a line fio printed first\n" + json.dumps(one)) == ["fio fio-3.33, 1 job"]
    two = {**one, "jobs": [{"jobname": "t"}, {"jobname": "u"}]}
    assert fio_summary(json.dumps(two)) == ["fio fio-3.33, 2 jobs"]


def test_failed_run_error_first_output_cut_and_unknown_id(tmp_path: Path) -> None:
    (tmp_path / "fake").mkdir()
    (tmp_path / "s.toml").write_text(NULL_STUDY.format(fake=tmp_path / "fake"))
    results = tmp_path / "results"
    assert run_study(str(tmp_path / "s.toml"), results_dir=results).runs_failed == 2
    with Store(results) as store:
        runs = store.runs(1)
    run = runs[0]
    error_file = results / run["artifact_dir"] / "error.txt"
    with open(error_file, "a") as f:  # a long output: shown cut, with where the rest is
        f.writelines(f"line {i}\n" for i in range(100))
    status, text = _report("-r", str(results), "--run", str(run["run_id"]))
    assert status == 0, text
    lines = text.splitlines()
    assert lines[0].endswith("— failed")
    assert lines[1] == "error: the null workload failed, as its parameters asked (fail = true)"
    assert f"error.txt (as written; first 25 of 101 lines; full file: {error_file})" in text
    assert "line 23" in text and "line 24" not in text
    done = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(results), "--run", "999"],
                          capture_output=True, text=True)
    ids = sorted(r["run_id"] for r in runs)
    assert done.returncode == 2
    assert f"--run 999: no such run in {results} (study 1: run ids {ids[0]}–{ids[1]})" in " ".join(done.stderr.split())
    assert Path(run["artifact_dir"]).name in done.stderr  # what a valid argument looks like
