"""Which device models a stored run was replayed on, and where each model's time went, as
the run's provenance records them: ``predictions.models`` (model -> what its replay
recorded, ``fslab.predictions.predict_run``) and, for a workload predicted test by test,
``phase_predictions.tests.*.models``. The report builds metric names from these
(``metric_name``) and never parses a model out of a metric's name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..mechanisms import metric_suffix
from ..predictions import metric_name
from ..stored import StoredRun


def _replays(run: StoredRun) -> dict[str, Any]:
    return ((run["provenance"].get("predictions") or {}).get("models")) or {}


def models_of(run: StoredRun) -> list[str]:
    """The models the run was replayed on, in the study's order (failed replays included:
    their metrics say why they have no number)."""
    out = list(_replays(run))
    tests = (run["provenance"].get("phase_predictions") or {}).get("tests") or {}
    for test in tests.values():
        out += [m for m in test.get("models") or {} if m not in out]
    return out


def models_in(runs: Iterable[StoredRun]) -> list[str]:
    """The models any of the runs was replayed on, sorted by name (the order reports list
    them in)."""
    return sorted({m for run in runs for m in models_of(run)})


def mechanism_shares(run: StoredRun, model: str) -> dict[str, float]:
    """Each mechanism's share of the model's predicted work time in this run (the
    mechanisms are those its replay recorded time for); empty when none was stored."""
    out = {}
    for mechanism in (_replays(run).get(model) or {}).get("time_by_mechanism_ns") or {}:
        m = run["metrics"].get(metric_name(model, metric_suffix(mechanism)))
        if m is not None and m["value"] is not None:
            out[mechanism] = float(m["value"])
    return out
