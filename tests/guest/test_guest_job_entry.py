"""The job entry in the guest: a job planned on the host runs unchanged through
`python -m fslab.job run JOB --out DIR` in the guest (job in and records out through 9p
shares mounted at the same paths), and its record says it ran on the guest's kernel."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import GiB, GuestConfig, run_in_guest
from fslab.job import execute

from .conftest import sparse_image

pytestmark = pytest.mark.guest

STUDY = """
[study]
name = "job entry in the guest"
repetitions = 1
backend = "host"

[device]
kind = "image"
size = "256MiB"
image_dir = "/tmp/fslab-images"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "rand-write-4k"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
ioengine = "psync"
runtime = 1
time_based = 1
"""


def test_a_planned_job_runs_in_the_guest(guest_build: GuestBuild, tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    jobs, out = tmp_path / "jobs", tmp_path / "out"
    out.mkdir()
    subprocess.run([sys.executable, "-m", "fslab", "plan", str(study), "--jobs", str(jobs)],
                   check=True, capture_output=True)
    (job,) = sorted(jobs.glob("*.json"))
    # The image lives on a virtio disk formatted in the guest: the guest's /tmp is tmpfs,
    # where a loop device cannot use direct I/O.
    scratch = sparse_image(tmp_path / "scratch.img", 2 * GiB)
    entry = [sys.executable, "-m", "fslab.job", "run", str(job), "--out", str(out)]  # the backend's entry
    script = ("mkfs.ext4 -F -q /dev/vda && mkdir -p /tmp/fslab-images && "
              "mount /dev/vda /tmp/fslab-images && " + shlex.join(entry))
    config = GuestConfig(memory_bytes=1 * GiB, disks=(scratch,), run_root=tmp_path,
                         shares={"jobs": jobs, "out": out}, console_path=out / "console.log")
    result = run_in_guest(config, ["sh", "-c", script], 600, guest_build)
    assert result.exit_status == 0, result.stderr
    (line,) = (out / "records.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["status"] == "ok", record.get("error")
    assert record["provenance"]["host"]["kernel"] == guest_build.release
    iops = {m["name"]: m["value"] for m in record["metrics"]}["write_iops"]
    assert iops > 0
    assert (out / record["artifact_dir"] / "fio.json").exists()
    # fslab's bytecode was written on the host, beside its sources, for the guest to read.
    assert Path(importlib.util.cache_from_source(execute.__file__)).exists()
