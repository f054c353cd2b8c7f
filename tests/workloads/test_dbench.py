"""dbench: the parser on real dbench 4.00 output (tests/data/dbench/README.md), its units
(MB = 10^6 bytes, latencies in ms), parameters, and real runs on ext4: one that measures,
one whose client crashes, one that hangs past its time limit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fslab.errors import CommandFailed, FslabError
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, ParamError, RunContext
from fslab.workloads.dbench import parse_output

DATA = Path(__file__).parents[1] / "data" / "dbench"
W = WORKLOADS.get("dbench")


def test_parse_throughput_and_the_operation_table() -> None:
    text = (DATA / "2clients.txt").read_text()
    metrics, notes, table = parse_output(text)
    summary = next(line for line in text.splitlines() if line.startswith("Throughput "))
    mb_s = float(summary.split()[1])
    max_ms = float(summary.rsplit("max_latency=", 1)[1].split()[0])
    assert metrics["throughput_bytes_per_s"] == pytest.approx(mb_s * 1e6)  # dbench: 1.0e-6 * bytes / s
    assert metrics["max_latency_ns"] == pytest.approx(max_ms * 1e6)
    rows = {ln.split()[0]: ln.split()[1:] for ln in text.split("-" * 40)[1].strip().splitlines()[:-1]
            if len(ln.split()) == 4}
    assert set(table) == set(rows) and "NTCreateX" in table and "Flush" in table
    for name, (count, avg, peak) in rows.items():
        assert table[name]["count"] == int(count)
        if float(avg) > 0:
            assert metrics[f"{name.lower()}_lat_mean_ns"] == pytest.approx(float(avg) * 1e6)
        else:
            assert f"{name.lower()}_lat_mean_ns" in notes
        assert metrics[f"{name.lower()}_lat_max_ns"] == pytest.approx(float(peak) * 1e6)
    assert unit_of("throughput_bytes_per_s") == "B/s" and unit_of("flush_lat_max_ns") == "ns"


def test_a_zero_millisecond_latency_is_a_note_never_a_zero() -> None:
    text = (DATA / "2clients.txt").read_text()
    close = next(line for line in text.splitlines() if line.split()[:1] == ["Close"])
    zeroed = text.replace(close, f" {'Close':<14}{close.split()[1]:>6}     0.000     0.000")
    metrics, notes, _ = parse_output(zeroed)
    assert "close_lat_mean_ns" not in metrics and "resolution" in notes["close_lat_mean_ns"]


def test_a_crashed_client_output_is_unreadable_with_its_last_lines() -> None:
    text = (DATA / "missing-dir-crash.txt").read_text()
    with pytest.raises(FslabError) as info:
        parse_output(text)
    assert "Throughput" in str(info.value) and "Child failed with status 1" in str(info.value)


def test_params_and_quick() -> None:
    p = W.validate({"clients": 8, "runtime": "2m", "fsync": 1})
    assert p["runtime"] == 120 and W.quick(p) == {**p, "runtime": 5}
    assert W.argv(p, RunContext(workdir=Path("/w"), device=None, artifact_dir=Path("/a"),  # type: ignore[arg-type]
                                timeout_s=None, memory=None))[-2:] == ["-F", "8"]
    for bad, key in (({"clients": 0}, "clients"), ({"runtime": 1.5}, "runtime"), ({"sync": 2}, "sync"),
                     ({"loadfile": "x"}, "loadfile")):
        with pytest.raises(ParamError) as info:
            W.validate(bad)
        assert info.value.key == key


needs_dbench = pytest.mark.skipif(shutil.which("dbench") is None, reason="needs dbench (apt-get install dbench)")


@needs_dbench
def test_real_run_on_ext4(mounted_fs, tmp_path: Path) -> None:
    params = W.validate({"clients": 2, "runtime": 2})
    with mounted_fs("ext4", size="512MiB") as (dev, mnt):
        before = dev.read_stat()
        result = W.run(params, RunContext(workdir=mnt, device=dev, artifact_dir=tmp_path, timeout_s=60, memory=None))
        after = dev.read_stat()
    again, _, table = parse_output((tmp_path / "dbench.out").read_text())
    assert result.metrics == again and result.info["operations"] == table
    assert 1e5 < result.metrics["throughput_bytes_per_s"] < 1e11
    assert after["write_sectors"] > before["write_sectors"]  # it wrote to the device under test
    assert "2 clients" in (tmp_path / "dbench.out").read_text()


@needs_dbench
def test_a_client_that_fails_fails_the_run_with_dbench_lines(tmp_path: Path) -> None:
    params = W.validate({"clients": 1, "runtime": 2})
    with pytest.raises(CommandFailed) as info:
        W.run(params, RunContext(workdir=tmp_path / "missing", device=None,  # type: ignore[arg-type]
                                 artifact_dir=tmp_path, timeout_s=30, memory=None))
    assert info.value.returncode == 1 and "Child failed with status 1" in str(info.value)


@needs_dbench
def test_a_hang_is_killed_at_the_time_limit(tmp_path: Path) -> None:
    params = W.validate({"clients": 1, "runtime": 60})
    with pytest.raises(CommandFailed) as info:
        W.run(params, RunContext(workdir=tmp_path, device=None,  # type: ignore[arg-type]
                                 artifact_dir=tmp_path, timeout_s=1.5, memory=None))
    assert info.value.timed_out and "dbench version 4.00" in str(info.value)
