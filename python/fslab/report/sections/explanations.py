"""Why one file system beats another: for every significant difference of the comparison
table, the facts of the I/O each side sent to its device that differ most between them —
request counts, request sizes, sequential share, flushes, bytes written per byte of
workload (from the block trace, or the device's own counters when a run was not
traced) — and, for traced runs replayed on device models, the workload's predicted
figure on each model and where each side's predicted device time goes: the mechanism
(seeks, garbage collection, parity read-modify-write, ...) whose share of the model's
work differs most between the two sides. Computed from the stored runs of any study; when no fact differs
enough to carry the difference, it says that instead (the cause is then on the host:
CPU, page cache, locking — nothing a trace shows)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from ...mechanisms import cause_shares
from ...predictions import metric_name
from ...stored import STATUS_OK, StoredCell, StoredRun
from ...units import counted
from ..data import ModelSection
from ..labels import cell_label, fs_column, percent
from ..predicted import mechanism_shares, models_in
from ..tables import build_table
from ..units import fmt
from .base import SECTIONS, Section, StudyData

# A count or size ratio at least this far from 1, or a share this many points apart,
# is a fact worth naming; below it two sides are "alike".
RATIO_ALIKE = 1.25
POINTS_ALIKE = 0.15
# Requests (or sectors) a side must issue for its count, sizes or share to be a fact: a
# couple of metadata reads differ by 2x without carrying anything.
MIN_COUNT = 16
MIN_SECTORS = 2048  # 1 MiB
# Shares of a model's predicted device time closer than this are "alike".
MECHANISM_POINTS_ALIKE = 0.05


@dataclass(frozen=True)
class Fact:
    metric: str
    what: str  # 'write requests'
    kind: str  # count | size | fraction | ratio


TRACE_FACTS = (
    Fact("trace_write_requests_count", "write requests", "count"),
    Fact("trace_read_requests_count", "read requests", "count"),
    Fact("trace_flush_requests_count", "flushes", "count"),
    Fact("trace_write_size_median_bytes", "median write size", "size"),
    Fact("trace_read_size_median_bytes", "median read size", "size"),
    Fact("trace_write_sequential_fraction", "sequential writes", "fraction"),
    Fact("trace_read_sequential_fraction", "sequential reads", "fraction"),
    Fact("trace_write_amplification_ratio", "device bytes written per workload byte", "ratio"),
)
# Untraced runs: the device's own counters (/sys/class/block stat) over the workload.
COUNTER_FACTS = (
    Fact("device_write_requests_count", "write requests", "count"),
    Fact("device_read_requests_count", "read requests", "count"),
    Fact("device_flush_requests_count", "flushes", "count"),
    Fact("device_write_sectors_count", "sectors written", "count"),
    Fact("device_read_sectors_count", "sectors read", "count"),
)


def _mean(runs: Sequence[StoredRun], metric: str) -> float | None:
    """The mean over runs; a size or sequential share of an op only over runs that issued
    requests of that op (a run without reads has no read size to average in)."""
    op = _op_of(metric)
    vals = [float(m["value"]) for r in runs if r["status"] == STATUS_OK
            if (m := r["metrics"].get(metric)) is not None and m["value"] is not None
            and (op is None or ((c := r["metrics"].get(op)) is not None and (c["value"] or 0) > 0))]
    return fmean(vals) if vals else None


def _op_of(metric: str) -> str | None:
    """The request count a per-op size or share depends on: trace_write_size_median_bytes ->
    trace_write_requests_count; None for counts and whole-run ratios."""
    for op in ("write", "read"):
        prefix = f"trace_{op}_"
        if metric.startswith(prefix) and not metric.endswith("_requests_count"):
            return f"{prefix}requests_count"
    return None


def _size(value: float) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{fmt(value / scale)} {unit}"
    return f"{fmt(value)} B"


def _text(kind: str, value: float) -> str:
    if kind == "size":
        return _size(value)
    return f"{value:.0%}" if kind == "fraction" else fmt(value)


def _distance(kind: str, a: float, b: float) -> float:
    """How different two values are, on one scale for every kind: |ln ratio| for counts,
    sizes and ratios, share points scaled so that POINTS_ALIKE reads as RATIO_ALIKE."""
    if kind == "fraction":
        return abs(a - b) * math.log(RATIO_ALIKE) / POINTS_ALIKE
    if a <= 0 or b <= 0:
        return 0.0 if a == b else math.inf
    return abs(math.log(a / b))


def _work_mib(runs: Sequence[StoredRun]) -> list[float] | None:
    """The MiB each run's workload moved (its own read and write bytes), or None when a
    run does not say: counts are then totals over the run."""
    out = []
    for r in runs:
        m = r["metrics"]
        moved = sum(float(m[k]["value"] or 0) for k in ("read_io_bytes", "write_io_bytes") if k in m)
        if moved <= 0:
            return None
        out.append(moved / (1 << 20))
    return out or None


def _count_mean(runs: Sequence[StoredRun], metric: str, work: list[float] | None) -> float | None:
    """A count per MiB of the workload's own I/O (mean over runs), or its total when the
    work is not known. Per MiB, because a time-based run of a faster file system does more
    work and so issues more of everything: the totals would name the effect, not the cause."""
    if work is None:
        return _mean(runs, metric)
    vals = [float(m["value"]) / mib for r, mib in zip(runs, work)
            if r["status"] == STATUS_OK and (m := r["metrics"].get(metric)) is not None and m["value"] is not None]
    return fmean(vals) if vals else None


def differing_facts(a: Sequence[StoredRun], b: Sequence[StoredRun]) -> list[tuple[float, str]]:
    """(distance, words) of each fact in which side a differs from side b enough to name,
    most different first: '216x fewer write requests per MiB of workload I/O (4.0 vs 864)'."""
    traced = any("trace_write_requests_count" in r["metrics"] or "trace_read_requests_count" in r["metrics"]
                 for r in (*a, *b))
    work_a, work_b = _work_mib(a), _work_mib(b)
    per_work = work_a is not None and work_b is not None
    out: list[tuple[float, str]] = []
    for fact in TRACE_FACTS if traced else COUNTER_FACTS:
        total_a, total_b = _mean(a, fact.metric), _mean(b, fact.metric)
        if total_a is None or total_b is None:
            continue
        floor = MIN_SECTORS if fact.metric.endswith("_sectors_count") else MIN_COUNT
        if fact.kind == "count" and max(total_a, total_b) < floor:  # 1 read vs 2: no mechanism
            continue
        op = _op_of(fact.metric)
        if op is not None and min(_mean(a, op) or 0, _mean(b, op) or 0) < MIN_COUNT:
            continue  # the size or share of a handful of requests says nothing
        va, vb, what = total_a, total_b, fact.what
        if fact.kind == "count" and per_work:
            pa, pb = _count_mean(a, fact.metric, work_a), _count_mean(b, fact.metric, work_b)
            if pa is None or pb is None:
                continue
            va, vb, what = pa, pb, what + " per MiB of workload I/O"
        distance = _distance(fact.kind, va, vb)
        if distance < math.log(RATIO_ALIKE):
            continue
        values = f"{_text(fact.kind, va)} vs {_text(fact.kind, vb)}"
        if fact.kind == "count" and va > 0 and vb > 0:
            times = max(va, vb) / min(va, vb)
            words = f"{fmt(times)}x {'fewer' if va < vb else 'more'} {what} ({values})"
        else:
            words = f"{what} {values}"
        out.append((distance, words))
    return sorted(out, key=lambda dw: -dw[0])


def predicted_lines(a: Sequence[StoredRun], b: Sequence[StoredRun], metric: str) -> list[str]:
    """The workload's predicted figure of each side on each model both were replayed on."""
    out = []
    for model in sorted(models_in((*a, *b))):
        va, vb = (_mean(side, metric_name(model, metric)) for side in (a, b))
        if va is None or vb is None or vb == 0:
            continue
        out.append(f"predicted on {model}: {fmt(va)} vs {fmt(vb)} {metric} ({fmt(va / vb)}x)")
    return out


