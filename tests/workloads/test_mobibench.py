"""MobiBench-style random buffered writes: sync modes map to fio, and a real run on ext4
issues the flushes its mode asks for."""

import pytest

from fslab.workloads import ParamError, RunContext
from fslab.workloads.mobibench import MobibenchWorkload

W = MobibenchWorkload()


@pytest.mark.parametrize("mode,expected", [
    ("none", {}), ("fsync", {"fsync": 8}), ("fdatasync", {"fdatasync": 8}),
    ("osync", {"sync": 1}), ("direct", {"direct": 1}),
])
def test_sync_modes(mode, expected):
    job = W.fio_params(W.validate({"sync": mode, "sync_every": 8, "file_size": "64M"}))
    assert job["rw"] == "randwrite" and job["bs"] == 4096 and job["size"] == 64 << 20
    for key in ("fsync", "fdatasync", "sync", "direct"):
        assert job.get(key) == expected.get(key)


def test_errors_name_the_parameter():
    with pytest.raises(ParamError) as info:
        W.validate({"runtime": "soon"})
    assert info.value.key == "runtime"
    with pytest.raises(ParamError) as info:
        W.validate({"sync": "sometimes"})
    assert info.value.key == "sync" and "fdatasync" in str(info.value)


def test_fsync_every_4_writes_on_ext4(mounted_fs, tmp_path):
    params = W.validate({"sync": "fsync", "sync_every": 4, "file_size": "32M", "io_size": "4M"})
    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        ctx = RunContext(workdir=mnt, device=dev, artifact_dir=tmp_path, timeout_s=120,
                         memory=None)
        W.prepare(params, ctx)
        before = dev.read_stat()
        result = W.run(params, ctx)
        after = dev.read_stat()
    writes = 4 << 20 >> 12  # 1024 writes of 4 KiB
    assert result.metrics["write_io_bytes"] == 4 << 20
    assert result.metrics["write_iops"] > 0
    assert result.metrics["sync_lat_mean_ns"] > 0
    flushes = after["flush_ios"] - before["flush_ios"]
    assert flushes >= 0.9 * writes / 4  # ext4 flushes the device cache on every fsync
    # The 32 MiB layout happened in prepare(): the measured phase wrote far less.
    assert (after["write_sectors"] - before["write_sectors"]) * 512 < 24 << 20
