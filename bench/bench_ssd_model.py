"""Speed of the SSD model: simulated requests per second of wall time on one core, as a
ratio against a plain reference loop over the same requests, measured in the same run
(median of several repetitions, model and reference interleaved so both see the same
machine load). Replay time only: stream generation and preconditioning are excluded.

On a shared machine wall-clock rates swing by 2x or more between runs; the ratio moves
less. For comparing two builds, count instructions instead (valgrind --tool=callgrind on a
small driver of `replay`), which is deterministic."""

from __future__ import annotations

import os
import statistics

from fslab import _core
from fslab.simulate import model_params

REPETITIONS = 5
COUNT = 2_000_000

WORKLOADS = {
    # name: (synthetic stream, overrides, target requests/s or None) on sata-mlc-ssd with a
    # 4 GiB logical space
    "randread 4k qd32": ({"rw": "randread", "bs": 4096}, {"precondition": "sequential"}, 40e6),
    "randwrite 4k qd32 (steady-state GC)": ({"rw": "randwrite", "bs": 4096},
                                            {"precondition": "random", "precondition_passes": 2,
                                             "over_provisioning": 0.25}, 15e6),
    "randrw 70/30 4k qd32": ({"rw": "randrw", "bs": 4096, "rwmixread": 70.0},
                             {"precondition": "random", "precondition_passes": 2,
                              "over_provisioning": 0.25}, None),
}


def main() -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"SSD model speed (sata-mlc-ssd, 4 GiB, {COUNT} requests, median of {REPETITIONS}; "
          f"{os.cpu_count()} CPUs, load average {load})")
    for name, (stream, overrides, target) in WORKLOADS.items():
        synth = {**stream, "count": COUNT, "span": 4 << 30, "seed": 1}
        params = model_params("sata-mlc-ssd", {"capacity": "4GiB", **overrides})

        def model_rate(params: dict = params, synth: dict = synth) -> float:
            r = _core.simulate_synthetic(params, synth, 32, False, False)
            return r["requests"] / (r["replay_wall_ns"] / 1e9)

        def reference_rate(synth: dict = synth) -> float:
            # Twice, keeping the faster: the first call after a model run also pays for
            # faulting in fresh pages for its output array, which is not loop speed.
            rates = []
            for _ in range(2):
                n, wall_ns = _core.reference_loop(synth)
                rates.append(n / (wall_ns / 1e9))
            return max(rates)

        pairs = [(model_rate(), reference_rate()) for _ in range(REPETITIONS)]
        model = statistics.median(m for m, _ in pairs)
        reference = statistics.median(r for _, r in pairs)
        ratio = statistics.median(m / r for m, r in pairs)
        print(f"  {name}: model {model / 1e6:.2f} M requests/s, reference loop "
              f"{reference / 1e6:.1f} M requests/s, ratio model/reference {ratio:.4f}")
        if target is not None:
            # the target in the same terms as the ratio: the share of the reference loop's
            # rate (measured in this run) that the target rate is
            need = target / reference
            key = name.split()[0]
            print(f"ssd_model_{key}_per_reference_ratio {ratio:.4f} (target >= {need:.4f} = "
                  f"{target / 1e6:.0f} M requests/s over the reference loop's {reference / 1e6:.0f} M/s now) "
                  f"{'PASS' if ratio >= need else 'FAIL'}")


if __name__ == "__main__":
    main()
