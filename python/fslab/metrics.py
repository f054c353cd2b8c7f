"""Metric declarations: every metric fslab stores has one unit and one better direction.
Names carry their unit (``iops``, ``bw_bytes_per_s``, ``clat_p99_ns``); a declaration is
keyed by a name's suffix, so ``read_iops`` and ``write_iops`` share one.

The metrics every run has (wall time, device counters) are declared here; a plug-in
declares its own where it registers (``declare_metrics``), so adding a workload touches
one file. A stored metric keeps its unit and direction, so reports need no plug-in.
"""

from __future__ import annotations

from .datarecords import datarecord


@datarecord(frozen=True)
class MetricKind:
    """A metric's declaration: its unit, its better direction and what it measures."""

    unit: str
    higher_is_better: bool
    description: str
    # False: no better direction, so reports never rank it. A device's request or sector
    # count grows with how long a time-based run ran: the file system that did less work
    # would look 'best'. Its rate (work per second) is the ranked figure.
    ranked: bool = True


class UndeclaredMetric(KeyError):
    """A metric name no declaration covers: a plug-in bug, caught where it registers."""

    def __str__(self) -> str:
        return str(self.args[0])


_BY_SUFFIX: dict[str, MetricKind] = {}
_OWNER: dict[str, str] = {}


def declare_metrics(owner: str, kinds: dict[str, MetricKind]) -> None:
    """Declare metric suffixes for ``owner`` (a plug-in's name). Declaring a suffix again
    with another unit or direction is an error: one name, one meaning."""
    for suffix, kind in kinds.items():
        known = _BY_SUFFIX.get(suffix)
        if known is not None and (known.unit, known.higher_is_better, known.ranked) != (
                kind.unit, kind.higher_is_better, kind.ranked):
            raise ValueError(f"metric suffix {suffix!r} of {owner} is already declared by "
                             f"{_OWNER[suffix]} as [{known.unit}], "
                             f"{'higher' if known.higher_is_better else 'lower'} is better"
                             f"{'' if known.ranked else ', not ranked'}")
        _BY_SUFFIX.setdefault(suffix, kind)
        _OWNER.setdefault(suffix, owner)


def kind_of(name: str) -> MetricKind:
    """The declaration of a metric, found by the longest matching suffix of its name."""
    for suffix in sorted(_BY_SUFFIX, key=len, reverse=True):
        if name == suffix or name.endswith("_" + suffix):
            return _BY_SUFFIX[suffix]
    raise UndeclaredMetric(f"metric {name!r} has no declared unit: the plug-in that produces it "
                           "must declare its suffix (fslab.metrics.declare_metrics)")


COUNT_NOT_RANKED = ("a count of what the device did: it grows with how long a time-based run ran, "
                    "so it is shown, not ranked")


def is_ranked(name: str) -> bool:
    """Whether reports rank a metric (a best, differences to it); True for a name no
    declaration covers (a stored metric of a plug-in not loaded here)."""
    try:
        return kind_of(name).ranked
    except UndeclaredMetric:
        return True


def unit_of(name: str) -> str:
    return kind_of(name).unit


def check_declared(owner: str, names: list[str]) -> None:
    """Raise if any of ``names`` (metrics a plug-in says it produces) is undeclared."""
    missing = [n for n in names if not any(n == s or n.endswith("_" + s) for s in _BY_SUFFIX)]
    if missing:
        raise UndeclaredMetric(f"{owner} produces metrics with no declared unit: {missing}")


# Every run: wall time and the device's own counters (executor).
declare_metrics("run", {
    "wall_s": MetricKind("s", False, "wall time"),
    "overhead_s": MetricKind("s", False, "time spent outside the workload"),
    "requests_count": MetricKind("requests", False, "requests completed by the device; " + COUNT_NOT_RANKED,
                                 ranked=False),
    "sectors_count": MetricKind("sectors", False, "512-byte sectors moved by the device; " + COUNT_NOT_RANKED,
                                ranked=False),
})


# Unit suffixes a metric name may end with; tables show the name without one and the unit
# the shown numbers are in, in brackets ("write_clat_p99 [ms]", never "write_clat_p99_ns [ms]").
_UNIT_SUFFIXES = ("_bytes_per_s", "_per_s", "_bytes", "_ns", "_us", "_ms", "_s", "_pct")


def display_name(name: str) -> str:
    """A metric's name without its unit suffix: ``write_clat_p99_ns`` -> ``write_clat_p99``."""
    for suffix in _UNIT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
