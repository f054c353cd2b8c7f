"""Speed of the SSD model: simulated requests per second of wall time on one core, as a
ratio against a plain reference loop over the same requests, measured in the same run
(median of several repetitions). Replay time only: stream generation and preconditioning
are excluded, and reported apart."""

from __future__ import annotations

import statistics

from fslab import _core
from fslab.simulate import model_params

REPETITIONS = 5
COUNT = 2_000_000
TARGET_REQUESTS_PER_S = 5_000_000

WORKLOADS = {
    # name: (synthetic stream, overrides) on sata-mlc-ssd with a 4 GiB logical space
    "randread 4k qd32": ({"rw": "randread", "bs": 4096}, {"precondition": "sequential"}),
    "randwrite 4k qd32 (steady-state GC)": ({"rw": "randwrite", "bs": 4096},
                                            {"precondition": "random", "precondition_passes": 2,
                                             "over_provisioning": 0.25}),
    "randrw 70/30 4k qd32": ({"rw": "randrw", "bs": 4096, "rwmixread": 70.0},
                             {"precondition": "random", "precondition_passes": 2,
                              "over_provisioning": 0.25}),
}


def _median_rate(fn) -> float:
    return statistics.median(fn() for _ in range(REPETITIONS))


def main() -> None:
    print(f"SSD model speed (sata-mlc-ssd, 4 GiB, {COUNT} requests, median of {REPETITIONS})")
    for name, (stream, overrides) in WORKLOADS.items():
        synth = {**stream, "count": COUNT, "span": 4 << 30, "seed": 1}
        params = model_params("sata-mlc-ssd", {"capacity": "4GiB", **overrides})

        def model_rate() -> float:
            r = _core.simulate_synthetic(params, synth, 32, False, False)
            return r["requests"] / (r["replay_wall_ns"] / 1e9)

        def reference_rate() -> float:
            n, wall_ns = _core.reference_loop(synth)
            return n / (wall_ns / 1e9)

        model = _median_rate(model_rate)
        reference = _median_rate(reference_rate)
        verdict = "meets" if model >= TARGET_REQUESTS_PER_S else "below"
        print(f"  {name}: model {model / 1e6:.2f} M requests/s, reference loop "
              f"{reference / 1e6:.1f} M requests/s, ratio model/reference {model / reference:.4f} "
              f"({verdict} the 5 M requests/s target)")


if __name__ == "__main__":
    main()
