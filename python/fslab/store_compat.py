"""Stored results in today's names: what older fslab versions wrote differently, read as
fslab names it now, in one place. The store applies it to every run it gives back
(``Store.runs``), so no reader knows an old name.

- Device-model predictions stored before the device's figures were named ``device_*``
  (``pred_<model>_iops`` etc. were the device's requests per second, not the workload's):
  they read as ``pred_<model>_device_requests_per_s`` and so on, so one name never means
  two things across a store's runs. Which models a run was replayed on comes from its
  provenance (``predictions.models``), as for any reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from .predictions import metric_name

# Old suffix -> today's, of a model's device figures stored before they were named device_*.
OLD_DEVICE_SUFFIXES = {"requests_count": "device_requests_count", "iops": "device_requests_per_s",
                       "bw_bytes_per_s": "device_bw_bytes_per_s", "latency_mean_ns": "device_latency_mean_ns",
                       "latency_p50_ns": "device_latency_p50_ns", "latency_p99_ns": "device_latency_p99_ns",
                       "latency_max_ns": "device_latency_max_ns"}

M = TypeVar("M")


def current_metrics(metrics: Mapping[str, M], provenance: Mapping[str, Any]) -> dict[str, M]:
    """A run's metrics under today's names (a run stored under them comes back as it is)."""
    models = ((provenance.get("predictions") or {}).get("models")) or {}
    renames: dict[str, str] = {}
    for model in models:
        if metric_name(model, "device_requests_count") in metrics:
            continue  # stored under today's names: its pred_<model>_iops, if any, is the workload's
        renames.update({metric_name(model, old): metric_name(model, new) for old, new in OLD_DEVICE_SUFFIXES.items()})
    if not renames:
        return dict(metrics)
    return {renames.get(name, name): m for name, m in metrics.items()}
