"""The facts of a stored run that decide whether two numbers can be compared: kernel,
tool versions, device, mkfs and mount options in effect, backend, quick mode, host.
Flattened to (field -> text) so the report's provenance table and `fslab compare`'s
warnings read the same fields the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..stored import StoredRun
from ..units import value_text

# device facts that name a place (an image path, a temporary directory), not a property
_PLACE_KEYS = frozenset({"image", "directory", "path", "loop", "device"})


# A device's fields that are sizes in bytes (device_text shows them in binary units too).
SIZE_FIELDS = ("size", "member_size", "chunk")


def device_text(device: dict[str, Any]) -> str:
    """'kind=raid, level=5, chunk=512 KiB (524,288 B), force=false': a device's fields as the
    study file says them (the plan's device line and the report's alike)."""
    return ", ".join(f"{k}={bytes_text(v) if k in SIZE_FIELDS and isinstance(v, int) else value_text(v)}"
                     for k, v in device.items() if v is not None and v != [])  # no members named: none shown


def bytes_text(value: Any) -> str:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return _text(value)
    for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= div:
            return f"{n / div:,.4g} {unit} ({n:,} B)"
    return f"{n} B"


def _text(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):  # as "quick mode" says it, not Python's True
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _worker_text(worker: Any) -> str:
    """The Dask worker that ran the run ('name (address)'); '—' for a run on this machine."""
    if not isinstance(worker, dict) or not worker.get("address"):
        return "—"
    name = worker.get("name")
    return f"{name} ({worker['address']})" if name and name != worker["address"] else str(worker["address"])


def run_facts(run: StoredRun, quick: bool) -> dict[str, str]:
    """Field -> value of one run, in a fixed order (missing facts read '—')."""
    prov = run.get("provenance") or {}
    host = prov.get("host") or {}
    fs = prov.get("filesystem") or {}
    device = prov.get("device") or {}
    argv = fs.get("mkfs_argv") or []
    facts = {
        "host": _text(host.get("hostname")),
        "kernel": _text(host.get("kernel")),
        "CPU": f"{_text(host.get('cpu_model'))} ({_text(host.get('cpu_count'))} cores)",
        "fslab": _text(host.get("fslab")),
        "backend": _text(prov.get("backend") or run["cell"].get("backend")),
        "worker": _worker_text(prov.get("worker")),
        "quick mode": "yes (scaled down)" if quick else "no",
        "file system type": _text(fs.get("mounted_as") if fs.get("mounted_as") not in (None, "none")
                                  else run["cell"].get("fs_type")),
        # the device argument is a temporary path: leave it out, keep the options
        "mkfs command": _text([a for a in argv if not str(a).startswith("/dev/")]),
        "mkfs version": _text(fs.get("mkfs_version")),
        "mount options requested": _text(fs.get("mount_options_requested")),
        "mount options in effect": _text(fs.get("mount_options_in_effect")),
        "caches dropped": _text(prov.get("caches_dropped")),
        "fresh file system per": _text(prov.get("fresh")),
    }
    for key, value in sorted(device.items()):
        if key not in _PLACE_KEYS:
            facts[f"device {key}"] = (bytes_text(value) if key.endswith("_bytes") else
                                      f"{value} B" if key.endswith("block_size") else _text(value))
    for tool, version in sorted((prov.get("tools") or {}).items()):
        facts[f"{tool} version"] = _text(version)
    return facts


def facts_by_group(runs: Sequence[StoredRun], group: Callable[[StoredRun], str],
                   quick: bool) -> dict[str, dict[str, str]]:
    """field -> group -> value(s) over the groups' runs ('a | b' when runs disagree).
    ``group(run)`` names the column a run belongs to (e.g. its file system)."""
    seen: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        for field, value in run_facts(run, quick).items():
            values = seen.setdefault(field, {}).setdefault(group(run), [])
            if value not in values:
                values.append(value)
    return {field: {g: " | ".join(v) for g, v in by_group.items()} for field, by_group in seen.items()}
