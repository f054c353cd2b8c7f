"""What the QEMU guest costs, each figure beside a host reference measured in the same run.

1. Boot: QEMU start to a shell in the guest (median of ROUNDS boots), with the console's
   own marks (kernel done: init starts; init done: the agent is ready), against the host
   starting the same Python interpreter. Target: under 3 s.
2. Per-command overhead: `true` run in a booted guest (through the 9p command channel)
   against `true` run on the host (median of COMMANDS each).
3. Job-entry start: what `python -m fslab.job` imports (``fslab.job.entry`` and
   ``fslab.job.execute``) in the guest and on the host, and the CLI's import besides
   (what the entry cost before it had a light one). Target: under 2 s in the guest.
4. A guest run's overhead: one small study (ext4, fio 1 s, a fresh file system per run,
   STUDY_RUNS runs) through the guest backend and through the host backend; a run's
   overhead is its share of the study's wall time less the workload's 1 s. The guest
   study's jobs (one a run) share a boot, as the local executor runs them. Target: the
   guest's at most 9x the host's (a third of the 27x measured before the guest was cut).
5. I/O: the same small fio job (4 KiB random writes, O_DIRECT, psync, RUNTIME_S) on ext4
   over an image: on the host through a loop device with direct I/O, in the guest through
   virtio-blk with cache=none. Rounds alternate host and guest so drift of the shared
   machine hits both alike; the ratio guest/host is what a user of the guest should expect.
6. A run's overhead inside a job: one job of JOB_RUNS runs (ext4, fio 1 s, one file system
   for the pass, ``fresh = "repetition"``, as seed-002 runs) through each backend; the
   median of the runs' ``overhead_s`` (a run's wall time less fio's own runtime: layout,
   settling, dropping caches, fio's start and end). Boot and imports are the job's, not in
   it. This is what a study of many runs per file system pays per run.

Each target prints PASS or FAIL. FSLAB_BENCH_GUEST_PARTS (comma-separated, of boot,
command, import, io, overhead, injob) runs only those parts (default: all).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from fslab.backends.guest.build import GuestBuild, build
from fslab.backends.guest.launcher import Guest, GuestConfig

ROUNDS = int(os.environ.get("FSLAB_BENCH_GUEST_ROUNDS", "3"))
COMMANDS = int(os.environ.get("FSLAB_BENCH_GUEST_COMMANDS", "10"))
RUNTIME_S = int(os.environ.get("FSLAB_BENCH_GUEST_RUNTIME_S", "3"))
STUDY_RUNS = int(os.environ.get("FSLAB_BENCH_GUEST_STUDY_RUNS", "3"))
JOB_RUNS = int(os.environ.get("FSLAB_BENCH_GUEST_JOB_RUNS", "4"))
PARTS = set(os.environ.get("FSLAB_BENCH_GUEST_PARTS", "boot,command,import,io,overhead,injob").split(","))
IMAGE_BYTES = 1 << 30
ENTRY_IMPORT = [sys.executable, "-c", "import fslab.job.entry, fslab.job.execute"]
CLI_IMPORT = [sys.executable, "-c", "import fslab.cli, fslab.job.execute"]
BOOT_TARGET_S = 2.999
IMPORT_TARGET_S = 2.0
OVERHEAD_TARGET_RATIO = 9.0

STUDY = """
[study]
name = "guest overhead"
repetitions = {runs}
fresh = "run"
order = "in-order"
guest_memory = "512MiB"
backend = "{backend}"

[device]
size = "256MiB"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "randwrite-1s"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
runtime = 1
time_based = 1
"""


# One job of several runs: the pass's cells on one file system (rw is the axis).
JOB_STUDY = """
[study]
name = "guest overhead in a job"
repetitions = 1
fresh = "repetition"
order = "in-order"
guest_memory = "512MiB"
backend = "{backend}"

