"""Steady state for fio workloads, in the terms of SNIA's Solid State Storage Performance
Test Specification (PTS 2.0, "steady state"): over a measurement window of some rounds, the
metric is steady when

- its **data excursion**, max - min over the window, is at most ``range`` (0.2) of the
  window's average, and
- its **slope excursion**, the excursion of the least-squares line across the window, is
  at most ``slope`` (0.1) of the average.

A workload asks for it with ``steady_state = { metric = "iops", window = "5 rounds",
slope = 0.1, range = 0.2 }`` (``metric``: iops or bw; ``window``: rounds, or a duration;
``ramp``: time before the first round counts). It is run with fio's own steady-state
detection: fio samples the metric once a second (a round here is fio's second) and ends
the job once the slope of the rolling window is small enough (``ss = iops_slope:X%``, X
the per-second slope that gives the asked slope excursion over the window; ``ss_dur``,
``ss_ramp``), at the latest at the workload's ``runtime``. fio judges one criterion, so
the data excursion is checked here on the window fio reports. Each run records whether
steady state was reached, when (fio's runtime at that point), and the window's figures; a
run that did not reach it has no steady figure (the reason is its note), so reports show
it apart and never average it in.
"""

from __future__ import annotations

import re
from typing import Any

from ..metrics import MetricKind
from ..units import given_text, parse_duration_s
from . import ParamError

FIELDS = ("metric", "window", "slope", "range", "ramp")
METRICS = {"iops": "steady_iops", "bw": "steady_bw_bytes_per_s"}
SNIA_SLOPE, SNIA_RANGE, SNIA_ROUNDS = 0.1, 0.2, 5

STEADY_METRICS: dict[str, MetricKind] = {
    "steady_state_reached": MetricKind("1", True, "1 when the run reached steady state (SNIA PTS), else 0"),
    "steady_state_at_s": MetricKind("s", False, "the workload's runtime when steady state was reached"),
    "steady_range_fraction": MetricKind("1", False, "data excursion of the steady window (the last window "
                                        "when not reached): (max - min) / mean"),
    "steady_slope_fraction": MetricKind("1", False, "slope excursion of the steady window (the last window "
                                        "when not reached): the fitted line's rise over the window / mean"),
}


