"""The job seam: a job is plain data that survives a JSON round trip; `fslab job run`
executes one in its own process and writes one record per run as each ends; the runner
stores only records, whichever way the host backend runs the job. These tests use the
fake device, the null file system and the null workload, so they need no root."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fslab.backends import choose_backend
from fslab.backends.host import HostBackend
from fslab.datarecords import replace
from fslab.errors import FslabError
from fslab.job.entry import load_job, run_job, write_job
from fslab.job.folder import JobFolder
from fslab.jobdata.model import Job
from fslab.jobdata.record import RunRecord
from fslab.plan import make_plan
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import parse_spec

NULL_STUDY = """
[study]
name = "null study"
repetitions = {reps}
order = "{order}"
seed = 7
fresh = "{fresh}"
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]
[filesystems.null-noatime]
type = "null"
mount = ["noatime"]

[[workloads]]
kind = "null"
name = "value"
ops = 3
[workloads.axes]
value = [1.0, 2.0]

[[workloads]]
kind = "null"
name = "slow"
sleep = {sleep}
"""


def write_study(tmp_path: Path, reps: int = 2, fresh: str = "run", sleep: float = 0.0,
                order: str = "shuffled") -> Path:
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    path = tmp_path / "null.toml"
    path.write_text(NULL_STUDY.format(reps=reps, fresh=fresh, sleep=sleep, fake=fake, order=order))
    return path


def null_plan(tmp_path: Path, **kw):
    import tomllib

    spec = parse_spec(tomllib.loads(write_study(tmp_path, **kw).read_text()), "null.toml")
    return make_plan(spec, backends=choose_backend, source="null.toml", study_dir=tmp_path)


def test_job_round_trips_through_json(tmp_path):
    plan = null_plan(tmp_path, fresh="repetition")
    assert len(plan.jobs) == 4 and all(len(j.runs) == 3 for j in plan.jobs)
    for job in plan.jobs:
        text = json.dumps(job.to_json())
        again = Job.from_json(json.loads(text))
        assert again == job
        assert again.to_json() == job.to_json()
    # Sequence numbers are the study's execution order, carried by each run.
    assert [r.sequence for r in plan.runs] == list(range(len(plan.runs)))


def test_not_a_job_is_refused_with_its_file_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else/9", "runs": []}')
    with pytest.raises(Exception, match=r"bad.json.*not a valid fslab job.*something-else/9"):
        load_job(bad)
    bad.write_text("{not json")
    with pytest.raises(Exception, match=r"bad.json.*cannot read the job"):
        load_job(bad)


def test_record_round_trips_through_json(tmp_path):
    plan = null_plan(tmp_path)
    records: list[RunRecord] = []
    run_job(plan.jobs[0], JobFolder(tmp_path / "out"), tmp_path / "work", records.append)
    (record,) = records
    assert RunRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert record.status == "ok" and record.artifact_dir == f"runs/{record.run_key}"
    assert (tmp_path / "out" / record.artifact_dir / "null.txt").exists()
    names = {m.name: m for m in record.metrics}
    assert names["null_value"].unit == "1" and names["null_value"].higher_is_better is True
    assert names["wall_s"].higher_is_better is False


@pytest.mark.parametrize("entry", [["fslab", "job"], ["fslab.job"]], ids=["cli", "light"])
def test_fslab_job_run_writes_records_as_runs_end(tmp_path, entry):
    """The command a guest or a remote worker calls: own process, records.jsonl, artifacts.
    A guest starts the light entry (`python -m fslab.job`), which imports no CLI library."""
    plan = null_plan(tmp_path, fresh="repetition")
    job = plan.jobs[0]
    write_job(job, tmp_path / "job.json")
    done = subprocess.run([sys.executable, "-m", *entry, "run", str(tmp_path / "job.json"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    records = list(JobFolder(tmp_path / "out").records())
    assert [(r.cell_id, r.repetition, r.sequence) for r in records] == [
        (r.cell.id, r.repetition, r.sequence) for r in job.runs]
    assert all(r.status == "ok" for r in records)
    assert "3 runs ok, 0 failed" in done.stderr


def test_light_job_entry_imports_no_cli_library_and_names_a_bad_job_file(tmp_path):
    (tmp_path / "job.json").write_text("{}")
    script = ("import runpy, sys; sys.argv = ['x', 'run', sys.argv[1], '--out', sys.argv[2]]\n"
              "try:\n    runpy.run_module('fslab.job', run_name='__main__')\n"
              "except SystemExit as exc:\n"
              "    print(exc.code, sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "job.json"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "2 []", done.stderr
    assert f"{tmp_path / 'job.json'}: not a valid fslab job" in done.stderr


def test_the_job_entry_runs_a_job_without_pydantic_or_other_plug_ins(tmp_path):
    """A guest under TCG pays for every module the job process imports: the entry imports
    no pydantic (the job was checked when it was planned), and running a job loads its own
    workload and device kind, not every plug-in."""
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, fslab.job.__main__, fslab.job.entry, fslab.job.execute\n"
         "print(' '.join(sorted(m for m in sys.modules if m.startswith(('pydantic', 'fslab.spec')))))"],
        capture_output=True, text=True, check=True, timeout=120)
    assert imported.stdout.split() == []
    job = null_plan(tmp_path).jobs[0]
    write_job(job, tmp_path / "job.json")
    script = ("import runpy, sys; sys.argv = ['x', 'run', sys.argv[1], '--out', sys.argv[2]]\n"
              "try:\n    runpy.run_module('fslab.job', run_name='__main__')\n"
              "except SystemExit as exc:\n"
              "    print(exc.code, ' '.join(sorted(m for m in sys.modules if m.startswith(\n"
              "        ('pydantic', 'fslab.spec', 'fslab.devices.', 'fslab.workloads.')))))")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "job.json"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0", "fslab.devices.fake", "fslab.workloads.null"], done.stderr
    assert [r.status for r in JobFolder(tmp_path / "out").records()] == ["ok"] * len(job.runs)


def test_the_job_entry_imports_nothing_a_typical_run_does_not_use():
    """What the job process imports a guest under TCG pays for at every job's start, so
    these stay out of it: the store's shapes (``fslab.stored``: TypedDicts, built at
    import), ``platform`` (host facts come from ``os.uname``), ``tempfile`` and ``random``
    (the state dir of a user without XDG_RUNTIME_DIR), memory cgroups (loaded by a run
    with a limit), the phases of Bonnie++-like workloads, and ``dataclasses`` with the
    ``inspect`` it imports (the job path's classes are fslab.datarecords: about a second of
    a TCG guest's import). A module named here belongs where it is used, not at the top of
    a module the job path imports."""
    unwanted = ("fslab.stored", "platform", "tempfile", "random", "fslab.cgroups", "fslab.workloads.phases",
                "dataclasses", "inspect")
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, fslab.job.entry, fslab.job.execute, fslab.job.__main__\n"
         f"print(' '.join(sorted(m for m in sys.modules if m in {unwanted!r})))"],
        capture_output=True, text=True, check=True, timeout=120)
    assert imported.stdout.split() == []


def test_a_job_device_section_missing_a_field_is_an_error_naming_it(tmp_path):
    job = null_plan(tmp_path).jobs[0]
    settings = replace(job.settings, device={"kind": "fake"})  # no "directory"
    broken = replace(job, settings=settings)
    with pytest.raises(FslabError, match=r"device section \(kind = 'fake'\) has no field 'directory'.*plan"):
        run_job(broken, JobFolder(tmp_path / "out"), tmp_path / "work")


def test_plan_writes_every_job_as_json(tmp_path):
    study = write_study(tmp_path)
    done = subprocess.run([sys.executable, "-m", "fslab", "plan", str(study), "--jobs", str(tmp_path / "jobs")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = sorted((tmp_path / "jobs").glob("*.json"))
    jobs = [load_job(f) for f in files]
    assert len(jobs) == 12 and sorted(r.sequence for j in jobs for r in j.runs) == list(range(12))


def test_killed_job_keeps_the_records_it_finished(tmp_path):
    """SIGKILL mid-job: the finished runs' records are complete lines; nothing is half-read."""
    plan = null_plan(tmp_path, fresh="repetition", sleep=30.0)
    job = next(j for j in plan.jobs if j.runs[-1].cell.workload == "slow")
    write_job(job, tmp_path / "job.json")
    proc = subprocess.Popen([sys.executable, "-m", "fslab", "job", "run", str(tmp_path / "job.json"),
                             "--out", str(tmp_path / "out")], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list(JobFolder(tmp_path / "out").records())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    records = list(JobFolder(tmp_path / "out").records())
    assert [r.cell_id for r in records] == [r.cell.id for r in job.runs[:2]]


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "job-process"])
def test_study_runs_through_the_json_seam(tmp_path, isolate, monkeypatch):
    """plan -> job (JSON) -> records -> store -> report, with the host backend running each
    job in this process or as `fslab job run`; artifacts end up under the results dir."""
    monkeypatch.setenv("FSLAB_JOB_PROCESS", "1" if isolate else "0")
    results = tmp_path / "results"
    outcome = run_study(str(write_study(tmp_path)), results_dir=results)
    assert outcome.runs_done == 12 and outcome.runs_failed == 0
    with Store(results) as store:
        study = store.study()
        runs = store.runs(study.id)
    assert study.status == "complete" and len(runs) == 12
    for run in runs:
        assert run["artifact_dir"] == f"artifacts/study-{study.id}/{run['cell']['id']}-r{run['repetition'] + 1}"
        assert (results / run["artifact_dir"] / "null.txt").exists()
        assert run["provenance"]["job"].startswith("job")
    values = {(r["cell"]["filesystem"], r["cell"]["axes"].get("value")): r["metrics"]["null_value"]["value"]
              for r in runs if r["cell"]["workload"] == "value"}
    assert values == {(fs, v): v for fs in ("null", "null-noatime") for v in (1.0, 2.0)}
    assert not (results / ".jobs" / f"study-{study.id}").exists()  # job dirs are removed once stored
    from fslab.report.tables import build_table

    table = build_table(runs, None, [r["cell"] for r in runs])
    row = next(r for r in table.rows if "value=2.0" in r.label)
    assert row.metric == "null_value" and row.unit == "1" and row.summaries["null"].mean == 2.0


