"""`fslab compare A B`: two sets of stored runs side by side — two studies (before/after a
kernel, mount option or device change) or two file systems of one study.

Per workload case and metric: B relative to A with its 95% interval (delta method on the
log ratio of means), Welch's t-test or Mann–Whitney U with Holm's correction over the
whole family of comparisons, Hedges' g; "no significant difference" said as such. And a
warning for every provenance fact that differs between the sides besides the variable
under test, because such a difference can explain a result as well as the variable can.

One study, one test: two file systems of one ``repetitions = "auto"`` study are compared
with the group-sequential test that decided when the study stopped (report.stopping: the
same p and verdict as ``fslab report``), for the metric that test looked at (each case's
primary metric). Anything else of an auto study — another metric, two studies, two hosts —
is outside that design: it gets the fixed-sample test, and the comparison says so and why.

Cases are paired by file system (comparing studies or hosts), workload name and axis
values, and then only when they were defined alike (report.case_definitions: every
workload parameter, job-file text, memory limit, timeout, device section, mkfs and mount
options, backend, guest kernel) or differ only in the variable under test: the mode's own
(two file systems: the file system and its options; two hosts: the host; two studies:
none) and what the user names with ``--variable``. Every other case is listed as not
compared, with the fields that differ."""

from __future__ import annotations

from dataclasses import dataclass, field
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
from ..datarecords import asdict
from ..errors import FslabError
from ..metrics import display_name, is_ranked
from ..stopping import scaled_p
from ..stopping_rule import StoppingRule
from ..stored import STATUS_OK, AutoFacts, AutoPairFacts, StoredCell, StoredMetric, StoredRun, StudyRow
from ..units import counted
from .case_definitions import (
    DEVICE_PLACES,
    MODE_VARIABLES,
    FieldDifference,
    check_variables,
    covers,
    definition,
    device_sections,
    differing,
    fact_variable,
    valid_variables,
)
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
# Where a run was placed, not what it was measured on (a Dask worker's address changes on
# every start; the machine is the host fact): never a difference between two sides.
PLACEMENT_FACTS = frozenset({"worker"})
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
    # file-system entry -> its [device] section as field -> text (case_definitions)
    devices: dict[str, dict[str, str]] = field(default_factory=dict)
    # the study's stopping decisions when it ran with repetitions = "auto" (StudyFacts.auto)
    auto: AutoFacts | None = None

    @property
    def mode(self) -> str:
        return "hosts" if self.host else "file systems" if self.filesystem else "studies"


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
    # "welch-t, holm", or the study's own "welch-t, group-sequential (...)" (report.stopping)
    method: str = ""
    ranked: bool = True  # False: a metric with no better direction (a count): 'B higher/lower'


@dataclass
class Difference:
    fact: str
    a: str
    b: str
    under_test: bool  # the variable being compared, not a warning


@dataclass
class NotCompared:
    """A case of A or B left unpaired, and why: the defining fields that differ besides the
    variable under test, or that the other side lacks it or has no number for it."""

    case: str
    reason: str  # "definitions differ", "only in A", "only in B", "no ok run with a number in A", ...
    differences: list[FieldDifference] = field(default_factory=list)

    def text(self) -> str:
        detail = "; ".join(d.text() for d in self.differences) or self.reason
        return f"not compared: {self.case}: {detail}"


@dataclass
class Comparison:
    a: str
    b: str
    mode: str  # "studies", "file systems" or "hosts"
    test: str
    rows: list[MetricComparison] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)  # named with --variable
    cases_compared: int = 0
    not_compared: list[NotCompared] = field(default_factory=list)
    # How the p values were found when a side is an auto study: which rows took its
    # group-sequential test, and, for the others, why its design could not be used.
    design: str = ""

    @property
    def warnings(self) -> list[Difference]:
        return [d for d in self.differences if not d.under_test]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "warnings": [asdict(d) for d in self.warnings],
                "variable_under_test": variable_text(self), "method_note": method_note(self),
                "not_compared_text": not_compared_lines(self)}


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
    """A and B as results directories / DIR:STUDY, or as two file systems of one study.
    Two sides that are the same runs (a study with itself) are refused: they can only
    agree."""
    sa, sb = _resolve_sides(a, b, results, study)
    same = [(Path(s.results).resolve(), s.study_id, s.filesystem, s.host) for s in (sa, sb)]
    if same[0] == same[1]:
        what = (f"file system {sa.filesystem!r} of study {sa.study_id}" if sa.filesystem else
                f"host {sa.host!r} of study {sa.study_id}" if sa.host else f"study {sa.study_id}")
        raise FslabError(f"compare {a} {b}: both sides are {what} in {same[0][0]}, the same runs: compared "
                         "with itself it can only agree. Compare two studies (DIR or DIR:STUDY each), or two "
                         f"file systems of one study.\n{VALID_ARGUMENTS}")
    return sa, sb