def parse(value: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The ``steady_state`` table as the cell keeps it: metric, rounds, slope, range,
    ramp_s. Raises ParamError naming the field."""
    if not isinstance(value, dict):
        raise ParamError("steady_state", 'is a table: steady_state = { metric = "iops", window = "5 rounds", '
                         "slope = 0.1, range = 0.2 }")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ParamError(f"steady_state.{unknown[0]}", f"is not a steady-state field; known: {', '.join(FIELDS)}")
    metric = value.get("metric", "iops")
    if metric not in METRICS:
        raise ParamError("steady_state.metric", f"{metric!r}: steady state is judged on iops or bw")
    rounds = _rounds(value.get("window", f"{SNIA_ROUNDS} rounds"))
    out: dict[str, Any] = {"metric": metric, "rounds": rounds}
    for key, default in (("slope", SNIA_SLOPE), ("range", SNIA_RANGE)):
        number = value.get(key, default)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number < 1:
            raise ParamError(f"steady_state.{key}", f"is a fraction of the window's average, above 0 and below 1 "
                             f"(SNIA's is {default}; given: {given_text(number)})")
        out[key] = float(number)
    try:
        ramp = parse_duration_s(value.get("ramp", 0))
    except ValueError as exc:
        raise ParamError("steady_state.ramp", str(exc)) from None
    out["ramp_s"] = int(ramp)
    if not params.get("time_based") or not isinstance(params.get("runtime"), int):
        raise ParamError("steady_state", "needs time_based = 1 and a runtime: the longest a run may take to reach "
                         "steady state (fio ends the job when it is reached), e.g. runtime = 120")
    if params["runtime"] < out["ramp_s"] + rounds:
        raise ParamError("steady_state", f"the ramp ({out['ramp_s']} s) and window ({rounds} rounds of 1 s) do not "
                         f"fit in runtime = {params['runtime']}: raise the runtime")
    return out


def _rounds(window: Any) -> int:
    """'5 rounds' -> 5; a duration ('30s') -> its seconds (fio samples once a second)."""
    if isinstance(window, int) and not isinstance(window, bool):
        rounds = window
    else:
        match = re.fullmatch(r"\s*(\d+)\s*rounds?\s*", str(window))
        try:
            rounds = int(match.group(1)) if match else int(parse_duration_s(window))
        except ValueError:
            raise ParamError("steady_state.window", f"{window!r}: give rounds (\"5 rounds\") or a duration "
                             "(\"30s\"; a round is one of fio's 1-second samples)") from None
    if rounds < 2:
        raise ParamError("steady_state.window", "needs at least 2 rounds: a slope needs two points")
    return rounds


def fio_options(spec: dict[str, Any]) -> dict[str, str]:
    """fio's steady-state options for ``spec``: the SNIA slope excursion over the window
    (rounds - 1 one-second steps) as fio's per-second slope, in percent of the mean."""
    per_second = 100 * spec["slope"] / (spec["rounds"] - 1)
    return {"steadystate": f"{spec['metric']}_slope:{per_second:.6g}%",
            "steadystate_duration": str(spec["rounds"]), "steadystate_ramp_time": str(spec["ramp_s"])}


def quick(spec: dict[str, Any], runtime: int) -> int:
    """A smoke run's runtime that still leaves room for the ramp and the window."""
    return max(runtime, spec["ramp_s"] + spec["rounds"] + 1)


def metrics(spec: dict[str, Any], report: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """The steady-state metrics of a run from fio's JSON report, and notes for those with
    no number (why: not reached, with the figures that were off)."""
    name = METRICS[spec["metric"]]
    state = next((job["steadystate"] for job in report.get("jobs") or [] if job.get("steadystate")), None)
    if state is None:
        return {"steady_state_reached": 0.0}, {name: "fio reported no steady-state window"}
    data = [float(v) for v in (state.get("data") or {}).get(spec["metric"], [])]
    out: dict[str, float] = {}
    notes: dict[str, str] = {}
    range_fraction = slope_fraction = None
    if len(data) >= 2:
        mean = sum(data) / len(data)
        if mean > 0:
            range_fraction = (max(data) - min(data)) / mean
            slope_fraction = abs(_slope(data)) * (len(data) - 1) / mean
            out["steady_range_fraction"], out["steady_slope_fraction"] = range_fraction, slope_fraction
    runtime_s = max(float(job.get("job_runtime", 0)) for job in report["jobs"]) / 1000
    fio_attained = bool(state.get("attained"))
    reached = fio_attained and range_fraction is not None and range_fraction <= spec["range"]
    out["steady_state_reached"] = 1.0 if reached else 0.0
    if reached:
        out["steady_state_at_s"] = runtime_s
        mean_key = "iops_mean" if spec["metric"] == "iops" else "bw_mean"
        out[name] = float(state["data"][mean_key])
        return out, notes
    if not fio_attained:
        why = f"steady state not reached in {runtime_s:.0f} s"
        if slope_fraction is not None:
            why += f" (last window: slope {slope_fraction:.0%} of the mean, range {range_fraction:.0%})"
    else:
        why = (f"steady state not reached: fio's slope criterion held at {runtime_s:.0f} s, but the window's data "
               f"excursion was {range_fraction:.0%} > {spec['range']:.0%}" if range_fraction is not None
               else "steady state not reached: fio reported no window to check")
    notes[name] = why
    notes["steady_state_at_s"] = why
    return out, notes


def _slope(values: list[float]) -> float:
    """Least-squares slope per step of equally spaced values."""
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    return num / sum((i - mean_x) ** 2 for i in range(n))
