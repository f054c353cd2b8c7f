"""The two texts every report renderer shares: a cell's row label and "mean ± half-width
(n=k)". One definition each, so the terminal, HTML, Markdown and JSON agree."""

from __future__ import annotations

from typing import Any

from ..analysis.stats import Summary
from .units import fmt


def cell_label(cell: dict[str, Any]) -> str:
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


def fs_column(cell: dict[str, Any]) -> str:
    """A file system's column: guest runs are labelled so, never put beside host runs as if
    they were alike (another kernel, emulated hardware), and with the kernel they booted,
    so one file system on two kernels reads as two columns (cells stored before cells
    carried a kernel say just "guest")."""
    if cell.get("backend", "host") == "host":
        return cell["filesystem"]
    kernel = cell.get("kernel")
    return f"{cell['filesystem']} (guest {kernel})" if kernel else f"{cell['filesystem']} (guest)"
