"""Runs from several machines (a Dask-executed study): which host ran each run, and the
facts in which the hosts differ (kernel, CPU, device, tool versions), so a report can
warn before numbers from unlike machines are pooled, or split them by host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .provenance_facts import run_facts

# Facts that name the run's place or setup rather than the machine.
_NOT_MACHINE = frozenset({"host", "quick mode", "backend", "mount options requested", "fresh file system per",
                          "caches dropped", "file system type", "mkfs command"})


def host_of(run: dict[str, Any]) -> str:
    """The machine that ran the run: for a guest run the one QEMU ran on, not the guest's
    own name (a guest beside host runs is a backend, labelled as such, not another host)."""
    provenance = run.get("provenance") or {}
    vm_host = (provenance.get("guest") or {}).get("vm_host")
    return vm_host or (provenance.get("host") or {}).get("hostname") or "unknown host"


def hosts(runs: list[dict[str, Any]]) -> list[str]:
    return sorted({host_of(r) for r in runs if r["status"] == "ok"})


def host_differences(runs: list[dict[str, Any]], quick: bool = False) -> list[tuple[str, dict[str, str]]]:
    """(fact, host -> value) for every machine fact whose value differs between the hosts
    that ran this study's successful runs; empty with one host."""
    ok = [r for r in runs if r["status"] == "ok"]
    if len(hosts(ok)) < 2:
        return []
    seen: dict[str, dict[str, set[str]]] = {}
    for run in ok:
        for fact, value in run_facts(run, quick).items():
            if fact not in _NOT_MACHINE:
                seen.setdefault(fact, {}).setdefault(host_of(run), set()).add(value)
    out = []
    for fact, by_host in seen.items():
        values = {h: " | ".join(sorted(v)) for h, v in sorted(by_host.items())}
        if len(set(values.values())) > 1:
            out.append((fact, values))
    return out


def warning_lines(runs: list[dict[str, Any]], quick: bool = False) -> list[str]:
    """What a reader must know before pooling runs across hosts."""
    names = hosts(runs)
    if len(names) < 2:
        return []
    diffs = host_differences(runs, quick)
    if not diffs:
        return [f"runs from {len(names)} hosts ({', '.join(names)}), alike in kernel, CPU, device and "
                "tool versions: pooled"]
    lines = [f"runs from {len(names)} hosts ({', '.join(names)}) that differ; pooled figures mix machines "
             "(`fslab report --by-host` splits them):"]
    for fact, values in diffs:
        lines.append(f"  {fact}: " + "; ".join(f"{h} = {v}" for h, v in values.items()))
    return lines


def host_renderables(results: Path, study_id: int | None, metric: str | None, by_host: bool) -> list[Any]:
    """For the terminal: with ``by_host``, the comparison table once per host; and the
    warning about pooling runs of several hosts (nothing for a one-host study)."""
    from rich.markup import escape
    from rich.text import Text

    from ..store import Store
    from .model import build_report
    from .terminal import summary_renderable

    with Store(results, read_only=True) as store:
        row = store.study(study_id)
        runs, cells = store.runs(row.id), store.cells(row.id)
    out: list[Any] = []
    if by_host and len(hosts(runs)) > 1:
        for host in hosts(runs):
            mine = build_report(row, [r for r in runs if host_of(r) == host], cells, metric, str(results))
            out.append(summary_renderable(mine.filesystems, mine.rows, escape(f"study {row.id}: host {host}")))
    out += [Text(line, style="yellow") for line in warning_lines(runs, row.quick)]
    return out
