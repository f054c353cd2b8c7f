"""End to end through `fslab run`: one small traced study on ext4 with fs_mark, dbench,
sysbench fileio and PostMark, and a dbench that hangs past its timeout. Every stored
number is the one the tool printed in the run's kept output; the traces and predictions
are there as for fio; the hung run failed with dbench's own lines and stored no metric."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.store import Store
from fslab.workloads import WORKLOADS
from fslab.workloads.dbench import parse_output as parse_dbench
from fslab.workloads.fsmark import metrics_from
from fslab.workloads.fsmark import parse_output as parse_fsmark
from fslab.workloads.postmark import parse_output as parse_postmark
from fslab.workloads.sysbench import parse_run as parse_sysbench

TOOLS = ("fs_mark", "dbench", "sysbench", "postmark")
pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                reason="needs fsmark, dbench, sysbench and postmark (make setup)")

STUDY = """
[study]
name = "metadata workloads end to end"
repetitions = 1
trace = true
simulate = ["sata-mlc-ssd"]

[device]
size = "512MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fsmark"
name = "fsmark"
files = 300
files_per_dir = 100
dirs = 3
sync = "fsync"

[[workloads]]
kind = "dbench"
name = "dbench"
clients = 2
runtime = 2

[[workloads]]
kind = "sysbench"
name = "sysbench"
mode = "rndwr"
file_total_size = "32MiB"
files = 4
block_size = "4KiB"
fsync_freq = 16
runtime = 1
memory = "64MiB"

[[workloads]]
kind = "postmark"
name = "postmark"
files = 500
transactions = 30000

[[workloads]]
kind = "dbench"
name = "dbench-hangs"
runtime = 60
timeout = 2
"""


def test_study_of_the_four_through_fslab_run(device_support, tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(images=tmp_path / "images"))
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(study), "-r", str(results), "-q"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # one run failed: exit 1
    assert "Traceback" not in done.stdout + done.stderr
    with Store(results, read_only=True) as store:
        runs = {r["cell"]["workload"]: r for r in store.runs(store.study().id)}
    assert set(runs) == {"fsmark", "dbench", "sysbench", "postmark", "dbench-hangs"}

    def stored(name: str) -> dict[str, float]:
        run = runs[name]
        assert run["status"] == "ok", run["error"]
        return {k: v["value"] for k, v in run["metrics"].items()}

    def output(name: str, file: str) -> str:
        return (results / runs[name]["artifact_dir"] / file).read_text()

    def own(name: str, expected: dict[str, float]) -> None:
        """The workload's stored metrics are exactly the ones parsed from its kept output."""
        plugin = WORKLOADS.get(runs[name]["cell"]["workload_kind"])
        got = stored(name)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value), (name, key)
        assert set(plugin.primary_metrics(plugin.validate(dict(runs[name]["cell"]["params"])))) <= set(got)

    own("fsmark", metrics_from(parse_fsmark(output("fsmark", "fsmark.out")), output("fsmark", "fsmark.out")))
    own("dbench", parse_dbench(output("dbench", "dbench.out"))[0])
    own("sysbench", parse_sysbench(output("sysbench", "sysbench.out"), "rndwr", True))
    own("postmark", parse_postmark(output("postmark", "postmark.out"), 30000)[0])

    # Traced like fio: trace metrics and a prediction per run, device counters beside them.
    for name in ("fsmark", "dbench", "sysbench", "postmark"):
        m = stored(name)
        assert m["trace_lost_events_count"] == 0 and "trace_write_requests_count" in m, name
        assert any(k.startswith("pred_sata-mlc-ssd_") for k in m), name
    # fsync'ing ones reach the device within the run (PostMark's small pool, written and
    # deleted in the page cache in under a second, need not: it has no fsync)
    for name in ("fsmark", "dbench", "sysbench"):
        m = stored(name)
        assert m["trace_write_requests_count"] > 0 and m["device_write_requests_count"] > 0, name
        # what tracing took is stored beside: the reader's CPU while the run went on and
        # every event (at least an issue and a complete per completed request)
        assert m["trace_reader_cpu_during_run_ns"] >= 0, name
        assert m["trace_events_count"] >= 2 * m["trace_write_requests_count"], name
    assert stored("fsmark")["trace_flush_requests_count"] >= 300  # an fsync per file
    # sysbench ran in the workload's 64 MiB cgroup
    assert runs["sysbench"]["provenance"]["memory_limit"]["limit_bytes"] == 64 << 20

    hung = runs["dbench-hangs"]
    assert hung["status"] == "failed" and "timed out after 2 s" in hung["error"]
    assert "dbench version 4.00" in hung["error"]  # the tool's own lines
    assert not [k for k, v in hung["metrics"].items() if v["value"] is not None
                and not k.endswith(("wall_s", "overhead_s"))]


def test_doctor_lists_the_four_tools_and_their_packages() -> None:
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "doctor"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "250"})
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") > 3}
    for tool, kind in (("fs_mark", "fsmark"), ("dbench", "dbench"), ("sysbench", "sysbench"),
                       ("postmark", "postmark")):
        assert tool in rows and f"{kind} workloads" in rows[tool], tool
