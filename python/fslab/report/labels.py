"""The texts every report renderer shares: a cell's row label, "mean ± half-width (n=k)",
how p and n are said, and the note on intervals. One definition each, so the terminal,
HTML, Markdown and JSON agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.stats import CONFIDENCE, Summary
from ..stored import StoredCell, StoredRun, workload_label
from .units import fmt


def cell_label(cell: StoredCell) -> str:
    """A stored cell's row label (``stored.workload_label``), e.g. 'rand [rw=read]'."""
    return workload_label(cell["workload"], cell["axes"])


def mean_pm(summary: Summary, divisor: float = 1.0, n_expected: int | None = None) -> str:
    """'mean ± half-width (n=k)' in display units; '(n=k)' is left out when it equals
    ``n_expected`` (a table that states n per row), and '± …' when n < 2."""
    text = fmt(summary.mean / divisor)
    if summary.bounded_ci is not None:  # a share whose ± would leave 0..100%
        low, high = summary.bounded_ci
        text += f" ({fmt(low / divisor)} to {fmt(high / divisor)}, logit scale)"
    elif summary.log_ci is not None:  # positive values whose ± would reach below zero
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


def interval_note(sequential: bool = False) -> str:
    """The summary's note; ``sequential``: the table's p values are the group-sequential
    test's that decided an auto study's stops (report.stopping), not Welch's with Holm."""
    test = ("the group-sequential Welch's t-test that decided when each cell stopped repeating, rescaled so "
            "that p < α means significant (α = 0.05; see the note under the results)" if sequential else
            "Welch's t-test, Holm-corrected within each row's backend (α = 0.05)")
    return (f"Intervals: {CONFIDENCE:.0%} Student-t interval of the mean over n runs; relative "
            "differences: (mean − best) / best, the best of the column's own backend (and guest kernel) in the "
            f"row, its interval by the delta method on the log ratio of means; p: {test}; "
            "effect size: Hedges' g. The interval is not corrected for "
            "multiple comparisons and is on the log scale while the test is on the raw values, so the two can "
            "disagree; the verdict is the test's, and says so where they do.")


# --- Ranking groups: only columns of one backend (and guest kernel) are compared ---------

def rank_group(cell: StoredCell) -> str:
    """The group a cell's column is ranked in: "host", or "guest KERNEL" ("guest" for cells
    stored before cells carried a kernel), and its device where the study's entries ran on
    several (``cell["device"]``, see ``with_devices``). Columns of different groups ran on
    another kernel, emulated hardware or another device, so the report never ranks or tests
    one against another."""
    if cell.get("backend", "host") == "host":
        group = "host"
    else:
        kernel = cell.get("kernel")
        group = f"guest {kernel}" if kernel else "guest"
    device = cell.get("device")
    return f"{group}, {device_label(device)}" if device else group


def device_label(device: Mapping[str, Any]) -> str:
    """A device section in a few words: 'RAID5 of 8 (chunk 512 KiB, member_size 1 GiB)',
    'image (size 4 GiB)'. Sizes come as bytes (case_definitions.device_sections)."""
    kind = str(device.get("kind", "image"))
    head = f"RAID{device.get('level', '?')} of {device.get('disks', '?')}" if kind == "raid" else kind
    rest = [f"{k} {_size_text(v)}" for k, v in device.items()
            if k not in ("kind", "level", "disks") and v not in (None, "", "not set")]
    return head + (f" ({', '.join(rest)})" if rest else "")


def _size_text(value: Any) -> str:
    text = str(value)
    if text.isdigit() and int(text) >= 1024:
        n = int(text)
        for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if n >= div and n % (div // 1024 or 1) == 0:
                return f"{n / div:g} {unit}"
    return text


def with_devices(cells: list[StoredCell], runs: list[StoredRun],
                 devices: Mapping[str, dict[str, str]]) -> tuple[list[StoredCell], list[StoredRun]]:
    """The cells (and the runs' cells) with their entry's device (entry -> its [device]
    section as text, its own or the study's) where the entries ran on more than one device,
    so tables rank within a device; unchanged (no device key) where all ran on one."""
    if len({tuple(sorted(d.items())) for d in devices.values()}) < 2:
        return cells, runs

    def add(cell: StoredCell) -> StoredCell:
        device = devices.get(cell["filesystem"])
        return cell if device is None or cell.get("device") else {**cell, "device": dict(device)}

    return [add(c) for c in cells], [{**r, "cell": add(r["cell"])} for r in runs]


def rank_groups_note(groups: dict[str, list[str]]) -> str:
    """The line under a table whose columns fall in several groups (group -> columns);
    empty when there is one group (nothing is left uncompared)."""
    if len(groups) < 2:
        return ""
    named = "; ".join(f"{name} ({', '.join(columns)})" for name, columns in groups.items())
    devices = any(", " in name for name in groups)
    return (f"Ranked within each backend{' and device' if devices else ''}: {named} — each has its own best; "
            f"columns of different backends{', devices' if devices else ''} or guest kernels are not compared "
            f"(guest and host numbers are not comparable{'; nor are two devices' if devices else ''}).")


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
