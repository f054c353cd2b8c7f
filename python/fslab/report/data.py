"""The report as plain data: every part of a study's report, built from the store only by
report.model and the section plug-ins (report.sections), and drawn by each renderer —
terminal (rich), HTML, Markdown, JSON — so they cannot disagree about a number.

Numbers stay in the stored base unit (B/s, ns, …) next to the display divisor and unit
chosen for the row; texts ("mean ± half-width (n=k)") come from report.labels. Nothing
here computes or draws; this module imports no other part of the report."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Literal

from ..datarecords import asdict
from ..stored import SkippedFilesystem

# 2: columns ranked within their backend and guest kernel (SummaryRow.bests, Report.rank_groups),
#    each difference with its text and verdict (Versus), run caveats beside their cells.
SCHEMA = "fslab-report/2"


@dataclass
class Versus:
    """One file system against the best of its rank group in the row (one backend and guest
    kernel): relative difference of means with its 95% interval (delta method on the log
    ratio), Holm-adjusted p and Hedges' g."""
    reference: str
    relative: float  # mean / reference mean - 1
    low: float | None  # the interval of ``relative``, same direction and scale
    high: float | None
    p_adjusted: float | None  # None: not tested (too few runs)
    significant: bool
    effect_size: float | None
    method: str
    family: int  # comparisons in the Holm family (the row's group); 0 when not tested
    text: str  # labels.difference_text: '-40.3% (95% CI -45.1% to -35.2%)'
    verdict: str  # labels.verdict_text, or 'no verdict: why'


@dataclass
class Estimate:
    filesystem: str
    n: int
    mean: float
    half_width: float | None
    values: list[float]
    text: str  # mean ± half-width (n=k), display unit
    versus_best: Versus | None = None  # against the best of its own rank group
    group: str = "host"  # its rank group (labels.rank_group): "host", "guest 6.1"


@dataclass
class SummaryRow:
    label: str
    workload: str
    case: str
    metric: str
    unit: str  # stored (base) unit
    display_unit: str
    divisor: float
    higher_is_better: bool
    bests: dict[str, str]  # rank group -> its best column (groups of 2+ columns with a number)
    estimates: list[Estimate]
    notes: list[str] = field(default_factory=list)  # failed runs, runs without a number
    fs_notes: dict[str, list[str]] = field(default_factory=dict)  # the same, short, per column
    caveats: dict[str, list[str]] = field(default_factory=dict)  # column -> marks of its Caveats
    ranked: bool = True  # False: no better direction (a count; metrics.MetricKind.ranked): no best


@dataclass
class Caveat:
    """What made runs of a cell measure something else than their parameters say (the
    job's provenance ``caveats``, e.g. direct=1 served buffered under data=journal): a mark
    beside each such cell, the text once in a note under the table."""
    mark: str  # '‡1'
    text: str
    cells: list[str]  # 'ext4 on rand4k (3 of 3 runs)'


@dataclass
class Finding:
    text: str
    significant: bool
    label: str
    metric: str
    decided: bool = True  # False: no test could answer (too few runs, no spread): no verdict


@dataclass
class Bar:
    filesystem: str
    case: str
    n: int
    mean: float  # display unit
    low: float | None
    high: float | None
    values: list[float]  # each run, display unit
    crosses_zero: bool  # the interval reaches below 0 although every value is >= 0


@dataclass
class ChartData:
    title: str
    metric: str
    display_unit: str
    higher_is_better: bool
    cases: list[str]
    filesystems: list[str]
    bars: list[Bar]


# "workload": a workload kind's own table (Bonnie++'s Table IV, seed 003's ratios);
# "trace": measured on the device under test; "prediction": a device model's, not measured.
TableKind = Literal["workload", "trace", "prediction"]


@dataclass
class TableSection:
    """A table as texts. Rows whose first cell is empty continue the group above (a file
    system's ops); renderers draw a rule before each new group."""
    kind: TableKind
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    # (row, column) of cells a reader must not miss (a lossy trace): each renderer makes
    # them stand out its own way.
    alerts: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class ModelSection:
    """A section of its own that a section plug-in adds (e.g. seed 003's figures): plain
    statements, charts and tables. Every renderer draws it the same way."""
    id: str  # the HTML section id
    title: str
    intro: str
    statements: list[str] = field(default_factory=list)
    charts: list[ChartData] = field(default_factory=list)
    tables: list[TableSection] = field(default_factory=list)
    note: str = ""
    # Its numbers for the JSON report, under a top-level key named for the section (its id,
    # '-' as '_'); empty for a section whose tables say everything.
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class FailedRun:
    filesystem: str
    workload: str
    repetition: int  # 1-based
    reason: str
    details: str
    run_id: int | None = None  # `fslab report --run ID` shows it whole
    command: str = ""  # that command, with the results directory the report was read from (with a run id)


@dataclass
class TracePlot:
    id: str  # file-name-safe, unique in the report
    kind: Literal["size_cdf", "lba"]
    workload: str
    title: str
    caption: str  # the runs it comes from, completeness
    filesystems: list[str]
    run_ids: list[int]
    complete: bool
    lost_events: int | None  # summed over the plotted runs; None when unknown
    data: dict[str, Any]  # the plotted numbers, summarised (JSON; its keys depend on ``kind``)
    image_png: bytes = field(default=b"", repr=False)  # empty unless images were asked for
    # file system -> the stream plotted (analysis.traces.Stream.key: device, md, members)
    streams: dict[str, str] = field(default_factory=dict)

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.image_png).decode()


@dataclass
class Report:
    schema: str
    study_id: int
    name: str
    source: str
    status: str
    quick: bool
    filesystems: list[str]
    rows: list[SummaryRow]
    findings: list[Finding]
    charts: list[ChartData]
    provenance_columns: list[str]
    provenance: list[list[str]]  # [field, value per column]
    failed: list[FailedRun]
    skipped: list[SkippedFilesystem]
    tables: list[TableSection]  # the section plug-ins' tables: workload, trace, prediction
    runs_stored: int
    runs_planned: int
    legend: str
    # Filled by report.outputs when the study has traced runs (reading traces is not free).
    trace_plots: list[TracePlot]
    trace_missing: list[str]  # trace files gone: runs left out
    sections: list[ModelSection]  # the section plug-ins' own sections
    # Runs from several machines: which, and the facts they differ in (report.hosts).
    host_warnings: list[str]
    # The disks under the device differ (report.members): first line, then one per fact.
    device_warnings: list[str] = field(default_factory=list)
    rank_groups: dict[str, list[str]] = field(default_factory=dict)  # rank group -> its columns
    caveats: list[Caveat] = field(default_factory=list)  # their marks are in the table's cells

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for plot in out["trace_plots"]:  # the numbers plotted, not the picture
            del plot["image_png"]
        for section in self.sections:
            if section.data:
                out[section.id.replace("-", "_")] = section.data
        return out
