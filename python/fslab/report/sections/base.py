"""The contract of a report section plug-in, and the registry its modules register in.

A section is built from the stored study only (``StudyData``: its runs, its cells, the
paper it reproduces) and returns data — ``TableSection``s and ``ModelSection``s — never a
rich object; every renderer (terminal, HTML, Markdown, JSON) draws what it returns. A
section that belongs to one kind of workload names that kind (the kind the cells stored),
so the report never imports a workload plug-in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...registry import Registry
from ...stored import AutoFacts, StoredCell, StoredRun, StudyRow
from ..data import ModelSection, TableSection


@dataclass(frozen=True)
class StudyData:
    """What a section may read: the study's stored runs and cells (the study file's order)
    and ``paper``, the published study it reproduces (``StudyRow.paper``: a section uses a
    paper's labels and tests its claims only for that paper); ``auto``, what a
    ``repetitions = "auto"`` study decided (None for a fixed number of repetitions);
    ``study``, the stored study's row (its order seed, dates, source)."""
    runs: list[StoredRun]
    cells: list[StoredCell]
    paper: str | None = None
    auto: AutoFacts | None = None
    study: StudyRow | None = None


Part = TableSection | ModelSection
Builder = Callable[[StudyData], Sequence[Part]]


@dataclass(frozen=True)
class Section:
    """A report section. ``build`` returns its tables and sections (none when the study
    has nothing for it). With ``workload_kind`` it is built only for studies that have
    cells of that kind, in the order the study's kinds first appear; without, for every
    study, after those."""
    build: Builder
    workload_kind: str | None = None


SECTIONS: Registry[Section] = Registry("report section")


def build_sections(study: StudyData) -> tuple[list[TableSection], list[ModelSection]]:
    """Every registered section that applies to the study: (tables, own sections)."""
    kinds = list(dict.fromkeys(c["workload_kind"] for c in study.cells))
    chosen = [s for kind in kinds for _, s in SECTIONS.items() if s.workload_kind == kind]
    chosen += [s for _, s in SECTIONS.items() if s.workload_kind is None]
    tables: list[TableSection] = []
    sections: list[ModelSection] = []
    for section in chosen:
        for part in section.build(study):
            if isinstance(part, TableSection):
                tables.append(part)
            else:
                sections.append(part)
    return tables, sections
