"""A job carries the files its workload reads: a fio job file (and what it includes) is read
when the study is planned, travels inside the job, and is part of each cell's identity."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends import choose_backend
from fslab.errors import FslabError
from fslab.job.folder import JobFolder
from fslab.plan import make_plan
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import load_spec

STUDY = """
[study]
name = "a job file"
repetitions = {reps}
seed = 3
drop_caches = false

[device]
kind = "image"
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "from-file"
job_file = "jobs/main.fio"
"""

MAIN = "[global]\ninclude common.fio\n\n[w]\nrw=write\nbs=64k\nsize={size}\n"
COMMON = "ioengine=psync\n"


def write_study(folder: Path, images: Path, reps: int = 1, size: str = "4M", main: str | None = None) -> Path:
    (folder / "jobs").mkdir(parents=True, exist_ok=True)
    (folder / "jobs" / "main.fio").write_text(main if main is not None else MAIN.format(size=size))
    (folder / "jobs" / "common.fio").write_text(COMMON)
    path = folder / "study.toml"
    path.write_text(STUDY.format(reps=reps, images=images))
    return path


def fslab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fslab", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def cell_ids(study: Path) -> list[str]:
    spec, source, _ = load_spec(str(study))
    plan = make_plan(spec, backends=choose_backend, source=source, study_dir=study.parent)
    assert plan.problems == ()
    return [c.id for c in plan.cells]


def test_planned_jobs_run_from_another_folder_with_the_study_folder_gone(device_support, tmp_path):
    study = write_study(tmp_path / "study", tmp_path / "images")
    done = fslab("plan", str(study), "--jobs", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr
    shutil.rmtree(tmp_path / "study")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = fslab("job", "run", str(tmp_path / "jobs" / "job00000.json"), "--out", "out", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    (record,) = JobFolder(elsewhere / "out").records()
    assert record.status == "ok", record.error
    metrics = {m.name: m.value for m in record.metrics}
    assert metrics["write_io_bytes"] == 4 << 20  # the job file's size, so its text was what ran
    artifacts = elsewhere / "out" / str(record.artifact_dir)
    include = artifacts / "include1-common.fio"
    assert include.read_text() == COMMON
    assert f"include {include.resolve()}" in (artifacts / "job.fio").read_text()
    fio_json = json.loads((artifacts / "fio.json").read_text())
    assert fio_json["global options"]["ioengine"] == "psync"  # fio read the include


def test_editing_a_job_file_or_what_it_includes_changes_the_cell_ids(tmp_path):
    study = write_study(tmp_path, tmp_path / "images")
    first = cell_ids(study)
    assert cell_ids(study) == first  # the same texts, the same cells
    (tmp_path / "jobs" / "common.fio").write_text("ioengine=sync\n")
    second = cell_ids(study)
    (tmp_path / "jobs" / "main.fio").write_text(MAIN.format(size="8M"))
    third = cell_ids(study)
    assert len({first[0], second[0], third[0]}) == 3


def test_resume_and_retry_of_a_study_whose_job_file_changed_say_what_changed_and_stop(device_support, tmp_path):
    study = write_study(tmp_path / "study", tmp_path / "images", reps=2)
    results = tmp_path / "results"
    run_study(str(study), results_dir=results)
    with Store(results) as store:
        row = store.study()
        store.set_status(row.id, "interrupted")  # as if killed before its last run
        stored = store.stored_runs(row.id)
    (tmp_path / "study" / "jobs" / "common.fio").write_text("ioengine=sync\n")
    with pytest.raises(FslabError) as err:
        run_study(str(study), results_dir=results, resume=True)
    message = str(err.value)
    assert message.startswith(f"--resume: study {row.id} of {study}")
    assert "changed since: from-file: include1-common.fio" in message and "the study file" not in message
    assert "without --resume to start a new study" in message
    (tmp_path / "study" / "study.toml").write_text(study.read_text().replace("a job file", "renamed"))
    with pytest.raises(FslabError, match=r"--retry-failed: .*changed since: the study file; "
                                         r"from-file: include1-common.fio"):
        run_study(str(study), results_dir=results, retry_failed=True)
    with Store(results) as store:  # nothing new was stored, nothing was lost
        assert [s.id for s in store.studies()] == [row.id]
        assert store.stored_runs(row.id) == stored


@pytest.mark.parametrize("case", ["directory", "missing", "too-big"])
def test_plan_refuses_what_run_would_refuse_with_exit_2(tmp_path, case):
    main = {"directory": "[w]\nrw=write\nsize=4M\ndirectory=/tmp\n", "missing": None,
            "too-big": MAIN.format(size="1G")}[case]
    study = write_study(tmp_path, tmp_path / "images", main=main)
    if case == "missing":
        (tmp_path / "jobs" / "main.fio").unlink()
    done = fslab("plan", str(study))
    assert done.returncode == 2, done.stdout + done.stderr
    expected = {"directory": r"workloads\[0\]\.job_file: .*main\.fio: line 4: directory: fslab sets the directory",
                "missing": r"workloads\[0\]\.job_file: 'jobs/main\.fio' not found",
                "too-big": r"workloads\[0\] \(from-file\): lays out 1(\.0)? GiB of files, more than 90% of the "
                           r"256 MiB device"}[case]
    assert __import__("re").search(expected, " ".join(done.stderr.split())), done.stderr
