"""A job process loads only its own workload (fslab.registry), and a metric's unit comes
from the declarations loaded (fslab.metrics.kind_of: the longest declared suffix wins).
So each workload's metrics, and the metrics the job itself makes, must get the same unit
and direction in a job process that loaded that workload alone as where every plug-in is
loaded: else a record would say another unit depending on where its run ran."""

from __future__ import annotations

import json
import subprocess
import sys

# What every job makes beside its workload's (job.execute: device counters, wall time,
# free space; job.tracing: the trace's), and a sample of each workload's own names.
SCRIPT = """
import json, sys
import fslab.job.execute
from fslab.metrics import kind_of
from fslab.workloads import WORKLOADS
from fslab.fragmentation import free_space_histogram  # what a run with free-space facts loads
if sys.argv[1] == "all":
    names = WORKLOADS.names()
    import fslab.aging, fslab.predictions, fslab.mechanisms  # noqa: F401
else:
    names = [sys.argv[1]]
own = ["wall_s", "overhead_s", "device_read_requests_count", "device_write_sectors_count",
       "free_space_before_free_extents_count", "trace_write_requests_count"]
out = {}
for name in names:
    w = WORKLOADS.get(name)
    sample = own + w.primary_metrics(w.validate(dict(w.example))) + ["x_" + s for s in w.metrics]
    out[name] = {m: (lambda k: [k.unit, k.higher_is_better, k.ranked])(kind_of(m)) for m in sample}
print(json.dumps(out))
"""


def _kinds(which: str) -> dict[str, dict[str, list[object]]]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, which], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, list[object]]] = json.loads(done.stdout)
    return result


def test_a_job_that_loads_one_workload_gives_its_metrics_the_units_they_have_everywhere() -> None:
    everywhere = _kinds("all")
    assert {"fio", "bonnie", "alloc", "null"} <= set(everywhere)
    for workload, kinds in everywhere.items():
        alone = _kinds(workload)[workload]
        assert alone == kinds, workload
