"""The Dask executor on a private network on this machine: a scheduler, two fslab workers
(each in its own network namespace with its own host name) and the driver (`fslab run
--executor dask://... --insecure`) in a fourth (tests/dask_cluster.py; over TLS:
test_dask_tls). Real loop-image ext4 file systems, real Dask, real
SQLite; the null workload keeps the jobs short."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from dask_cluster import Cluster, running_cluster
from fslab.executors.dask import check_placement, job_deadline_s
from fslab.store import Store
from netns import netns_missing, stop, wait_for

pytest.importorskip("distributed", reason="the Dask executor needs `pip install -e '.[dask]'`")

STUDY = """
[study]
name = "dask {name}"
repetitions = {repetitions}
order = "in-order"
{study_extra}

[device]
size = "64MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "null"
name = "null"
sleep = {sleep}
[workloads.axes]
value = [1.0, 2.0, 3.0]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Plaintext (`dask://` with --insecure): the TLS cluster is test_dask_tls's."""
    missing = netns_missing()
    if missing:
        pytest.skip(missing)
    with running_cluster(tmp_path_factory.mktemp("dask"), lab=None) as cluster:
        yield cluster


def write_study(path: Path, name: str, repetitions: int | str, sleep: float, study_extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STUDY.format(name=name, repetitions=repetitions, sleep=sleep, study_extra=study_extra,
                                 images=path.parent / "images"))
    return path


def stored_runs(results: Path) -> list[dict]:
    with Store(results, read_only=True) as store:
        return store.runs(store.study().id)


def loops_under(path: Path) -> list[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(path) in line]


def test_jobs_run_one_per_worker_at_a_time(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "placement", repetitions=2, sleep=1.0)
    results = tmp_path / "results"
    t0 = time.time()
    done = cluster.fslab_run(study, results)
    wall = time.time() - t0
    assert done.returncode == 0, done.stderr[-3000:]
    runs = stored_runs(results)
    assert len(runs) == 6 and all(r["status"] == "ok" for r in runs)
    windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for run in runs:
        prov = run["provenance"]
        worker = prov["worker"]
        # The job ran on the worker: its own host name, not the driver's.
        assert prov["host"]["hostname"] == worker["hostname"] == f"fslab-{worker['name']}"
        assert worker["address"].startswith(f"tcp://{cluster.net.addresses[worker['name']]}:")
        windows[worker["name"]].append((worker["job_started_at"], worker["job_finished_at"]))
        assert (results / run["artifact_dir"] / "null.txt").exists()  # artifacts came back
    assert set(windows) == {"w1", "w2"}, windows  # both machines took jobs
    for name, spans in windows.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end, f"{name} ran two jobs at once: {spans}"
    # Two workers at a time: the six 1-s jobs overlapped across machines.
    busy = sum(end - start for spans in windows.values() for start, end in spans)
    first = min(s for spans in windows.values() for s, _ in spans)
    last = max(e for spans in windows.values() for _, e in spans)
    assert last - first < busy, (last - first, busy)
    assert loops_under(tmp_path) == []
    # The report splits by host on request and says the hosts are alike (one machine here).
    report = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(results), "--by-host"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    text = " ".join(report.stdout.split())
    assert "host fslab-w1" in text and "host fslab-w2" in text
    assert "runs from 2 hosts (fslab-w1, fslab-w2), alike in kernel" in text
    print(f"6 jobs on 2 workers: {wall:.1f} s wall; {busy:.1f} s of job time")


def test_an_auto_study_runs_pass_by_pass_on_the_workers(cluster: Cluster, tmp_path: Path) -> None:
    """repetitions = "auto" over Dask: each pass is sent to the workers, and the driver
    decides between passes (no spread in the null workload's values: precision at n = 3)."""
    study = write_study(tmp_path / "s" / "study.toml", "auto", repetitions='"auto"', sleep=0.0,
                        study_extra="max_repetitions = 4")
    results = tmp_path / "results"
    done = cluster.fslab_run(study, results)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "after pass 3: every cell has stopped (3 on precision)" in done.stderr
    runs = stored_runs(results)
    assert len(runs) == 9 and {r["provenance"]["worker"]["name"] for r in runs} <= {"w1", "w2"}
    with Store(results, read_only=True) as store:
        cells = store.study().facts["auto"]["cells"]
    assert {(c["reason"], c["n"]) for c in cells.values()} == {("precision", 3)}


def test_a_metadata_workload_runs_on_a_worker_through_the_job_entry(cluster: Cluster, tmp_path: Path) -> None:
    """fs_mark (as dbench, sysbench and PostMark, through the same job entry) runs on a
    worker: its number comes back with the worker's provenance and its own output."""
    study = write_study(tmp_path / "s" / "study.toml", "fsmark", repetitions=1, sleep=0.0)
    text = study.read_text()
    workload = text[text.index("[[workloads]]"):]
    study.write_text(text.replace(workload, '[[workloads]]\nkind = "fsmark"\nname = "create"\nfiles = 200\n'
                                  'file_size = "4k"\nsync = "fsync"\n'))
    results = tmp_path / "results"
    done = cluster.fslab_run(study, results)
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = stored_runs(results)
    assert run["status"] == "ok" and run["metrics"]["create_files_per_s"]["value"] > 0
    worker = run["provenance"]["worker"]["hostname"]
    assert run["provenance"]["host"]["hostname"] == worker and worker.startswith("fslab-w")
    assert (results / run["artifact_dir"] / "fsmark.out").is_file()


