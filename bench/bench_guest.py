"""What the QEMU guest costs, each figure beside a host reference measured in the same run.

1. Boot: QEMU start to a shell in the guest (median of ROUNDS boots), against the host
   starting the same Python interpreter.
2. Per-command overhead: `true` run in a booted guest (through the 9p command channel)
   against `true` run on the host (median of COMMANDS each).
3. Job-entry start: `python -c 'import fslab.cli, fslab.job.execute'` in the guest and on
   the host (what every `fslab job run` in a guest pays before its first mkfs).
4. I/O: the same small fio job (4 KiB random writes, O_DIRECT, psync, RUNTIME_S) on ext4
   over an image: on the host through a loop device with direct I/O, in the guest through
   virtio-blk with cache=none. Rounds alternate host and guest so drift of the shared
   machine hits both alike; the ratio guest/host is what a user of the guest should expect.
"""

from __future__ import annotations

import contextlib
import json
import os
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
IMAGE_BYTES = 1 << 30
IMPORT = [sys.executable, "-c", "import fslab.cli, fslab.job.execute"]


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


def main() -> None:
    guest_build = build("6.1")
    with tempfile.TemporaryDirectory(prefix="fslab-bench-guest-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        boots, accel = [], ""
        for _ in range(ROUNDS):
            with Guest(GuestConfig(run_root=folder), guest_build) as g:
                boots.append(g.boot_s)
                accel = "KVM" if g.kvm else "TCG"
        host_start = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(ROUNDS))
        boot = statistics.median(boots)
        print(f"guest boot ({accel}, kernel {guest_build.release}): median {boot:.2f} s (n={ROUNDS}); "
              f"host Python start {host_start * 1000:.0f} ms (n={ROUNDS}): ratio {boot / host_start:,.0f}x")

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

            guest_import = statistics.median(g.run(IMPORT, 600).wall_s for _ in range(ROUNDS))
            host_import = statistics.median(_timed(IMPORT) for _ in range(ROUNDS))
            print(f"job-entry import: guest {guest_import:.2f} s, host {host_import:.2f} s "
                  f"(median of n={ROUNDS} each): ratio {guest_import / host_import:.1f}x")

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
