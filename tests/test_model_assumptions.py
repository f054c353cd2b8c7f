"""Predictions say what they assume: the disk's write cache and whether a trace fit in it,
and the over-provisioning an SSD actually simulated. Golden values pin the core."""

import subprocess
import sys

import pytest

from fslab.predictions import assumptions, cache_warning
from fslab.simulate import simulate_synthetic

SHORT_RANDOM_WRITES = "rw=randwrite,bs=4k,count=2000,span=1GiB,seed=1"


def test_hdd_trace_that_fits_in_the_write_cache_is_flagged() -> None:
    cached = simulate_synthetic(SHORT_RANDOM_WRITES, "hdd-7200")
    facts = cached["model_facts"]
    # 8 MB of writes fit in the 32 MiB cache: every write is acknowledged from it, so the
    # "disk" does 4,820 IOPS at 207 µs each (pinned: command overhead + link time).
    assert facts == {"write_cache": 1.0, "cache_bytes": 32 << 20, "write_cache_absorbed_fraction": 1.0,
                     "link_mb_per_s": 550.0, "media_mb_per_s_max": 190.0}
    assert cached["latency_ns"]["p50"] == 207_447 == cached["latency_ns"]["p99"]
    assert cached["iops"] == pytest.approx(4820.5, abs=0.1)
    warning = cache_warning("hdd-7200", facts["write_cache_absorbed_fraction"], facts)
    assert warning is not None and "measure the cache, not the disk" in warning and "32 MiB" in warning
    assert assumptions(facts) == "write cache on, 32 MiB"
    # The same trace with the cache off: the disk itself, ~177 IOPS at ~5.7 ms (pinned).
    disk = simulate_synthetic(SHORT_RANDOM_WRITES, "hdd-7200", {"write_cache": 0})
    assert disk["model_facts"]["write_cache_absorbed_fraction"] == 0.0
    assert disk["iops"] == pytest.approx(176.88, abs=0.01)
    assert disk["latency_ns"]["p50"] == 5_670_548
    assert cache_warning("hdd-7200", 0.0) is None
    assert assumptions(disk["model_facts"]) == "write cache off"  # no size for a cache that is off
    assert "acknowledged 99.6% of" in str(cache_warning("hdd-7200", 0.996))  # not rounded to 100%


def test_simulate_command_prints_assumptions_and_the_warning() -> None:
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "simulate", "--synthetic", SHORT_RANDOM_WRITES,
                           "--model", "hdd-7200"], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "write cache assumed" in done.stdout and "on, 32 MiB" in done.stdout
    assert "WARNING hdd-7200: the write cache (32 MiB) acknowledged 100.0%" in done.stdout
    ssd = subprocess.run([sys.executable, "-m", "fslab.cli", "simulate", "--synthetic",
                          "rw=randwrite,bs=4k,count=20000,span=4GiB,seed=1", "--model", "sata-mlc-ssd",
                          "--set", "capacity=4GiB"], capture_output=True, text=True, timeout=120,
                         env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert ssd.returncode == 0, ssd.stderr
    row = next(line for line in ssd.stdout.splitlines() if "over-provisioning simulated" in line)
    assert row.split("│")[-2].strip() == "0.0781"  # 0.07 asked
    assert "write amplification, steady state" in ssd.stdout and "WARNING" not in ssd.stdout
