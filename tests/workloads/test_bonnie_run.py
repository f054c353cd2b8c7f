"""Real Bonnie++ runs on ext4 on a loop device: short, checked field by field for
plausibility (a positive number in the right unit, or a +++++ note — never both, never
zero), in the workload's own cgroup or in one the executor made."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from fslab.cgroups import detect_version, memory_limit
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, RunContext, WorkloadResult
from fslab.workloads.bonnie import PHASES, probe_device

MIB = 1 << 20

pytestmark = [
    pytest.mark.skipif(shutil.which("bonnie++") is None, reason="needs bonnie++ (apt-get install bonnie++)"),
    pytest.mark.skipif(detect_version() is None, reason="needs a cgroup memory controller"),
]

bonnie = WORKLOADS.get("bonnie")
# Short: a 512 MiB file with a 256 MiB cache, 4 MiB per-char tests, 1024 files.
SHORT = {"size": "512MiB", "ram": "256MiB", "char_size": "4MiB", "files": 1, "seeks": 8192, "seed": 1}


def check_plausible(result: WorkloadResult) -> None:
    for phase in PHASES:
        rate = phase.rate_metric
        has_number = rate in result.metrics
        has_note = rate in result.notes
        assert has_number != has_note, f"{rate}: exactly one of a number or a note"
        if has_number:
            value = result.metrics[rate]
            assert value > 0, rate
            if phase.rate_suffix == "bytes_per_s":
                assert unit_of(rate) == "B/s"
                # per-char: a system call per byte, KB/s to a few MB/s; block: MB/s to tens of GB/s
                low, high = (1e3, 1e9) if phase.group == "char" else (1e6, 1e11)
                assert low < value < high, (rate, value)
                assert value % 1024 == 0  # Bonnie++ reports whole KiB/s
            else:
                assert unit_of(rate) == "ops/s" and 1 <= value < 1e8, (rate, value)
            cpu = result.metrics[phase.cpu_metric]
            assert unit_of(phase.cpu_metric) == "%" and 0 <= cpu <= 100 * 8, (phase.cpu_metric, cpu)
        else:
            assert result.notes[rate].startswith("too fast to measure (+++++): try "), result.notes[rate]
            assert phase.cpu_metric not in result.metrics
        latency = result.metrics[phase.latency_metric]  # timed even when the rate is +++++
        assert unit_of(phase.latency_metric) == "ns"
        assert 100 <= latency < 60e9, (phase.latency_metric, latency)  # 0.1 µs .. 60 s
    assert set(result.metrics) <= {m for p in PHASES for m in (p.rate_metric, p.cpu_metric, p.latency_metric)}


def test_short_run_on_ext4_in_its_own_cgroup(mounted_fs, tmp_path: Path) -> None:
    params = bonnie.validate(SHORT)
    with mounted_fs("ext4", size="2GiB") as (dev, mnt):
        art = tmp_path / "art"
        art.mkdir()
        result = bonnie.run(params, RunContext(workdir=mnt, device=dev, artifact_dir=art,
                                               timeout_s=600, memory=None))
        assert sorted(p.name for p in mnt.iterdir()) in ([], ["lost+found"])  # Bonnie++ cleaned up
    check_plausible(result)
    info = result.info
    assert info["bonnie_version"] == "2.00a" and info["csv_format"] == "1.98"
    limit = info["memory_limit"]
    assert limit["limit_bytes"] == 256 * MIB and limit["source"] == "bonnie ram"
    assert not Path(limit["cgroup"]).exists()  # removed after the run
    argv = " ".join(info["argv"])
    assert "-s 512 " in argv and "-r 256 " in argv and "-f4" in argv and "-n 1" in argv
    assert info["csv_header"]["seed"] == "1" and info["csv_header"]["file_size"] == "512M"
    assert info["sizes"]["auto"] == [] and info["sizes"]["probe"] is None
    # putc is CPU-bound (a call per byte): 4 MiB takes over a second even on a fast
    # machine. getc can finish under Bonnie++'s ~0.5 s floor on one; then its note
    # must name the option that would time it.
    assert "putc_bytes_per_s" in result.metrics
    if "getc_bytes_per_s" not in result.metrics:
        assert result.notes["getc_bytes_per_s"] == "too fast to measure (+++++): try char_size >= 16 MiB"
    assert result.tool_runtime_s > 0
    for name in ("bonnie.csv", "bonnie.txt", "bonnie-sizes.json", "bonnie-progress.txt", "bonnie-phases.json"):
        assert (art / name).stat().st_size > 0
    assert (art / "bonnie.csv").read_text().startswith("1.98,2.00a,fslab,")
    assert (art / "bonnie.txt").read_text().startswith("Version 2.00a")  # the text table, without the CSV
    assert "Writing intelligently...done" in (art / "bonnie-progress.txt").read_text()
    spans = info["phases"]["spans"]  # every test ran, in Bonnie++'s order, within the run's wall time
    assert [s["key"] for s in spans] == [p.key for p in PHASES]
    assert spans[-1]["end_ns"] - spans[0]["start_ns"] <= result.tool_runtime_s * 1e9


def test_executor_memory_limit_is_used_as_ram(mounted_fs, tmp_path: Path) -> None:
    params = bonnie.validate({**SHORT, "ram": "auto", "files": 0, "char_size": 0})
    with mounted_fs("ext4", size="2GiB") as (dev, mnt), memory_limit(200 * MIB) as cg:
        result = bonnie.run(params, RunContext(workdir=mnt, device=dev, artifact_dir=tmp_path,
                                               timeout_s=600, memory=cg))
    assert result.info["memory_limit"]["source"] == "workload memory"
    assert result.info["memory_limit"]["limit_bytes"] == 200 * MIB
    assert "-r 200 " in " ".join(result.info["argv"])
    for key in ("putc", "getc", "seq_create", "random_delete"):
        assert result.notes[f"{key}_{'bytes_per_s' if key in ('putc', 'getc') else 'per_s'}"].startswith("not run")


def test_probe_is_quick_and_leaves_nothing(mounted_fs) -> None:
    with mounted_fs("ext4", size="2GiB") as (_dev, mnt):
        t0 = time.monotonic()
        probe = probe_device(mnt)
        elapsed = time.monotonic() - t0
        leftovers = [p.name for p in mnt.iterdir() if p.name != "lost+found"]
    assert elapsed < 5, elapsed
    assert leftovers == []
    for key in ("write_bytes_per_s", "read_bytes_per_s", "char_write_bytes_per_s",
                "char_read_bytes_per_s"):
        assert 1e3 < probe[key] < 1e11, (key, probe[key])
    for key in ("random_8k_reads_per_s", "create_per_s", "stat_per_s", "delete_per_s"):
        assert 10 < probe[key] < 1e8, (key, probe[key])