def test_job_process_is_stopped_by_sigterm_and_keeps_finished_runs(tmp_path):
    """SIGTERM to the runner while a job runs in its own process: the job is told to stop,
    the runs it finished are stored, and the study is interrupted, resumable."""
    study = write_study(tmp_path, reps=1, sleep=60.0, fresh="repetition", order="in-order")
    results = tmp_path / "results"
    env = {**os.environ, "FSLAB_JOB_PROCESS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "fslab", "run", str(study), "-r", str(results), "-q"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if (results / "fslab.sqlite").exists():
            with Store(results) as store:
                if store.studies() and len(store.stored_runs(store.study().id)) >= 2:
                    break
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    with Store(results) as store:
        study_row = store.study()
        stored = store.stored_runs(study_row.id)
    assert study_row.status == "interrupted" and len(stored) >= 2
    assert "--resume" in err
    leftover = [p for p in (tmp_path / "fake").iterdir()]
    assert leftover == [], leftover  # the fake device of the stopped job was released


def test_job_runs_in_a_thread_that_is_not_the_main_thread(tmp_path):
    """A distributed worker runs jobs in a thread: no signal handler may be needed there."""
    plan = null_plan(tmp_path)
    errors: list[BaseException] = []
    records: list[RunRecord] = []

    def work() -> None:
        try:
            HostBackend(isolate=False).execute(plan.jobs[0], JobFolder(tmp_path / "out"), tmp_path / "work",
                                             records.append)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert errors == [] and len(records) == 1 and records[0].status == "ok"


def test_failed_run_and_resume_without_root_tools(tmp_path):
    """A workload that fails becomes a failed record; the others are stored."""
    study = write_study(tmp_path, reps=1)
    study.write_text(study.read_text().replace('name = "slow"', 'name = "slow"\nfail = true'))
    outcome = run_study(str(study), results_dir=tmp_path / "results")
    assert outcome.runs_done == 6 and outcome.runs_failed == 2
    with Store(tmp_path / "results") as store:
        runs = store.runs(store.study().id)
    failed = [r for r in runs if r["status"] != "ok"]
    assert {r["cell"]["workload"] for r in failed} == {"slow"}
    assert all("as its parameters asked" in r["error"] for r in failed)


def test_non_root_user_runs_a_fake_study(tmp_path):
    """The non-root tier is real: the same study runs as an unprivileged user."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root (to become another user) and setpriv")
    tmp_path.chmod(0o777)
    for parent in tmp_path.parents:
        if not os.access(parent, os.X_OK, effective_ids=False):
            pytest.skip(f"{parent} is not searchable by other users")
    study = write_study(tmp_path, reps=1)
    (tmp_path / "fake").chmod(0o777)
    study.chmod(0o644)
    done = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-m", "fslab", "run", str(study), "-r", str(tmp_path / "results"), "-q"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    if "Permission denied" in done.stderr and "site-packages" in done.stderr:
        pytest.skip("the Python environment is not readable by other users")
    assert done.returncode == 0, done.stderr
    with Store(tmp_path / "results") as store:
        assert len(store.stored_runs(store.study().id)) == 6


def test_failed_runs_make_run_exit_1_with_grouped_reasons_and_retry_fixes_them(tmp_path):
    """A study whose runs failed is not a success: exit status 1, the reasons grouped, and
    the command that re-runs them; --retry-failed runs only those, keeping the failures
    as history."""
    blocker = tmp_path / "blocker"
    blocker.write_text("present")
    study = write_study(tmp_path, reps=2)
    study.write_text(study.read_text().replace('name = "slow"', f'name = "slow"\nfail_while_exists = "{blocker}"'))
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "fslab", "run", str(study), "-r", str(results)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "4 of 12 stored runs failed" in done.stdout and "for one reason" in done.stdout
    assert f"4 x the null workload failed: {blocker} exists" in done.stdout
    assert "4 of 12 runs failed" in done.stderr and "--retry-failed" in done.stderr
    # The title and `fslab list` say so too: a study with failed runs is not a plain "complete".
    assert "— complete, 4 of 12 runs failed" in done.stdout
    listed = subprocess.run([sys.executable, "-m", "fslab", "list", "-r", str(results)], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "COLUMNS": "250"})
    assert "complete, 4 of 12 runs failed" in listed.stdout, listed.stdout
    with Store(results) as store:
        study_row = store.study()
        first_ids = {r["run_id"] for r in store.runs(study_row.id)}
    blocker.unlink()  # the cause is fixed
    done = subprocess.run([*cmd, "--retry-failed"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with Store(results) as store:
        runs = store.runs(study_row.id)
        history = store.retired_runs(study_row.id)
        assert len(store.studies()) == 1
    assert len(runs) == 12 and all(r["status"] == "ok" for r in runs)
    assert len(history) == 4 and all("exists" in h["error"] for h in history)
    kept = {r["run_id"] for r in runs} & first_ids
    assert len(kept) == 8  # the runs that were ok were not measured again
    for h in history:  # the failed attempt's artifacts are kept beside the new ones
        assert (results / h["artifact_dir"]).is_dir() and ".failed-" in h["artifact_dir"]
    again = subprocess.run([*cmd, "--retry-failed"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "0 runs" in again.stdout


def test_resume_starts_a_study_interrupted_before_anything_was_stored_and_refuses_a_finished_one(tmp_path):
    """Ctrl-C during preflight leaves nothing stored: the --resume the message gives must
    start the study. A finished study has nothing to resume: say so."""
    from fslab.errors import FslabError

    study = write_study(tmp_path, reps=1)
    outcome = run_study(str(study), results_dir=tmp_path / "r", resume=True)
    assert outcome.runs_done == 6
    with pytest.raises(FslabError, match="no unfinished run.*--retry-failed"):
        run_study(str(study), results_dir=tmp_path / "r", resume=True)


def test_a_preaged_disk_travels_in_the_job(tmp_path):
    """The guest backend hands a job the facts of the aged image it copied onto the disk;
    inside, they come back whole (report, file set, cost, copy method)."""

    from fslab.aged_images import AgedCopy
    from fslab.aging import AgingReport

    report = AgingReport(option={"fill": 0.5}, fs_type="ext4", block_size_bytes=4096, utilisation_start=0.01,
                         utilisation_target=0.5, utilisation_reached=0.503, files=40, files_created=60,
                         files_deleted=20, bytes_written=1 << 26, wall_s=3.5, layout={"score": 0.98},
                         free_space={"free_extents": 12}, file_set=[("a/1", 4096), ("a/2", 8192)])
    copy = AgedCopy(tmp_path / "disk.img", tmp_path / "aged.img", report, False, 41.0, 0.2, "sparse copy")
    job = null_plan(tmp_path).jobs[0]
    job = replace(job, settings=replace(job.settings, preaged=copy.to_dict()))
    again = Job.from_json(json.loads(json.dumps(job.to_json())))
    back = AgedCopy.from_dict(again.settings.preaged)
    assert back.provenance() == copy.provenance()
    assert back.report.file_set_sha256 == report.file_set_sha256 and back.report.metrics() == report.metrics()


RECORDS_V0 = Path(__file__).parent / "data" / "records-v0"


def test_records_written_before_records_had_a_format_still_read():
    """A records.jsonl of fslab 0.1 (lines without "format"; one ok fio run, one failed)."""
    ok, failed = JobFolder(RECORDS_V0).records()
    assert '"format"' not in (RECORDS_V0 / "records.jsonl").read_text()
    assert ok.status == "ok" and ok.error is None and ok.artifact_dir == f"runs/{ok.run_key}"
    iops = next(m for m in ok.metrics if m.name == "read_iops")
    assert iops.unit == "IOPS" and iops.higher_is_better is True and iops.value > 0
    assert failed.status == "failed" and "fio" in failed.error
    # Read back, written again: now with its format, and otherwise the same record.
    again = RunRecord.from_line(ok.to_line())
    assert again == ok and json.loads(ok.to_line())["format"] == "fslab-record/1"


def test_every_record_line_names_its_format_and_an_unknown_one_is_refused(tmp_path):
    plan = null_plan(tmp_path, fresh="repetition")
    folder = JobFolder(tmp_path / "out")
    run_job(plan.jobs[0], folder, tmp_path / "work")
    lines = folder.records_file.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["format"] == "fslab-record/1" for line in lines)
    future = json.loads(lines[1]) | {"format": "fslab-record/9"}
    folder.records_file.write_text("\n".join([lines[0], json.dumps(future), lines[2]]) + "\n")
    with pytest.raises(FslabError, match=r"records.jsonl, line 2: .*'fslab-record/9'.*upgrade fslab"):
        list(folder.records())


def test_a_job_of_the_old_format_is_refused_with_the_fix(tmp_path):
    """fslab-job/1 read job files from the study's folder at run time; it cannot run now."""
    with pytest.raises(FslabError, match=r"job-v1.json.*older fslab.*fslab-job/1.*fslab plan STUDY --jobs"):
        load_job(RECORDS_V0 / "job-v1.json")
