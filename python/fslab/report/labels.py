"""The texts every report renderer shares: a cell's row label, "mean ± half-width (n=k)",
how p and n are said, and the note on intervals. One definition each, so the terminal,
HTML, Markdown and JSON agree."""

from __future__ import annotations

from ..analysis.stats import CONFIDENCE, Summary
from ..stored import StoredCell
from .units import fmt


def cell_label(cell: StoredCell) -> str:
    """A cell without its file system: workload plus its axes values, e.g. 'rand [rw=read]'."""
    axes = " ".join(f"{k}={v}" for k, v in cell["axes"].items())
    return cell["workload"] + (f" [{axes}]" if axes else "")


def mean_pm(summary: Summary, divisor: float = 1.0, n_expected: int | None = None) -> str:
    """'mean ± half-width (n=k)' in display units; '(n=k)' is left out when it equals
    ``n_expected`` (a table that states n per row), and '± …' when n < 2."""
    text = fmt(summary.mean / divisor)
    if summary.log_ci is not None:  # positive values whose ± would reach below zero
        low, high = summary.log_ci
        text += f" ({fmt(low / divisor)} to {fmt(high / divisor)}, log scale)"
    elif summary.ci_half_width is not None:
        # Runs that agree to the last bits (a deterministic replay) leave rounding noise,
        # not a spread: '± 0', never '± 1.73e-13'.
        width = 0.0 if summary.ci_half_width <= 1e-9 * abs(summary.mean) else summary.ci_half_width
        text += f" ± {fmt(width / divisor)}"
    if n_expected is None or summary.n != n_expected:
        text += f" (n={summary.n})"
    return text


def fs_column(cell: StoredCell) -> str:
    """A file system's column: guest runs are labelled so, never put beside host runs as if
    they were alike (another kernel, emulated hardware), and with the kernel they booted,
    so one file system on two kernels reads as two columns (cells stored before cells
    carried a kernel say just "guest")."""
    if cell.get("backend", "host") == "host":
        return cell["filesystem"]
    kernel = cell.get("kernel")
    return f"{cell['filesystem']} (guest {kernel})" if kernel else f"{cell['filesystem']} (guest)"


def n_text(a: int, b: int) -> str:
    return f"n = {a} each" if a == b else f"n = {a} and {b}"


def p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def interval_note() -> str:
    return (f"Intervals: {CONFIDENCE:.0%} Student-t interval of the mean over n runs; relative "
            "differences: (mean − best) / best, the best of the column's own backend (and guest kernel) in the "
            "row, its interval by the delta method on the log ratio of means; p: Welch's t-test, Holm-corrected "
            "within each row's backend (α = 0.05); effect size: Hedges' g. The interval is not corrected for "
            "multiple comparisons and is on the log scale while the test is on the raw values, so the two can "
            "disagree; the verdict is the test's, and says so where they do.")


# --- Ranking groups: only columns of one backend (and guest kernel) are compared ---------

def rank_group(cell: StoredCell) -> str:
    """The group a cell's column is ranked in: "host", or "guest KERNEL" ("guest" for cells
    stored before cells carried a kernel). Columns of different groups ran on another
    kernel or emulated hardware, so the report never ranks or tests one against another."""
    if cell.get("backend", "host") == "host":
        return "host"
    kernel = cell.get("kernel")
    return f"guest {kernel}" if kernel else "guest"


def rank_groups_note(groups: dict[str, list[str]]) -> str:
    """The line under a table whose columns fall in several groups (group -> columns);
    empty when there is one group (nothing is left uncompared)."""
    if len(groups) < 2:
        return ""
    named = "; ".join(f"{name} ({', '.join(columns)})" for name, columns in groups.items())
    return (f"Ranked within each backend: {named} — each has its own best; columns of different backends "
            "or guest kernels are not compared (guest and host numbers are not comparable).")


# --- One effect, one phrasing -------------------------------------------------------------
# Every difference fslab reports — table cell, summary sentence, JSON, `fslab compare` — is
# one column's mean relative to its reference's (the best of its group, or A), in percent,
# with the 95% interval of that same quantity. Never the inverse ratio, never "×".

