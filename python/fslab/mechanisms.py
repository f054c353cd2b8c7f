"""Where a device model's time goes: its work per mechanism (``time_by_mechanism_ns`` of a
simulation result, from the core's ``DeviceModel::time_by_mechanism``), as shares and in
a storage engineer's words.

What the whole is depends on the model, and each model kind says it (and names each of
its mechanisms and the cause it is part of, in words) beside its code in the core
(``Kind`` in crates/fslab-core/src/models): this module reads them from ``_core.model_kinds``
and repeats none, so a new model kind brings its own words.

A share is a mechanism's part of that whole. Several mechanisms can make one cause in
words (a read-modify-write reads, then writes): ``cause_shares`` adds them up.

Stored per prediction as ``pred_<model>_time_<mechanism>_share`` (fractions; the
nanoseconds in the run's prediction provenance)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from .metrics import MetricKind, declare_metrics


@cache
def _kinds() -> dict[str, dict[str, Any]]:
    from . import _core

    return {k["kind"]: k for k in _core.model_kinds()}


@cache
def _causes() -> dict[str, str]:
    """mechanism -> the cause it is part of, over every kind (a mechanism name means one
    thing in every model that has it: the core's kinds agree, checked by the tests)."""
    return {name: cause for kind in _kinds().values() for name, cause in kind["mechanisms"]}


def mechanisms_of(kind: str) -> list[str]:
    """The mechanisms a model kind accounts its time to, in the order it documents them."""
    entry = _kinds().get(kind)
    return [name for name, _ in entry["mechanisms"]] if entry else []


METRIC_PREFIX = "time_"
METRIC_SUFFIX = "_share"

declare_metrics("device-model mechanisms", {
    "share": MetricKind("fraction", False, "share of a device model's predicted work time spent in one mechanism"),
})


def shares(time_ns: Mapping[str, int | float]) -> dict[str, float]:
    """Each mechanism's fraction of the whole (their sum); empty when the model did no work."""
    whole = sum(time_ns.values())
    return {name: float(v) / whole for name, v in time_ns.items()} if whole > 0 else {}


def cause_of(mechanism: str) -> str:
    """A mechanism in words (an unknown one, as its name reads)."""
    return _causes().get(mechanism, mechanism.replace("_", " "))


def cause_shares(by_mechanism: Mapping[str, float]) -> dict[str, float]:
    """Shares of mechanisms added up by the cause they are part of (``cause_of``)."""
    out: dict[str, float] = {}
    for name, share in by_mechanism.items():
        out[cause_of(name)] = out.get(cause_of(name), 0.0) + share
    return out


def metric_suffix(mechanism: str) -> str:
    """The prediction metric suffix of a mechanism's share: ``time_seek_share``."""
    return f"{METRIC_PREFIX}{mechanism}{METRIC_SUFFIX}"


def whole_of(kind: str) -> str:
    """What a model kind's mechanism times add up to, in words."""
    entry = _kinds().get(kind)
    return str(entry["whole"]) if entry else "the model's work time"


def table_rows(time_ns: Mapping[str, int | float], kind: str) -> list[tuple[str, str]]:
    """(label, value) rows for printing: the whole, then each mechanism that took any time,
    largest first, in milliseconds of model work and as a share of the whole."""
    if not time_ns:
        return []
    part = shares(time_ns)
    rows = [(f"model work time, all mechanisms (ms): {whole_of(kind)}", f"{sum(time_ns.values()) / 1e6:.3f}")]
    for name, ns in sorted(time_ns.items(), key=lambda kv: -kv[1]):
        if ns > 0:
            rows.append((f"  {name}: {cause_of(name)} (ms; share of the work time)",
                         f"{ns / 1e6:.3f} ms; {part[name]:.1%}"))
    return rows
