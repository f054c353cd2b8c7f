"""Validation of the device models against known values (the issue's acceptance figures)
and the seed papers' mechanisms, on synthetic streams. All results are predictions."""

from __future__ import annotations

import math

import pytest
from scipy.special import lambertw

from fslab.simulate import simulate_synthetic

GIB = 1 << 30


def greedy_wa_limit(over_provisioning: float) -> float:
    """Steady-state WA of greedy GC under uniform random writes, many-pages-per-block
    limit: WA = a / (a + W0(-a e^-a)), a = 1 + over-provisioning (Desnoyers; Hu et al.)."""
    a = 1.0 + over_provisioning
    return a / (a + lambertw(-a * math.exp(-a), 0).real)


def test_wa_formula_known_values() -> None:
    # Values of the closed form, computed independently (series of W0 near -1/e).
    assert greedy_wa_limit(0.07) == pytest.approx(7.82, abs=0.02)
    assert greedy_wa_limit(0.25) == pytest.approx(2.69, abs=0.01)


@pytest.mark.parametrize("op", [0.07, 0.12, 0.25])
def test_greedy_gc_write_amplification(op: float) -> None:
    # One plane, so greedy GC sees the whole device, as the formula assumes; 4 GiB written
    # 3x over timing-free to reach steady state, then 2x more through the timed model.
    r = simulate_synthetic(
        f"rw=randwrite,bs=4k,count={2 * GIB // 4096},span=4GiB,seed=7",
        "sata-mlc-ssd",
        {"capacity": "4GiB", "over_provisioning": op, "channels": 1, "dies_per_channel": 1,
         "planes_per_die": 1, "precondition": "random", "precondition_passes": 3},
        qd=32,
    )
    limit = greedy_wa_limit(op)
    wa = r["write_amplification"]
    # 256 units of 4 KiB per 1 MiB block: finitely many pages per block sit below the limit.
    print(f"OP {op:.2f}: WA {wa:.3f} vs limit {limit:.3f} ({(wa / limit - 1) * 100:+.1f}%), "
          f"256 pages per block")
    assert wa == pytest.approx(limit, rel=0.05)
    assert wa <= limit * 1.005
    assert r["gc_runs"] > 0 and r["erases"] == r["gc_runs"]


def test_hdd_random_read_qd1_iops() -> None:
    r = simulate_synthetic("rw=randread,bs=4k,count=3000,seed=3", "hdd-7200", qd=1)
    assert 74.0 <= r["iops"] <= 80.0


def test_ssd_sequential_and_random_read() -> None:
    over = {"capacity": "4GiB"}
    seq_r = simulate_synthetic("rw=read,bs=128k,count=20000", "sata-mlc-ssd", over, qd=32)
    seq_w = simulate_synthetic("rw=write,bs=128k,count=20000", "sata-mlc-ssd", over, qd=32)
    rand_r = simulate_synthetic("rw=randread,bs=4k,count=200000", "sata-mlc-ssd", over, qd=32)
    assert seq_r["mb_per_s"] == pytest.approx(540, rel=0.04)
    assert seq_w["mb_per_s"] == pytest.approx(520, rel=0.04)
    assert rand_r["iops"] == pytest.approx(100_000, rel=0.08)


def _raid5(spec: str, qd: int = 8) -> dict:
    return simulate_synthetic(spec, "raid5-8x-sata-mlc-ssd", {"member.capacity": "1GiB",
                                                            "member.over_provisioning": 0.25}, qd=qd)


def test_raid5_small_write_costs_four_member_ios() -> None:
    r = _raid5("rw=randwrite,bs=4k,count=2000,seed=5")
    c = r["counters"]
    assert c["member_reads"] == 2 * 2000 and c["member_writes"] == 2 * 2000
    assert c["read_modify_writes"] == 2000


def test_raid5_full_stripe_write_reads_nothing() -> None:
    stripe = 7 * 512 * 1024
    r = _raid5(f"rw=write,bs={stripe},count=100", qd=1)
    c = r["counters"]
    assert c["member_reads"] == 0
    assert c["member_writes"] == 8 * 100  # 7 data chunks + 1 parity chunk, nothing more
    assert c["full_stripe_writes"] == 100


def test_seed004_random_vs_sequential_on_raid5() -> None:
    """Seed 004 (ext4 vs f2fs on RAID5 of 8 SSDs, 512 KiB chunks): the same volume written as
    4 KiB random writes costs several times the time of 512 KiB sequential writes, because
    each small write is a read-modify-write (2 reads + 2 writes, latency of a read then a
    write) and dirties parity, while sequential 512 KiB writes fill whole chunks and,
    stripe after stripe, whole stripes, where parity comes from the new data alone."""
    volume = 256 << 20
    rand = _raid5(f"rw=randwrite,bs=4k,count={volume // 4096},span=7GiB,seed=9", qd=32)
    seq = _raid5(f"rw=write,bs=512k,count={volume // (512 << 10)},span=7GiB", qd=32)
    factor = rand["elapsed_ns"] / seq["elapsed_ns"]
    print(f"RAID5 8x sata-mlc-ssd: 4 KiB random {rand['mb_per_s']:.1f} MB/s, 512 KiB sequential "
          f"{seq['mb_per_s']:.1f} MB/s: sequential is {factor:.1f}x faster; member I/Os per host "
          f"write {(rand['counters']['member_reads'] + rand['counters']['member_writes']) / rand['requests']:.1f}"
          f" vs {(seq['counters']['member_reads'] + seq['counters']['member_writes']) / seq['requests']:.1f}")
    assert factor > 3
    assert rand["counters"]["member_reads"] > 0


