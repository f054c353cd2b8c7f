"""sysbench fileio: the parser on real sysbench 1.0.20 output (tests/data/sysbench/README.md)
— rates of what each mode does, MiB/s as 2^20 B/s, percentiles from the histogram —
parameters, and a real prepare + run on ext4 whose numbers are what sysbench printed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, ParamError, RunContext
from fslab.workloads.sysbench import parse_histogram, parse_run, percentile_ms

DATA = Path(__file__).parents[1] / "data" / "sysbench"
W = WORKLOADS.get("sysbench")


def printed(text: str, label: str) -> float:
    return float(re.search(rf"^\s*{re.escape(label)}:\s+([0-9.]+)", text, re.M).group(1))  # type: ignore[union-attr]


def test_random_read_write_with_fsync_every_10() -> None:
    text = (DATA / "rndrw.txt").read_text()
    m = parse_run(text, "rndrw", True)
    assert m["reads_per_s"] == printed(text, "reads/s") and m["writes_per_s"] == printed(text, "writes/s")
    assert m["fsyncs_per_s"] == printed(text, "fsyncs/s")
    assert m["read_bytes_per_s"] == printed(text, "read, MiB/s") * 2**20
    assert m["write_bytes_per_s"] == printed(text, "written, MiB/s") * 2**20
    assert m["lat_mean_ns"] == pytest.approx(printed(text, "sum") / printed(text, "total number of events") * 1e6)
    assert m["lat_max_ns"] == printed(text, "max") * 1e6
    assert m["lat_p50_ns"] <= m["lat_p95_ns"] <= m["lat_p99_ns"] <= m["lat_max_ns"]
    # sysbench's own 95th percentile (--percentile=95) comes from the same histogram (2 decimals)
    assert m["lat_p95_ns"] / 1e6 == pytest.approx(printed(text, "95th percentile"), abs=0.005)
    for name in m:
        assert unit_of(name) in {"reads/s", "writes/s", "fsyncs/s", "B/s", "ns"}, name


def test_a_mode_reports_only_what_it_does() -> None:
    seqrd = parse_run((DATA / "seqrd.txt").read_text(), "seqrd", True)
    assert "reads_per_s" in seqrd and not {"writes_per_s", "fsyncs_per_s", "write_bytes_per_s"} & set(seqrd)
    seqwr = parse_run((DATA / "seqwr.txt").read_text(), "seqwr", False)  # fsync_freq = 0
    assert "writes_per_s" in seqwr and "reads_per_s" not in seqwr
    assert seqwr["fsyncs_per_s"] == printed((DATA / "seqwr.txt").read_text(), "fsyncs/s")  # the end-of-test fsyncs


def test_a_rate_the_mode_should_have_at_zero_fails_never_stores_zero() -> None:
    # seqrd's output says writes/s and fsyncs/s 0.00: read as a write mode, nothing was written
    with pytest.raises(FslabError, match="writes/s = 0"):
        parse_run((DATA / "seqrd.txt").read_text(), "rndwr", False)
    text = (DATA / "seqwr.txt").read_text()
    no_fsync = re.sub(r"fsyncs/s:\s+[0-9.]+", "fsyncs/s:                     0.00", text)
    assert "fsyncs_per_s" not in parse_run(no_fsync, "seqwr", False)  # only end fsyncs: none, no zero
    with pytest.raises(FslabError, match="fsyncs/s = 0"):
        parse_run(no_fsync, "seqwr", True)  # a periodic fsync that never happened


def test_histogram_percentiles() -> None:
    buckets = parse_histogram((DATA / "seqwr.txt").read_text())
    total = sum(c for _, c in buckets)
    assert total == printed((DATA / "seqwr.txt").read_text(), "total number of events")
    assert percentile_ms([(1.0, 50), (2.0, 45), (9.0, 5)], 95) == 2.0
    assert percentile_ms([(1.0, 50), (2.0, 45), (9.0, 5)], 96) == 9.0


@pytest.mark.parametrize("cut", ["General statistics", "Latency histogram"])
def test_truncated_output_fails_with_its_last_lines(cut: str) -> None:
    text = (DATA / "rndrw.txt").read_text()
    with pytest.raises(FslabError) as info:
        parse_run(text.split(cut)[0], "rndrw", True)
    assert "sysbench printed no" in str(info.value)


def test_params_and_quick() -> None:
    p = W.validate({"mode": "rndwr", "file_total_size": "4GiB", "fsync_freq": 1, "runtime": 60})
    q = W.quick(p)
    assert q["file_total_size"] == 512 << 20 and q["runtime"] == 3
    assert (q["mode"], q["fsync_freq"], q["block_size"], q["files"]) == ("rndwr", 1, 16384, 128)
    assert W.data_bytes(q) == 512 << 20  # the plan scales the memory limit by this
    for bad, key in (({"mode": "randrw"}, "mode"), ({"fsync_freq": -1}, "fsync_freq"),
                     ({"extra_flags": "odirect"}, "extra_flags"), ({"block_size": "1GiB"}, "block_size"),
                     ({"fsync_mode": "sync"}, "fsync_mode"), ({"runtime": 0.5}, "runtime")):
        with pytest.raises(ParamError) as info:
            W.validate(bad)
        assert info.value.key == key


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench (apt-get install sysbench)")
def test_prepare_then_run_on_ext4(mounted_fs, tmp_path: Path) -> None:
    params = W.validate({"mode": "rndwr", "file_total_size": "16MiB", "files": 2, "block_size": "4k",
                         "fsync_freq": 4, "runtime": 1})
    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        ctx = RunContext(workdir=mnt, device=dev, artifact_dir=tmp_path, timeout_s=60, memory=None)
        assert W.prepare(params, ctx)
        laid_out = sorted(p.name for p in mnt.glob("test_file.*"))
        before = dev.read_stat()
        result = W.run(params, ctx)
        after = dev.read_stat()
    assert laid_out == ["test_file.0", "test_file.1"]
    assert result.metrics == parse_run((tmp_path / "sysbench.out").read_text(), "rndwr", True)
    m = result.metrics
    # every 4 requests sysbench fsyncs each of its 2 files: half as many fsyncs as writes
    assert m["fsyncs_per_s"] == pytest.approx(m["writes_per_s"] / 4 * 2, rel=0.05)
    assert m["write_bytes_per_s"] == pytest.approx(m["writes_per_s"] * 4096, rel=0.01)
    assert after["flush_ios"] > before["flush_ios"]
    assert "--file-fsync-freq=4" in result.info["argv"]
