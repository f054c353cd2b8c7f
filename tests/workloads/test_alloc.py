"""The alloc workload (seed 003's timed operations) on a real ext4: every operation gives
count positive latencies, the harness floor is far below them, and parameters are checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab import _core
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, ParamError, RunContext
from fslab.workloads.alloc import OPS, latency_metrics


def _ctx(dev, mnt: Path, tmp_path: Path) -> RunContext:
    work = mnt / "fslab-run"
    work.mkdir()
    art = tmp_path / "artifacts"
    art.mkdir(exist_ok=True)
    return RunContext(workdir=work, device=dev, artifact_dir=art, timeout_s=None, memory=None)


def test_validate_names_the_parameter() -> None:
    w = WORKLOADS.get("alloc")
    params = w.validate({})
    assert params["count"] == 1000 and params["bs"] == 4096 and params["ops"] == list(OPS)
    assert w.validate({"ops": ["rand_write", "seq_read"]})["ops"] == ["seq_read", "rand_write"]
    for bad, key in (({"ops": ["seek"]}, "ops"), ({"count": 0}, "count"), ({"bs": "1000"}, "bs"),
                     ({"sync": "osync"}, "sync"), ({"blocks": 3}, "blocks")):
        with pytest.raises(ParamError) as info:
            w.validate(bad)
        assert info.value.key == key
    assert w.quick(params)["count"] == 100


def test_latency_figures_are_numpys_nearest_rank_and_mean() -> None:
    """The plain-Python figures equal numpy's ``inverted_cdf`` percentiles and mean, for every
    count up to 1,500 and at the counts where p/100 * n is a whole number or just above one."""
    import numpy as np

    rng = np.random.default_rng(7)
    for n in [*range(1, 1501), 10_000, 100_000]:
        values = rng.integers(1, 10**9, size=n).tolist()
        got = latency_metrics("op", values)
        p50, p99 = np.percentile(np.asarray(values, dtype=np.float64), [50, 99], method="inverted_cdf")
        assert (got["op_lat_p50_ns"], got["op_lat_p99_ns"]) == (float(p50), float(p99)), n
        assert got["op_lat_mean_ns"] == float(np.asarray(values, dtype=np.float64).mean()), n
        assert got["op_samples_count"] == n
    # rank ceil(p/100 * n): of 100 values p99 is the 99th, of 101 the 100th; of 10 p50 the 5th
    assert latency_metrics("op", list(range(1, 101)))["op_lat_p99_ns"] == 99
    assert latency_metrics("op", list(range(1, 102)))["op_lat_p99_ns"] == 100
    assert latency_metrics("op", list(range(10, 0, -1)))["op_lat_p50_ns"] == 5


@pytest.mark.parametrize("sync", ["fsync", "direct"])
def test_every_operation_has_count_positive_latencies(mounted_fs, tmp_path: Path, sync: str) -> None:
    w = WORKLOADS.get("alloc")
    params = w.validate({"count": 200, "sync": sync, "seed": 3})
    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        ctx = _ctx(dev, mnt, tmp_path)
        w.prepare(params, ctx)
        result = w.run(params, ctx)
    m = result.metrics
    for op in ("null", *OPS):
        assert m[f"{op}_samples_count"] == 200
        assert m[f"{op}_lat_p50_ns"] <= m[f"{op}_lat_p99_ns"]
        assert unit_of(f"{op}_lat_p99_ns") == "ns"
    for op in OPS:
        assert m[f"{op}_lat_mean_ns"] > 0 and m[f"{op}_lat_p50_ns"] > 0
        # the harness floor is well under every real operation
        assert m["null_lat_p50_ns"] * 5 < m[f"{op}_lat_p50_ns"], op
    if sync == "fsync":  # a block allocated, written and fsynced costs more than a read
        assert m["seq_write_lat_mean_ns"] > m["seq_read_lat_mean_ns"]
    assert m["seq_write_fragments_count"] >= 1 and m["rand_write_fragments_count"] >= 1


def test_core_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown alloc operation"):
        _core.alloc_run(str(tmp_path), "seek", 10)
    with pytest.raises(ValueError, match="sync"):
        _core.alloc_run(str(tmp_path), "null", 10, sync="osync")
    with pytest.raises(OSError):  # nothing laid out: the read file is missing
        _core.alloc_run(str(tmp_path / "absent"), "seq_read", 10)
