"""A study's ``[paper]`` table: the published figures it can be compared on and how its
setup differs from the paper's. Report-only facts: they name cells (workload, file-system
entry, case) and metrics, but are no part of any cell (plan.py's cell payload never sees
them), so adding or editing them changes no cell id.

A figure is either one number (``value`` in ``unit``) or a ratio between two cells
(``filesystem`` over ``versus``) or between two device models of one cell (``model`` over
``versus_model``): most of a paper's claims are ratios and orderings ("about 5x", "more
than 1x": higher). ``source`` says where in the paper it stands ("Figure 1, §4").

Schema only here (pydantic); ``validate_paper`` checks each figure against the study (it
imports the workload registry lazily, as study.py's other checks do)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import SpecError

# The units a paper's figure may be given in: unit -> (fslab's stored unit, its factor).
UNITS: dict[str, tuple[str, float]] = {
    "IOPS": ("IOPS", 1.0), "KIOPS": ("IOPS", 1e3),
    "B/s": ("B/s", 1.0), "KB/s": ("B/s", 1e3), "MB/s": ("B/s", 1e6), "KiB/s": ("B/s", 1024.0),
    "MiB/s": ("B/s", float(1 << 20)),
    "ns": ("ns", 1.0), "us": ("ns", 1e3), "ms": ("ns", 1e6), "s": ("ns", 1e9),
    "B": ("B", 1.0), "KiB": ("B", 1024.0), "requests": ("requests", 1.0),
}
Relation = Literal["about", "more than", "less than"]


class PaperFigure(BaseModel):
    """``[[paper.figures]]``: one published figure and the cell(s) it stands beside."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: str = Field(min_length=1, description="what the paper states, in a few words of your own")
    source: str = Field(min_length=1, description="where in the paper: table or figure, and section or page "
                        "(e.g. 'Table IV, p. 4')")
    workload: str = Field(description="the study's workload (its name) the figure is about")
    metric: str = Field(description="the metric fslab stores for it (e.g. write_iops)")
    filesystem: str = Field(description="the study's file-system entry the figure is of (a ratio's numerator)")
    case: dict[str, Any] = Field(default_factory=dict, description="the case: a value for every axis of "
                                 "the workload (e.g. {rw = 'write', direct = 0})")
    value: float | None = Field(default=None, gt=0, description="the paper's number, in `unit`")
    unit: str | None = Field(default=None, description=f"the unit of `value`: {', '.join(UNITS)}")
    versus: str | None = Field(default=None, description="a ratio's denominator: another file-system entry "
                               "(same workload and case)")
    ratio: float | None = Field(default=None, gt=0, description="the paper's ratio, filesystem over versus "
                                "(or model over versus_model); 1 with relation 'more than' says only 'higher'")
    relation: Relation = Field(default="about", description="how the paper states the ratio: about, more "
                               "than or less than it")
    model: str | None = Field(default=None, description="the device model standing for the paper's device "
                              "(the predicted column); by default the first both cells were replayed on")
    versus_model: str | None = Field(default=None, description="a ratio between two device models of one "
                                     "cell (the paper's two devices are two models here)")

    @model_validator(mode="after")
    def _one_kind(self) -> PaperFigure:
        if (self.value is None) == (self.ratio is None):
            raise ValueError("give either value (with unit) or ratio (with versus or versus_model), not "
                             f"{'both' if self.value is not None else 'neither'}")
        if self.value is not None:
            if self.unit not in UNITS:
                raise ValueError(f"value needs a unit, one of {', '.join(UNITS)} (given: {self.unit!r})")
            if self.versus is not None or self.versus_model is not None:
                raise ValueError("versus and versus_model belong to a ratio; a value is one cell's")
        else:
            if self.unit is not None:
                raise ValueError("a ratio has no unit; remove unit")
            if self.versus is None and self.versus_model is None:
                raise ValueError("a ratio needs versus (another file-system entry) or versus_model")
            if self.versus_model is not None and self.model is None:
                raise ValueError("versus_model needs model (the ratio's numerator model)")
            if self.versus == self.filesystem and self.versus_model is None:
                raise ValueError("versus names the same entry as filesystem: name another, or give versus_model")
        return self

    @property
    def denominator(self) -> str:
        """The file-system entry of a ratio's denominator (the same entry for a model ratio)."""
        return self.versus or self.filesystem