NO_VERDICT = "†"
SIGNIFICANT = "significant"
NOT_SIGNIFICANT = "no significant difference"


def percent(fraction: float) -> str:
    """A relative difference (0.25 is 25%) signed, in percent: '+25.0%', '-40.3%'; whole
    percent from 1000% on, where a decimal only adds noise."""
    value = fraction * 100
    return f"{value:+.1f}%" if abs(value) < 1000 else f"{value:+.0f}%"


def interval_text(low: float | None, high: float | None) -> str:
    """'95% CI -45.1% to -35.2%' (fractions in, percent out); '' without an interval."""
    if low is None or high is None:
        return ""
    return f"{CONFIDENCE:.0%} CI {percent(low)} to {percent(high)}"


def difference_text(relative: float, low: float | None, high: float | None) -> str:
    """'-40.3% (95% CI -45.1% to -35.2%)': mean / reference mean - 1 and the interval of that
    same quantity; without an interval just the difference."""
    interval = interval_text(low, high)
    return f"{percent(relative)} ({interval})" if interval else percent(relative)


TIED = "tied best"


def is_tie(mean: float, best: float) -> bool:
    """Whether a mean equals the best to the table's precision: its difference would print
    as +0.0% (percent() shows one decimal)."""
    return best != 0 and abs(mean / best - 1) < 0.0005


def difference_mark(relative: float, significant: bool, decided: bool) -> str:
    """A table cell's difference: '-40.3%*' (significant), '-2.0%' (not), '-2.0%†' (no verdict)."""
    return percent(relative) + ("*" if significant else "" if decided else NO_VERDICT)


def excludes_zero(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


def verdict_text(significant: bool, low: float | None, high: float | None, family: int,
                 sequential: bool = False, test: str = "Welch's t") -> str:
    """The verdict of a tested difference, worded so that it never contradicts the interval
    printed beside it: the interval is not corrected for multiple comparisons (Holm) or for
    repeated looks (group-sequential), and is on the log ratio while the test is on the
    values, so it can exclude 0 without a significant test, or reach 0 with one; then the
    verdict says why. ``family``: comparisons in the Holm family; ``test``: the test's name."""
    if significant:
        if low is not None and high is not None and not excludes_zero(low, high):
            return f"{SIGNIFICANT} ({test} on the values; the interval, on the log ratio of means, reaches 0)"
        return SIGNIFICANT
    if not excludes_zero(low, high):
        return NOT_SIGNIFICANT
    if sequential:
        return f"{NOT_SIGNIFICANT} under the group-sequential test's α spending"
    if family > 1:
        return f"{NOT_SIGNIFICANT} after Holm correction across {family} comparisons"
    return f"{NOT_SIGNIFICANT} by {test} on the values (the interval, on the log ratio of means, excludes 0)"


def versus_sentence(where: str, what: str, subject: str, reference: str, relative: float,
                    low: float | None, high: float | None, stats: str, verdict: str) -> str:
    """The summary sentence of one difference, the same in the report and `fslab compare`:
    'rand4k: iops [IOPS], xfs vs ext4: -40.3% (95% CI -45.1% to -35.2%; p < 0.001, n = 5 each) —
    significant.' ``stats``: p and n, as p_text and n_text say them."""
    inside = "; ".join(part for part in (interval_text(low, high), stats) if part)
    return f"{where}: {what}, {subject} vs {reference}: {percent(relative)} ({inside}) — {verdict}."


# --- Caveats: runs that measured something else than their parameters say --------------

CAVEAT = "‡"


def caveat_mark(number: int) -> str:
    return f"{CAVEAT}{number}"


def caveat_line(mark: str, text: str, cells: list[str]) -> str:
    """The note under the table: '‡1 direct=1 ran buffered: … — ext4 on rand4k (3 of 3 runs)'."""
    return f"{mark} {text} — {'; '.join(cells)}"