def test_seed001_hdd_vs_ssd_sequential_vs_random() -> None:
    """Seed 001's formulas: HDD T = T_seek + T_rot + T_media + T_interface makes random
    4 KiB reads ~100x slower than sequential ones (seek and rotation dominate); SSD
    T = T_media + T_interface leaves a much smaller gap."""
    hdd_seq = simulate_synthetic("rw=read,bs=4k,count=20000", "hdd-7200", qd=1)
    hdd_rand = simulate_synthetic("rw=randread,bs=4k,count=2000", "hdd-7200", qd=1)
    ssd_seq = simulate_synthetic("rw=read,bs=4k,count=20000", "sata-mlc-ssd", qd=1)
    ssd_rand = simulate_synthetic("rw=randread,bs=4k,count=20000,span=16GiB", "sata-mlc-ssd", qd=1)
    hdd_ratio = hdd_seq["iops"] / hdd_rand["iops"]
    ssd_ratio = ssd_seq["iops"] / ssd_rand["iops"]
    print(f"seq/random 4 KiB read IOPS ratio: hdd-7200 {hdd_ratio:.0f}x, sata-mlc-ssd {ssd_ratio:.1f}x")
    assert hdd_ratio > 20
    assert ssd_ratio < 5
    assert hdd_rand["latency_ns"]["mean"] > 10_000_000  # seek (~8.6 ms) + rotation (4.17 ms)


def test_deterministic_for_a_seed() -> None:
    a = simulate_synthetic("rw=randrw,bs=4k,count=5000,seed=11", "hdd-7200", qd=4)
    b = simulate_synthetic("rw=randrw,bs=4k,count=5000,seed=11", "hdd-7200", qd=4)
    for key in ("elapsed_ns", "iops", "latency_ns", "counters"):
        assert a[key] == b[key]


def test_seed004_controller_cache_turns_sequential_into_full_stripes() -> None:
    """With a controller write-back cache, 512 KiB sequential writes merge into full
    stripes: no member reads, 8 member writes per 7 chunks."""
    volume = 256 << 20
    over = {"member.capacity": "1GiB", "member.over_provisioning": 0.25, "cache_bytes": "8MiB"}
    seq = simulate_synthetic(f"rw=write,bs=512k,count={volume // (512 << 10)},span=7GiB",
                             "raid5-8x-sata-mlc-ssd", over, qd=32)
    c = seq["counters"]
    assert c["member_reads"] == 0
    assert c["full_stripe_writes"] >= volume // (7 * (512 << 10)) - 1


def test_seed004_controller_cache_does_not_slow_random_small_writes() -> None:
    """A write-back cache must not make 4 KiB random writes slower than no cache (beyond
    a small factor). A destaged stripe writes each run of dirty units, and the parity under
    it, as member I/Os of that size; collapsing a chunk's dirty units into one span from
    the lowest to the highest (and parity over the span of all chunks) read and wrote most
    of a chunk per 4 KiB unit: ~3 MB/s here instead of ~150."""
    over = {"member.capacity": "1GiB", "member.over_provisioning": 0.25}
    stream = "rw=randwrite,bs=4k,count=20000,span=7GiB,seed=1"
    plain = simulate_synthetic(stream, "raid5-8x-sata-mlc-ssd", {**over, "cache_bytes": 0}, qd=32)
    cached = simulate_synthetic(stream, "raid5-8x-sata-mlc-ssd", {**over, "cache_bytes": "8MiB"}, qd=32)
    c = cached["counters"]
    print(f"RAID5 4 KiB random writes: {plain['mb_per_s']:.1f} MB/s without cache, "
          f"{cached['mb_per_s']:.1f} MB/s with 8 MiB; {c['member_writes']} member writes of "
          f"{c['member_write_bytes'] / c['member_writes']:.0f} bytes on average")
    assert cached["mb_per_s"] >= 0.8 * plain["mb_per_s"]
    assert c["member_write_bytes"] < 4200 * c["member_writes"]
    assert c["member_read_bytes"] < 4200 * c["member_reads"]
    # With as many stripes as cached units, few writes share a stripe: read-modify-write
    # per unit as without a cache, a little faster because the cache still holds the
    # last 8 MiB when the run ends (re-pinned from 179.8 when the members' planes were
    # kept balanced and host data crossed the array's link).
    assert cached["mb_per_s"] == pytest.approx(175.0, rel=0.02)
    assert plain["mb_per_s"] == pytest.approx(144.2, rel=0.02)  # was 147.3 (same re-pin)
