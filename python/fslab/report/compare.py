"""`fslab compare A B`: two sets of stored runs side by side — two studies (before/after a
kernel, mount option or device change) or two file systems of one study.

Per workload case and metric: B relative to A with its 95% interval (delta method on the
log ratio of means), Welch's t-test or Mann–Whitney U with Holm's correction over the
whole family of comparisons, Hedges' g; "no significant difference" said as such. And a
warning for every provenance fact that differs between the sides besides the variable
under test, because such a difference can explain a result as well as the variable can."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.contrasts import ratio_ci
from ..analysis.stats import (
    CONFIDENCE,
    MIN_N_FOR_VERDICT,
    NoVerdict,
    hedges_g,
    holm,
    mann_whitney,
    summarize,
    welch_t,
)
from ..errors import FslabError
from ..metrics import display_name
from ..stored import STATUS_OK, StoredCell, StoredMetric, StoredRun, StudyRow
from .hosts import host_of, hosts
from .labels import (
    NOT_SIGNIFICANT,
    cell_label,
    difference_text,
    mean_pm,
    n_text,
    p_text,
    verdict_text,
    versus_sentence,
)
from .provenance_facts import run_facts
from .units import display_scale, fmt

ALPHA = 1 - CONFIDENCE
TESTS = ("welch", "mann-whitney")
# Facts that make up a file-system entry: the variable under test when two file systems
# of one study are compared (not a confounder then).
FS_FACTS = frozenset({"file system type", "mkfs command", "mkfs version", "mount options requested",
                      "mount options in effect"})


@dataclass
class Side:
    name: str  # as the user wrote it
    results: str
    study_id: int
    study_name: str
    quick: bool
    filesystem: str | None  # a file system of the study, or None: all of them
    runs: list[StoredRun]
    cells: list[StoredCell]
    host: str | None = None  # the runs one machine of the study ran (host axis), or None


@dataclass
class MetricComparison:
    key: str  # the workload case (and file system, comparing studies)
    metric: str
    display_unit: str
    higher_is_better: bool
    a_text: str
    b_text: str
    n_a: int
    n_b: int
    relative: float | None  # mean B / mean A - 1
    low: float | None
    high: float | None
    p_value: float | None
    p_adjusted: float | None
    effect_size: float | None  # Hedges' g of B - A
    # "B better", "B worse", "no significant difference" (with why, when the interval
    # excludes 0: labels.verdict_text), "no verdict: …"
    verdict: str
    significant: bool = False


@dataclass
class Difference:
    fact: str
    a: str
    b: str
    under_test: bool  # the variable being compared, not a warning


@dataclass
class Comparison:
    a: str
    b: str
    mode: str  # "studies", "file systems" or "hosts"
    test: str
    rows: list[MetricComparison] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    @property
    def warnings(self) -> list[Difference]:
        return [d for d in self.differences if not d.under_test]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "warnings": [asdict(d) for d in self.warnings]}


def _load(results: Path, study_id: int | None) -> tuple[StudyRow, list[StoredRun], list[StoredCell]]:
    from ..store import Store

    if not (results / "fslab.sqlite").exists():
        raise FslabError(f"{results}: no fslab.sqlite there (a results directory holds one; "
                         "write DIR or DIR:STUDY, or two file system names with --results)")
    with Store(results, read_only=True) as store:
        row = store.study(study_id)
        return row, store.runs(row.id), store.cells(row.id)


VALID_ARGUMENTS = ("Valid arguments: two results directories (`fslab compare before/ after/`), a study in each "
                   "(`fslab compare res:1 res:2`), or two file systems of one study (`fslab compare ext4 xfs "
                   "-r DIR [--study N]`), or two hosts that ran one study (`fslab compare HOST1 HOST2 -r DIR`).")


def _tried_dir(text: str) -> str:
    """What was found where ``text`` would be a results directory (DIR or DIR:STUDY)."""
    path = Path(text.rpartition(":")[0] if text.rpartition(":")[2].isdigit() else text)
    where = path.resolve()
    if not path.exists():
        return f"{where} does not exist"
    if not path.is_dir():
        return f"{where} is not a directory"
    return f"{where} holds no fslab.sqlite"


def resolve_sides(a: str, b: str, results: Path, study: int | None) -> tuple[Side, Side]:
    """A and B as results directories / DIR:STUDY, or as two file systems of one study."""
    def as_study(text: str) -> Side | None:
        path, _, sid = text.rpartition(":") if ":" in text else (text, "", "")
        if sid and not sid.isdigit():
            path, sid = text, ""
        if not Path(path or text).is_dir():
            return None
        row, runs, cells = _load(Path(path or text), int(sid) if sid else None)
        return Side(text, str(path or text), row.id, row.name, row.quick, None, runs, cells)

    sa, sb = as_study(a), as_study(b)
    if sa and sb:
        return sa, sb
    if sa or sb:
        other = b if sa else a
        raise FslabError(f"compare {a} {b}: one side is a results directory and the other is not: "
                         f"{_tried_dir(other)}.\n{VALID_ARGUMENTS}")
    if not (results / "fslab.sqlite").exists():
        raise FslabError(f"compare {a} {b}: found nothing to compare. Tried each as a results directory: "
                         f"{_tried_dir(a)}; {_tried_dir(b)}. Tried them as file systems of a study in "
                         f"--results {results.resolve()}: it holds no fslab.sqlite.\n{VALID_ARGUMENTS}")
    row, runs, cells = _load(results, study)
    names = list(dict.fromkeys(c["filesystem"] for c in cells))
    machines = hosts(runs)
    if a in machines and b in machines and not {a, b} & set(names):
        def host_side(name: str) -> Side:
            return Side(name, str(results), row.id, row.name, row.quick, None,
                        [r for r in runs if host_of(r) == name], cells, host=name)

        return host_side(a), host_side(b)
    for name in (a, b):
        if name not in names:
            raise FslabError(f"compare: {name!r} is neither a results directory ({_tried_dir(name)}) nor a file "
                             f"system of study {row.id} in {results}; its file systems: {', '.join(names)}; "
                             f"the hosts that ran it: {', '.join(machines) or 'none with ok runs'}."
                             f"\n{VALID_ARGUMENTS}")

    def fs_side(name: str) -> Side:
        return Side(name, str(results), row.id, row.name, row.quick, name,
                    [r for r in runs if r["cell"]["filesystem"] == name],
                    [c for c in cells if c["filesystem"] == name])

    return fs_side(a), fs_side(b)


def _values(side: Side, metrics: list[str] | None) -> dict[tuple[str, str], tuple[list[float], StoredMetric]]:
    """(case key, metric) -> (values of ok runs, a stored metric record for unit/direction)."""
    by_fs = side.filesystem is None
    out: dict[tuple[str, str], tuple[list[float], StoredMetric]] = {}
    position = {c["id"]: i for i, c in enumerate(side.cells)}
    for run in sorted(side.runs, key=lambda r: position.get(r["cell"]["id"], len(position))):
        if run["status"] != STATUS_OK:
            continue
        cell = run["cell"]
        key = f"{cell['filesystem']}: {cell_label(cell)}" if by_fs else cell_label(cell)
        for name in metrics or [cell["primary_metric"]]:
            m = run["metrics"].get(name)
            if m is None or m["value"] is None:
                continue
            values, _ = out.setdefault((key, name), ([], m))
            values.append(float(m["value"]))
    return out


def _test(x: list[float], y: list[float], test: str) -> tuple[float | None, str]:
    """(p, '') or (None, why there is no verdict) — the same refusals as the report's table."""
    if min(len(x), len(y)) < MIN_N_FOR_VERDICT:
        return None, f"no verdict: fewer than {MIN_N_FOR_VERDICT} runs per side (n = {len(x)} vs {len(y)})"
    try:
        result = welch_t(y, x) if test == "welch" else mann_whitney(y, x)
    except NoVerdict as exc:
        return None, f"no verdict: {exc}"
    return result.p_value, ""


