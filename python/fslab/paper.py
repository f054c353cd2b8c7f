"""A study's ``[paper]`` table: the published figures it can be compared on and how its
setup differs from the paper's. Report-only facts: they name cells (workload, file-system
entry, case) and metrics, but are no part of any cell (plan.py's cell payload never sees
them), so adding or editing them changes no cell id.

A figure is either one number (``value`` in ``unit``) of one side, or a ratio between two
sides. A side is a workload's case on a file-system entry, a metric and a device model;
the numerator is ``workload``/``filesystem``/``case``/``metric``/``model``, and the
denominator is the same side with whatever its ``versus*`` fields change: ``versus``
(another entry), ``versus_workload``, ``versus_case`` (the axis values that differ, e.g.
``{direct = 1}``), ``versus_metric`` or ``versus_model`` — one or several at once. Most
of a paper's claims are ratios and orderings ("about 5x", "more than 1x": higher).

Group claims: ``filesystem`` and ``versus`` may be lists (each numerator against each
denominator: "xfs best" is xfs over every other; "ext4, JFS and XFS better than ext3" is
three pairs; a list without versus: each entry's own ratio of cases, workloads or
metrics), and ``across`` names axes the claim ranges over ("consistently": every value
of those axes, left out of ``case``). ``baseline_workload`` turns each side into its change
from that workload (aged over empty: "ext4 loses least when aged"). ``source`` says where
in the paper the figure stands ("Figure 1, §4").

Schema only here (pydantic, imported by spec.py); ``paper_check`` checks each figure
against the study when it loads."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from .toml_section import TomlSection

# The units a paper's figure may be given in: unit -> (fslab's stored unit, its factor).
UNITS: dict[str, tuple[str, float]] = {
    "IOPS": ("IOPS", 1.0), "KIOPS": ("IOPS", 1e3),
    "B/s": ("B/s", 1.0), "KB/s": ("B/s", 1e3), "MB/s": ("B/s", 1e6), "KiB/s": ("B/s", 1024.0),
    "MiB/s": ("B/s", float(1 << 20)),
    "ns": ("ns", 1.0), "us": ("ns", 1e3), "ms": ("ns", 1e6), "s": ("ns", 1e9),
    "B": ("B", 1.0), "KB": ("B", 1e3), "KiB": ("B", 1024.0), "requests": ("requests", 1.0),
}
Relation = Literal["about", "more than", "less than"]
# A ratio within this factor of the paper's (either way), in the paper's direction, holds.
SIZE_TOLERANCE = 2.0


@dataclass(frozen=True)
class Side:
    """One side of a ratio: a workload's case on a file-system entry, and a metric."""
    workload: str
    filesystem: str
    case: tuple[tuple[str, Any], ...]
    metric: str

    @property
    def case_dict(self) -> dict[str, Any]:
        return dict(self.case)


