"""The SSD model's FTL against an independent greedy-GC simulator written here, plainly
and with a different structure (lists of blocks, a linear scan for the victim). Also: what
the model reports about the over-provisioning it actually simulated and about its
steady-state window."""

import math
import random

import pytest

from fslab.errors import FslabError
from fslab.simulate import simulate_synthetic

CAPACITY = 32 << 20  # 8,192 units of 4 KiB
PAGE_UNITS = 2  # 8 KiB pages
BLOCK_UNITS = 32  # 16 pages per block


def greedy_reference(planes: int, blocks_per_plane: int, logical: int, writes: int, seed: int,
                     gc_free_blocks: int = 2, passes: int = 2) -> float:
    """Write amplification of uniform random 4 KiB writes after a sequential fill and
    ``passes`` random overwrites. With several planes host units go to the planes in turn
    (one page's units at a time, wherever their old copy lived), each plane keeps its own open block and
    runs greedy GC (copy the valid units of the full block with the fewest, erase it) while
    fewer than ``gc_free_blocks`` blocks are free; copies go to the plane's open block."""
    rng = random.Random(seed)
    content = [[[] for _ in range(blocks_per_plane)] for _ in range(planes)]
    live = [[0] * blocks_per_plane for _ in range(planes)]
    free = [list(range(1, blocks_per_plane)) for _ in range(planes)]
    open_block = [0] * planes
    home: list[tuple[int, int, int] | None] = [None] * logical
    count = {"host": 0, "media": 0}

    def program(lpn: int, p: int) -> None:
        b = open_block[p]
        content[p][b].append(lpn)
        home[lpn] = (p, b, len(content[p][b]) - 1)
        live[p][b] += 1
        count["media"] += 1
        if len(content[p][b]) == BLOCK_UNITS:  # a full block is closed at once
            open_block[p] = free[p].pop()

    def host_write(lpn: int, p: int) -> None:
        if home[lpn] is not None:
            q, b, i = home[lpn]
            content[q][b][i] = -1
            live[q][b] -= 1
        count["host"] += 1
        program(lpn, p)
        while len(free[p]) < gc_free_blocks:
            full = [b for b in range(blocks_per_plane) if b != open_block[p] and len(content[p][b]) == BLOCK_UNITS]
            victim = min(full, key=lambda b: live[p][b])
            assert live[p][victim] < BLOCK_UNITS, "reference plane full of valid data"
            survivors = [x for x in content[p][victim] if x >= 0]
            content[p][victim], live[p][victim] = [], 0
            free[p].insert(0, victim)
            for x in survivors:
                program(x, p)

    for lpn in range(logical):
        host_write(lpn, lpn % planes)
    for i in range(passes * logical):
        host_write(rng.randrange(logical), i % planes)
    host0, media0 = count["host"], count["media"]
    for i in range(writes):
        host_write(rng.randrange(logical), (i // PAGE_UNITS) % planes)
    return (count["media"] - media0) / (count["host"] - host0)


def _model(planes: tuple[int, int, int], writes: int, op: float = 0.07, precondition: str = "random",
           seed: int = 5) -> dict:
    channels, dies, per_die = planes
    return simulate_synthetic(
        f"rw=randwrite,bs=4k,count={writes},span={CAPACITY},seed={seed}", "sata-mlc-ssd",
        {"capacity": CAPACITY, "channels": channels, "dies_per_channel": dies, "planes_per_die": per_die,
         "page_bytes": PAGE_UNITS * 4096, "pages_per_block": BLOCK_UNITS // PAGE_UNITS,
         "over_provisioning": op, "gc_free_blocks": 2, "precondition": precondition,
         "precondition_passes": 2, "seed": seed}, qd=1)


def test_write_amplification_matches_an_independent_greedy_simulator_on_one_plane() -> None:
    """7% OP: 8,192 logical units need 8,766 physical, i.e. 274 blocks of 32 units. Same
    rules, different code and random numbers: they agree within 1% (seen: 0.2%)."""
    model = sorted(_model((1, 1, 1), 60_000, seed=seed)["write_amplification"] for seed in (1, 2, 3))[1]
    reference = greedy_reference(1, 274, CAPACITY // 4096, 60_000, seed=11)
    print(f"1 plane: model WA {model:.3f} (median of 3), reference {reference:.3f}")
    assert model == pytest.approx(reference, rel=0.01)


@pytest.mark.parametrize("op", [0.07, 0.12, 0.20, 0.28])
def test_four_planes_copy_no_more_than_one_balanced_plane(op: float) -> None:
    """Four planes (two dies of two) each hold a quarter of the data, so each is a greedy
    pool of one plane's blocks and a quarter of the logical units: the reference is that
    pool alone, simulated on its own. The model keeps the planes' shares balanced (host
    data goes to the less loaded of the next two dies, and a plane over its die's least
    loaded one by a quarter block sits a program out); before it did, each plane's share
    wandered as random overwrites left it, and since greedy WA is convex in the spare the
    model copied 6% more than this reference at 7% OP (9.32 vs 8.79, with streams from
    8.9 to 10.4). Now within 2% at every OP (seen: 0.1-0.4%)."""
    logical = CAPACITY // 4096
    blocks_per_plane = math.ceil(math.ceil(logical * (1 + op)) / BLOCK_UNITS / 4)
    model = sorted(_model((2, 1, 2), 60_000, op=op, seed=seed)["write_amplification"] for seed in (1, 2, 3))[1]
    reference = greedy_reference(1, blocks_per_plane, logical // 4, 60_000, seed=11)
    print(f"OP {op:.2f}, 4 planes of {blocks_per_plane} blocks: model WA {model:.3f} (median of 3), "
          f"one plane's pool {reference:.3f} ({(model / reference - 1) * 100:+.2f}%)")
    assert model == pytest.approx(reference, rel=0.02)


def test_reports_the_over_provisioning_it_simulated() -> None:
    facts = _model((2, 1, 2), 1000)["model_facts"]
    assert facts["over_provisioning_requested"] == 0.07
    # Whole blocks per plane: 4 x 69 blocks of 32 units for 8,192 logical units.
    assert facts["over_provisioning_simulated"] == pytest.approx(4 * 69 * 32 / 8192 - 1)  # 0.078
    # Each plane keeps gc_free_blocks (2) free and one block open: 12 blocks hold no data.
    assert facts["over_provisioning_usable"] == pytest.approx((4 * 69 - 12) * 32 / 8192 - 1)  # 0.031
    assert _model((1, 1, 1), 1000)["model_facts"]["over_provisioning_simulated"] == pytest.approx(274 * 32 / 8192 - 1)


def test_steady_state_window_is_reported_apart_from_the_warm_up() -> None:
    """After a sequential fill the first random writes land in free over-provisioned
    blocks (no GC), so the whole-trace figure is lower than the steady state's."""
    result = _model((1, 1, 1), 40_000, precondition="sequential")
    facts = result["model_facts"]
    assert facts["steady_window_host_bytes"] == pytest.approx(20_000 * 4096, rel=0.01)
    assert facts["write_amplification_steady"] > 1.01 * result["write_amplification"]
    # Preconditioned to the steady state already: the two agree.
    steady = _model((1, 1, 1), 40_000)
    assert steady["model_facts"]["write_amplification_steady"] == pytest.approx(steady["write_amplification"], rel=0.02)


def test_balanced_planes_do_not_fill_up() -> None:
    """This stream filled plane 6 with valid data when host writes went to the planes in
    turn wherever their old copy lived (once a panic inside the core, then a model error);
    with the planes' shares kept balanced it runs, at the WA of its spare."""
    result = _model((2, 2, 2), 400_000, op=0.10, seed=3)
    assert 1.0 < result["write_amplification"] < 8.0


def test_too_little_spare_per_plane_is_an_error_naming_the_fix() -> None:
    with pytest.raises(FslabError, match="over_provisioning"):
        _model((2, 2, 2), 1000, op=0.01)
