"""The few words a job and the results store share: a run's ``ok`` status, a workload's
parameters and the label of a case. Here, not in ``fslab.stored``, so that the job path
(``python -m fslab.job``) does not build the store's TypedDicts: a guest under TCG pays
for every class it creates. ``fslab.stored`` re-exports them for its readers."""

from __future__ import annotations

from typing import Any

from ..units import assignments_text

# A workload's parameters or a cell's axis values: option name -> value, as the workload
# plug-in validated them (JSON scalars; seed 003's cells also carry their aging here).
# Their meaning belongs to the plug-in, so the report treats them as opaque values.
Params = dict[str, Any]

STATUS_OK = "ok"  # a run's status: "ok", or "failed" (its error says why)


def workload_label(workload: str, axes: Params) -> str:
    """A cell without its file system: workload plus its axes values, e.g. 'rand [rw=read]'.
    The one text for a case, whether read from a planned cell or a stored one."""
    values = assignments_text(axes.items(), " ")
    return workload + (f" [{values}]" if values else "")