def _resolve_sides(a: str, b: str, results: Path, study: int | None) -> tuple[Side, Side]:
    def as_study(text: str) -> Side | None:
        path, _, sid = text.rpartition(":") if ":" in text else (text, "", "")
        if sid and not sid.isdigit():
            path, sid = text, ""
        if not Path(path or text).is_dir():
            return None
        row, runs, cells = _load(Path(path or text), int(sid) if sid else None)
        return Side(text, str(path or text), row.id, row.name, row.quick, None, runs, cells,
                    devices=device_sections(row.spec_text), auto=row.facts.get("auto"))

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
    devices = device_sections(row.spec_text)
    names = list(dict.fromkeys(c["filesystem"] for c in cells))
    machines = hosts(runs)
    if a in machines and b in machines and not {a, b} & set(names):
        def host_side(name: str) -> Side:
            return Side(name, str(results), row.id, row.name, row.quick, None,
                        [r for r in runs if host_of(r) == name], cells, host=name, devices=devices,
                        auto=row.facts.get("auto"))

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
                    [c for c in cells if c["filesystem"] == name], devices=devices,
                    auto=row.facts.get("auto"))

    return fs_side(a), fs_side(b)


def case_key(side: Side, cell: StoredCell) -> str:
    """The name a case is paired by: its workload and axis values, and its file system
    unless the sides are two file systems."""
    return f"{cell['filesystem']}: {cell_label(cell)}" if side.filesystem is None else cell_label(cell)


def _definitions(side: Side) -> dict[str, dict[str, str]]:
    """Case key -> its definition (case_definitions), in the study's order."""
    out: dict[str, dict[str, str]] = {}
    for cell in side.cells:
        out.setdefault(case_key(side, cell), definition(cell, side.devices.get(cell["filesystem"], {})))
    return out


def pair_cases(a: Side, b: Side, variables: list[str]) -> tuple[list[str], list[NotCompared], list[Difference]]:
    """(keys of the cases paired, the cases left out and why, the defining differences of
    the paired cases that are the variable under test). A case pairs when both sides have
    it and every defining field that differs is covered by the mode's variable or one the
    user named; ``variables`` that name no field of these cases are refused."""
    da, db = _definitions(a), _definitions(b)
    check_variables(variables, valid_variables([*da.values(), *db.values()]))
    tested = [*MODE_VARIABLES[a.mode], *variables]
    paired: list[str] = []
    left_out: list[NotCompared] = []
    under_test: dict[tuple[str, str, str], list[str]] = {}
    for key in [*da, *(k for k in db if k not in da)]:
        if key not in db or key not in da:
            left_out.append(NotCompared(key, "only in A" if key in da else "only in B"))
            continue
        diffs = differing(da[key], db[key])
        other = [d for d in diffs if not any(covers(v, d.field) for v in tested)]
        if other:
            left_out.append(NotCompared(key, "definitions differ", other))
            continue
        paired.append(key)
        for d in diffs:
            if d.field not in _PROVENANCE_BACKED:
                under_test.setdefault((d.field, d.a, d.b), []).append(key)
    named = [Difference(f if len(keys) == len(paired) else f"{f} ({', '.join(keys)})", x, y, True)
             for (f, x, y), keys in under_test.items()]
    return paired, left_out, named


# Defining fields whose difference the provenance facts already show (mkfs command,
# mount options requested and in effect, backend, kernel): not listed twice.
_PROVENANCE_BACKED = frozenset({"fs_type", "mkfs", "mount", "backend", "kernel"})


def _values(side: Side, metrics: list[str] | None) -> dict[tuple[str, str], tuple[list[float], StoredMetric]]:
    """(case key, metric) -> (values of ok runs, a stored metric record for unit/direction)."""
    out: dict[tuple[str, str], tuple[list[float], StoredMetric]] = {}
    position = {c["id"]: i for i, c in enumerate(side.cells)}
    for run in sorted(side.runs, key=lambda r: position.get(r["cell"]["id"], len(position))):
        if run["status"] != STATUS_OK:
            continue
        cell = run["cell"]
        key = case_key(side, cell)
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


