"""The native core's outputs on fixed inputs, pinned: trace analysis of synthetic traces
that exercise every rule (duplicate outstanding keys, FUA twins, empty preflushes, flushes,
discards, sizes above the small-size array, completion-only traces, several devices and
tasks) and device-model replays (every figure: elapsed, latencies, counters, facts, time by
mechanism). Speed work on the core must leave all of them exactly as they are.

The expected values in tests/data/core_outputs_pinned.json were recorded from the build
before the speed work (`python tests/test_core_outputs_pinned.py --record` rewrites them:
only when a figure is meant to change, with the reason in the commit)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fslab.analysis.traces import analyze
from fslab.trace.formats import (
    EV_COMPLETE,
    EV_INSERT,
    EV_ISSUE,
    NO_COMM,
    OP_DISCARD,
    OP_FLUSH,
    OP_READ,
    OP_WRITE,
    Trace,
)

PINNED = Path(__file__).parent / "data" / "core_outputs_pinned.json"


def _mixed_trace(n_requests: int, seed: int, with_issues: bool = True) -> Trace:
    """Requests of every kind, completed out of order, with the kernel's FUA twins and
    empty preflushes; some keys issued again before their first completion."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[int, int, int, int, int, int, int, int]] = []  # time, event, dev, sector, nr, op, flags, comm
    t = 0
    for _ in range(n_requests):
        t += int(rng.integers(1, 5000))
        op = int(rng.choice([OP_READ, OP_WRITE, OP_FLUSH, OP_DISCARD], p=[0.45, 0.45, 0.05, 0.05]))
        dev = int(rng.choice([8 << 20, (8 << 20) | 16]))
        if rng.random() < 0.1:
            sector = 4096 * 8  # a hot sector: the same key outstanding more than once
        elif rng.random() < 0.3 and rows:
            sector = rows[-1][3] + rows[-1][4]  # continues the previous request
        else:
            sector = int(rng.integers(0, 1 << 30)) * 8
        nr = 0 if op == OP_FLUSH else int(rng.choice([8, 16, 256, 2048, 4096, 8192 + 8]))
        flags = int(rng.integers(0, 64)) & 0b11101
        comm = int(rng.choice([0, 1, 2, NO_COMM]))
        lat = int(rng.integers(1000, 3_000_000))
        if with_issues:
            rows.append((t, EV_ISSUE, dev, sector, nr, op, flags, comm))
        if rng.random() < 0.02:
            rows.append((t + 1, EV_INSERT, dev, sector, nr, op, flags, comm))
        if rng.random() < 0.97:  # some never complete within the trace
            rows.append((t + lat, EV_COMPLETE, dev, sector, nr, op, flags, NO_COMM))
            if op == OP_WRITE and rng.random() < 0.1:  # FUA: the flush machinery's twin
                rows.append((t + lat + 500, EV_COMPLETE, dev, sector, 0, OP_WRITE, flags, NO_COMM))
        if op == OP_WRITE and rng.random() < 0.02:  # an empty preflush write
            rows.append((t + 7, EV_COMPLETE, dev, int(rng.integers(0, 1 << 20)) * 8, 0, OP_WRITE, flags | 8, NO_COMM))
    rows.sort(key=lambda r: r[0])
    a = np.array(rows, dtype=np.int64)
    cols = {
        "time_ns": a[:, 0].astype(np.uint64), "event": a[:, 1].astype(np.uint8), "dev": a[:, 2].astype(np.uint32),
        "sector": a[:, 3].astype(np.uint64), "nr_sector": a[:, 4].astype(np.uint32), "op": a[:, 5].astype(np.uint8),
        "flags": a[:, 6].astype(np.uint8), "pid": np.full(len(a), 7, np.int32), "comm": a[:, 7].astype(np.uint16),
    }
    return Trace(cols, ["fio", "jbd2/sda1-8", "kworker/u8:2"], {"lost_events": 0, "complete": True})


def _random_writes(n_requests: int, seed: int) -> Trace:
    """The benchmark's shape: 4 KiB random writes, each completed 100 µs after its issue."""
    rng = np.random.default_rng(seed)
    t_issue = np.arange(n_requests, dtype=np.uint64) * 2000
    sector = rng.integers(0, 1 << 21, n_requests, dtype=np.uint64) * 8
    both = lambda a, b: np.concatenate([a, b])
    cols = {
        "time_ns": both(t_issue, t_issue + 100_000),
        "event": both(np.zeros(n_requests, np.uint8), np.ones(n_requests, np.uint8)),
        "dev": np.full(2 * n_requests, 7 << 20, np.uint32), "sector": both(sector, sector),
        "nr_sector": np.full(2 * n_requests, 8, np.uint32), "op": np.ones(2 * n_requests, np.uint8),
        "flags": np.full(2 * n_requests, 8, np.uint8), "pid": np.full(2 * n_requests, 100, np.int32),
        "comm": both(np.zeros(n_requests, np.uint16), np.full(n_requests, NO_COMM, np.uint16)),
    }
    order = np.argsort(cols["time_ns"], kind="stable")
    return Trace({k: v[order] for k, v in cols.items()}, ["fio"], {"lost_events": 0, "complete": True})