def _cause_means(runs: Sequence[StoredRun], model: str) -> dict[str, float]:
    """Mean over runs of each cause's share of a model's predicted work time (mechanisms
    that make one cause added up per run first, see ``fslab.mechanisms``)."""
    per_run = []
    for r in runs:
        if r["status"] != STATUS_OK:
            continue
        by_mechanism = mechanism_shares(r, model)
        if by_mechanism:
            per_run.append(cause_shares(by_mechanism))
    causes = {c for shares in per_run for c in shares}
    return {c: fmean(shares.get(c, 0.0) for shares in per_run) for c in causes}


def mechanism_lines(a_name: str, b_name: str, a: Sequence[StoredRun], b: Sequence[StoredRun]) -> list[str]:
    """For each model both sides were replayed on, the cause whose share of the predicted
    device time differs most between them: 'on raid5-8x-sata-mlc-ssd ext4 spends 61% of
    its predicted device time in parity read-modify-write, f2fs 0%'."""
    models = sorted(m for m in models_in((*a, *b)) if any(mechanism_shares(r, m) for r in (*a, *b)))
    out = []
    for model in models:
        sa, sb = _cause_means(a, model), _cause_means(b, model)
        if not sa or not sb:
            continue
        cause = max(sorted(set(sa) | set(sb)), key=lambda c: abs(sa.get(c, 0.0) - sb.get(c, 0.0)))
        va, vb = sa.get(cause, 0.0), sb.get(cause, 0.0)
        if abs(va - vb) < MECHANISM_POINTS_ALIKE:
            out.append(f"on {model} {a_name} and {b_name} spend their predicted device time alike (most "
                       f"different: {cause}, {va:.0%} vs {vb:.0%})")
        else:
            out.append(f"on {model} {a_name} spends {va:.0%} of its predicted device time in {cause}, "
                       f"{b_name} {vb:.0%}")
    return out


