"""The tables of traced studies, built only from stored runs (``Store.runs``/``cells``):

- a block-trace table per workload: for each file system and op, requests completed by
  the device, request sizes (min/median/mean/max, KiB) and the sequential share, each a
  mean ± 95% interval (Student t) over the runs, with n; lossy traces marked INCOMPLETE
  (an alert cell). The title names the stream counted (analysis.traces.Stream): an md
  array's rows are its md device's bios, as in the trace plots, and its members' requests
  follow as rows marked '(members)';
- a "predicted on device models (not measured)" table per workload for studies with
  ``simulate = [...]`` (``pred_<model>_*`` metrics, see fslab.predictions).
"""

from __future__ import annotations

from ...analysis.traces import MD_DEVICE, MEMBERS
from ...predictions import cache_warning, split_name
from ...stored import StoredCell, StoredRun
from ..data import TableSection
from ..traced_runs import group_traced_runs, mean_ci, on_streams, stored_stream, trace_loss, values
from .base import SECTIONS, Section, StudyData

OPS = ("read", "write", "flush", "discard")
DATA_OPS = ("read", "write")
COMPLETE = "complete"


def trace_table(label: str, by_fs: dict[str, list[StoredRun]]) -> TableSection:
    """One workload's block-trace table."""
    columns = ["file system", "op", "n runs", "requests", "size min [KiB]", "size median [KiB]",
               "size mean [KiB]", "size max [KiB]", "sequential [%]", "trace"]
    on = on_streams({fs: stored_stream(runs) for fs, runs in by_fs.items()})
    table = TableSection("trace", f"block trace — {label}, requests {on}: per run, mean ± 95% CI (Student t) "
                         "over n runs", columns, [])
    arrays = []
    for fs, runs in by_fs.items():
        n = len(runs)
        loss = trace_loss(runs)
        # An md array: its own rows are the md device's bios, then its members' requests.
        sources = [("trace_", "")]
        if values(runs, "trace_members_write_requests_count"):
            sources.append(("trace_members_", " (members)"))
            arrays.append(fs)
        rows = [(prefix, op, suffix) for prefix, suffix in sources for op in OPS]
        for i, (prefix, op, suffix) in enumerate(rows):
            cells = [mean_ci(values(runs, f"{prefix}{op}_requests_count"), n)]
            if op in DATA_OPS:
                cells += [mean_ci(values(runs, f"{prefix}{op}_size_{k}_bytes", 1 / 1024), n)
                          for k in ("min", "median", "mean", "max")]
                cells.append(mean_ci(values(runs, f"{prefix}{op}_sequential_fraction", 100.0), n))
            else:
                cells += ["—"] * 5
            status = ""
            if i == 0:
                status = loss.text(n) if loss else COMPLETE
                if loss:
                    table.alerts.append((len(table.rows), len(columns) - 1))
            table.rows.append([fs if i == 0 else "", op + suffix, str(n), *cells, status])
    if arrays:
        table.note = (f"md arrays ({', '.join(arrays)}): read/write/... rows are {MD_DEVICE.text}, queued "
                      f"to it (block_bio_queue); '(members)' rows are {MEMBERS.text}, completed by them "
                      "(block_rq_*)")
    return table


def prediction_table(label: str, by_fs: dict[str, list[StoredRun]]) -> TableSection | None:
    """One workload's predictions table, or None when no run was replayed on a model."""
    models: list[str] = []
    for runs in by_fs.values():
        for run in runs:
            for name in run["metrics"]:
                parsed = split_name(name)
                if parsed and parsed[0] not in models:
                    models.append(parsed[0])
    if not models:
        return None
    modes = {f"{p['mode']} at queue depth {p['qd']}" for runs in by_fs.values() for r in runs
             if (p := r["provenance"].get("predictions"))}
    columns = ["file system", "model", "n runs", "IOPS", "bandwidth [MiB/s]", "latency mean [µs]",
               "latency p50 [µs]", "latency p99 [µs]", "latency max [µs]", "write amplification [B/B]", "trace"]
    table = TableSection("prediction", f"predicted on device models (not measured) — {label}: each run's block "
                         f"trace replayed ({', '.join(sorted(modes)) or 'replay mode not recorded'}); "
                         "mean ± 95% CI over n runs", columns, [])
    failures: list[str] = []
    warnings: list[str] = []
    for fs, runs in by_fs.items():
        n = len(runs)
        loss = trace_loss(runs)
        for i, model in enumerate(models):
            p = f"pred_{model}_"
            row = [mean_ci(values(runs, p + "iops"), n),
                   mean_ci(values(runs, p + "bw_bytes_per_s", 1 / 2**20), n)]
            row += [mean_ci(values(runs, f"{p}latency_{k}_ns", 1e-3), n)
                    for k in ("mean", "p50", "p99", "max")]
            row.append(mean_ci(values(runs, p + "write_amplification_ratio"), n))
            for run in runs:
                m = run["metrics"].get(p + "iops")
                if m is not None and m["value"] is None:
                    failures.append(f"{fs} #{run['repetition'] + 1} on {model}: {m['note']}")
            absorbed = values(runs, p + "write_cache_absorbed_fraction")
            warning = cache_warning(model, min(absorbed)) if absorbed else None
            if warning:
                warnings.append(f"{fs}: {warning}")
            if loss:
                table.alerts.append((len(table.rows), len(columns) - 1))
            table.rows.append([fs if i == 0 else "", model, str(n), *row, loss.text(n) if loss else COMPLETE])
    notes = [f"WARNING {w}" for w in warnings]
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


SECTIONS.register("trace-tables", Section(build))
