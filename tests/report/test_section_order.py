"""A report section's place is the order it declares, not its registered name: the report
follows it, two sections cannot share a place, and a section cannot leave its place out."""

from __future__ import annotations

from typing import Any

import pytest

from fslab.report.data import TableSection
from fslab.report.sections import SECTIONS, Section, StudyData, build_sections
from fslab.report.sections.base import SectionRegistry

# The report's sections as the report shows them: a workload kind's own first (in the order
# the study's kinds appear), then every study's.
DECLARED = ["fio_groups", "bonnie-table-iv", "alloc-figures",
            "definitions", "explanations", "paper-beside-fslab", "stopping_reasons", "trace-tables"]


def _titled(title: str) -> Section:
    return Section(lambda study: [TableSection("trace", title, ["c"], [["v"]])], order=0)


def _section(title: str, order: int, kind: str | None = None) -> Section:
    return Section(_titled(title).build, order=order, workload_kind=kind)


def _cells(*kinds: str) -> list[Any]:
    return [{"id": k, "filesystem": "ext4", "workload": k, "workload_kind": k, "axes": {}, "params": {},
             "primary_metric": "iops"} for k in kinds]


def test_the_shipped_sections_run_in_their_declared_order() -> None:
    assert [name for name, _ in SECTIONS.in_order()] == DECLARED
    orders = [section.order for _, section in SECTIONS.in_order()]
    assert orders == sorted(set(orders))  # distinct, increasing


def test_the_report_follows_the_declared_order_not_the_names() -> None:
    registry = SectionRegistry("report section")
    # Names in the reverse of their places: an alphabetical report would come out z, y, x.
    registry.register("a-last", _section("last", 30))
    registry.register("b-kind", _section("fio's own", 99, kind="fio"))
    registry.register("c-first", _section("first", 10))
    registry.register("d-second", _section("second", 20))
    tables, _ = build_sections(StudyData([], _cells("fio")), registry)
    assert [t.title for t in tables] == ["fio's own", "first", "second", "last"]
    tables, _ = build_sections(StudyData([], _cells("bonnie")), registry)
    assert [t.title for t in tables] == ["first", "second", "last"]  # no fio cells: not built


def test_two_sections_cannot_share_a_place() -> None:
    registry = SectionRegistry("report section")
    registry.register("one", _section("one", 10))
    with pytest.raises(ValueError, match=r"'two': order 10 is already 'one'"):
        registry.register("two", _section("two", 10))
    assert [name for name, _ in registry.in_order()] == ["one"]


def test_a_section_must_declare_its_place() -> None:
    build = _titled("x").build
    with pytest.raises(TypeError, match="order"):
        Section(build)  # type: ignore[call-arg]
    registry = SectionRegistry("report section")
    with pytest.raises(ValueError, match="order must be an int"):
        registry.register("unplaced", Section(build, order=None))  # type: ignore[arg-type]