[device]
size = "256MiB"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "4k-1s"
bs = "4k"
size = "16M"
direct = 1
runtime = 1
time_based = 1
[workloads.axes]
rw = {rw}
"""
JOB_RW = ["randwrite", "randread", "write", "read", "randrw", "rw"]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _fio_argv(directory: str) -> list[str]:
    return ["fio", "--name=bench", f"--directory={directory}", "--rw=randwrite", "--bs=4k",
            "--size=64m", "--direct=1", "--ioengine=psync", "--time_based",
            f"--runtime={RUNTIME_S}", "--randrepeat=0", "--output-format=json"]


def _iops(fio_json: str) -> float:
    return float(json.loads(fio_json[fio_json.index("{"):])["jobs"][0]["write"]["iops"])


@contextlib.contextmanager
def _host_ext4(image: Path, mountpoint: Path) -> Iterator[Path]:
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-F", "-q", dev], check=True)
        mountpoint.mkdir()
        subprocess.run(["mount", "-t", "ext4", dev, str(mountpoint)], check=True)
        try:
            yield mountpoint
        finally:
            subprocess.run(["umount", str(mountpoint)], check=False)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def _timed(argv: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


# init's console marks, in the order it prints them (fslab.backends.guest.init_script)
MARKS = ("init", "modules loaded", "host root mounted", "shares mounted", "ready")


def _console_marks(console: Path) -> dict[str, float]:
    """Guest uptime (s) at each of init's marks, from the console (NaN where missing)."""
    text = console.read_text(errors="replace")
    found = {}
    for mark in MARKS:
        match = re.search(rf"fslab-guest: {mark} at ([0-9.]+) s", text)
        found[mark] = float(match.group(1)) if match else float("nan")
    return found


def _run_overhead_s(backend: str, folder: Path) -> float:
    """A run's share of a small study's wall time, less the workload's own 1 s."""
    from fslab.runner import run_study

    study = folder / f"{backend}.toml"
    study.write_text(STUDY.format(runs=STUDY_RUNS, backend=backend))
    outcome = run_study(str(study), results_dir=folder / f"results-{backend}")
    if outcome.runs_failed or outcome.runs_done != STUDY_RUNS:
        raise RuntimeError(f"the {backend} study had {outcome.runs_failed} failed runs of {outcome.runs_done}")
    return outcome.wall_s / STUDY_RUNS - 1.0


def _in_job_overhead_s(backend: str, folder: Path) -> tuple[float, int]:
    """Median ``overhead_s`` of the runs of one job of JOB_RUNS runs, and how many ran."""
    from fslab.runner import run_study
    from fslab.store import Store

    rw = [JOB_RW[i % len(JOB_RW)] for i in range(JOB_RUNS)]
    if len(set(rw)) < len(rw):
        raise RuntimeError(f"FSLAB_BENCH_GUEST_JOB_RUNS: at most {len(JOB_RW)} runs (one cell each)")
    study = folder / f"job-{backend}.toml"
    study.write_text(JOB_STUDY.format(backend=backend, rw=json.dumps(rw)))
    outcome = run_study(str(study), results_dir=folder / f"results-job-{backend}")
    if outcome.runs_failed or outcome.runs_done != JOB_RUNS:
        raise RuntimeError(f"the {backend} job had {outcome.runs_failed} failed runs of {outcome.runs_done}")
    store = Store(folder / f"results-job-{backend}", read_only=True)
    try:
        values = [r["metrics"]["overhead_s"]["value"] for r in store.runs(outcome.study_id)]
    finally:
        store.close()
    return statistics.median(v for v in values if v is not None), len(values)


# The guest imports what this process imports (a checkout named by PYTHONPATH, else the venv's).
GUEST_ENV = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None


def main() -> None:
    from fslab.backends.guest.kvm import kvm_verdict

    guest_build = build("6.1")
    accel = "KVM" if kvm_verdict(guest_build).usable else "TCG"
    with tempfile.TemporaryDirectory(prefix="fslab-bench-guest-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        if "boot" in PARTS:
            _boot(guest_build, folder)
        if PARTS & {"command", "import", "io"}:
            _in_one_guest(guest_build, folder)
        if "overhead" in PARTS:
            host_overhead = _run_overhead_s("host", folder)
            guest_overhead = _run_overhead_s("guest", folder)
            ratio = guest_overhead / host_overhead
            print(f"a run's overhead (ext4, fio 1 s, a fresh file system per run; study wall time / "
                  f"n={STUDY_RUNS} runs, less 1 s): guest ({accel}) {guest_overhead:.1f} s, host "
                  f"{host_overhead:.2f} s: ratio {ratio:.1f}x; target <= {OVERHEAD_TARGET_RATIO:.0f}x: "
                  f"{_verdict(ratio <= OVERHEAD_TARGET_RATIO)}")
        if "injob" in PARTS:
            host_run, n_host = _in_job_overhead_s("host", folder)
            guest_run, n_guest = _in_job_overhead_s("guest", folder)
            print(f"a run's overhead inside one job (ext4, fio 1 s, one file system for the pass; "
                  f"median overhead_s): guest ({accel}) {guest_run:.2f} s (n={n_guest}), host "
                  f"{host_run:.2f} s (n={n_host}): ratio {guest_run / host_run:.1f}x")


def _boot(guest_build: GuestBuild, folder: Path) -> None:
    boots, marks, accel = [], [], ""
    for i in range(ROUNDS):
        console = folder / f"boot-{i}.log"
        with Guest(GuestConfig(run_root=folder, console_path=console), guest_build) as g:
            boots.append(g.boot_s)
            accel = "KVM" if g.kvm else "TCG"
        marks.append(_console_marks(console))
    host_start = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(ROUNDS))
    boot = statistics.median(boots)
    kernel = statistics.median(m["init"] for m in marks)
    init = statistics.median(m["ready"] - m["init"] for m in marks)
    print(f"guest boot ({accel}, kernel {guest_build.release}): median {boot:.2f} s (n={ROUNDS}; "
          f"kernel to init {kernel:.2f} s, init to ready {init:.2f} s, guest uptime); host Python "
          f"start {host_start * 1000:.0f} ms (n={ROUNDS}): ratio {boot / host_start:,.0f}x; "
          f"target < {BOOT_TARGET_S:.0f} s: {_verdict(boot < BOOT_TARGET_S)}")
    # Where the boot went, each part the median over the boots (s): before the guest's
    # clock starts (QEMU, firmware, the kernel's earliest boot) and each of init's steps.
    parts = {"QEMU start to guest clock": [b - m["ready"] for b, m in zip(boots, marks, strict=True)],
             "kernel to init": [m["init"] for m in marks]}
    for before, after in zip(MARKS, MARKS[1:], strict=False):
        parts[f"{before} to {after}"] = [m[after] - m[before] for m in marks]
    print("  boot parts (median s, n=" + str(ROUNDS) + "): "
          + ", ".join(f"{name} {statistics.median(v):.2f}" for name, v in parts.items()))