def compare(a: Side, b: Side, metrics: list[str] | None = None, test: str = "welch") -> Comparison:
    if test not in TESTS:
        raise FslabError(f"--test {test}: use one of {', '.join(TESTS)}")
    mode = "hosts" if a.host else "file systems" if a.filesystem else "studies"
    out = Comparison(a.name, b.name, mode, test)
    va, vb = _values(a, metrics), _values(b, metrics)
    keys = sorted((k for k in va if k in vb), key=list(va).index)
    if not keys:
        raise FslabError(f"compare {a.name} {b.name}: no workload case and metric with ok runs on both sides "
                         f"(A has {len(va)}, B has {len(vb)}); compare studies of the same study file's "
                         "workloads, or name --metric")
    pending: list[tuple[MetricComparison, float]] = []
    for key in keys:
        (x, meta), (y, _) = va[key], vb[key]
        sx, sy = summarize(x), summarize(y)
        divisor, unit = display_scale(meta["unit"], max(abs(sx.mean), abs(sy.mean)))
        better = meta.get("higher_is_better")
        better = True if better is None else bool(better)
        rel = low = high = None
        try:
            r = ratio_ci(y, x)
            rel = r.ratio - 1
            low, high = (None, None) if r.low is None or r.high is None else (r.low - 1, r.high - 1)
        except ValueError:
            pass
        p, why = _test(x, y, test)
        row = MetricComparison(key[0], key[1], unit, better, mean_pm(sx, divisor), mean_pm(sy, divisor),
                               sx.n, sy.n, rel, low, high, p, None, hedges_g(y, x), why)
        out.rows.append(row)
        if p is not None:
            pending.append((row, p))
    test_name = "Welch's t" if test == "welch" else "Mann–Whitney U"
    for (row, _), adjusted in zip(pending, holm([p for _, p in pending])):
        row.p_adjusted = adjusted
        row.significant = adjusted < ALPHA
        if not row.significant:
            row.verdict = verdict_text(False, row.low, row.high, len(pending), test=test_name)
        else:
            up = (row.relative or 0) > 0
            row.verdict = "B better" if up == row.higher_is_better else "B worse"
    out.differences = differences(a, b)
    return out


