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
