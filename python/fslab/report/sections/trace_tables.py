"""The tables of traced studies, built only from stored runs (``Store.runs``/``cells``):

- a block-trace table per workload (report.size_table: requests, request sizes and the
  sequential share per file system and op, mean ± 95% interval over the runs), from the
  runs' stored trace metrics, with what tracing cost. The title names the stream counted
  (analysis.traces.Stream): an md array's rows are its md device's bios, as in the trace
  plots, and its members' requests follow as rows marked '(members)';
- a "predicted on device models (not measured)" table per workload for studies with
  ``simulate = [...]`` (``pred_<model>_*`` metrics, see fslab.predictions).
"""

from __future__ import annotations

from ...metrics import display_name
from ...predictions import cache_warning, metric_name
from ...stored import StoredCell, StoredRun
from ...trace.capture import IDLE_WAIT_S
from ...units import counted
from ..data import TableSection
from ..predicted import models_in, models_of
from ..size_table import COMPLETE, OPS, size_table
from ..traced_runs import (
    group_traced_runs,
    inexact_cuts,
    mean_ci,
    on_streams,
    stored_numbers,
    stored_stream,
    trace_loss,
    values,
)
from ..units import display_scale
from .base import SECTIONS, Section, StudyData


def trace_table(label: str, by_fs: dict[str, list[StoredRun]]) -> TableSection:
    """One workload's block-trace table, from its runs' stored trace metrics."""
    on = on_streams({fs: stored_stream(runs) for fs, runs in by_fs.items()})
    table = size_table(f"block trace — {label}, requests {on}: per run, mean ± 95% CI (Student t) over n runs",
                       {fs: [stored_numbers(r) for r in runs] for fs, runs in by_fs.items()},
                       {fs: trace_loss(runs) for fs, runs in by_fs.items()})
    notes = [cost] if (cost := tracing_cost(by_fs)) else []
    if cuts := busy_cuts(by_fs):
        notes.append(cuts)
    table.note = "\n".join(notes + ([table.note] if table.note else []))
    return table


def busy_cuts(by_fs: dict[str, list[StoredRun]]) -> str | None:
    """Which file systems have runs whose trace was cut while their device was busy, so that
    a reader does not take those runs' counts as the device's own."""
    parts = [f"{fs} {counted(n, 'run')} of {len(runs)}" for fs, runs in by_fs.items() if (n := inexact_cuts(runs))]
    if not parts:
        return None
    return (f"trace cut while the device was busy (no idle moment within {IDLE_WAIT_S:g} s of the start or "
            "the end, e.g. writeback after a buffered run): " + "; ".join(parts) + "; those runs' request "
            "counts may differ from the device's own (/sys/block/<dev>/stat) by up to the requests in "
            "flight at the cut")


def tracing_cost(by_fs: dict[str, list[StoredRun]]) -> str | None:
    """What tracing took from each column, per request the device completed: the trace
    reader's CPU while the workload ran and the events the kernel recorded (each costs the
    workload the kernel's tracepoint time, measured by `python -m bench trace`)."""
    parts = []
    for fs, runs in by_fs.items():
        # runs stored before fslab measured the reader have no number: left out
        measured = [r for r in runs if values([r], "trace_reader_cpu_during_run_ns")]
        cpu = sum(values(measured, "trace_reader_cpu_during_run_ns"))
        events = sum(values(measured, "trace_events_count"))
        requests = sum(sum(values(measured, f"trace_{op}_requests_count")) for op in OPS)
        if requests:
            parts.append(f"{fs} {cpu / requests:.0f} ns reader CPU and {events / requests:.1f} events "
                         f"per request (n={len(measured)} runs)")
    if not parts:
        return None
    return ("tracing cost (summed over the runs, per request completed): " + "; ".join(parts))


def _pred(runs: list[StoredRun], model: str, suffix: str, scale: float = 1.0) -> list[float]:
    """A model's device figure over runs (runs stored under older names read as current
    ones: the store's compatibility layer renames them)."""
    return values(runs, metric_name(model, suffix), scale)


