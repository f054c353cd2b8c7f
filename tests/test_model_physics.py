"""Physics of every shipped device model: no request pattern beats the model's own limits.

Every preset in ``fslab/models`` (read from the directory, so a model added later is
swept too) and RAID arrays built on the fly from them are driven by synthetic streams
over request sizes (512 B to 4 MiB), directions (read, write, mixed), sequential and
random offsets, queue depths 1, 4 and 32 and open loop, over a small span (4 MiB, which
the caches can hold) and a large one (100 GiB or the capacity). Each prediction must:

- take time: a positive elapsed time and a positive latency for every request;
- move the host's bytes no faster than the model's host link (``link_mb_per_s`` in its
  facts: the drive's interface, or a RAID controller's), cache answers included;
- account that link time among its mechanisms (a cache hit pays its transfer);
- move data that must reach or come from the media no faster than the media can: an
  HDD's fastest zone for every byte read (the cache starts empty) and every byte written
  beyond what its write cache can hold; an SSD's programs and flash channels for writes
  beyond its write buffer.

The cases are a fixed covering design (every size with every direction and pattern;
depth, loop and span in rotation), so each run checks the same cases."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from fslab import _core
from fslab.simulate import model_capacity, model_names, model_params

MIB = 1 << 20
GIB = 1 << 30
SIZES = [512, 4096, 64 << 10, MIB, 4 * MIB]
DIRECTIONS = {"read": ("read", "randread"), "write": ("write", "randwrite"), "mixed": ("rw", "randrw")}
# (queue depth, open loop): open loop issues every request at time 0, the hardest burst.
LOOPS = [(1, False), (4, False), (32, False), (1, True)]
SMALL_SPAN = 4 * MIB
LARGE_SPAN = 100 * GIB

# RAID arrays of shipped presets, built by name; their SSD members at 4 GiB (as the shipped
# RAID preset's) keep 8 flash translation layers cheap to build.
ON_THE_FLY = {
    "raid0-8x-sata-mlc-ssd": {"member.capacity": "4GiB"},
    "raid5-4x-hdd-7200": {},
}


def _models() -> list[str]:
    return [*model_names(), *ON_THE_FLY]


def _overrides(name: str) -> dict[str, Any]:
    """Start SSD flash empty (no preconditioning): the fastest write path, so the one most
    likely to beat a limit, and cheap to build. Preconditioned drives: see below."""
    params = model_params(name, ON_THE_FLY.get(name, {}))
    over = dict(ON_THE_FLY.get(name, {}))
    if params.get("kind") == "ssd":
        over["precondition"] = "none"
    if params.get("member.kind") == "ssd":
        over["member.precondition"] = "none"
    return over


def _count(bs: int) -> int:
    """Enough requests to overflow a 32 MiB write cache at large sizes, few at small ones."""
    return max(16, min(2000, (96 * MIB) // bs))


def _cases() -> Iterator[tuple[int, str, bool, tuple[int, bool], int]]:
    """(bs, direction, random, loop, span) for every size x direction x pattern, with the
    loop and the span in rotation, so every loop meets every direction and both spans."""
    combos = list(itertools.product(SIZES, DIRECTIONS, (False, True)))
    for i, (bs, direction, random) in enumerate(combos):
        yield bs, direction, random, LOOPS[i % len(LOOPS)], (SMALL_SPAN if (i // len(LOOPS)) % 2 else LARGE_SPAN)


def _stream_bytes(synth: dict[str, Any]) -> tuple[int, int, int]:
    """Bytes the stream reads and writes, and bytes of the distinct 512 B sectors it reads
    (each must come from the media once)."""
    _times, ops, sectors, sizes = _core.synthetic_requests(synth)
    codes = np.frombuffer(bytes(ops), dtype=np.uint8)
    reads = codes == ord("R")
    nbytes = np.asarray(sizes, dtype=np.int64)
    return int(nbytes[reads].sum()), int(nbytes[codes == ord("W")].sum()), _distinct(sectors, nbytes, reads)


def _distinct(sectors: Any, nbytes: Any, reads: Any) -> int:
    starts = np.asarray(sectors, dtype=np.int64)[reads]
    ends = starts + nbytes[reads] // 512
    if starts.size == 0:
        return 0
    order = np.argsort(starts)
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # A new run starts wherever a start lies beyond everything before it.
    new = np.concatenate(([True], starts[1:] >= reach[:-1]))
    run_starts = starts[new]
    run_ends = np.concatenate((reach[:-1][new[1:]], [reach[-1]]))
    return int((run_ends - run_starts).sum()) * 512


def _limit_ns(nbytes: float, mb_per_s: float) -> float:
    """Nanoseconds to move ``nbytes`` at ``mb_per_s`` decimal MB/s."""
    return nbytes * 1000.0 / mb_per_s


def check_physics(name: str, params: dict[str, Any], synth: dict[str, Any], qd: int,
                  open_loop: bool) -> tuple[list[str], dict[str, Any]]:
    """Every violation of the module's invariants by one prediction, in words, and the
    prediction."""
    r = _core.simulate_synthetic(params, synth, qd, open_loop, True)
    return violations(f"{name} {synth} {'open loop' if open_loop else f'qd {qd}'}", params["kind"], synth, r), r


def violations(what: str, kind: str, synth: dict[str, Any], r: dict[str, Any]) -> list[str]:
    """The invariants' violations by prediction ``r`` (with per-request latencies) of a
    ``kind`` model for stream ``synth``."""
    out: list[str] = []
    elapsed = r["elapsed_ns"]
    lat = np.asarray(r["latencies_ns"])
    if elapsed <= 0 or lat.size != synth["count"] or (lat <= 0).any():
        out.append(f"{what}: elapsed {elapsed} ns, {(lat <= 0).sum()} latencies <= 0")
        return out
    facts, mech = r["model_facts"], r["time_by_mechanism_ns"]
    read, written, distinct_read = _stream_bytes(synth)
    host = read + written
    slack = synth["count"] + 1  # link times are rounded to whole ns per request
    link = facts["link_mb_per_s"]
    if elapsed + slack < _limit_ns(host, link):
        out.append(f"{what}: {host / elapsed * 1e3:.1f} MB/s through a {link} MB/s host link")
    # The link's time is among the mechanisms (cache answers pay it too).
    link_parts = mech.get("transfer", 0) + mech.get("cache", 0) if kind == "hdd" else mech.get("host_link", 0)
    if link_parts + slack < _limit_ns(host, link):
        out.append(f"{what}: mechanisms hold {link_parts} ns of link time for {host} B at {link} MB/s")
    if sum(mech.values()) <= 0:
        out.append(f"{what}: no work accounted: {mech}")
    if kind == "hdd":
        must = distinct_read + max(0, written - int(facts["cache_bytes"]))
        media = facts["media_mb_per_s_max"]
        if elapsed < _limit_ns(must, media):
            out.append(f"{what}: {must} B to or from the platters in {elapsed} ns, above {media} MB/s")
    if kind == "ssd":
        must = max(0, written - int(facts["buffer_bytes"]))
        flash = min(facts["program_mb_per_s_max"], facts["channels_mb_per_s"])
        if elapsed < _limit_ns(must, flash):
            out.append(f"{what}: {must} B programmed in {elapsed} ns, above {flash:.0f} MB/s")
    return out


@pytest.mark.parametrize("name", _models())
def test_no_pattern_beats_the_models_limits(name: str) -> None:
    overrides = _overrides(name)
    params = model_params(name, overrides)
    capacity = model_capacity(params)
    violations: list[str] = []
    for bs, direction, random, (qd, open_loop), span in _cases():
        span = min(span, capacity) // bs * bs
        synth = {"rw": DIRECTIONS[direction][random], "bs": bs, "count": _count(bs), "span": span, "seed": 3}
        violations += check_physics(name, params, synth, qd, open_loop)[0]
    assert not violations, "\n".join(violations)


@pytest.mark.parametrize("name", [n for n in model_names() if model_params(n).get("kind") == "ssd"])
def test_preconditioned_ssd_reads_and_overwrites_keep_the_limits(name: str) -> None:
    """As shipped (flash full after preconditioning): reads come from flash, and random
    overwrites collect garbage; both stay within the link and flash limits."""
    params = model_params(name)
    capacity = model_capacity(params)
    violations: list[str] = []
    for rw, bs, qd in [("randread", 4096, 32), ("read", MIB, 32), ("randwrite", 4096, 32), ("randrw", 64 << 10, 4)]:
        synth = {"rw": rw, "bs": bs, "count": _count(bs), "span": capacity // bs * bs, "seed": 5}
        found, r = check_physics(name, params, synth, qd, False)
        violations += found
        if rw.endswith("read"):
            reads = r["counters"]["host_read_bytes"]
            channels = r["model_facts"]["channels_mb_per_s"]
            if r["elapsed_ns"] < _limit_ns(reads, channels):
                violations.append(f"{name} {synth}: {reads} B read from flash faster than {channels} MB/s")
    assert not violations, "\n".join(violations)


def test_the_hdd_write_cache_no_longer_beats_its_link() -> None:
    """The issue's example: 20 MiB of sequential 1 MiB writes all fit the 32 MiB write cache;
    they used to complete together (9,956 MB/s through a 550 MB/s link)."""
    params = model_params("hdd-7200")
    synth = {"rw": "write", "bs": MIB, "count": 20, "span": 100 * GIB, "seed": 1}
    for qd, open_loop in [(1, True), (32, False)]:
        r = _core.simulate_synthetic(params, synth, qd, open_loop, False)
        assert r["model_facts"]["write_cache_absorbed_fraction"] == 1.0
        # 20 MiB at 550 MB/s is 38.1 ms, plus one command overhead (0.2 ms) ahead of it.
        assert r["elapsed_ns"] == pytest.approx(20 * MIB * 1000 / 550 + 200_000, rel=1e-6)
        assert r["mb_per_s"] < 550


def test_the_checks_catch_violations() -> None:
    """The invariants can fail: the same prediction judged against a link, platters and
    cache ten times slower or smaller than the model's is reported on each count."""
    params = model_params("hdd-7200")
    synth = {"rw": "write", "bs": MIB, "count": 40, "span": 100 * GIB, "seed": 1}
    r = _core.simulate_synthetic(params, synth, 32, False, True)
    assert violations("hdd", "hdd", synth, r) == []
    facts = r["model_facts"]
    slower = {**facts, "link_mb_per_s": facts["link_mb_per_s"] / 10, "cache_bytes": facts["cache_bytes"] / 10,
              "media_mb_per_s_max": facts["media_mb_per_s_max"] / 10}
    found = violations("hdd", "hdd", synth, {**r, "model_facts": slower})
    assert len(found) == 3, found  # the link, the link time among the mechanisms, the platters
