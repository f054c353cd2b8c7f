"""Report sections that belong to one kind of workload (Bonnie++'s Table IV, ...). They
register here, keyed by the workload kind the cells stored, so the report never imports
a workload plug-in: the report knows its sections, not the other way round."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# (runs, cells, the study's source: a file or "preset NAME") -> renderables for the terminal.
# The source lets a section use a paper's labels only for the preset that reproduces it.
Builder = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], list[Any]]
_TABLES: dict[str, list[Builder]] = {}


def register_tables(workload_kind: str, build: Builder) -> None:
    _TABLES.setdefault(workload_kind, []).append(build)


@dataclass
class ModelSection:
    """A section of its own that a workload kind adds to the report model (e.g. seed 003's
    figures): plain statements, charts (report.model.ChartData) and tables
    (report.model.TableSection). Every renderer draws it the same way."""
    id: str  # the HTML section id
    title: str
    intro: str
    statements: list[str] = field(default_factory=list)
    charts: list[Any] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)
    note: str = ""


# (runs, cells, source) -> sections; registered by workload kind like the tables above.
SectionBuilder = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], list[ModelSection]]
_SECTIONS: dict[str, list[SectionBuilder]] = {}


def register_sections(workload_kind: str, build: SectionBuilder) -> None:
    _SECTIONS.setdefault(workload_kind, []).append(build)


def model_sections(runs: list[dict[str, Any]], cells: list[dict[str, Any]], source: str = "") -> list[ModelSection]:
    """Every registered model section for the workload kinds this study has."""
    from . import alloc_figures  # noqa: F401  (registers itself)

    out: list[ModelSection] = []
    for kind in dict.fromkeys(c["workload_kind"] for c in cells):
        for build in _SECTIONS.get(kind, []):
            out += build(runs, cells, source)
    return out


def extra_tables(runs: list[dict[str, Any]], cells: list[dict[str, Any]], source: str = "") -> list[Any]:
    """Every registered section for the workload kinds this study has, in study order."""
    from . import bonnie_table  # noqa: F401  (registers itself)

    out: list[Any] = []
    for kind in dict.fromkeys(c["workload_kind"] for c in cells):
        for build in _TABLES.get(kind, []):
            out += build(runs, cells, source)
    return out


def rich_section(m: ModelSection) -> Any:
    """A model section for the terminal: its statements and tables; its charts are drawn
    by `fslab report --html` (their numbers are in --markdown and --json)."""
    from rich.console import Group
    from rich.text import Text

    from .terminal import section_renderable

    parts: list[Any] = [Text(m.title, style="bold"), Text(m.intro, style="dim")]
    parts += [Text(f"• {s}") for s in m.statements]
    parts += [section_renderable(t) for t in m.tables]
    if m.charts:
        parts.append(Text(f"{len(m.charts)} chart(s): fslab report --html FILE", style="dim"))
    return Group(*parts)

