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
   overhead is its share of the study's wall time less the workload's 1 s. Target: the
   guest's at most 9x the host's (a third of the 27x measured before the guest was cut).
5. I/O: the same small fio job (4 KiB random writes, O_DIRECT, psync, RUNTIME_S) on ext4
   over an image: on the host through a loop device with direct I/O, in the guest through
   virtio-blk with cache=none. Rounds alternate host and guest so drift of the shared
   machine hits both alike; the ratio guest/host is what a user of the guest should expect.

Each target prints PASS or FAIL.
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

from fslab.backends.guest.build import build
from fslab.backends.guest.launcher import Guest, GuestConfig

ROUNDS = int(os.environ.get("FSLAB_BENCH_GUEST_ROUNDS", "3"))
COMMANDS = int(os.environ.get("FSLAB_BENCH_GUEST_COMMANDS", "10"))
RUNTIME_S = int(os.environ.get("FSLAB_BENCH_GUEST_RUNTIME_S", "3"))
STUDY_RUNS = int(os.environ.get("FSLAB_BENCH_GUEST_STUDY_RUNS", "3"))
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


def _console_marks(console: Path) -> tuple[float, float]:
    """Guest uptime (s) when init started and when the agent was ready, from the console."""
    text = console.read_text(errors="replace")
    init = re.search(r"init at ([0-9.]+) s", text)
    ready = re.search(r"ready at ([0-9.]+) s", text)
    return (float(init.group(1)) if init else float("nan"), float(ready.group(1)) if ready else float("nan"))


def _run_overhead_s(backend: str, folder: Path) -> float:
    """A run's share of a small study's wall time, less the workload's own 1 s."""
    from fslab.runner import run_study

    study = folder / f"{backend}.toml"
    study.write_text(STUDY.format(runs=STUDY_RUNS, backend=backend))
    outcome = run_study(str(study), results_dir=folder / f"results-{backend}")
    if outcome.runs_failed or outcome.runs_done != STUDY_RUNS:
        raise RuntimeError(f"the {backend} study had {outcome.runs_failed} failed runs of {outcome.runs_done}")
    return outcome.wall_s / STUDY_RUNS - 1.0


# The guest imports what this process imports (a checkout named by PYTHONPATH, else the venv's).
GUEST_ENV = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None


def main() -> None:
    guest_build = build("6.1")
    with tempfile.TemporaryDirectory(prefix="fslab-bench-guest-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        boots, marks, accel = [], [], ""
        for i in range(ROUNDS):
            console = folder / f"boot-{i}.log"
            with Guest(GuestConfig(run_root=folder, console_path=console), guest_build) as g:
                boots.append(g.boot_s)
                accel = "KVM" if g.kvm else "TCG"
            marks.append(_console_marks(console))
        host_start = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(ROUNDS))
        boot = statistics.median(boots)
        kernel = statistics.median(m[0] for m in marks)
        init = statistics.median(m[1] - m[0] for m in marks)
        print(f"guest boot ({accel}, kernel {guest_build.release}): median {boot:.2f} s (n={ROUNDS}; "
              f"kernel to init {kernel:.2f} s, init to ready {init:.2f} s, guest uptime); host Python "
              f"start {host_start * 1000:.0f} ms (n={ROUNDS}): ratio {boot / host_start:,.0f}x; "
              f"target < {BOOT_TARGET_S:.0f} s: {_verdict(boot < BOOT_TARGET_S)}")

        guest_img = folder / "guest.img"
        host_img = folder / "host.img"
        for img in (guest_img, host_img):
            with open(img, "wb") as f:
                f.truncate(IMAGE_BYTES)
        with Guest(GuestConfig(run_root=folder, disks=(guest_img,)), guest_build) as g:
            guest_true = statistics.median(g.run(["true"], 60).wall_s for _ in range(COMMANDS))
            host_true = statistics.median(_timed(["true"]) for _ in range(COMMANDS))
            print(f"per-command overhead: guest {guest_true * 1000:.0f} ms, host {host_true * 1000:.1f} ms "
                  f"(median of n={COMMANDS} each): ratio {guest_true / host_true:,.0f}x")

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

        host_overhead = _run_overhead_s("host", folder)
        guest_overhead = _run_overhead_s("guest", folder)
        ratio = guest_overhead / host_overhead
        print(f"a run's overhead (ext4, fio 1 s, a fresh file system per run; study wall time / "
              f"n={STUDY_RUNS} runs, less 1 s): guest ({accel}) {guest_overhead:.1f} s, host "
              f"{host_overhead:.2f} s: ratio {ratio:.1f}x; target <= {OVERHEAD_TARGET_RATIO:.0f}x: "
              f"{_verdict(ratio <= OVERHEAD_TARGET_RATIO)}")


if __name__ == "__main__":
    main()
