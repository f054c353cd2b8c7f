"""A lab driver whose workers all died says so — no worker connected, since when, and the
command that starts one — instead of a stale time left; a worker started again takes the
waiting jobs and the study ends. A cluster of its own (its workers are killed)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dask_cluster import Cluster, running_cluster
from netns import netns_missing, stop, wait_for

pytest.importorskip("distributed", reason="the Dask executor needs `pip install -e '.[dask]'`")

STUDY = """
[study]
name = "no worker"
repetitions = 2
order = "in-order"
[device]
size = "64MiB"
image_dir = "{images}"
[filesystems.ext4]
[[workloads]]
kind = "null"
name = "null"
sleep = 6.0
[workloads.axes]
value = [1.0, 2.0]  # 4 jobs: 2 go with their killed workers, 2 wait for one
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    missing = netns_missing()
    if missing:
        pytest.skip(missing)
    with running_cluster(tmp_path_factory.mktemp("dask-alone"), lab=None) as cluster:
        yield cluster


def test_a_driver_with_no_worker_left_says_since_when(cluster: Cluster, tmp_path: Path) -> None:
    study = tmp_path / "s" / "study.toml"
    study.parent.mkdir()
    study.write_text(STUDY.format(images=tmp_path / "s" / "images"))
    stderr_path = tmp_path / "driver.err"
    with stderr_path.open("w") as err:
        driver = subprocess.Popen(cluster.fslab_run_argv(study, tmp_path / "results"), stdout=subprocess.DEVNULL,
                                  stderr=err, text=True, env={**os.environ, **cluster.env})
    try:
        jobs = [cluster.root / f"scratch-{w}" / "jobs" for w in ("w1", "w2")]
        wait_for(lambda: any(j.is_dir() and any(j.iterdir()) for j in jobs), 120, "a job on a worker")
        killed = time.time()
        for name in ("w1", "w2"):
            cluster.workers[name].send_signal(signal.SIGKILL)
            cluster.workers[name].wait()
        wait_for(lambda: "no worker is connected" in stderr_path.read_text(), 90, "the driver to say so")
        said = " ".join(stderr_path.read_text().split())
        found = re.search(r"no worker is connected to (\S+) since (\d\d:\d\d:\d\d) \((\d+) s\); "
                          r"(\d+) (job waits|jobs wait): start one with `fslab worker ", said)
        assert found, said[-2000:]
        assert (found.group(4) == "1") == (found.group(5) == "job waits"), found.group(0)
        since = time.mktime(time.strptime(time.strftime("%Y-%m-%d ", time.localtime(killed)) + found.group(2),
                                          "%Y-%m-%d %H:%M:%S"))
        assert -2 <= since - killed < 60, (found.group(2), killed)  # since the workers died, not before
        cluster.start_worker("w1", "nvme")  # a worker back: the waiting jobs run, the study ends
        driver.wait(timeout=300)
    finally:
        stop(driver)  # type: ignore[arg-type]
    assert driver.returncode == 1, stderr_path.read_text()[-3000:]  # the jobs of the killed workers failed
