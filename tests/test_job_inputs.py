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
    with pytest.raises(FslabError, match=r"--retry-failed: .*changed since: the study file \(study.name: "
                                         r"\"a job file\" -> \"renamed\"\); from-file: include1-common.fio"):
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


RETRY_STUDY = """
[study]
name = "retry after a fix"
repetitions = 1
drop_caches = false

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "fine"
rw = "write"
bs = "64k"
size = "{size}"

[[workloads]]
kind = "fio"
name = "slow"
rw = "read"
bs = "64k"
size = "8M"
time_based = 1
runtime = 3
timeout = "{timeout}"
"""


def test_retry_after_fixing_a_timeout_runs_the_failed_runs_under_the_fix_and_keeps_both(device_support, tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(RETRY_STUDY.format(images=tmp_path / "images", size="8M", timeout="1s"))
    results = tmp_path / "results"
    first = run_study(str(study), results_dir=results)
    assert first.runs_failed == 1
    study.write_text(RETRY_STUDY.format(images=tmp_path / "images", size="8M", timeout="60s"))
    notices: list[str] = []
    again = run_study(str(study), results_dir=results, retry_failed=True, on_notice=notices.append)
    assert again.study_id == first.study_id and again.runs_failed_total == 0 and again.runs_retried == 1
    assert any("workloads[1].timeout: \"1s\" -> \"60s\"" in n and "both definitions" in n for n in notices)
    with Store(results) as store:
        row = store.study()
        (revision,) = row.facts["revisions"]
        assert 'timeout = "1s"' in revision["spec_text"] and 'timeout = "60s"' in row.spec_text
        runs = {r["cell"]["workload"]: r for r in store.runs(row.id)}
        assert runs["slow"]["status"] == "ok" and runs["slow"]["provenance"]["timeout_s"] == 60
        (retired,) = store.retired_runs(row.id)
        assert "timed out" in retired["error"]
    # A case that has results may not change under them.
    study.write_text(RETRY_STUDY.format(images=tmp_path / "images", size="16M", timeout="60s"))
    with pytest.raises(FslabError, match=r"--retry-failed: .*workloads\[0\]\.size: \"8M\" -> \"16M\".*"
                                         r"ext4 fine has stored results and a new definition"):
        run_study(str(study), results_dir=results, retry_failed=True)


def test_retry_plan_takes_new_definitions_only_of_cases_whose_runs_all_failed(tmp_path):
    from fslab.identity import retry_plan
    from fslab.study import parse_spec

    def cells(memory: str, size: str) -> list:
        text = RETRY_STUDY.format(images=tmp_path, size=size, timeout="1s").replace(
            'name = "slow"', f'name = "slow"\nmemory = "{memory}"')
        spec = parse_spec(__import__("tomllib").loads(text), "s.toml")
        return list(make_plan(spec, backends=choose_backend).cells)

    before = [c.to_json() for c in cells("64MiB", "8M")]
    fine, slow = (c["id"] for c in before)
    after = cells("256MiB", "8M")  # the memory limit is part of the cell: slow's id changes
    assert after[0].id == fine and after[1].id != slow
    ok = retry_plan(before, {fine}, after)
    assert ok.refusal is None and ok.replaced == {slow: after[1]}
    refused = retry_plan(before, {fine, slow}, after)  # slow had a result: it may not change
    assert refused.refusal is not None and "ext4 slow has stored results" in refused.refusal
    grown = retry_plan(before[:1], {fine}, after)
    assert grown.refusal is not None and "is a new case" in grown.refusal


def test_resume_of_a_finished_study_whose_file_changed_says_what_changed_and_starts_nothing(tmp_path):
    """--resume after the file of a finished study was edited: nothing of the new
    definition is stored, so there is nothing to resume; it says what changed and how to
    start a new study, and stores nothing."""
    (tmp_path / "fake").mkdir()
    study = tmp_path / "s.toml"
    text = (f'[study]\nname = "s"\nrepetitions = 1\n[device]\nkind = "fake"\ndirectory = "{tmp_path / "fake"}"\n'
            '[filesystems.null]\n[[workloads]]\nkind = "null"\nname = "w"\nvalue = 1.0\n')
    study.write_text(text)
    results = tmp_path / "results"
    run_study(str(study), results_dir=results)
    study.write_text(text.replace("value = 1.0", "value = 2.0"))
    with pytest.raises(FslabError) as err:
        run_study(str(study), results_dir=results, resume=True)
    message = str(err.value)
    assert message.startswith(f"--resume: the newest study of {study} in {results.resolve()} (study 1, complete)")
    assert "workloads[0].value: 1.0 -> 2.0" in message and "run without --resume to start a new study" in message
    with Store(results) as store:
        assert [s.id for s in store.studies()] == [1]