def prediction_table(label: str, by_fs: dict[str, list[StoredRun]]) -> TableSection | None:
    """One workload's predictions table, or None when no run was replayed on a model: first
    the workload's own primary metric as predicted (its work over the model's time for the
    requests issued for it) beside what was measured here, then the device's figures."""
    models = models_in(r for runs in by_fs.values() for r in runs)
    if not models:
        return None
    first = next(iter(r for runs in by_fs.values() for r in runs))
    primary = first["cell"]["primary_metric"]
    stored = first["metrics"].get(primary)
    # The workload's figure in the unit the study's main table reads it in (ms, not 9-digit
    # ns), scaled by what was measured here.
    measured_all = [v for runs in by_fs.values() for v in values(runs, primary)]
    scale_by = sorted(measured_all)[len(measured_all) // 2] if measured_all else 0.0
    divisor, unit = display_scale(stored["unit"], scale_by) if stored is not None else (1.0, "")
    shown = display_name(primary)
    modes = {f"{p['mode']} at queue depth {p['qd']}" for runs in by_fs.values() for r in runs
             if (p := r["provenance"].get("predictions"))}
    columns = ["file system", "model", "n runs", f"{shown} predicted [{unit}]", f"{shown} measured here [{unit}]",
               "device requests/s", "device bandwidth [MiB/s]", "device latency mean [µs]",
               "device latency p50 [µs]", "device latency p99 [µs]", "device latency max [µs]",
               "write amplification [B/B]", "trace"]
    table = TableSection("prediction", f"predicted on device models (not measured) — {label}: each run's block "
                         f"trace replayed ({', '.join(sorted(modes)) or 'replay mode not recorded'}); "
                         "mean ± 95% CI over n runs", columns, [])
    failures: list[str] = []
    warnings: list[str] = []
    unpredicted = False
    for fs, runs in by_fs.items():
        n = len(runs)
        loss = trace_loss(runs)
        # Only the models this entry was replayed on (each device of a study may have its own).
        own = [m for m in models if any(m in models_of(r) for r in runs)]
        for i, model in enumerate(own):
            # A workload predicted test by test (Bonnie++) has its figures in its own table:
            # a test's prediction is not the whole run's.
            predicted = values([r for r in runs if "phase_predictions" not in r["provenance"]],
                               metric_name(model, primary), 1 / divisor)
            unpredicted |= not predicted
            row = [mean_ci(predicted, n), mean_ci(values(runs, primary, 1 / divisor), n),
                   mean_ci(_pred(runs, model, "device_requests_per_s"), n),
                   mean_ci(_pred(runs, model, "device_bw_bytes_per_s", 1 / 2**20), n)]
            row += [mean_ci(_pred(runs, model, f"device_latency_{k}_ns", 1e-3), n)
                    for k in ("mean", "p50", "p99", "max")]
            row.append(mean_ci(_pred(runs, model, "write_amplification_ratio"), n))
            for run in runs:
                m = run["metrics"].get(metric_name(model, "device_requests_per_s"))
                if m is not None and m["value"] is None:
                    failures.append(f"{fs} #{run['repetition'] + 1} on {model}: {m['note']}")
            absorbed = values(runs, metric_name(model, "write_cache_absorbed_fraction"))
            warning = cache_warning(model, min(absorbed)) if absorbed else None
            if warning:
                warnings.append(f"{fs}: {warning}")
            if loss:
                table.alerts.append((len(table.rows), len(columns) - 1))
            table.rows.append([fs if i == 0 else "", model, str(n), *row, loss.text(n) if loss else COMPLETE])
    notes = [f"{shown} predicted: the run's work (its {shown} times its own runtime) over the time the model "
             "needs for every request the file system issued for it (written back inside the traced window); "
             "assumes the run is device-bound (no CPU or page-cache time) and the request stream as this "
             "machine's kernel produced it. Device columns are the model's requests, not the workload's I/Os."]
    if unpredicted:
        notes.append(f"— under {shown} predicted: the workload has no single window whose work a model can time "
                     "(phases run one after another in one trace, e.g. Bonnie++'s tests — predicted test by test "
                     "in their own table — or fio groups, or fio's ramp_time), or the prediction was stored "
                     "before fslab made it")
    notes += [f"WARNING {w}" for w in warnings]
    if failures:
        notes.append("no prediction: " + "; ".join(failures[:5]))
    table.note = "\n".join(notes)
    return table


def report_tables(runs: list[StoredRun], cells: list[StoredCell]) -> list[TableSection]:
    """Every trace and prediction table of a study (empty when no run was traced): each
    workload's trace table, then its predictions."""
    out: list[TableSection] = []
    for label, by_fs in group_traced_runs(runs, cells).items():
        out.append(trace_table(label, by_fs))
        predicted = prediction_table(label, by_fs)
        if predicted is not None:
            out.append(predicted)
    return out


def build(study: StudyData) -> list[TableSection]:
    return report_tables(study.runs, study.cells)


SECTIONS.register("trace-tables", Section(build, order=500))