def _without_numbers(paired: list[str], va: dict[tuple[str, str], Any],
                     vb: dict[tuple[str, str], Any]) -> list[NotCompared]:
    """Paired cases with no metric that both sides have a number of."""
    out = []
    for key in paired:
        in_a, in_b = {m for k, m in va if k == key}, {m for k, m in vb if k == key}
        if not in_a & in_b:
            where = "A and B" if not in_a and not in_b else "A" if not in_a else "B" if not in_b else ""
            reason = (f"no ok run with a number in {where}" if where else
                      "no metric with a number on both sides (name one with --metric)")
            out.append(NotCompared(key, reason))
    return out


def compare(a: Side, b: Side, metrics: list[str] | None = None, test: str = "welch",
            variables: list[str] | None = None) -> Comparison:
    """B against A, case by case; cases defined otherwise than besides the variable under
    test (``variables``: defining fields the user names, with the mode's own) are left out
    and listed (``Comparison.not_compared``). Raises FslabError for an unknown test or
    variable, and when there is nothing at all to compare."""
    if test not in TESTS:
        raise FslabError(f"--test {test}: use one of {', '.join(TESTS)}")
    variables = list(dict.fromkeys(variables or []))
    out = Comparison(a.name, b.name, a.mode, test, variables=variables)
    paired, out.not_compared, named = pair_cases(a, b, variables)
    va, vb = _values(a, metrics), _values(b, metrics)
    out.not_compared += _without_numbers(paired, va, vb)
    counted = {k for k in paired if k not in {n.case for n in out.not_compared}}
    out.cases_compared = len(counted)
    keys = sorted((k for k in va if k in vb and k[0] in counted), key=list(va).index)
    if not keys and out.not_compared:
        out.differences = named
        return out
    if not keys:
        raise FslabError(f"compare {a.name} {b.name}: no workload case and metric with ok runs on both sides "
                         f"(A has {len(va)}, B has {len(vb)}); compare studies of the same study file's "
                         "workloads, or name --metric")
    pending: list[tuple[MetricComparison, float]] = []
    sequential = _sequential_pairs(a, b) if test == "welch" else {}
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
        pair = sequential.get(key)
        if pair is not None:  # the study's own test: no Holm on top (the rule split α itself)
            out.rows.append(_sequential_row(key, unit, better, mean_pm(sx, divisor), mean_pm(sy, divisor),
                                            sx.n, sy.n, rel, low, high, hedges_g(y, x), pair, a.auto))
            continue
        p, why = _test(x, y, test)
        row = MetricComparison(key[0], key[1], unit, better, mean_pm(sx, divisor), mean_pm(sy, divisor),
                               sx.n, sy.n, rel, low, high, p, None, hedges_g(y, x), why,
                               method="welch-t, holm" if test == "welch" else "mann-whitney, holm",
                               ranked=is_ranked(key[1]))
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
            if not row.ranked:  # no better direction: say which way, not which is better
                row.verdict = "B higher" if up else "B lower"
            else:
                row.verdict = "B better" if up == row.higher_is_better else "B worse"
    out.differences = named + differences(a, b, counted, variables)
    out.design = design_text(a, b, out, test)
    return out


def _sequential_pairs(a: Side, b: Side) -> dict[tuple[str, str], AutoPairFacts]:
    """(case key, metric) -> the pair the stopping rule of their auto study tested, for two
    file systems of one study: the comparisons whose test is the study's own design."""
    if a.mode != "file systems" or a.auto is None or (a.results, a.study_id) != (b.results, b.study_id):
        return {}
    pairs = {frozenset((p["a"], p["b"])): p for p in a.auto["pairs"] if p["kind"] == "filesystems"}
    ids_b = {case_key(b, c): c["id"] for c in b.cells}
    out = {}
    for cell in a.cells:
        key = case_key(a, cell)
        pair = pairs.get(frozenset((cell["id"], ids_b.get(key, ""))))
        if pair is not None:
            out[(key, cell["primary_metric"])] = pair
    return out


