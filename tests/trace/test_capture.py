"""Live capture on real loop devices: the trace's completed requests and sectors per
direction equal the kernel's /sys/block/DEV/stat deltas (ext4, xfs, btrfs), and the
tracefs instance is removed after success, errors and Ctrl-C."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fslab.analysis.traces import analyze

pytestmark = pytest.mark.device


@pytest.fixture
def tracing(device_support: None) -> Path:
    from fslab.errors import MissingCapability
    from fslab.trace.capture import tracefs_root

    try:
        root = tracefs_root()
    except MissingCapability as exc:
        pytest.skip(str(exc))
    if not (root / "events" / "block" / "block_rq_issue").is_dir():
        pytest.skip("no block tracepoints")
    if shutil.which("fio") is None:
        pytest.skip("needs fio")
    return root


def _mine(root: Path) -> list[str]:
    return [p.name for p in (root / "instances").iterdir() if p.name.startswith(f"fslab-{os.getpid()}-")]


def _workload(mnt: Path) -> None:
    subprocess.run(["fio", "--name=w", f"--directory={mnt}", "--rw=randwrite", "--bs=4k",
                    "--size=32M", "--io_size=8M", "--fsync=8", "--output=/dev/null"], check=True)
    subprocess.run(["dd", f"if={mnt / 'w.0.0'}", "of=/dev/null", "bs=1M", "iflag=direct"],
                   check=True, capture_output=True)


@pytest.mark.parametrize("fs,method", [("ext4", "raw"), ("xfs", "raw"), ("btrfs", "raw"),
                                       ("ext4", "text")])
def test_trace_counts_equal_block_stat(tracing: Path, mounted_fs, fs: str, method: str,
                                       tmp_path: Path) -> None:
    from fslab.trace import load_trace, write_parquet
    from fslab.trace.capture import TraceCapture

    with mounted_fs(fs) as (dev, mnt):
        after: dict[str, int] = {}
        with TraceCapture(dev.dev_t, method=method, on_stop=lambda: after.update(dev.read_stat())) as cap:
            # Counters start once tracing is on (a probe of the new device may read it
            # between mount and trace start; those reads are in neither window then).
            before = dev.read_stat()
            _workload(mnt)
        assert _mine(tracing) == []
    trace = cap.trace
    assert trace is not None and trace.meta["capture_method"] == method
    assert trace.lost_events == 0 and trace.complete
    r = analyze(trace)
    for d in ("read", "write", "flush", "discard"):
        assert r["requests"][d] == after[f"{d}_ios"] - before[f"{d}_ios"], d
    for d in ("read", "write"):
        assert r["sectors"][d] == after[f"{d}_sectors"] - before[f"{d}_sectors"], d
    assert r["requests"]["write"] > 1000 and r["requests"]["read"] > 0
    assert r["latency_ns"]["write"]["count"] > 0
    assert {t["task"] for t in r["by_task"]} >= {"fio", "dd"}
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    assert analyze(load_trace(out))["requests"] == r["requests"]


def test_instance_removed_on_error_and_interrupt(tracing: Path, loop_device) -> None:
    from fslab.trace.capture import TraceCapture

    with loop_device("64MiB") as dev:
        for exc in (RuntimeError("boom"), KeyboardInterrupt()):
            cap = TraceCapture(dev.dev_t)
            with pytest.raises(type(exc)):
                with cap:
                    assert len(_mine(tracing)) == 1
                    raise exc
            assert _mine(tracing) == []
            assert cap.trace is None


def test_lossy_capture_is_marked(tracing: Path, mounted_fs) -> None:
    """A tiny buffer read only after the run loses events: counted, marked incomplete."""
    from fslab.trace import capture as capmod

    with mounted_fs("ext4") as (dev, mnt):
        capmod.READ_DURING_RUN = False
        try:
            with capmod.TraceCapture(dev.dev_t, method="raw", buffer_kb=8) as cap:
                subprocess.run(["fio", "--name=w", f"--directory={mnt}", "--rw=randwrite", "--bs=4k",
                                "--size=16M", "--direct=1", "--output=/dev/null"], check=True)
        finally:
            capmod.READ_DURING_RUN = True
    assert cap.trace.lost_events > 0
    assert not cap.trace.complete
    assert analyze(cap.trace)["complete"] is False


def _fio_on(dev_path: str, runtime_s: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["fio", "--name=w", f"--filename={dev_path}", "--rw=randrw", "--bs=4k",
                             "--direct=1", "--ioengine=io_uring", "--iodepth=8", "--size=32M",
                             "--time_based", f"--runtime={runtime_s}", "--output=/dev/null"])


def test_the_cheap_capture_holds_what_the_kernel_filtered_mono_one_does(tracing: Path, loop_device) -> None:
    """The default capture (the reader filters by device; the TSC clock where the kernel's
    clocksource is the TSC, its readings mapped onto CLOCK_MONOTONIC) and the kernel-filtered
    mono capture, on at once over the same I/O: the same events, at the same times within a
    few microseconds; another device's I/O meanwhile is seen by the first and left out."""
    from collections import Counter

    import numpy as np

    from fslab.trace.capture import CLOCKSOURCE, TraceCapture

    with loop_device("64MiB") as mine, loop_device("64MiB") as other:
        with TraceCapture(mine.dev_t, clock="mono", kernel_filter=True) as old:
            with TraceCapture(mine.dev_t) as new:
                procs = [_fio_on(mine.path, 1), _fio_on(other.path, 1)]
                assert [p.wait() for p in procs] == [0, 0]
    a, b = old.trace, new.trace
    assert a is not None and b is not None
    assert a.meta["kernel_filter"] is True and a.meta["trace_clock"] == "mono"
    assert b.meta["kernel_filter"] is False
    tsc = CLOCKSOURCE.read_text().strip() == "tsc"
    assert b.meta["trace_clock"] == ("x86-tsc" if tsc else "mono")
    assert ("tsc_to_mono" in b.meta) == tsc
    assert a.lost_events == 0 and b.lost_events == 0 and a.complete and b.complete
    assert b.meta["reader"]["foreign"] > 1000  # the other device's events, left out
    assert set(np.unique(b.columns["dev"]).tolist()) == {mine.dev_t}
    keys = ("event", "dev", "sector", "nr_sector", "op", "flags", "pid")

    def rows(t):  # (key..., time) in key order, then time: twins line up
        cols = [t.columns[k].tolist() for k in keys]
        return sorted(zip(*cols, t.columns["time_ns"].tolist()))

    ra, rb = rows(a), rows(b)
    assert len(ra) == len(rb) > 2000
    assert Counter(r[:-1] for r in ra) == Counter(r[:-1] for r in rb)
    gaps = np.abs(np.array([x[-1] for x in ra], dtype=np.int64) - np.array([x[-1] for x in rb], dtype=np.int64))
    # Both instances stamp the same tracepoint call, one after the other.
    assert np.median(gaps) < 5_000 and np.percentile(gaps, 99) < 50_000, (np.median(gaps), gaps.max())
    times = b.columns["time_ns"]
    assert b.meta["start_ns"] <= int(times.min()) and int(times.max()) <= b.meta["stop_ns"]
    assert np.all(np.diff(times.astype(np.int64)) >= 0)
