"""The worker's guards, without a cluster: the per-machine job lock, and the release of
what a killed job left in the worker's scratch folder (a real loop device on an image)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.executors.dask_worker import clear_leftovers, machine_lock

HOLD = """
import fcntl, sys, time
f = open(sys.argv[1], "a+")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""

KILLED_JOB = """
import sys, time
from pathlib import Path
from fslab.devices.image import provision
from fslab.devices.sections import ImageSection
with provision(ImageSection(size=64 << 20), Path(sys.argv[1]), "killedjob") as dev:
    print(dev.path, flush=True)
    time.sleep(60)
"""


def test_a_second_job_waits_for_the_machine_lock_then_gives_up(tmp_path: Path) -> None:
    lock = tmp_path / "worker.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(FslabError, match="one job per machine"), machine_lock(lock, 1.0):
            pass
        assert time.monotonic() - started >= 1.0
    finally:
        holder.kill()
        holder.wait()
    with machine_lock(lock, 1.0):  # free again once its holder is gone (the kernel drops it)
        pass


def test_leftovers_of_a_killed_job_are_released_before_the_next(device_support, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("FSLAB_STATE_DIR", str(state))
    scratch = tmp_path / "scratch"
    job = subprocess.Popen([sys.executable, "-c", KILLED_JOB, str(scratch / "work")], stdout=subprocess.PIPE,
                           text=True, env={**os.environ, "FSLAB_STATE_DIR": str(state)})
    assert job.stdout is not None
    loop = job.stdout.readline().strip()
    assert loop.startswith("/dev/loop")
    job.send_signal(signal.SIGKILL)  # no teardown: the loop device and image stay
    job.wait()
    image = next((scratch / "work").glob("*.img"))
    assert str(image) in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    done = clear_leftovers(scratch)
    assert any(line.startswith(f"detach {loop}") for line in done), done
    assert not image.exists()
    assert str(image) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert clear_leftovers(scratch) == []  # nothing twice


def test_machine_class_is_placement_not_part_of_the_cell(tmp_path: Path) -> None:
    from fslab.backends import choose_backend
    from fslab.errors import SpecError
    from fslab.plan import make_plan
    from fslab.study import load_spec

    base = '[study]\nname = "x"\n{study}\n[device]\nsize = "64MiB"\n{device}\n[filesystems.ext4]\n' \
           '[[workloads]]\nkind = "null"\nname = "n"\n'
    path = tmp_path / "s.toml"

    def plan(study: str = "", device: str = ""):  # type: ignore[no-untyped-def]
        path.write_text(base.format(study=study, device=device))
        return make_plan(load_spec(str(path))[0], backends=choose_backend)

    plain = plan()
    pinned = plan('machine_class = "hdd"', 'machine_class = "nvme"')
    assert plain.jobs[0].settings.machine_class is None
    assert pinned.jobs[0].settings.machine_class == "nvme"  # the device's wins
    assert plan('machine_class = "hdd"').jobs[0].settings.machine_class == "hdd"
    # Where a job runs is recorded as provenance: the cells (and resumes) stay the same.
    assert [c.id for c in plain.cells] == [c.id for c in pinned.cells]
    with pytest.raises(SpecError, match="study.machine_class"):
        plan('machine_class = "a b"')


def test_executor_urls_are_checked_before_anything_runs(tmp_path: Path) -> None:
    from fslab.errors import SpecError
    from fslab.executors import LocalExecutor, open_executor
    from fslab.executors.dask import DaskExecutor
    from fslab.executors.lab import init_lab

    assert isinstance(open_executor(None), LocalExecutor) and isinstance(open_executor("local"), LocalExecutor)
    dask = open_executor("dask://10.0.0.1:8786?deadline=90", insecure=True)
    assert isinstance(dask, DaskExecutor) and (dask.address, dask.deadline_s) == ("tcp://10.0.0.1:8786", 90.0)
    assert dask.access.insecure
    init_lab(tmp_path / "lab")
    tls = open_executor("tls://10.0.0.1:8786", tls=tmp_path / "lab")
    assert isinstance(tls, DaskExecutor) and tls.address == "tls://10.0.0.1:8786"
    assert tls.access.lab is not None and tls.access.lab.cert == tmp_path / "lab" / "driver.pem"
    for url, words in (("dask://nohost", "tls://HOST:PORT"), ("ray://x:1", "not an executor"),
                       ("dask://h:1?deadline=abc", "deadline must be seconds"),
                       ("tls://h:1", "needs the lab's certificates: --tls DIR")):
        with pytest.raises(SpecError, match=words):
            open_executor(url, insecure=url.startswith("dask://nohost"))
