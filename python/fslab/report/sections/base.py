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
    has nothing for it). ``order`` is its place in the report, declared (never taken from
    its name): lower first, no two sections alike. With ``workload_kind`` it is built only
    for studies that have cells of that kind, in the order the study's kinds first appear
    (a kind's own sections by ``order``); without, for every study, after those, by
    ``order``."""
    build: Builder
    order: int
    workload_kind: str | None = None


class SectionRegistry(Registry[Section]):
    """The report sections: a section must declare its place, and no two may share one."""

    def register(self, name: str, entry: Section) -> Section:
        if not isinstance(entry.order, int) or isinstance(entry.order, bool):
            raise ValueError(f"report section {name!r}: order must be an int (its place in the report), "
                             f"not {entry.order!r}")
        taken = [other for other, section in self.items() if section.order == entry.order]
        if taken:
            raise ValueError(f"report section {name!r}: order {entry.order} is already {taken[0]!r}'s; "
                             "give it a free place")
        return super().register(name, entry)

    def in_order(self) -> list[tuple[str, Section]]:
        """Every section with its name, by declared order."""
        return sorted(self.items(), key=lambda item: item[1].order)


SECTIONS = SectionRegistry("report section")


def build_sections(study: StudyData, registry: SectionRegistry = SECTIONS,
                   ) -> tuple[list[TableSection], list[ModelSection]]:
    """Every section of ``registry`` that applies to the study: (tables, own sections)."""
    kinds = list(dict.fromkeys(c["workload_kind"] for c in study.cells))
    ordered = [s for _, s in registry.in_order()]
    chosen = [s for kind in kinds for s in ordered if s.workload_kind == kind]
    chosen += [s for s in ordered if s.workload_kind is None]
    tables: list[TableSection] = []
    sections: list[ModelSection] = []
    for section in chosen:
        for part in section.build(study):
            if isinstance(part, TableSection):
                tables.append(part)
            else:
                sections.append(part)
    return tables, sections
