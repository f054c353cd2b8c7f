"""Runs from several machines (a Dask-executed study): which host ran each run, and the
facts in which the hosts differ (kernel, CPU, device, tool versions), so a report can
warn before numbers from unlike machines are pooled, or split them by host."""

from __future__ import annotations

from collections.abc import Sequence

from ..stored import STATUS_OK, StoredRun
from .provenance_facts import run_facts

# Facts that name the run's place or setup rather than the machine.
_NOT_MACHINE = frozenset({"host", "quick mode", "backend", "mount options requested", "fresh file system per",
                          "caches dropped", "file system type", "mkfs command", "worker"})


def host_of(run: StoredRun) -> str:
    """The machine that ran the run: for a guest run the one QEMU ran on, not the guest's
    own name (a guest beside host runs is a backend, labelled as such, not another host)."""
    provenance = run.get("provenance") or {}
    vm_host = (provenance.get("guest") or {}).get("vm_host")
    return str(vm_host or (provenance.get("host") or {}).get("hostname") or "unknown host")


def hosts(runs: Sequence[StoredRun]) -> list[str]:
    """The machines that ran the study's successful runs."""
    return sorted({host_of(r) for r in runs if r["status"] == STATUS_OK})


def host_differences(runs: Sequence[StoredRun], quick: bool = False) -> list[tuple[str, dict[str, str]]]:
    """(fact, host -> value) for every machine fact whose value differs between the hosts
    that ran this study's successful runs; empty with one host."""
    ok = [r for r in runs if r["status"] == STATUS_OK]
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


def warning_lines(runs: Sequence[StoredRun], quick: bool = False) -> list[str]:
    """What a reader must know before pooling runs across hosts: a line that names them,
    then (hosts that differ) one indented line per fact they differ in."""
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
