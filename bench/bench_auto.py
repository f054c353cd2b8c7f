"""Time to an answer: the quickstart study with ``repetitions = "auto"`` (precision 0.05,
3 to 20 runs per cell) against the same study with a fixed ``repetitions = 5``, both run
here now, one after the other. Printed: the runs and wall time of each, the ratio
auto / fixed of both, and what each answered (significant differences, cells within
±5%), so a ratio is never read without what it bought.

FSLAB_BENCH_AUTO_MAX caps max_repetitions (default 20) on a slow machine.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from importlib import resources
from pathlib import Path

from fslab.report.outputs import load_report
from fslab.runner import run_study

MAX_REPETITIONS = int(os.environ.get("FSLAB_BENCH_AUTO_MAX", "20"))
SEED = 20240601


def _variant(text: str, study_lines: str) -> str:
    if "repetitions = 3\n" not in text:
        raise RuntimeError("the quickstart preset no longer says `repetitions = 3`: update this benchmark")
    return text.replace("repetitions = 3\n", f"{study_lines}\nseed = {SEED}\n", 1)


def _answers(results: Path, study_id: int) -> tuple[int, int, int, float]:
    """(significant comparisons, comparisons, cells within ±5%, median relative half-width)."""
    report = load_report(results, study_id, None)
    versus = [e.versus_best for row in report.rows for e in row.estimates if e.versus_best is not None]
    widths = [e.half_width / abs(e.mean) for row in report.rows for e in row.estimates
              if e.half_width is not None and e.mean]
    return (sum(v.significant for v in versus), len(versus), sum(w <= 0.05 for w in widths),
            statistics.median(widths) if widths else float("nan"))


def main() -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    text = (resources.files("fslab") / "presets" / "quickstart.toml").read_text()
    variants = {
        "fixed 5": _variant(text, "repetitions = 5"),
        "auto": _variant(text, f'repetitions = "auto"\nprecision = 0.05\nmax_repetitions = {MAX_REPETITIONS}'),
    }
    print(f"quickstart (12 cells): repetitions = \"auto\" (precision 0.05, 3–{MAX_REPETITIONS} runs per cell) "
          f"against repetitions = 5, same order seed; {os.cpu_count()} CPUs, load average {load}")
    measured: dict[str, tuple[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="fslab-bench-auto-", dir="/var/tmp") as tmp:
        for name, study in variants.items():
            path = Path(tmp) / f"{name.replace(' ', '-')}.toml"
            path.write_text(study)
            results = Path(tmp) / f"results-{name.replace(' ', '-')}"
            outcome = run_study(str(path), results_dir=results)
            significant, compared, precise, width = _answers(results, outcome.study_id)
            measured[name] = (outcome.runs_done, outcome.wall_s)
            print(f"{name:8}: {outcome.runs_done} runs ({outcome.runs_failed} failed) in {outcome.wall_s:.0f} s; "
                  f"{significant} of {compared} differences to the row's best significant; {precise} of 12 cells "
                  f"within ±5%, median interval ±{width:.1%}")
    (auto_runs, auto_s), (fixed_runs, fixed_s) = measured["auto"], measured["fixed 5"]
    print(f"ratio auto / fixed 5: runs {auto_runs / fixed_runs:.2f}, time {auto_s / fixed_s:.2f}")
