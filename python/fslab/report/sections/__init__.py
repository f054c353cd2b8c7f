"""Report sections beyond the comparison table, one plug-in module each in this package
(found when the package is imported, like workloads and devices): Bonnie++'s Table IV
(``bonnie_table``), the allocation figures of seed 003 (``alloc_figures``), the block-trace
and prediction tables of traced studies (``trace_tables``). Each module registers a
``Section`` (see ``base``) whose builder returns plain data, with its place in the report
(``order``, distinct per section); adding a section touches one module here plus its test."""

from __future__ import annotations

import importlib
import pkgutil

from .base import SECTIONS, Section, StudyData, build_sections

__all__ = ["SECTIONS", "Section", "StudyData", "build_sections"]


def _discover() -> None:
    """Every module in this package registers its sections when imported."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
