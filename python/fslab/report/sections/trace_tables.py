"""Report tables for traced studies, built only from stored runs (``Store.runs``/``cells``):

- a block-trace table per workload: for each file system and op, requests completed by
  the device, request sizes (min/median/mean/max, KiB) and the sequential share, each a
  mean ± 95% interval (Student t) over the runs, with n; lossy traces marked INCOMPLETE;
- a "predicted on device models (not measured)" table per workload for studies with
  ``simulate = [...]`` (``pred_<model>_*`` metrics, see fslab.predictions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..analysis.stats import summarize
from ..predictions import cache_warning, split_name
from .labels import cell_label, fs_column, mean_pm

OPS = ("read", "write", "flush", "discard")
DATA_OPS = ("read", "write")


workload_label = cell_label  # the row label the comparison table uses


def _is_traced(run: dict[str, Any]) -> bool:
    return run["status"] == "ok" and "trace_write_requests_count" in run["metrics"]


def group_traced_runs(runs: Iterable[dict[str, Any]], cells: list[dict[str, Any]],
                      keep: Callable[[dict[str, Any]], bool] = _is_traced,
                      ) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """workload label -> file system -> the runs ``keep`` accepts (traced, ok by default),
    in the cells' order; workloads and file systems without such runs are left out."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for cell in cells:  # fixes the order: the study file's
        out.setdefault(workload_label(cell), {}).setdefault(fs_column(cell), [])
    for run in runs:
        if keep(run):
            out[workload_label(run["cell"])][fs_column(run["cell"])].append(run)
    return {w: {fs: rs for fs, rs in by_fs.items() if rs} for w, by_fs in out.items()
            if any(by_fs.values())}


def values(runs: list[dict[str, Any]], name: str, scale: float = 1.0) -> list[float]:
    """The stored numbers of one metric over runs (runs without a number are skipped)."""
    out = []
    for run in runs:
        m = run["metrics"].get(name)
        if m is not None and m["value"] is not None:
            out.append(float(m["value"]) * scale)
    return out


def mean_ci(vals: list[float], n_expected: int) -> str:
    """'mean ± half-width', with (n=k) when fewer than the row's n runs had a number."""
    if not vals:
        return "—"
    return mean_pm(summarize(vals), n_expected=n_expected)


@dataclass(frozen=True)
class Loss:
    runs: int  # runs whose trace is incomplete
    events: int  # events lost in them, summed

    def text(self, n: int) -> str:
        return f"INCOMPLETE: {self.events:,} events lost ({self.runs} of {n} runs)"


def trace_loss(runs: list[dict[str, Any]]) -> Loss | None:
    """Lossy traces among ``runs``: a trace metric carries the note when events were lost."""
    lossy = [r for r in runs if any(m["note"] and name.startswith("trace_")
                                    for name, m in r["metrics"].items())]
    if not lossy:
        return None
    return Loss(len(lossy), int(sum(values(lossy, "trace_lost_events_count"))))


def trace_table(label: str, by_fs: dict[str, list[dict[str, Any]]]) -> Any:
    """One workload's block-trace table (rich Table)."""
    from rich.table import Table

    table = Table(title=f"block trace — {label}: per run, mean ± 95% CI (Student t) over n runs",
                  title_justify="left")
    for col in ("file system", "op", "n runs", "requests", "size min [KiB]", "size median [KiB]",
                "size mean [KiB]", "size max [KiB]", "sequential [%]", "trace"):
        table.add_column(col, justify="left" if col in ("file system", "op", "trace") else "right")
    arrays = []
    for fs, runs in by_fs.items():
        n = len(runs)
        loss = trace_loss(runs)
        status = f"[bold red]{loss.text(n)}[/bold red]" if loss else "complete"
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
            table.add_row(fs if i == 0 else "", op + suffix, str(n), *cells, status if i == 0 else "",
                          end_section=i == len(rows) - 1)
    if arrays:
        table.caption = (f"md arrays ({', '.join(arrays)}): read/write/... rows are the bios queued to the md "
                         "device (block_bio_queue); '(members)' rows are the requests its member devices "
                         "completed (block_rq_*)")
    return table


def prediction_table(label: str, by_fs: dict[str, list[dict[str, Any]]]) -> Any | None:
    """One workload's predictions table, or None when no run was replayed on a model."""
    from rich.table import Table

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
    table = Table(title=f"predicted on device models (not measured) — {label}: each run's block trace "
                  f"replayed ({', '.join(sorted(modes)) or 'replay mode not recorded'}); "
                  "mean ± 95% CI over n runs", title_justify="left")
    for col in ("file system", "model", "n runs", "IOPS", "bandwidth [MiB/s]", "latency mean [µs]",
                "latency p50 [µs]", "latency p99 [µs]", "latency max [µs]", "write amplification [B/B]",
                "trace"):
        table.add_column(col, justify="left" if col in ("file system", "model", "trace") else "right")
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
            table.add_row(fs if i == 0 else "", model, str(n), *row,
                          f"[bold red]{loss.text(n)}[/bold red]" if loss else "complete",
                          end_section=i == len(models) - 1)
    captions = [f"WARNING {w}" for w in warnings]
    if failures:
        captions.append("no prediction: " + "; ".join(failures[:5]))
    if captions:
        table.caption = "\n".join(captions)
    return table


def report_tables(runs: list[dict[str, Any]], cells: list[dict[str, Any]]) -> list[Any]:
    """Every trace and prediction table of a study (empty when no run was traced)."""
    out: list[Any] = []
    for label, by_fs in group_traced_runs(runs, cells).items():
        out.append(trace_table(label, by_fs))
        predicted = prediction_table(label, by_fs)
        if predicted is not None:
            out.append(predicted)
    return out