def test_machine_class_pins_jobs(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "pinned", repetitions=1, sleep=0.0,
                        study_extra='machine_class = "hdd"')
    done = cluster.fslab_run(study, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    # Plaintext (--insecure) says what it allows.
    assert "can run code as root on every worker" in " ".join(done.stderr.split()), done.stderr[-3000:]
    runs = stored_runs(tmp_path / "results")
    assert len(runs) == 3
    assert {r["provenance"]["worker"]["name"] for r in runs} == {"w2"}  # the hdd machine only


def test_a_class_no_worker_offers_fails_at_once(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "nowhere", repetitions=1, sleep=0.0,
                        study_extra='machine_class = "gpu"')
    t0 = time.time()
    done = cluster.fslab_run(study, tmp_path / "results", timeout=60)
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert "machine_class 'gpu': no worker" in message, done.stderr
    assert "hdd (1 worker)" in message and "nvme (1 worker)" in message
    assert time.time() - t0 < 30
    assert not (tmp_path / "results").exists()  # refused: no phantom study, no results folder left


def test_placement_check_and_deadline_without_a_cluster() -> None:
    """The same refusal from scheduler facts alone; a job's deadline sums its runs'."""
    from fslab.backends import choose_backend
    from fslab.plan import make_plan
    from fslab.study import load_spec

    with pytest.raises(Exception, match=r"has no fslab worker \(none offers the resource bench=1; 1 worker without it"):
        check_placement({"tcp://a:1": {"resources": {}}}, [], "tcp://s:1")
    with pytest.raises(Exception, match=r"bench=1; 2 workers without it\)"):
        check_placement({"tcp://a:1": {"resources": {}}, "tcp://b:1": {"resources": {}}}, [], "tcp://s:1")
    spec = load_spec(str(Path(__file__).parent.parent / "python/fslab/presets/quickstart.toml"))[0]
    job = make_plan(spec, backends=choose_backend).jobs[0]
    assert job_deadline_s(job) > 600 and job_deadline_s(job, 42.0) == 42.0


def test_killed_worker_fails_its_job_and_the_study_resumes(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "killed", repetitions=2, sleep=8.0)
    # 4 jobs of 8 s on two workers: two rounds, one of them cut short by the kill
    study.write_text(study.read_text().replace("value = [1.0, 2.0, 3.0]", "value = [1.0, 2.0]"))
    results = tmp_path / "results"
    driver = subprocess.Popen(
        cluster.fslab_run_argv(study, results),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **cluster.env})
    try:
        jobs = cluster.root / "scratch-w2" / "jobs"
        # Mid-job: its records file does not exist before the run ends (8 s of sleep).
        wait_for(lambda: jobs.is_dir() and any(jobs.iterdir()), 120, "a job on w2")
        time.sleep(2)
        killed_at = time.time()
        cluster.workers["w2"].send_signal(signal.SIGKILL)
        cluster.workers["w2"].wait()
        _, stderr = driver.communicate(timeout=300)
    finally:
        stop(driver)  # type: ignore[arg-type]
    assert driver.returncode == 1, stderr[-3000:]  # finished, with failed runs
    runs = stored_runs(results)
    failed = [r for r in runs if r["status"] != "ok"]
    assert len(runs) == 4 and len(failed) == 1, [(r["status"], r["error"]) for r in runs]
    lost = failed[0]
    assert "fslab-w2" in lost["error"] and "lost" in lost["error"], lost["error"]
    assert lost["provenance"]["worker"]["hostname"] == "fslab-w2"
    assert lost["finished_at"] - killed_at < 60  # reported within a minute
    # The job process went with its worker and released its loop device and mount.
    wait_for(lambda: loops_under(cluster.root / "scratch-w2") == [], 60, "w2's job to release its device")
    # Nothing lost: --retry-failed runs only the failed run again, on the machine left.
    done = cluster.fslab_run(study, results, "--retry-failed")
    assert done.returncode == 0, done.stderr[-3000:]
    runs = stored_runs(results)
    assert len(runs) == 4 and all(r["status"] == "ok" for r in runs)
    assert len({(r["cell"]["id"], r["repetition"]) for r in runs}) == 4
    retried = [r for r in runs if (r["cell"]["id"], r["repetition"]) == (lost["cell"]["id"], lost["repetition"])]
    assert retried[0]["provenance"]["worker"]["name"] == "w1"
    print(json.dumps({"lost_reported_after_s": round(lost["finished_at"] - killed_at, 1)}))


def test_a_worker_cut_off_the_network_is_reported_lost_within_a_minute(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "cut off", repetitions=1, sleep=90.0,
                        study_extra='machine_class = "nvme"')
    study.write_text(study.read_text().replace("value = [1.0, 2.0, 3.0]", "value = [1.0]"))
    results = tmp_path / "results"
    driver = subprocess.Popen(
        cluster.fslab_run_argv(study, results),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **cluster.env})
    w1 = cluster.net.members["w1"]
    try:
        jobs = cluster.root / "scratch-w1" / "jobs"
        wait_for(lambda: jobs.is_dir() and any(jobs.iterdir()), 120, "a job on w1")
        time.sleep(2)
        down_at = time.time()
        subprocess.run(["ip", "-n", w1, "link", "set", "eth0", "down"], check=True)
        _, stderr = driver.communicate(timeout=120)
    finally:
        subprocess.run(["ip", "-n", w1, "link", "set", "eth0", "up"], check=False)
        stop(driver)  # type: ignore[arg-type]
    assert driver.returncode == 1, stderr[-3000:]
    (run,) = stored_runs(results)
    assert run["status"] == "failed" and "fslab-w1" in run["error"] and "lost" in run["error"], run["error"]
    assert run["finished_at"] - down_at < 60, run["finished_at"] - down_at
    print(json.dumps({"cut_off_reported_after_s": round(run["finished_at"] - down_at, 1)}))
