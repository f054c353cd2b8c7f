"""Live capture on real loop devices: the trace's completed requests and sectors per
direction equal the kernel's /sys/block/DEV/stat deltas (ext4, xfs, btrfs), and the
tracefs instance is removed after success, errors and Ctrl-C."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fslab.analysis.traces import analyze
from fslab.commands import kill_tree

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
        with TraceCapture(dev.dev_t, method=method, counters=dev.read_stat) as cap:
            _workload(mnt)
        assert _mine(tracing) == []
    before, after = cap.counters_before, cap.counters_after
    trace = cap.trace
    assert trace is not None and trace.meta["capture_method"] == method
    assert trace.meta["window"]["counters_exact"] is True
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


def test_counts_stay_equal_with_io_going_on_as_the_trace_starts_and_stops(tracing: Path, loop_device) -> None:
    """Background writes every few milliseconds while six short captures start and stop:
    each is cut at idle moments, so its counts equal the counters' difference every time
    (reading the counters just after turning tracing on or off let a completion fall into
    one count and not the other)."""
    import time

    from fslab.trace.capture import TraceCapture

    with loop_device("64MiB") as dev:
        # its own session, killed as fslab kills a tool: fio's job process leaves fio's session,
        # and a kill of fio alone left it writing (and holding the loop device) for the rest of its 30 s
        fio = subprocess.Popen(["fio", "--name=bg", f"--filename={dev.path}", "--rw=randwrite", "--bs=4k",
                                "--direct=1", "--rate_iops=300", "--size=32M", "--time_based", "--runtime=30",
                                "--output=/dev/null"], start_new_session=True)
        try:
            started = dev.read_stat()["write_ios"]
            deadline = time.monotonic() + 30  # fio starts slowly on a busy machine
            while dev.read_stat()["write_ios"] == started and time.monotonic() < deadline:
                time.sleep(0.05)
            traced = 0
            for _ in range(6):
                with TraceCapture(dev.dev_t, counters=dev.read_stat) as cap:
                    time.sleep(0.05)
                window = cap.trace.meta["window"]
                assert window["counters_exact"] is True
                assert window["start_ns"] < window["stop_ns"]
                r = analyze(cap.trace)
                before, after = cap.counters_before, cap.counters_after
                assert r["requests"]["write"] == after["write_ios"] - before["write_ios"]
                assert r["sectors"]["write"] == after["write_sectors"] - before["write_sectors"]
                traced += r["requests"]["write"]
                times = cap.trace.columns["time_ns"]
                assert len(times) == 0 or window["start_ns"] < int(times[0]) and int(times[-1]) < window["stop_ns"]
            assert traced > 0  # the background writes did fall inside the windows
        finally:
            kill_tree(fio)


def test_a_device_never_idle_is_cut_where_it_is_and_says_so() -> None:
    import time

    from fslab.trace.capture import idle_counters

    busy = iter(range(10**6))
    before = time.monotonic_ns()
    counters, moment, idle = idle_counters(lambda: {"write_ios": next(busy), "in_flight": 1}, wait_s=0.05)
    assert not idle and counters["in_flight"] == 1 and moment > before + 50_000_000
    reads = iter([{"write_ios": 5, "in_flight": 2}, {"write_ios": 6, "in_flight": 0},
                  {"write_ios": 7, "in_flight": 0}, {"write_ios": 7, "in_flight": 0},
                  {"write_ios": 7, "in_flight": 0}])  # idle twice alike only at the last two
    counters, moment, idle = idle_counters(lambda: next(reads), gap_s=0.001, wait_s=5)
    assert idle and counters == {"write_ios": 7, "in_flight": 0}


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


def test_the_tsc_clock_and_the_reader_filter_hold_what_the_mono_kernel_filtered_capture_does(
        tracing: Path, loop_device) -> None:
    """The default capture (the TSC clock where the kernel's clocksource is the TSC, its
    stamps mapped onto CLOCK_MONOTONIC), one with no kernel filter (the reader keeps the
    device's events) and the mono, kernel-filtered capture, on at once over the same I/O:
    the same events, at the same times within a microsecond or so; another device's I/O
    meanwhile reaches only the unfiltered one's reader, which leaves it out and counts it."""
    from collections import Counter

    import numpy as np

    from fslab.trace.capture import CLOCKSOURCE, TraceCapture

    with loop_device("64MiB") as mine, loop_device("64MiB") as other:
        with TraceCapture(mine.dev_t, clock="mono") as old, TraceCapture(mine.dev_t) as default, \
                TraceCapture(mine.dev_t, kernel_filter=False) as unfiltered:
            procs = [_fio_on(mine.path, 1), _fio_on(other.path, 1)]
            assert [p.wait() for p in procs] == [0, 0]
    a, b, c = old.trace, default.trace, unfiltered.trace
    assert a is not None and b is not None and c is not None
    tsc = CLOCKSOURCE.read_text().strip() == "tsc"
    assert (a.meta["trace_clock"], a.meta["kernel_filter"]) == ("mono", True)
    assert (b.meta["trace_clock"], b.meta["kernel_filter"]) == ("x86-tsc" if tsc else "mono", True)
    assert c.meta["kernel_filter"] is False
    assert ("tsc_to_mono" in b.meta) == tsc
    for t in (a, b, c):
        assert t.lost_events == 0 and t.complete
        assert set(np.unique(t.columns["dev"]).tolist()) == {mine.dev_t}
    assert a.meta["reader"]["foreign"] == b.meta["reader"]["foreign"] == 0
    assert c.meta["reader"]["foreign"] > 1000  # the other device's events, left out
    keys = ("event", "dev", "sector", "nr_sector", "op", "flags", "pid")

    def rows(t):  # (key..., time) in key order, then time: twins line up
        cols = [t.columns[k].tolist() for k in keys]
        return sorted(zip(*cols, t.columns["time_ns"].tolist()))

    ra = rows(a)
    assert len(ra) > 2000
    for t in (b, c):
        rt = rows(t)
        assert Counter(r[:-1] for r in ra) == Counter(r[:-1] for r in rt)
        gaps = np.abs(np.array([x[-1] for x in ra], dtype=np.int64) - np.array([x[-1] for x in rt], dtype=np.int64))
        # The instances stamp the same tracepoint call, one after the other (median ~240 ns here).
        assert np.median(gaps) < 5_000 and np.percentile(gaps, 99) < 50_000, (np.median(gaps), gaps.max())
        times = t.columns["time_ns"]
        assert t.meta["start_ns"] <= int(times.min()) and int(times.max()) <= t.meta["stop_ns"]
        assert np.all(np.diff(times.astype(np.int64)) >= 0)


def test_settings_a_capture_cannot_honour_are_refused_before_tracefs_is_touched(tracing: Path) -> None:
    from fslab.errors import FslabError
    from fslab.trace.capture import TraceCapture

    for kwargs, says in (({"clock": "bogus"}, "trace clock 'bogus'"),
                         ({"kernel_filter": "no"}, "kernel_filter 'no'"),
                         ({"method": "text", "clock": "x86-tsc"}, "the text reader needs the mono clock"),
                         ({"method": "text", "kernel_filter": False}, "the text reader needs the mono clock"),
                         ({"event_devs": {"block_rq_issue": []}}, "event_devs names no device for block_rq_issue")):
        with pytest.raises(FslabError, match=re.escape(says)):
            TraceCapture(7 << 20, **kwargs)
    assert _mine(tracing) == []


def test_sigterm_to_trace_capture_removes_its_instance_and_stops_the_command(tracing: Path, loop_device,
                                                                            tmp_path: Path) -> None:
    """`fslab trace capture` unwinds on SIGTERM as on Ctrl-C: the tracefs instance is
    removed and the traced command is stopped with everything it started."""
    import signal
    import sys
    import time

    with loop_device("64MiB") as dev:
        marker = tmp_path / "started"
        cmd = [sys.executable, "-m", "fslab.cli", "trace", "capture", "-d", dev.path, "-o", str(tmp_path / "t.parquet"),
               "--", "sh", "-c", f"touch {marker}; sleep 60 & wait"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.05)
            instances = [p.name for p in (tracing / "instances").iterdir() if p.name.startswith(f"fslab-{proc.pid}-")]
            assert len(instances) == 1
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode != 0 and "Traceback" not in stderr, stderr
        assert not (tracing / "instances" / instances[0]).exists()
        sleepers = subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True, text=True).stdout
        assert sleepers.strip() == "", sleepers