def explain(a_name: str, b_name: str, a: Sequence[StoredRun], b: Sequence[StoredRun], metric: str) -> str:
    """What a sends to its device that b does not ('a: 213x more write requests (...); ...'),
    or that nothing does; then the predicted figures."""
    if any(r["provenance"].get("workload_phases") for r in (*a, *b)):
        return (f"not attributed: a {a[0]['cell']['workload_kind'] if a else 'its'} run's block trace and device "
                "counters hold all its phases one after another (its tests or operations), so they are no one "
                "figure's")
    facts = differing_facts(a, b)
    predicted = predicted_lines(a, b, metric) + mechanism_lines(a_name, b_name, a, b)
    source = ("block traces" if any(k.startswith("trace_") for r in a for k in r["metrics"])
              else "device counters")
    if not facts:
        text = (f"the {source} do not explain it — requests, sizes, sequential share "
                f"and flushes are within {RATIO_ALIKE:g}x (or {POINTS_ALIKE:.0%} points) of each other, so the "
                "difference is in host-side time (CPU, page cache, locking), which they do not show")
        if any(((r.get("provenance") or {}).get("guest") or {}).get("accelerator") == "tcg" for r in (*a, *b)):
            text += (" — here the CPU of a QEMU guest under TCG (software emulation), which inflates every "
                     "CPU-bound cost")
    else:
        text = f"{a_name}: " + "; ".join(words for _, words in facts)
        text += f" (from the {source}, mean over runs)"
    if predicted:
        text += "; " + "; ".join(predicted)
    return text


def explanations(runs: Sequence[StoredRun], cells: Sequence[StoredCell]) -> list[str]:
    """A sentence per significant difference of the comparison table (each column against
    its group's best), in the table's order."""
    table = build_table(runs, None, cells)
    by_case: dict[tuple[str, str], list[StoredRun]] = {}
    for run in runs:
        by_case.setdefault((cell_label(run["cell"]), fs_column(run["cell"])), []).append(run)
    out = []
    for row in table.rows:
        for fs, comparison in row.comparisons.items():
            best = row.best_for(fs)
            if not comparison.significant or best is None or best == fs:
                continue
            mean_fs, mean_best = row.summaries[fs].mean, row.summaries[best].mean
            how = percent((mean_fs - mean_best) / abs(mean_best))  # the table's own phrasing
            out.append(f"{row.label} — {row.metric} of {fs} {how} against {best}: " + explain(
                fs, best, by_case.get((row.label, fs), []), by_case.get((row.label, best), []), row.metric))
    return out


def nothing_to_explain(runs: Sequence[StoredRun], cells: Sequence[StoredCell]) -> list[str]:
    """Why the section has no explanation: how many comparisons had no verdict (and the
    commonest reason) and how many no significant difference; empty without comparisons."""
    comparisons = [c for row in build_table(runs, None, cells).rows
                   for fs, c in row.comparisons.items() if row.best_for(fs) not in (None, fs)]
    if not comparisons:
        return []
    untested = [c.untested for c in comparisons if c.untested]
    lines = ["No significant difference to explain."]
    if untested:
        commonest = max(set(untested), key=untested.count)
        lines.append(f"{len(untested)} of {counted(len(comparisons), 'comparison')} had no verdict ({commonest}): "
                     "more runs would let the differences be tested and then explained.")
    if len(untested) < len(comparisons):
        lines.append(f"{counted(len(comparisons) - len(untested), 'comparison')} showed no significant difference.")
    return lines


def build(study: StudyData) -> list[ModelSection]:
    lines = explanations(study.runs, study.cells) or nothing_to_explain(study.runs, study.cells)
    if not lines:
        return []
    return [ModelSection("explanations", "Why: the I/O behind each significant difference",
                         "For each significant difference of the results table, the facts of the I/O the two "
                         "sides sent to their devices that differ most, the workload's predicted figure on "
                         "each device model the runs were replayed on, and the mechanism (seeks, garbage "
                         "collection, parity read-modify-write, ...) whose share of the predicted device time "
                         "differs most.", lines)]


SECTIONS.register("explanations", Section(build, order=200))