def _sequential_row(key: tuple[str, str], unit: str, better: bool, a_text: str, b_text: str, n_a: int, n_b: int,
                    rel: float | None, low: float | None, high: float | None, g: float | None,
                    pair: AutoPairFacts, auto: AutoFacts | None) -> MetricComparison:
    """A comparison as the study's stopping rule decided it (report.stopping): its last
    look's p rescaled to the family α, significant exactly when the rule's test rejected."""
    from .stopping import method_text

    assert auto is not None
    rule = StoppingRule.from_json(auto["rule"])
    p = scaled_p(pair, rule.alpha)
    method = method_text(rule, pair)
    if p is None:
        why = ("no verdict: no spread in either group (zero variance): Welch's t is undefined" if pair["looks"]
               else "no verdict: fewer than 3 runs per group when the cells stopped")
        return MetricComparison(key[0], key[1], unit, better, a_text, b_text, n_a, n_b, rel, low, high,
                                None, None, None, why, method=method)
    significant = bool(pair["significant"])
    if significant:
        verdict = "B better" if ((rel or 0) > 0) == better else "B worse"
    else:
        verdict = verdict_text(False, low, high, 1, sequential=True)
    return MetricComparison(key[0], key[1], unit, better, a_text, b_text, n_a, n_b, rel, low, high,
                            pair["looks"][-1]["p_value"], p, g, verdict, significant, method)


def design_text(a: Side, b: Side, c: Comparison, test: str) -> str:
    """How the p values relate to the studies' designs, in words ('' when neither side was
    repeated until answered)."""
    autos = [s for s in (a, b) if s.auto is not None]
    if not autos:
        return ""
    if a.mode == "file systems":
        autos = autos[:1]  # one study
    sequential = [r for r in c.rows if "group-sequential" in r.method]
    fixed = [r for r in c.rows if "group-sequential" not in r.method]
    parts = []
    if sequential:
        parts.append(f"{counted(len(sequential), 'comparison')} {'uses' if len(sequential) == 1 else 'use'} "
                     "the study's own test: the group-sequential Welch's t that decided when the study stopped "
                     "(the same p and verdict as `fslab report`; p rescaled so that p < α means significant; "
                     "no Holm on top: the rule split α over the pairs itself).")
    if fixed:
        named = " and ".join(f"study {s.study_id} ({s.study_name})" for s in autos)
        if a.mode != "file systems":
            why = (f"the stopping rule compared the file systems within a study, never two {a.mode}, so its "
                   "design does not cover this comparison")
        elif test != "welch":
            why = "the study's design is Welch's t, group-sequential; --test mann-whitney asks for another test"
        else:
            why = "the stopping rule tested only each case's primary metric"
        parts.append(f"{named} repeated until answered (repetitions = \"auto\"): sample sizes chosen by "
                     f"looking at the data. {counted(len(fixed), 'comparison')} "
                     f"{'uses' if len(fixed) == 1 else 'use'} a fixed-sample test on them because "
                     f"{why}; such a p is approximate (it does not account for the stopping).")
    return " ".join(parts)


def _side_facts(side: Side, filesystem: str | None = None, cases: set[str] | None = None) -> dict[str, str]:
    seen: dict[str, list[str]] = {}
    for run in side.runs:
        if filesystem is not None and run["cell"]["filesystem"] != filesystem:
            continue
        if cases is not None and case_key(side, run["cell"]) not in cases:
            continue
        for fact, value in run_facts(run, side.quick).items():
            if fact in PLACEMENT_FACTS:
                continue
            values = seen.setdefault(fact, [])
            if value not in values:
                values.append(value)
    return {fact: " | ".join(sorted(v)) for fact, v in seen.items()}


def _under_test(fact: str, mode: str, variables: list[str]) -> bool:
    """Whether a provenance fact that differs is the variable under test."""
    if mode == "file systems" and fact in FS_FACTS:
        return True
    name = fact_variable(fact)
    return name is not None and any(covers(v, name) for v in [*MODE_VARIABLES[mode], *variables])