def _side_facts(side: Side, filesystem: str | None = None) -> dict[str, str]:
    seen: dict[str, list[str]] = {}
    for run in side.runs:
        if filesystem is not None and run["cell"]["filesystem"] != filesystem:
            continue
        for fact, value in run_facts(run, side.quick).items():
            values = seen.setdefault(fact, [])
            if value not in values:
                values.append(value)
    return {fact: " | ".join(sorted(v)) for fact, v in seen.items()}


def differences(a: Side, b: Side) -> list[Difference]:
    """Every provenance fact whose values differ between the sides; comparing studies, per
    file system both have (a fact of ext4 is compared with ext4's)."""
    if a.filesystem is not None:
        groups: list[tuple[str, str | None]] = [("", None)]
    else:
        names_b = {c["filesystem"] for c in b.cells}
        groups = [(f"{fs}: ", fs) for fs in dict.fromkeys(c["filesystem"] for c in a.cells) if fs in names_b]
    out = []
    for prefix, fs in groups:
        fa, fb = _side_facts(a, fs), _side_facts(b, fs)
        for fact in dict.fromkeys([*fa, *fb]):
            x, y = fa.get(fact, "—"), fb.get(fact, "—")
            if x != y:
                under_test = (a.filesystem is not None and fact in FS_FACTS) or (a.host is not None and fact == "host")
                out.append(Difference(prefix + fact, x, y, under_test))
    if a.filesystem is None and a.host is None:
        fs_a = sorted({c["filesystem"] for c in a.cells})
        fs_b = sorted({c["filesystem"] for c in b.cells})
        if fs_a != fs_b:
            out.append(Difference("file systems in the study", ", ".join(fs_a), ", ".join(fs_b), False))
    return out


def _rel_text(row: MetricComparison) -> str:
    return "—" if row.relative is None else difference_text(row.relative, row.low, row.high)


def table_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    columns = ["case", "metric [unit]", "A", "B", "B vs A (95% CI)",
               f"p ({c.test}, Holm)", "Hedges' g", "verdict"]
    rows = []
    for r in c.rows:
        arrow = "↑" if r.higher_is_better else "↓"
        rows.append([r.key, f"{display_name(r.metric)} [{r.display_unit}] {arrow}", r.a_text, r.b_text, _rel_text(r),
                     "—" if r.p_adjusted is None else p_text(r.p_adjusted),
                     "—" if r.effect_size is None else fmt(r.effect_size), r.verdict])
    return columns, rows


def _sentence(r: MetricComparison, verdict: str) -> str:
    """The report's sentence for one difference (labels.versus_sentence), B against A."""
    assert r.relative is not None
    p = "" if r.p_adjusted is None else f"{p_text(r.p_adjusted)}, "
    return versus_sentence(r.key, f"{display_name(r.metric)} [{r.display_unit}]", "B", "A", r.relative,
                           r.low, r.high, p + n_text(r.n_b, r.n_a), verdict)


def summary_lines(c: Comparison) -> list[str]:
    """Plain sentences: the significant differences, then those without one (each with its
    difference and interval, so a reader sees how large a difference the data allow), then
    how many had no verdict."""
    out = []
    for r in c.rows:
        if r.significant and r.relative is not None:
            out.append(_sentence(r, f"significant: {r.verdict}"))
    same = [r for r in c.rows if r.verdict.startswith(NOT_SIGNIFICANT)]
    untested = [r for r in c.rows if r.p_adjusted is None]
    if same:
        out.append(f"No significant difference in {len(same)} of {len(c.rows)} comparisons:")
        out += [_sentence(r, r.verdict) if r.relative is not None else f"{r.key}: {display_name(r.metric)}."
                for r in same]
    if untested:
        out.append(f"{len(untested)} comparison(s) without a verdict: " + "; ".join(
            f"{r.key} {display_name(r.metric)} ({r.verdict.removeprefix('no verdict: ')})" for r in untested) + ".")
    return out


def warning_lines(c: Comparison) -> list[str]:
    return [f"{d.fact} differs: A {d.a} / B {d.b}" for d in c.warnings]


def method_note(c: Comparison) -> str:
    test = "Welch's t-test" if c.test == "welch" else "Mann–Whitney U (two-sided)"
    return (f"B vs A: (mean B − mean A) / mean A in %, with the {CONFIDENCE:.0%} interval of that same "
            "difference (delta method on the log ratio of means). "
            f"p: {test}, Holm-corrected over all {sum(r.p_value is not None for r in c.rows)} tested "
            f"comparisons (α = {ALPHA:.2f}). Hedges' g: standardised difference B − A. Values: mean ± "
            "half-width of the 95% Student-t interval (n runs).")
