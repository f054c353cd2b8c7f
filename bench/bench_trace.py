"""Block-trace overhead and analysis speed, each a ratio measured in one run.

1. tmpfs-backed loop device (CPU-bound: 4 KiB random writes, io_uring, queue depth 32,
   O_DIRECT on the raw device): IOPS loss with the native raw-page reader vs the text
   trace_pipe reader. Target: raw loss <= 1/3 of text loss, zero lost events.
2. Loop device on an image on the normal disk: IOPS loss with the raw reader. Target
   <= 10%, zero lost events.
3. Analysis throughput on a synthetic 20-million-event trace. Target >= 20 M events/s.

Runs alternate (untraced, raw, text, ...) and each figure is the median of its rounds,
so drift of the shared machine hits every configuration alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

RUNTIME_S = int(os.environ.get("FSLAB_BENCH_TRACE_RUNTIME_S", "5"))
ROUNDS = int(os.environ.get("FSLAB_BENCH_TRACE_ROUNDS", "3"))
IMAGE_BYTES = 1 << 30


@contextlib.contextmanager
def _loop_on(image: Path) -> Iterator[str]:
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=off", str(image)],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def _tmpfs(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={IMAGE_BYTES + (64 << 20)}", "fslab-bench", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def _fio_iops(dev: str) -> float:
    out = subprocess.run(
        ["fio", "--name=b", f"--filename={dev}", "--rw=randwrite", "--bs=4k", "--direct=1",
         "--ioengine=io_uring", "--iodepth=32", "--time_based", f"--runtime={RUNTIME_S}",
         "--norandommap", "--randrepeat=0", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    return float(json.loads(out[out.index("{"):])["jobs"][0]["write"]["iops"])


def _measure(dev: str, methods: list[str]) -> dict[str, tuple[float, int]]:
    """Median IOPS and total lost events per method ('none' = untraced)."""
    from fslab.devices import handle_for
    from fslab.trace.capture import TraceCapture

    handle = handle_for(dev)
    iops: dict[str, list[float]] = {m: [] for m in methods}
    lost = dict.fromkeys(methods, 0)
    _fio_iops(dev)  # warm-up: allocate the image's pages
    for _ in range(ROUNDS):
        for m in methods:
            if m == "none":
                iops[m].append(_fio_iops(dev))
                continue
            with TraceCapture(handle.dev_t, method=m) as cap:
                iops[m].append(_fio_iops(dev))
            lost[m] += int(cap.trace.lost_events or 0)
            del cap
    return {m: (statistics.median(v), lost[m]) for m, v in iops.items()}


def _loss(base: float, traced: float) -> float:
    return (base - traced) / base


def bench_tmpfs() -> None:
    with tempfile.TemporaryDirectory(prefix="fslab-bench-") as tmp, _tmpfs(Path(tmp) / "t") as t, \
            _loop_on(t / "img") as dev:
        r = _measure(dev, ["none", "raw", "text"])
    base = r["none"][0]
    raw_loss, text_loss = _loss(base, r["raw"][0]), _loss(base, r["text"][0])
    print(f"tmpfs loop, 4 KiB randwrite io_uring qd32: untraced {base:,.0f} IOPS, "
          f"raw reader {r['raw'][0]:,.0f} IOPS (loss {100 * raw_loss:.1f} %, lost {r['raw'][1]} events), "
          f"text reader {r['text'][0]:,.0f} IOPS (loss {100 * text_loss:.1f} %, lost {r['text'][1]} events)")
    if text_loss < 0.05:
        # the text reader costs at least a third of the IOPS on an idle machine: less
        # than 5% means other load swamped the measurement
        print(f"trace_raw_loss_per_text_loss_ratio n/a: text reader loss {100 * text_loss:.1f} % "
              "is below the noise of this machine (INCONCLUSIVE; rerun when idle)")
        return
    ratio = raw_loss / text_loss
    print(f"trace_raw_loss_per_text_loss_ratio {ratio:.3f} (target <= 0.333) "
          f"{'PASS' if ratio <= 1 / 3 and r['raw'][1] == 0 else 'FAIL'}")


def bench_disk() -> None:
    with tempfile.TemporaryDirectory(prefix="fslab-bench-", dir="/var/tmp") as tmp, \
            _loop_on(Path(tmp) / "img") as dev:
        r = _measure(dev, ["none", "raw"])
    base = r["none"][0]
    loss = _loss(base, r["raw"][0])
    print(f"disk-image loop, same job: untraced {base:,.0f} IOPS, raw reader {r['raw'][0]:,.0f} IOPS, "
          f"lost {r['raw'][1]} events")
    print(f"trace_raw_iops_loss_ratio {loss:.3f} (target <= 0.100) "
          f"{'PASS' if loss <= 0.10 and r['raw'][1] == 0 else 'FAIL'}")


def synthetic_trace(n: int, seed: int = 4):
    """n events: n/2 requests (4 KiB random writes, some sequential runs), issue then
    complete 100 µs later, in time order."""
    from fslab.trace.formats import Trace

    rng = np.random.default_rng(seed)
    half = n // 2
    t_issue = np.arange(half, dtype=np.uint64) * 2000
    sector = (rng.integers(0, 1 << 21, half, dtype=np.uint64) * 8)
    nr = np.full(half, 8, np.uint32)
    cols = {
        "time_ns": np.concatenate([t_issue, t_issue + 100_000]),
        "event": np.concatenate([np.zeros(half, np.uint8), np.ones(half, np.uint8)]),
        "dev": np.full(2 * half, 7 << 20, np.uint32),
        "sector": np.concatenate([sector, sector]),
        "nr_sector": np.concatenate([nr, nr]),
        "op": np.ones(2 * half, np.uint8),
        "flags": np.full(2 * half, 8, np.uint8),
        "pid": np.full(2 * half, 100, np.int32),
        "comm": np.concatenate([np.zeros(half, np.uint16), np.full(half, 0xFFFF, np.uint16)]),
    }
    order = np.argsort(cols["time_ns"], kind="stable")
    return Trace({k: v[order] for k, v in cols.items()}, ["fio"], {"lost_events": 0, "complete": True})


def bench_analysis(n: int = 20_000_000) -> None:
    from fslab.analysis.traces import analyze

    trace = synthetic_trace(n)
    t0 = time.perf_counter()
    r = analyze(trace)
    dt = time.perf_counter() - t0
    assert r["requests"]["write"] == n // 2
    rate = n / dt
    print(f"analysis of {n:,} events: {dt:.2f} s = {rate / 1e6:.1f} M events/s")
    print(f"trace_analysis_rate_per_target_ratio {rate / 20e6:.2f} (target >= 1.00) "
          f"{'PASS' if rate >= 20e6 else 'FAIL'}")


def main() -> None:
    if os.geteuid() != 0:
        print("bench_trace: needs root (loop devices, tracefs): skipped")
        return
    bench_analysis()
    bench_tmpfs()
    bench_disk()


if __name__ == "__main__":
    main()
