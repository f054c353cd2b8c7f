"""The Dask scheduler dies mid-study: the driver stops with an error that says so and how
to continue (exit 2, not a traceback), the runs stored so far stay, the study is
interrupted, and --resume is the way on. A cluster of its own: the scheduler is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dask_cluster import Cluster, running_cluster
from fslab.store import Store
from netns import netns_missing, stop, wait_for
from test_dask_executor import loops_under, write_study


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    missing = netns_missing()
    if missing:
        pytest.skip(missing)
    with running_cluster(tmp_path_factory.mktemp("dask-lost"), lab=None) as cluster:
        yield cluster


def test_a_scheduler_that_dies_mid_study_stops_it_with_the_way_to_continue(cluster: Cluster, tmp_path: Path) -> None:
    study = write_study(tmp_path / "s" / "study.toml", "scheduler lost", repetitions=2, sleep=15.0)
    results = tmp_path / "results"
    driver = subprocess.Popen(cluster.fslab_run_argv(study, results), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, **cluster.env})
    try:
        jobs = [cluster.root / f"scratch-{w}" / "jobs" for w in ("w1", "w2")]
        wait_for(lambda: any(j.is_dir() and any(j.iterdir()) for j in jobs), 120, "a job on a worker")
        found = subprocess.run(["pgrep", "-f", f"dask scheduler --host {cluster.net.addresses['sched']}"],
                               capture_output=True, text=True).stdout.split()
        assert found, "the scheduler's process"
        for pid in found:
            os.kill(int(pid), signal.SIGKILL)
        _, stderr = driver.communicate(timeout=180)
    finally:
        stop(driver)  # type: ignore[arg-type]
    said = " ".join(stderr.split())
    assert driver.returncode == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert f"lost the Dask scheduler at tcp://{cluster.scheduler}" in said, said[-2000:]
    assert f"continue with `fslab run {study} -r {results} --executor {cluster.url} --insecure --resume`" in said
    with Store(results, read_only=True) as store:
        row = store.study()
        assert row.status == "interrupted"
        assert all(r["status"] == "ok" for r in store.runs(row.id))  # nothing recorded as a failed run
    wait_for(lambda: loops_under(cluster.root) == [], 60, "the workers' jobs to release their devices")
    print(f"driver exit {driver.returncode}: {said[-300:]}", file=sys.stderr)