class PaperSection(BaseModel):
    """``[paper]``: the paper's figures this study can be compared on and its deviations
    from the paper's setup, shown above them in the report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    figures: list[PaperFigure] = Field(default_factory=list, description="the paper's figures "
                                       "([[paper.figures]] rows)")
    deviations: list[str] = Field(default_factory=list, description="how this study's setup differs from "
                                  "the paper's, one sentence each")


def validate_paper(spec: Any, source: str) -> None:
    """Each figure names the study's workload, file-system entries, a metric of that
    workload's kind, a whole case of its axes and models the entries are replayed on.
    Raises SpecError naming the field and what is allowed."""
    paper: PaperSection | None = spec.paper
    if paper is None:
        return
    from .metrics import UndeclaredMetric, unit_of
    from .workloads import WORKLOADS

    workloads = {w.name: w for w in spec.workloads}
    for i, figure in enumerate(paper.figures):
        where = f"paper.figures[{i}]"
        workload = workloads.get(figure.workload)
        if workload is None:
            raise SpecError(f"no workload named {figure.workload!r} in this study; its workloads: "
                            f"{', '.join(workloads)}", source=source, field=f"{where}.workload")
        for key in ("filesystem", "versus"):
            name = getattr(figure, key)
            if name is not None and name not in spec.filesystems:
                raise SpecError(f"no file-system entry named {name!r} in this study; its entries: "
                                f"{', '.join(spec.filesystems)}", source=source, field=f"{where}.{key}")
        metrics = WORKLOADS.get(workload.kind).metrics
        traced = figure.metric.startswith("trace_") and spec.study.trace
        if traced:
            from .job import tracing  # noqa: F401  (declares the trace metrics' units)
        if not traced and not any(figure.metric == s or figure.metric.endswith("_" + s) for s in metrics):
            raise SpecError(f"{figure.metric!r} is not a metric of a {workload.kind} workload: its metric names "
                            f"end in {', '.join(sorted(metrics))}" + (" (or trace_*, with trace = true)"),
                            source=source, field=f"{where}.metric")
        if figure.unit is not None:
            try:
                stored = unit_of(figure.metric)
            except UndeclaredMetric:
                stored = None
            if stored != UNITS[figure.unit][0]:
                fitting = ", ".join(u for u, (base, _) in UNITS.items() if base == stored)
                raise SpecError(f"{figure.metric!r} is stored in {stored}, not convertible from {figure.unit}: "
                                f"give the value in one of {fitting or 'no unit fslab converts'}",
                                source=source, field=f"{where}.unit")
        _check_case(figure, workload.axes, source, where)
        for key, fs in (("model", figure.filesystem), ("versus_model", figure.denominator)):
            model = getattr(figure, key)
            if model is None:
                continue
            section = spec.filesystems[fs]
            replayed = list(section.simulate if section.simulate is not None else spec.study.simulate)
            if model not in replayed:
                raise SpecError(f"{fs} is not replayed on {model!r}: its models are "
                                f"{', '.join(replayed) or 'none (no simulate)'}", source=source,
                                field=f"{where}.{key}")
        if figure.model is not None and figure.versus is not None and figure.versus_model is None:
            section = spec.filesystems[figure.versus]
            replayed = list(section.simulate if section.simulate is not None else spec.study.simulate)
            if figure.model not in replayed:
                raise SpecError(f"{figure.versus} is not replayed on {figure.model!r}: its models are "
                                f"{', '.join(replayed) or 'none'}; a ratio's two cells need the same model "
                                "(or give versus_model)", source=source, field=f"{where}.model")


def _check_case(figure: PaperFigure, axes: dict[str, list[Any]], source: str, where: str) -> None:
    """The case names every axis of the workload once, with one of its values: so the
    figure stands beside exactly one cell per file-system entry."""
    for key, value in figure.case.items():
        if key not in axes:
            raise SpecError(f"{key!r} is not an axis of workload {figure.workload!r}; its axes: "
                            f"{', '.join(axes) or 'none'}", source=source, field=f"{where}.case.{key}")
        if value not in axes[key]:
            raise SpecError(f"{value!r} is not a value of axis {key!r}: its values are {axes[key]}",
                            source=source, field=f"{where}.case.{key}")
    missing = [a for a in axes if a not in figure.case]
    if missing:
        raise SpecError(f"the case leaves axes {', '.join(missing)} open: give a value for each, so the "
                        "figure stands beside one cell", source=source, field=f"{where}.case")
