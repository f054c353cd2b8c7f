"""Where a device model's time goes: its work per mechanism (``time_by_mechanism_ns`` of a
simulation result, from the core's ``DeviceModel::time_by_mechanism``), as shares and in
a storage engineer's words.

What the whole is depends on the model (documented beside each model in the core):
- HDD: the drive's work time — command overhead, seeks, rotational waits, media transfer
  (read-ahead included) and the time its cache answered requests without the arm;
- SSD: the summed work of its resources — controller, host link, flash channels, and
  flash planes reading, programming, copying for garbage collection and erasing;
- RAID: the summed time of the I/Os the array sent its members (issue to completion),
  by why it sent them — host data, read-modify-write, reconstruct-write, full stripes —
  plus the controller's host link moving the host's data.

A share is a mechanism's part of that whole. Several mechanisms can make one cause in
words (a read-modify-write reads, then writes): ``cause_shares`` adds them up.

Stored per prediction as ``pred_<model>_time_<mechanism>_share`` (fractions; the
nanoseconds in the run's prediction provenance)."""

from __future__ import annotations

from collections.abc import Mapping

from .metrics import MetricKind, declare_metrics

# mechanism -> the cause it is part of, in words ("spends 61% of its predicted time in ...").
CAUSES: dict[str, str] = {
    # HDD
    "command": "command overhead",
    "seek": "seeks",
    "rotation": "rotational latency",
    "transfer": "media transfer",
    "cache": "answers from the drive's cache",
    # SSD
    "controller": "controller command processing",
    "host_link": "host-link transfer",
    "channel": "flash-channel transfer",
    "read": "flash page reads",
    "program": "flash programs",
    "gc_copy": "garbage-collection copies",
    "erase": "block erases",
    # RAID
    "data_read": "member data reads",
    "data_write": "member data writes",
    "full_stripe_write": "full-stripe writes",
    "parity_rmw_read": "parity read-modify-write",
    "parity_rmw_write": "parity read-modify-write",
    "reconstruct_read": "parity reconstruct-write",
    "reconstruct_write": "parity reconstruct-write",
    "trim": "trims",
    "flush": "flushes",
}

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
    return CAUSES.get(mechanism, mechanism.replace("_", " "))


def cause_shares(by_mechanism: Mapping[str, float]) -> dict[str, float]:
    """Shares of mechanisms added up by the cause they are part of (``CAUSES``)."""
    out: dict[str, float] = {}
    for name, share in by_mechanism.items():
        out[cause_of(name)] = out.get(cause_of(name), 0.0) + share
    return out


def metric_suffix(mechanism: str) -> str:
    """The prediction metric suffix of a mechanism's share: ``time_seek_share``."""
    return f"{METRIC_PREFIX}{mechanism}{METRIC_SUFFIX}"


def mechanism_of(suffix: str) -> str | None:
    """The mechanism of a prediction metric suffix (``time_seek_share`` -> ``seek``), else None."""
    if suffix.startswith(METRIC_PREFIX) and suffix.endswith(METRIC_SUFFIX):
        name = suffix[len(METRIC_PREFIX):-len(METRIC_SUFFIX)]
        return name or None
    return None


# What the mechanisms' parts add up to, per model kind (the core's `time_by_mechanism` docs).
WHOLE = {
    "hdd": "the drive's work time (arm operations and cache answers)",
    "ssd": "the summed work time of controller, host link, flash channels and planes",
    "raid": "the summed time of the member I/Os (issue to completion), by why the array sent them, "
            "plus the controller's host link",
}


def whole_of(kind: str) -> str:
    """What a model kind's mechanism times add up to, in words."""
    return WHOLE.get(kind, "the model's work time")


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
