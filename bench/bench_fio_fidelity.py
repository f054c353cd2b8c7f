"""Does fslab measure what fio measures? A 4 KiB random-read job is run alternately by
fslab (a one-run study) and by plain fio on an identically made loop device and ext4,
in the same session; the median ratio of reported IOPS must lie within 0.97–1.03.
Also fslab's per-run overhead (wall time of a run minus fio's own runtime) on the
quickstart preset in quick mode, which should stay under 2 s per run."""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fslab.runner import run_study
from fslab.store import Store

# 15 alternated pairs: on a shared machine single pairs range 0.55–1.6, and with 5 the
# median moved between 0.86 and 1.12 from one run to the next; with 15 it settles.
PAIRS = 15
RUNTIME_S = 5
JOB = {"rw": "randread", "bs": "4k", "size": "256M", "direct": 1, "ioengine": "psync",
       "runtime": RUNTIME_S, "time_based": 1}
STUDY = """
[study]
name = "fidelity"
repetitions = 1
[device]
size = "1GiB"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "randread-4k"
""" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in JOB.items()) + "\n"


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def plain_fio_iops(work: Path) -> float:
    """The same job, by hand: sparse image, loop with direct I/O, mkfs, mount, fio."""
    image = work / "plain.img"
    image.write_bytes(b"")
    sh("truncate", "-s", "1G", str(image))
    loop = sh("losetup", "--find", "--show", "--direct-io=on", str(image)).strip()
    mnt = work / "plain-mnt"
    mnt.mkdir(exist_ok=True)
    try:
        sh("mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop)
        sh("mount", loop, str(mnt))
        try:
            sh("sync")
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            args = [f"--{k}={v}" for k, v in JOB.items()]
            out = sh("fio", "--name=job", f"--directory={mnt}", "--output-format=json", *args)
            report = json.loads(out[out.index("{"):])
            return float(report["jobs"][0]["read"]["iops"])
        finally:
            sh("umount", str(mnt))
    finally:
        sh("losetup", "-d", loop)
        image.unlink()


def fslab_iops(work: Path, study: Path) -> float:
    results = work / f"res-{time.monotonic_ns()}"
    run_study(str(study), results_dir=results)
    with Store(results) as store:
        (run,) = store.runs(store.study().id)
    return float(run["metrics"]["read_iops"]["value"])


def overhead_on_quickstart(work: Path) -> tuple[float, float, int]:
    """(median per-run overhead from the records, whole-study overhead per run, runs)."""
    results = work / "quickstart"
    started = time.monotonic()
    outcome = run_study("quickstart", results_dir=results, quick=True)
    wall = time.monotonic() - started
    with Store(results) as store:
        runs = store.runs(outcome.study_id)
    per_run = [r["metrics"]["overhead_s"]["value"] for r in runs]
    tool_s = sum(r["metrics"]["wall_s"]["value"] - r["metrics"]["overhead_s"]["value"] for r in runs)
    return statistics.median(per_run), (wall - tool_s) / len(runs), len(runs)


def main() -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        work = Path(tmp)
        study = work / "fidelity.toml"
        study.write_text(STUDY)
        ratios, ours, theirs = [], [], []
        for _ in range(PAIRS):
            a = fslab_iops(work, study)
            b = plain_fio_iops(work)
            ours.append(a)
            theirs.append(b)
            ratios.append(a / b)
        ratio = statistics.median(ratios)
        verdict = "PASS" if 0.97 <= ratio <= 1.03 else "FAIL"
        print(f"fio fidelity: median IOPS ratio fslab/plain fio = {ratio:.3f} over {PAIRS} "
              f"alternated pairs (fslab median {statistics.median(ours):,.0f} IOPS, plain fio "
              f"median {statistics.median(theirs):,.0f} IOPS; 4 KiB randread, {RUNTIME_S} s "
              f"each); target 0.97–1.03: {verdict}")
        print("  per-pair ratios: " + ", ".join(f"{r:.3f}" for r in ratios))
        median_overhead, study_overhead, n = overhead_on_quickstart(work)
        verdict = "PASS" if study_overhead < 2 else "FAIL"
        print(f"run overhead on quickstart --quick ({n} runs): median {median_overhead:.2f} s per "
              f"run from the records (run wall time minus fio's runtime); whole study "
              f"{study_overhead:.2f} s per run including mkfs, mount and teardown; "
              f"target < 2 s: {verdict}")
