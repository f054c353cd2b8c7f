"""Checking a study's ``[paper]`` figures (fslab.paper) against the study when it loads:
each names the study's workload, file-system entries, a metric of that workload's kind (or
a block-trace metric of a traced study), a whole case of its axes and models the entries
are replayed on. Apart from the schema because it reads the workload registry and the
trace metrics' declarations, which import the schema themselves."""

from __future__ import annotations

from typing import Any

from .errors import SpecError
from .paper import UNITS, PaperFigure, PaperSection


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
            from .job import tracing  # noqa: F401  (it declares the trace metrics' units)
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
