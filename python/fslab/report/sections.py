"""Report sections that belong to one kind of workload (Bonnie++'s Table IV, ...). They
register here, keyed by the workload kind the cells stored, so the report never imports
a workload plug-in: the report knows its sections, not the other way round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (runs, cells, the study's source: a file or "preset NAME") -> renderables for the terminal.
# The source lets a section use a paper's labels only for the preset that reproduces it.
Builder = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], list[Any]]
_TABLES: dict[str, list[Builder]] = {}


def register_tables(workload_kind: str, build: Builder) -> None:
    _TABLES.setdefault(workload_kind, []).append(build)


def extra_tables(runs: list[dict[str, Any]], cells: list[dict[str, Any]], source: str = "") -> list[Any]:
    """Every registered section for the workload kinds this study has, in study order."""
    from . import bonnie_table  # noqa: F401  (registers itself)

    out: list[Any] = []
    for kind in dict.fromkeys(c["workload_kind"] for c in cells):
        for build in _TABLES.get(kind, []):
            out += build(runs, cells, source)
    return out
