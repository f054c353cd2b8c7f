"""An auto study's report (``repetitions = "auto"``): why each cell stopped repeating, and
the comparison table's verdicts taken from the group-sequential test that decided the
stops, not from a fixed-sample test on data whose size the stopping chose (that would
call too many differences significant). Both read what the study stored after its last
pass (``StudyFacts.auto``: fslab.stopping.Decisions), never a live object."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.stats import Comparison
from ..datarecords import replace
from ..stopping import scaled_p
from ..stopping_rule import StoppingRule
from ..stored import AutoFacts, AutoPairFacts, StoredCell
from ..units import counted
from .data import TableSection
from .labels import cell_label, fs_column
from .tables import TableData


def _cell_ids(cells: Sequence[StoredCell]) -> dict[tuple[str, str], str]:
    """(row label, column) -> cell id."""
    return {(cell_label(c), fs_column(c)): c["id"] for c in cells}


def method_text(rule: StoppingRule, pair: AutoPairFacts) -> str:
    share = "" if abs(pair["alpha"] - rule.alpha) < 1e-12 else \
        f", α = {rule.alpha:g} split evenly over the case's pairs ({pair['alpha']:.3g} each)"
    return f"welch-t, group-sequential ({rule.spending} alpha spending{share})"


def sequential_verdicts(table: TableData, cells: Sequence[StoredCell], auto: AutoFacts) -> None:
    """Replace each comparison of a row in its primary metric by the verdict of the pair
    the stopping rule tested: significant or not as decided at its last look, with that
    look's p rescaled to the family α (fslab.stopping.scaled_p: 'p < α' exactly when the
    test rejected). The table and the rule pair the same columns: each with the best of its
    backend and kernel (a pair the rule did not compare would get no verdict). Rows of
    other metrics keep the table's fixed-sample test."""
    rule = StoppingRule.from_json(auto["rule"])
    ids = _cell_ids(cells)
    primary = {c["id"]: c["primary_metric"] for c in cells}
    pairs = {frozenset((p["a"], p["b"])): p for p in auto["pairs"] if p["kind"] == "filesystems"}
    for row in table.rows:
        for fs, comparison in list(row.comparisons.items()):
            # The table compares each column with its own group's best (one backend and kernel),
            # the pairs the stopping rule tested.
            best = ids.get((row.label, row.best_for(fs) or ""))
            if best is None or primary.get(best) != row.metric:
                continue
            mine = ids.get((row.label, fs))
            pair = pairs.get(frozenset((mine or "", best)))
            if pair is None:
                row.comparisons[fs] = replace(
                    comparison, p_value=None, p_adjusted=None, significant=False, effect_size=None,
                    method="group-sequential", untested="not compared by the stopping rule")
                continue
            looks = pair["looks"]
            last_p = looks[-1]["p_value"] if looks else None
            adjusted = scaled_p(pair, rule.alpha)
            untested = None
            if adjusted is None:
                untested = ("no spread in either group (zero variance): Welch's t is undefined" if looks
                            else "fewer than 3 runs per group when the cells stopped")
            row.comparisons[fs] = Comparison(
                comparison.a, comparison.b, comparison.ratio, last_p, adjusted, pair["significant"],
                comparison.effect_size if adjusted is not None else None, method_text(rule, pair), untested)


def legend(auto: AutoFacts) -> str:
    rule = StoppingRule.from_json(auto["rule"])
    return (f"\nRepeated until answered (repetitions = \"auto\": {rule.describe()}). * and the "
            "p values come from the group-sequential test that decided when to stop (Welch's t at each pass "
            f"against the level Lan–DeMets {rule.spending} alpha spending allowed; p shown rescaled so that "
            "p < α means significant): a fixed-sample test would overstate significance here. Why each cell "
            "stopped is in the table 'why each cell stopped repeating'.")


def stopping_table(cells: Sequence[StoredCell], auto: AutoFacts) -> TableSection:
    """A row per workload case, a column per file system: why each cell stopped (or that
    it was still repeating when the study was interrupted)."""
    rule = StoppingRule.from_json(auto["rule"])
    columns: list[str] = []
    rows: dict[str, dict[str, str]] = {}
    for cell in cells:
        column = fs_column(cell)
        if column not in columns:
            columns.append(column)
        facts = auto["cells"].get(cell["id"])
        rows.setdefault(cell_label(cell), {})[column] = facts["text"] if facts else "no run yet"
    undecided = [p for p in auto["pairs"] if p["final"] and not p["significant"]]
    note = (f"Rule: {rule.describe()}; {counted(auto['passes_done'], 'pass', 'passes')} made. A cell stops on "
            "precision when its own interval is that narrow and every comparison it is in is answered (a "
            "verdict, or both sides that precise with a difference below it); on verdict when every comparison "
            f"it is in is significant. {counted(len(undecided), 'comparison')} ended without a significant difference.")
    return TableSection("workload", "why each cell stopped repeating", ["workload", *columns],
                        [[label, *[by_column.get(c, "—") for c in columns]] for label, by_column in rows.items()],
                        note=note)
