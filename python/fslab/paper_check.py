"""Checking a study's ``[paper]`` figures (fslab.paper) against the study when it loads:
each side of each figure names the study's workload, file-system entries, a metric of
that workload's kind (or a block-trace metric of a traced study), a whole case of its axes
and models the entries are replayed on. Apart from the schema because it reads the
workload registry and the trace metrics' declarations, which import the schema themselves."""

from __future__ import annotations

from typing import Any

from .errors import SpecError
from .paper import UNITS, PaperFigure, PaperSection


def validate_paper(spec: Any, source: str) -> None:
    """Each figure's sides name the study's workloads, file-system entries, metrics of
    those workloads' kinds, whole cases of their axes and models the entries are replayed
    on. Raises SpecError naming the field and what is allowed."""
    paper: PaperSection | None = spec.paper
    if paper is None:
        return
    workloads = {w.name: w for w in spec.workloads}
    for i, figure in enumerate(paper.figures):
        _check_figure(spec, figure, workloads, source, f"paper.figures[{i}]")


def _check_figure(spec: Any, figure: PaperFigure, workloads: dict[str, Any], source: str, where: str) -> None:
    for key in ("workload", "versus_workload", "baseline_workload"):
        name = getattr(figure, key)
        if name is not None and name not in workloads:
            raise SpecError(f"no workload named {name!r} in this study; its workloads: {', '.join(workloads)}",
                            source=source, field=f"{where}.{key}")
    for key in ("filesystem", "versus"):
        value = getattr(figure, key)
        for k, name in enumerate([value] if isinstance(value, str) else value or []):
            if name not in spec.filesystems:
                at = f"{where}.{key}" + ("" if isinstance(value, str) else f"[{k}]")
                raise SpecError(f"no file-system entry named {name!r} in this study; its entries: "
                                f"{', '.join(spec.filesystems)}", source=source, field=at)
    num, den = workloads[figure.workload], workloads[figure.den_workload]
    _check_metric(spec, figure.metric, num, source, f"{where}.metric")
    if figure.versus_metric is not None:
        _check_metric(spec, figure.versus_metric, den, source, f"{where}.versus_metric")
        a, b = _unit(figure.metric), _unit(figure.versus_metric)
        if a != b:
            raise SpecError(f"a ratio of {figure.metric!r} ({a}) over {figure.versus_metric!r} ({b}) mixes units: "
                            "name a metric in the same unit", source=source, field=f"{where}.versus_metric")
    if figure.unit is not None:
        stored = _unit(figure.metric)
        if stored != UNITS[figure.unit][0]:
            fitting = ", ".join(u for u, (base, _) in UNITS.items() if base == stored)
            raise SpecError(f"{figure.metric!r} is stored in {stored}, not convertible from {figure.unit}: "
                            f"give the value in one of {fitting or 'no unit fslab converts'}",
                            source=source, field=f"{where}.unit")
    for k, axis in enumerate(figure.across):
        if axis not in num.axes:
            raise SpecError(f"{axis!r} is not an axis of workload {figure.workload!r}; its axes: "
                            f"{', '.join(num.axes) or 'none'}", source=source, field=f"{where}.across[{k}]")
    _check_values(figure.case, num.axes, figure.workload, source, f"{where}.case")
    _check_values(figure.versus_case, den.axes, figure.den_workload, source, f"{where}.versus_case")
    if figure.baseline_workload is not None:
        base = workloads[figure.baseline_workload]
        if sorted(base.axes) != sorted(num.axes):
            raise SpecError(f"workload {figure.baseline_workload!r} has other axes than {figure.workload!r} "
                            f"({', '.join(base.axes) or 'none'} against {', '.join(num.axes) or 'none'}): a "
                            "side's baseline is the same case in it", source=source,
                            field=f"{where}.baseline_workload")
    axes = {w.name: w.axes for w in spec.workloads}
    for num_side, den_side in figure.pairs(axes):
        for side, field in ((num_side, "case"), (den_side, "versus_case")):
            missing = [a for a in workloads[side.workload].axes if a not in side.case_dict]
            if missing:
                raise SpecError(f"the {'numerator' if field == 'case' else 'denominator'}'s case leaves axes "
                                f"{', '.join(missing)} of workload {side.workload!r} open: give a value for each "
                                f"(in {field}), or name them in across, so the side stands beside one cell",
                                source=source, field=f"{where}.{field}")
    _check_models(spec, figure, source, where)


def _unit(metric: str) -> str | None:
    from .metrics import UndeclaredMetric, unit_of

    try:
        return unit_of(metric)
    except UndeclaredMetric:
        return None


def _check_metric(spec: Any, metric: str, workload: Any, source: str, field: str) -> None:
    from .workloads import WORKLOADS

    metrics = WORKLOADS.get(workload.kind).metrics
    traced = metric.startswith("trace_") and spec.study.trace
    if traced:
        from . import trace_metrics  # noqa: F401  (it declares the trace metrics' units)
    if not traced and not any(metric == s or metric.endswith("_" + s) for s in metrics):
        raise SpecError(f"{metric!r} is not a metric of a {workload.kind} workload: its metric names "
                        f"end in {', '.join(sorted(metrics))} (or trace_*, with trace = true)",
                        source=source, field=field)


def _check_values(case: dict[str, Any], axes: dict[str, list[Any]], workload: str, source: str,
                  where: str) -> None:
    for key, value in case.items():
        if key not in axes:
            raise SpecError(f"{key!r} is not an axis of workload {workload!r}; its axes: "
                            f"{', '.join(axes) or 'none'}", source=source, field=f"{where}.{key}")
        if value not in axes[key]:
            raise SpecError(f"{value!r} is not a value of axis {key!r}: its values are {axes[key]}",
                            source=source, field=f"{where}.{key}")


def _replayed(spec: Any, fs: str) -> list[str]:
    section = spec.filesystems[fs]
    return list(section.simulate if section.simulate is not None else spec.study.simulate)


def _check_models(spec: Any, figure: PaperFigure, source: str, where: str) -> None:
    """The model (and versus_model) is one every entry of the figure is replayed on: a
    ratio's two sides, and a value and the ratios of its device, on one model."""
    if figure.versus_model is not None:
        for key in ("model", "versus_model"):
            model = getattr(figure, key)
            if model not in _replayed(spec, figure.denominator):
                raise SpecError(f"{figure.denominator} is not replayed on {model!r}: its models are "
                                f"{', '.join(_replayed(spec, figure.denominator)) or 'none (no simulate)'}",
                                source=source, field=f"{where}.{key}")
        return
    if figure.model is None:
        return
    for fs in dict.fromkeys(figure.numerators + figure.denominators):
        if figure.model not in _replayed(spec, fs):
            raise SpecError(f"{fs} is not replayed on {figure.model!r}: its models are "
                            f"{', '.join(_replayed(spec, fs)) or 'none (no simulate)'}; every side of a figure "
                            "needs the model (or give versus_model)", source=source, field=f"{where}.model")
