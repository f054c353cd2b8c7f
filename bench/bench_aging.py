"""Aging speed, as a ratio measured in one run.

Produce a 50%-aged 4 GiB ext4 image (sparse image, loop device, mkfs, random-holes
aging with the default file sizes, unmount) and report aging throughput (files/s and
GiB/s written) and the time to produce the image against the reference: a plain
`cp --sparse=always` of the resulting image, i.e. what reusing an aged image costs per
repetition. Ratio = produce time / copy time (how many copies one aging pays for).

Sizes and repetitions are environment-tunable (FSLAB_BENCH_AGING_SIZE in GiB,
FSLAB_BENCH_AGING_ROUNDS); each figure is the median of its rounds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fslab.aged_images import make_aged_filesystem
from fslab.aging_option import AgingOption

SIZE_GIB = int(os.environ.get("FSLAB_BENCH_AGING_SIZE", "4"))
ROUNDS = int(os.environ.get("FSLAB_BENCH_AGING_ROUNDS", "3"))


def _one_round(directory: Path, seed: int) -> tuple[float, float, float, float, int]:
    """(produce s, aging s, copy s, bytes written, files created) for one aged image."""
    image = directory / f"fslab-{os.getpid()}-bench{seed}.img"
    copy = directory / f"copy-{seed}.img"
    try:
        started = time.monotonic()
        report = make_aged_filesystem(image, SIZE_GIB << 30, "ext4", [], [],
                                      AgingOption(fill=0.5, seed=seed), directory)
        produce_s = time.monotonic() - started
        subprocess.run(["sync"], check=True)
        started = time.monotonic()
        subprocess.run(["cp", "--sparse=always", str(image), str(copy)], check=True)
        subprocess.run(["sync", str(copy)], check=True)
        copy_s = time.monotonic() - started
        return produce_s, report.wall_s, copy_s, report.bytes_written, report.files_created
    finally:
        image.unlink(missing_ok=True)
        copy.unlink(missing_ok=True)


def main() -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Aging a {SIZE_GIB} GiB ext4 image to 50% (random-holes, lognormal:64KiB:1.5), "
          f"median of {ROUNDS}; {os.cpu_count()} CPUs, load average {load}")
    with tempfile.TemporaryDirectory(prefix="fslab-bench-aging-", dir="/var/tmp") as tmp:
        rows = [_one_round(Path(tmp), seed) for seed in range(1, ROUNDS + 1)]
    produce = statistics.median(r[0] for r in rows)
    aging = statistics.median(r[1] for r in rows)
    copy = statistics.median(r[2] for r in rows)
    gib_per_s = statistics.median(r[3] / r[1] / 2**30 for r in rows)
    files_per_s = statistics.median(r[4] / r[1] for r in rows)
    ratio = statistics.median(r[0] / r[2] for r in rows)
    print(f"  aging throughput: {files_per_s:,.0f} files/s, {gib_per_s:.2f} GiB/s written "
          f"(n={ROUNDS}; {statistics.median(r[4] for r in rows):,.0f} files, "
          f"{statistics.median(r[3] for r in rows) / 2**30:.2f} GiB written per image)")
    print(f"  produce aged image: {produce:.1f} s (aging {aging:.1f} s); reference cp --sparse=always "
          f"of it: {copy:.1f} s; ratio produce/copy {ratio:.1f} (n={ROUNDS})")


if __name__ == "__main__":
    main()