def _in_one_guest(guest_build: GuestBuild, folder: Path) -> None:
    guest_img = folder / "guest.img"
    host_img = folder / "host.img"
    for img in (guest_img, host_img):
        with open(img, "wb") as f:
            f.truncate(IMAGE_BYTES)
    with Guest(GuestConfig(run_root=folder, disks=(guest_img,)), guest_build) as g:
        if "command" in PARTS:
            guest_true = statistics.median(g.run(["true"], 60).wall_s for _ in range(COMMANDS))
            host_true = statistics.median(_timed(["true"]) for _ in range(COMMANDS))
            print(f"per-command overhead: guest {guest_true * 1000:.0f} ms, host {host_true * 1000:.1f} ms "
                  f"(median of n={COMMANDS} each): ratio {guest_true / host_true:,.0f}x")
        if "import" in PARTS:
            g.run(ENTRY_IMPORT, 600, env=GUEST_ENV)  # the first import in a fresh cache writes the bytecode
            guest_import = statistics.median(g.run(ENTRY_IMPORT, 600, env=GUEST_ENV).wall_s for _ in range(ROUNDS))
            host_import = statistics.median(_timed(ENTRY_IMPORT) for _ in range(ROUNDS))
            guest_cli = statistics.median(g.run(CLI_IMPORT, 600, env=GUEST_ENV).wall_s for _ in range(ROUNDS))
            host_cli = statistics.median(_timed(CLI_IMPORT) for _ in range(ROUNDS))
            print(f"job-entry import (fslab.job.entry, fslab.job.execute): guest {guest_import:.2f} s, "
                  f"host {host_import:.2f} s (median of n={ROUNDS} each): ratio "
                  f"{guest_import / host_import:.1f}x; target < {IMPORT_TARGET_S:.0f} s in the guest: "
                  f"{_verdict(guest_import < IMPORT_TARGET_S)}")
            print(f"  with the CLI (fslab.cli, fslab.job.execute): guest {guest_cli:.2f} s, "
                  f"host {host_cli:.2f} s (median of n={ROUNDS} each)")
        if "io" in PARTS:
            g.check_output(["sh", "-ec", "mkfs.ext4 -F -q /dev/vda; mkdir -p /mnt/b; "
                            "mount -t ext4 /dev/vda /mnt/b"], 300)
            guest_iops, host_iops = [], []
            with _host_ext4(host_img, folder / "host-mnt") as mnt:
                for _ in range(ROUNDS):
                    guest_iops.append(_iops(g.check_output(_fio_argv("/mnt/b"), 300)))
                    done = subprocess.run(_fio_argv(str(mnt)), check=True, capture_output=True, text=True)
                    host_iops.append(_iops(done.stdout))
            g.check_output(["umount", "/mnt/b"], 120)
            gi, hi = statistics.median(guest_iops), statistics.median(host_iops)
            print(f"fio 4 KiB randwrite O_DIRECT on ext4 ({RUNTIME_S} s): guest {gi:,.0f} IOPS, "
                  f"host {hi:,.0f} IOPS (median of n={ROUNDS} each): guest/host ratio {gi / hi:.2f}")

if __name__ == "__main__":
    main()