def _names(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


class PaperFigure(TomlSection):
    """``[[paper.figures]]``: one published figure and the cell(s) it stands beside."""

    claim: str = Field(min_length=1, description="what the paper states, in a few words of your own")
    source: str = Field(min_length=1, description="where in the paper: table or figure, and section or page "
                        "(e.g. 'Table IV, p. 4')")
    workload: str = Field(description="the study's workload (its name) the figure is about")
    metric: str = Field(description="the metric fslab stores for it (e.g. write_iops)")
    filesystem: str | list[str] = Field(description="the study's file-system entry the figure is of (a ratio's "
                                        "numerator); a list: a group claim, each of them against each versus")
    case: dict[str, Any] = Field(default_factory=dict, description="the case: a value for every axis of "
                                 "the workload (e.g. {rw = 'write', direct = 0}) but those in `across`")
    value: float | None = Field(default=None, gt=0, description="the paper's number, in `unit`")
    unit: str | None = Field(default=None, description=f"the unit of `value`: {', '.join(UNITS)}")
    versus: str | list[str] | None = Field(default=None, description="a ratio's denominator entry (default: "
                                           "the numerator's own); a list: each of them (a group claim)")
    versus_workload: str | None = Field(default=None, description="the denominator's workload, when it is "
                                        "another (its case is then versus_case alone)")
    versus_case: dict[str, Any] = Field(default_factory=dict, description="the denominator's axis values that "
                                        "differ from `case` (e.g. {direct = 1}: cached over direct)")
    versus_metric: str | None = Field(default=None, description="the denominator's metric, when it is another "
                                      "(same unit: e.g. a write latency over a read latency)")
    ratio: float | None = Field(default=None, gt=0, description="the paper's ratio, numerator over "
                                "denominator; 1 with relation 'more than' says only 'higher'")
    relation: Relation = Field(default="about", description="how the paper states the ratio: about, more "
                               "than or less than it")
    model: str | None = Field(default=None, description="the device model standing for the paper's device "
                              "(the predicted column); by default the first every cell was replayed on")
    versus_model: str | None = Field(default=None, description="a ratio between two device models of one "
                                     "cell (the paper's two devices are two models here)")
    across: list[str] = Field(default_factory=list, description="axes the claim ranges over ('consistently'): "
                              "every value of each, left out of `case`")
    baseline_workload: str | None = Field(default=None, description="each side taken as its change: its value "
                                          "over its own value in this workload (e.g. aged over empty)")

    @model_validator(mode="after")
    def _one_kind(self) -> PaperFigure:
        if (self.value is None) == (self.ratio is None):
            raise ValueError("give either value (with unit) or ratio (with a second side: versus, versus_workload, "
                             f"versus_case, versus_metric or versus_model), not "
                             f"{'both' if self.value is not None else 'neither'}")
        if self.value is not None:
            if self.unit not in UNITS:
                raise ValueError(f"value needs a unit, one of {', '.join(UNITS)} (given: {self.unit!r})")
            other = [k for k in ("versus", "versus_workload", "versus_metric", "versus_model", "baseline_workload")
                     if getattr(self, k) is not None] + (["versus_case"] if self.versus_case else []) + (
                         ["across"] if self.across else [])
            if other:
                raise ValueError(f"{', '.join(other)} belong to a ratio; a value is one cell's: remove them or "
                                 "give ratio instead of value")
            if not isinstance(self.filesystem, str):
                raise ValueError("a value is one cell's: filesystem names one entry, not a list")
            return self
        if self.unit is not None:
            raise ValueError("a ratio has no unit; remove unit")
        if self.versus_model is not None:
            if self.model is None:
                raise ValueError("versus_model needs model (the ratio's numerator model)")
            if self.is_group or self.baseline_workload is not None:
                raise ValueError("versus_model compares two models of one cell: not with lists, across or "
                                 "baseline_workload")
        if not self.pairs_differ():
            raise ValueError("the two sides are the same: name a second side with versus (another entry), "
                             "versus_workload, versus_case, versus_metric or versus_model")
        if self.across and self.versus_workload not in (None, self.workload):
            raise ValueError("across ranges over the axes of one workload: not with versus_workload")
        overlap = set(self.across) & set(self.case)
        if overlap:
            raise ValueError(f"across names axes the case fixes ({', '.join(sorted(overlap))}): leave them out "
                             "of case")
        return self

    def pairs_differ(self) -> bool:
        return bool(self.versus_model is not None or self.versus_case
                    or self.versus_workload not in (None, self.workload)
                    or self.versus_metric not in (None, self.metric)
                    or (self.versus is not None
                        and any(d != n for n in self.numerators for d in self.denominators)))

    @property
    def numerators(self) -> list[str]:
        """The numerator entries: one, or each of a group's."""
        return _names(self.filesystem)

    @property
    def denominators(self) -> list[str]:
        """The denominator entries: versus, or (a ratio of cases, workloads, metrics or
        models) the numerator's own entry."""
        return _names(self.versus) or self.numerators

    @property
    def is_group(self) -> bool:
        """A claim over several pairs of sides (lists, across): judged pair by pair."""
        return (not isinstance(self.filesystem, str) or isinstance(self.versus, list) or bool(self.across))

    @property
    def denominator(self) -> str:
        """The file-system entry of a single ratio's denominator (the numerator's own when
        the ratio is between cases, workloads, metrics or models)."""
        return self.denominators[0]

    @property
    def den_workload(self) -> str:
        return self.versus_workload or self.workload

    @property
    def den_metric(self) -> str:
        return self.versus_metric or self.metric

    def pairs(self, axes: Mapping[str, Mapping[str, list[Any]]]) -> list[tuple[Side, Side]]:
        """Every (numerator, denominator) pair of sides the figure compares; ``axes``: the
        study's workloads' axes (workload -> axis -> values), for ``across``. A pair whose
        two sides are the same (a group's numerator in its own denominators) is left out."""
        spans = [[(a, v) for v in axes.get(self.workload, {}).get(a, [])] for a in self.across]
        out: list[tuple[Side, Side]] = []
        for extra in itertools.product(*spans):
            case = {**self.case, **dict(extra)}
            den_case = ({**case, **self.versus_case} if self.den_workload == self.workload
                        else dict(self.versus_case))
            # Each numerator against each versus; without versus, each against its own other side.
            matched = (itertools.product(self.numerators, self.denominators) if self.versus is not None
                       else ((n, n) for n in self.numerators))
            for n, d in matched:
                num = Side(self.workload, n, tuple(sorted(case.items())), self.metric)
                den = Side(self.den_workload, d, tuple(sorted(den_case.items())), self.den_metric)
                if num != den or self.versus_model is not None:
                    out.append((num, den))
        return out

    def baseline(self, side: Side) -> Side | None:
        """The side a ``baseline_workload`` figure divides ``side`` by: its own value in
        the baseline workload (same entry, case and metric)."""
        if self.baseline_workload is None:
            return None
        return Side(self.baseline_workload, side.filesystem, side.case, side.metric)


class PaperSection(TomlSection):
    """``[paper]``: the paper's figures this study can be compared on and its deviations
    from the paper's setup, shown above them in the report."""

    figures: list[PaperFigure] = Field(default_factory=list, description="the paper's figures "
                                       "([[paper.figures]] rows)")
    deviations: list[str] = Field(default_factory=list, description="how this study's setup differs from "
                                  "the paper's, one sentence each")