def _traces() -> dict[str, Trace]:
    return {
        "mixed": _mixed_trace(30_000, 1),
        "mixed_other_seed": _mixed_trace(30_000, 2),
        "completions_only": _mixed_trace(20_000, 3, with_issues=False),
        "random_writes": _random_writes(200_000, 4),
    }


def analysis_outputs() -> dict[str, Any]:
    return {name: analyze(tr, with_cdf=True, workload_bytes_written=1 << 30) for name, tr in _traces().items()}


MODEL_RUNS: dict[str, tuple[str, dict[str, Any], dict[str, Any], int]] = {
    # name: (model, overrides, synthetic stream, queue depth)
    "ssd randread": ("sata-mlc-ssd", {"capacity": "4GiB", "precondition": "sequential"},
                     {"rw": "randread", "bs": 4096}, 32),
    "ssd randwrite gc": ("sata-mlc-ssd", {"capacity": "4GiB", "precondition": "random", "precondition_passes": 2,
                                          "over_provisioning": 0.25}, {"rw": "randwrite", "bs": 4096}, 32),
    "ssd randrw": ("sata-mlc-ssd", {"capacity": "4GiB", "precondition": "random", "precondition_passes": 2,
                                    "over_provisioning": 0.25}, {"rw": "randrw", "bs": 4096, "rwmixread": 70.0}, 32),
    "ssd randwrite 7% op fsync": ("sata-mlc-ssd", {"capacity": "4GiB", "precondition": "random"},
                                  {"rw": "randwrite", "bs": 16384, "fsync_every": 7}, 4),
    "ssd seq write 128k": ("nvme-tlc-ssd", {"precondition": "none"}, {"rw": "write", "bs": 131072}, 8),
    "ssd randtrim": ("sata-mlc-ssd", {"capacity": "4GiB"}, {"rw": "randtrim", "bs": 65536}, 2),
    "ssd open loop poisson": ("sata-mlc-ssd", {"capacity": "4GiB", "precondition": "sequential"},
                              {"rw": "randrw", "bs": 8192, "rate_iops": 40000.0, "poisson": True}, 0),
    "hdd randrw": ("hdd-7200", {}, {"rw": "randrw", "bs": 4096}, 8),
    "raid5 randwrite": ("raid5-8x-sata-mlc-ssd", {"member.precondition": "none"}, {"rw": "randwrite", "bs": 4096}, 16),
}


def model_outputs() -> dict[str, Any]:
    from fslab import _core
    from fslab.simulate import model_params

    out = {}
    for name, (model, overrides, stream, qd) in MODEL_RUNS.items():
        params = model_params(model, overrides)
        count = 3000 if model.startswith("hdd") else 60_000
        synth = {**stream, "count": count, "span": 128 << 20, "seed": 5}
        r = dict(_core.simulate_synthetic(params, synth, max(qd, 1), qd == 0, True))
        for k in ("replay_wall_ns", "precondition_wall_ns"):
            r.pop(k)
        lat = np.asarray(r.pop("latencies_ns"), dtype=np.uint64)
        r["latencies_ns_sha256"] = hashlib.sha256(lat.tobytes()).hexdigest()
        r["latencies_ns_first"] = lat[:20].tolist()
        out[name] = r
    return out


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


@pytest.fixture(scope="module")
def pinned() -> dict[str, Any]:
    return json.loads(PINNED.read_text())


def test_trace_analysis_outputs_equal_the_pinned_ones(pinned: dict[str, Any]) -> None:
    got = _jsonable(analysis_outputs())
    assert set(got) == set(pinned["analysis"])
    for name, want in pinned["analysis"].items():
        assert got[name] == want, name


def test_model_outputs_equal_the_pinned_ones(pinned: dict[str, Any]) -> None:
    got = _jsonable(model_outputs())
    assert set(got) == set(pinned["models"])
    for name, want in pinned["models"].items():
        assert got[name] == want, name


if __name__ == "__main__" and "--record" in sys.argv:
    PINNED.write_text(json.dumps({"analysis": analysis_outputs(), "models": model_outputs()}, indent=1,
                                 sort_keys=True) + "\n")