def differences(a: Side, b: Side, cases: set[str] | None = None, variables: list[str] | None = None,
                ) -> list[Difference]:
    """Every provenance fact whose values differ between the runs of the sides' compared
    ``cases`` (None: all), and the places their devices' files went; comparing studies,
    per file system both have (a fact of ext4 is compared with ext4's)."""
    if a.filesystem is not None:
        groups: list[tuple[str, str | None]] = [("", None)]
    else:
        names_b = {c["filesystem"] for c in b.cells}
        groups = [(f"{fs}: ", fs) for fs in dict.fromkeys(c["filesystem"] for c in a.cells) if fs in names_b]
    out = []
    for prefix, fs in groups:
        fa, fb = _side_facts(a, fs, cases), _side_facts(b, fs, cases)
        fa.update(_device_places(a, fs or a.filesystem))
        fb.update(_device_places(b, fs or b.filesystem))
        for fact in dict.fromkeys([*fa, *fb]):
            x, y = fa.get(fact, "—"), fb.get(fact, "—")
            if x != y:
                out.append(Difference(prefix + fact, x, y, _under_test(fact, a.mode, variables or [])))
    if a.filesystem is None and a.host is None:
        fs_a = sorted({c["filesystem"] for c in a.cells})
        fs_b = sorted({c["filesystem"] for c in b.cells})
        if fs_a != fs_b:
            out.append(Difference("file systems in the study", ", ".join(fs_a), ", ".join(fs_b), False))
    return out


def _device_places(side: Side, filesystem: str | None) -> dict[str, str]:
    """Where the device's files went (``image_dir``, ``directory``) as facts: a place can
    matter (the file system under an image) but never leaves a case out."""
    section = side.devices.get(filesystem or "", {})
    return {f"device section {k}": section[k] for k in sorted(DEVICE_PLACES) if k in section}


def _rel_text(row: MetricComparison) -> str:
    return "—" if row.relative is None else difference_text(row.relative, row.low, row.high)


def table_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    sequential = any("group-sequential" in r.method for r in c.rows)
    head = ("group-sequential" if all("group-sequential" in r.method for r in c.rows) else
            f"{c.test}, Holm / group-sequential") if sequential else f"{c.test}, Holm"
    columns = ["case", "metric [unit]", "A", "B", "B vs A (95% CI)",
               f"p ({head})", "Hedges' g", "verdict"]
    rows = []
    for r in c.rows:
        arrow = "·" if not r.ranked else "↑" if r.higher_is_better else "↓"
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
        out.append(f"{counted(len(untested), 'comparison')} without a verdict: " + "; ".join(
            f"{r.key} {display_name(r.metric)} ({r.verdict.removeprefix('no verdict: ')})" for r in untested) + ".")
    return out


def warning_lines(c: Comparison) -> list[str]:
    return [f"{d.fact} differs: A {d.a} / B {d.b}" for d in c.warnings]


def variable_text(c: Comparison) -> str:
    """What the comparison takes as the variable under test, in words."""
    own = {"file systems": "the file system and its options (fs_type, mkfs, mount)", "hosts": "the host",
           "studies": ""}[c.mode]
    named = f"{', '.join(c.variables)} (named with --variable)" if c.variables else ""
    if own or named:
        return "variable under test: " + "; ".join(t for t in (own, named) if t)
    return ("variable under test: none named: only cases defined alike are paired "
            "(name the difference under test with --variable FIELD)")


def not_compared_lines(c: Comparison) -> list[str]:
    """'not compared: <case>: <field> differs (A: x, B: y); …', one per case left out."""
    return [n.text() for n in c.not_compared]


def left_out_line(c: Comparison) -> str | None:
    """The summary's sentence on cases left out, with the flags that would pair those
    whose definitions differ; None when every case was compared."""
    if not c.not_compared:
        return None
    total = c.cases_compared + len(c.not_compared)
    text = (f"{len(c.not_compared)} of {total} cases not compared (listed under 'not compared'); "
            f"{c.cases_compared} compared.")
    fields = list(dict.fromkeys(d.field for n in c.not_compared for d in n.differences))
    if fields:
        flags = " ".join(f"--variable {f}" for f in fields)
        text += (f" Their definitions differ in {', '.join(fields)}; if that is what is under test, "
                 f"pair them with {flags}.")
    return text


def method_note(c: Comparison) -> str:
    """What each number of the comparison is, and which test gave each p."""
    test = "Welch's t-test" if c.test == "welch" else "Mann–Whitney U (two-sided)"
    holm_family = sum(r.p_value is not None and "group-sequential" not in r.method for r in c.rows)
    fixed = (f"p: {test}, Holm-corrected over the {holm_family} fixed-sample tested comparisons "
             f"(α = {ALPHA:.2f}). ") if holm_family or not c.design else ""
    return (f"B vs A: (mean B − mean A) / mean A in %, with the {CONFIDENCE:.0%} interval of that same "
            "difference (delta method on the log ratio of means). " + fixed +
            "Hedges' g: standardised difference B − A. Values: mean ± half-width of the 95% Student-t "
            "interval (n runs)." + (f" {c.design}" if c.design else ""))
