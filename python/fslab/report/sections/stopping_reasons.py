"""Why each cell of a ``repetitions = "auto"`` study stopped repeating (report.stopping):
one table, for auto studies only."""

from __future__ import annotations

from ..data import TableSection
from ..stopping import stopping_table
from .base import SECTIONS, Section, StudyData


def build(study: StudyData) -> list[TableSection]:
    return [] if study.auto is None else [stopping_table(study.cells, study.auto)]


SECTIONS.register("stopping_reasons", Section(build, order=400))