def test_trace_capture_refuses_a_device_without_a_medium(tracing: Path, tmp_path: Path) -> None:
    """An unattached loop device has size 0: no request can reach it, so a capture would
    end with 0 events as if the command had done no I/O. It is refused, naming the fix."""
    import fcntl
    import sys

    loop_ctl_add, loop_ctl_remove = 0x4C80, 0x4C81
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        # A loop device of its own, far above the numbers other tests' `losetup -f` takes.
        for n in range(900 + os.getpid() % 50, 1000):
            try:
                fcntl.ioctl(ctl, loop_ctl_add, n)
                break
            except OSError:
                continue
        else:
            pytest.fail("no free loop device number to add")
        try:
            dev = Path(f"/dev/loop{n}")
            assert dev.is_block_device() and Path(f"/sys/block/loop{n}/size").read_text().strip() == "0"
            done = subprocess.run([sys.executable, "-m", "fslab.cli", "trace", "capture", "-d", str(dev),
                                   "-o", str(tmp_path / "t.parquet"), "--", "true"],
                                  capture_output=True, text=True, timeout=60)
        finally:
            fcntl.ioctl(ctl, loop_ctl_remove, n)
    finally:
        os.close(ctl)
    assert done.returncode != 0, done.stdout
    assert f"/dev/loop{n} has no medium (size 0)" in done.stderr and "losetup" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "t.parquet").exists()
    assert _mine(tracing) == []
