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
    if summary.ci_half_width is not None:
        text += f" ± {fmt(summary.ci_half_width / divisor)}"
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
            "differences: delta method on the log ratio of means; p: Welch's t-test, Holm-corrected "
            "within each row (α = 0.05); effect size: Hedges' g. The interval (log scale) and the test (raw "
            "values) can disagree when the spread is wide; the verdict is the test's.")
