"""Table IV of seed 000, rebuilt from stored Bonnie++ runs: five rows (the paper's names
beside Bonnie++'s, the paper's only for a study that reproduces seed 000), one column per
file system, each a mean ± 95% interval in MiB/s over n runs, and which differences
between file systems are significant.

For traced runs replayed on device models, a second table puts each test's predicted
figure per model (``pred_<model>_<test metric>``, fslab.phase_predictions) beside the
measured one: seed 001's HDD vs SSD per test, seed 000's Table IV on an SSD model.

Built only from stored runs and cells (like report/tables.py, whose row grouping and cell
text it reuses); the statistics are fslab.analysis.stats: Student-t intervals, Welch's
t-test for every pair of file systems, Holm-corrected within each row.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from ...analysis.stats import CONFIDENCE, MIN_N_FOR_VERDICT, NoVerdict, holm, summarize, welch_t
from ...phase_predictions import is_marked
from ...predictions import metric_name
from ...stored import STATUS_OK, StoredCell, StoredRun
from ..data import TableSection
from ..labels import cell_label, fs_column, mean_pm
from ..predicted import models_in
from ..tables import NO_VERDICT, RowData, build_table, cell_text
from ..units import fmt
from .base import SECTIONS, Section, StudyData

# (the paper's row name, Bonnie++'s test, the metric fslab stores)
TABLE_IV_ROWS: tuple[tuple[str, str, str], ...] = (
    ("Random Write", "per-char write (putc)", "putc_bytes_per_s"),
    ("Sequential Write", "block write", "block_write_bytes_per_s"),
    ("Sequential Rewrite", "rewrite", "rewrite_bytes_per_s"),
    ("Random Read", "per-char read (getc)", "getc_bytes_per_s"),
    ("Sequential Read", "block read", "block_read_bytes_per_s"),
)
PAPER = "seed-000"  # the published study whose row names the table carries (StudyRow.paper)
MIB = float(1 << 20)
ALPHA = 1 - CONFIDENCE

LEGEND = (
    "Values: mean ± half-width of the 95% confidence interval (Student t) over n runs, in MiB/s "
    "(Bonnie++ counts K = 1024 bytes). 'best' marks the best mean in the row among the columns of one "
    "backend (and guest kernel), the other columns of that backend give their difference to it; guest "
    "and host columns are never compared. Last column: pairs of file systems whose means differ significantly "
    "(Welch's t-test, Holm-corrected over the row's pairs, α = 0.05); '≈' lists pairs that do not; "
    f"'? {NO_VERDICT}' pairs with no verdict (fewer than {MIN_N_FOR_VERDICT} runs each, or no spread in either). "
    "The paper's 'Random' rows are Bonnie++'s per-character tests: sequential, one byte at a time. "
    "Bonnie++ 2.00a does one system call per byte there (1.0x used stdio putc/getc), so those rows "
    "measure system-call cost, not the device, and are not comparable with the paper's numbers."
)


@dataclass(frozen=True)
class PairVerdict:
    a: str
    b: str
    higher: str  # the file system with the higher mean
    p_adjusted: float | None  # None: no verdict
    significant: bool


def pairwise(row: RowData) -> list[PairVerdict]:
    """Welch's t for every pair of file systems of one rank group (backend and guest kernel:
    a guest column is never tested against a host one) with >= MIN_N_FOR_VERDICT values and
    some spread, Holm over the tested pairs; the others get no verdict (p_adjusted None)."""
    names = [fs for fs, values in row.values.items() if values]
    pairs = [(a, b) for a, b in combinations(names, 2) if row.group_of.get(a) == row.group_of.get(b)]
    tests: dict[tuple[str, str], float] = {}
    for a, b in pairs:
        if min(len(row.values[a]), len(row.values[b])) < MIN_N_FOR_VERDICT:
            continue
        try:
            tests[(a, b)] = welch_t(row.values[a], row.values[b]).p_value
        except NoVerdict:
            continue
    adjusted = dict(zip(tests, holm(list(tests.values()))))
    out: list[PairVerdict] = []
    for a, b in pairs:
        higher = a if row.summaries[a].mean >= row.summaries[b].mean else b
        p = adjusted.get((a, b))
        out.append(PairVerdict(a, b, higher, p, p is not None and p < ALPHA))
    return out


def verdict_text(row: RowData) -> str:
    verdicts = pairwise(row)
    if not verdicts:
        return "— (no two file systems of one backend: nothing to compare)"
    parts = []
    for v in verdicts:
        lower = v.b if v.higher == v.a else v.a
        if v.p_adjusted is None:
            parts.append(f"{v.a} ? {v.b} {NO_VERDICT}")
        elif v.significant:
            parts.append(f"{v.higher} > {lower} (p={v.p_adjusted:.2g})")
        else:
            parts.append(f"{v.a} ≈ {v.b} (p={v.p_adjusted:.2g})")
    return "; ".join(parts)


def build_table_iv(runs: list[StoredRun], cells: list[StoredCell]
                   ) -> list[tuple[str, list[str], list[tuple[str, str, RowData]]]]:
    """For each Bonnie++ workload (cell label without the file system): its title, file
    systems in study order, and the five Table IV rows."""
    bonnie_cells = [c for c in cells if c["workload_kind"] == "bonnie"]
    bonnie_runs = [r for r in runs if r["cell"]["workload_kind"] == "bonnie"]
    if not bonnie_cells:
        return []
    tables: dict[str, list[tuple[str, str, RowData]]] = {}
    filesystems: list[str] = []
    for paper_name, bonnie_name, metric in TABLE_IV_ROWS:
        data = build_table(bonnie_runs, metric, bonnie_cells)
        filesystems = data.filesystems
        for row in data.rows:
            tables.setdefault(row.label, []).append((paper_name, bonnie_name, row))
    return [(label, filesystems, rows) for label, rows in tables.items()]


def _sizes_used(runs: list[StoredRun], label_workload: str) -> str:
    """File size and memory limit the runs used (auto sizing may differ between runs)."""
    sizes: set[int] = set()
    limits: set[int] = set()
    for run in runs:
        if run["cell"]["workload_kind"] != "bonnie" or run["status"] != STATUS_OK:
            continue
        if run["cell"]["workload"] != label_workload:
            continue
        info = run["provenance"].get("tool_info") or {}
        if "sizes" in info:
            sizes.add(int(info["sizes"]["size_bytes"]))
        limit = (info.get("memory_limit") or {}).get("limit_bytes")
        if limit:
            limits.add(int(limit))

    def span(values: set[int]) -> str:
        if not values:
            return "?"
        lo, hi = min(values) / MIB, max(values) / MIB
        return f"{fmt(lo)} MiB" if lo == hi else f"{fmt(lo)}–{fmt(hi)} MiB"

    return f"file {span(sizes)}, memory cgroup limit (-r) {span(limits)}"


def table_iv(runs: list[StoredRun], cells: list[StoredCell], paper: bool = True) -> list[TableSection]:
    """One Table IV per Bonnie++ workload, the legend in the last one's note. Without
    ``paper`` (a user's own Bonnie++ study) the same table, without the paper's names."""
    out: list[TableSection] = []
    for label, filesystems, rows in build_table_iv(runs, cells):
        workload = rows[0][2].label.split(" [")[0] if rows else label
        heading = "Table IV layout (seed 000): Bonnie++" if paper else "Bonnie++"
        columns = (["paper's row"] if paper else []) + ["Bonnie++ test", *[f"{fs} (MiB/s)" for fs in filesystems],
                                                        "significant differences"]
        table = TableSection("workload", f"{heading} {label} — {_sizes_used(runs, workload)}", columns, [])
        for paper_name, bonnie_name, row in rows:
            table.rows.append([*([paper_name] if paper else []), bonnie_name,
                               *[cell_text(row, fs, MIB) for fs in filesystems], verdict_text(row)])
        out.append(table)
    if out:
        out[-1].note = LEGEND if paper else LEGEND.split(" The paper's 'Random' rows")[0] + (
            " Per-character rows: Bonnie++ 2.00a makes one system call per byte there, so they measure "
            "system-call cost, not the device.")
    return out


PREDICTED_LEGEND = (
    "Predicted columns: PREDICTIONS, not measurements — each Bonnie++ test's requests (those issued while it "
    "ran, by the block trace's clock) replayed alone on the device model, closed loop at the test's own "
    "concurrency, with a cache flush after a test that wrote; the figure is the test's bytes over the model's "
    "time, mean ± 95% interval over n runs in MiB/s. It assumes the test is device-bound: the per-char rows "
    "are CPU-bound in Bonnie++ 2.00a (a system call per byte), so their prediction is an upper bound. "
    "'†': some run's figure is marked — its writes were partly written back after the test ended, it read "
    "partly from the page cache, or a write cache took most of its writes (the metric's note says which). "
    "Measured columns: this machine's image device. Ratio columns: the predicted means' ratio (a later "
    "model over the first)."
)


def _models(runs: list[StoredRun]) -> list[str]:
    """The models any run has a per-test prediction for, in first-seen order."""
    tests = {metric for _, _, metric in TABLE_IV_ROWS}
    return [m for m in models_in(runs) if any(metric_name(m, t) in r["metrics"] for r in runs for t in tests)]


def _column(runs: list[StoredRun], metric: str) -> tuple[list[float], list[str]]:
    """The runs' values of ``metric`` and the notes of those with a mark or no number."""
    values, notes = [], []
    for run in runs:
        m = run["metrics"].get(metric)
        if m is None:
            continue
        if m["value"] is not None:
            values.append(float(m["value"]))
        if m["value"] is None or is_marked(m["note"]):
            notes.append(m["note"] or "no number")
    return values, notes


def _text(values: list[float], notes: list[str]) -> str:
    if not values:
        return "— (" + notes[0].split(": ")[-1] + ")" if notes else "—"
    return mean_pm(summarize(values), MIB) + (" †" if any(is_marked(n) for n in notes) else "")


def predicted_tables(runs: list[StoredRun], cells: list[StoredCell], paper: bool = True) -> list[TableSection]:
    """Per Bonnie++ workload: each test measured and predicted on each model, per file
    system; empty when no run has per-test predictions."""
    ok = [r for r in runs if r["cell"]["workload_kind"] == "bonnie" and r["status"] == STATUS_OK]
    models = _models(ok)
    if not models:
        return []
    groups: dict[str, dict[str, list[StoredRun]]] = {}
    for cell in cells:  # the study's order of workloads and file systems
        groups.setdefault(cell_label(cell), {}).setdefault(fs_column(cell), [])
    for run in ok:
        groups.setdefault(cell_label(run["cell"]), {}).setdefault(fs_column(run["cell"]), []).append(run)
    out: list[TableSection] = []
    for label, by_fs in groups.items():
        columns = ["paper's row"] if paper else []
        columns.append("Bonnie++ test")
        for fs in by_fs:
            columns.append(f"{fs} measured (MiB/s)")
            columns += [f"{fs} on {model} (MiB/s, predicted)" for model in models]
            columns += [f"{fs}: {model} / {models[0]} (predicted)" for model in models[1:]]
        table = TableSection("workload", f"Bonnie++ {label} per test: measured, and predicted on "
                                         f"{', '.join(models)}", columns, [])
        for paper_name, bonnie_name, metric in TABLE_IV_ROWS:
            row = [paper_name] if paper else []
            row.append(bonnie_name)
            for fs_runs in by_fs.values():
                row.append(_text(*_column(fs_runs, metric)))
                means: list[float | None] = []
                for model in models:
                    values, notes = _column(fs_runs, metric_name(model, metric))
                    row.append(_text(values, notes))
                    means.append(sum(values) / len(values) if values else None)
                for mean in means[1:]:
                    row.append(f"{fmt(mean / means[0])}x" if mean is not None and means[0] else "—")
            table.rows.append(row)
        out.append(table)
    out[-1].note = PREDICTED_LEGEND
    return out


def build(study: StudyData) -> list[TableSection]:
    cells = [c for c in study.cells if c["workload_kind"] == "bonnie"]
    paper = study.paper == PAPER
    return [*table_iv(study.runs, cells, paper=paper), *predicted_tables(study.runs, cells, paper=paper)]


SECTIONS.register("bonnie-table-iv", Section(build, order=20, workload_kind="bonnie"))
