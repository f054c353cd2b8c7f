"""The job entry in the guest: a job planned on the host runs unchanged through
`python -m fslab.job run JOB --out DIR` in the guest (job in and records out through a 9p
share mounted at the same path), and its record says it ran on the guest's kernel. In the
shared guest: a cold start of the entry, not the job server's fork."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import Guest
from fslab.job import execute

from .conftest import SCRATCH_DISK, SHARED_FOLDER

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


def test_a_planned_job_runs_in_the_guest(shared_guest: Guest, guest_build: GuestBuild) -> None:
    folder = shared_guest.config.shares[SHARED_FOLDER] / "job-entry"
    folder.mkdir()
    study = folder / "study.toml"
    study.write_text(STUDY)
    jobs, out = folder / "jobs", folder / "out"
    out.mkdir()
    subprocess.run([sys.executable, "-m", "fslab", "plan", str(study), "--jobs", str(jobs)],
                   check=True, capture_output=True)
    (job,) = sorted(jobs.glob("*.json"))
    # The image lives on a virtio disk formatted in the guest: the guest's /tmp is tmpfs,
    # where a loop device cannot use direct I/O.
    listing = shared_guest.check_output(
        ["sh", "-c", "for d in /sys/block/vd*; do echo ${d##*/} $(cat $d/serial); done"])
    scratch = next(name for name, serial in (line.split() for line in listing.splitlines())
                   if serial == f"fslab-disk{SCRATCH_DISK}")
    entry = [sys.executable, "-m", "fslab.job", "run", str(job), "--out", str(out)]  # the backend's entry
    script = (f"mkfs.ext4 -F -q /dev/{scratch} && mkdir -p /tmp/fslab-images && "
              f"mount /dev/{scratch} /tmp/fslab-images && {{ {shlex.join(entry)}; status=$?; }}; "
              "umount /tmp/fslab-images; exit $status")
    env = {"PYTHONPATH": str(Path(execute.__file__).resolve().parents[2])}  # this checkout's fslab
    result = shared_guest.run(["sh", "-c", script], 600, env=env)
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
