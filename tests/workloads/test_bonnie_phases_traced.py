"""A real traced Bonnie++ run on ext4 on a loop device, split into its tests and each
test predicted on an HDD and an SSD model: the split must account for every request,
each block test must get a figure on both models, and the SSD model must finish the
block write and the block read sooner than the 7200 rpm disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fslab.cgroups import detect_version
from fslab.job.tracing import traced
from fslab.phase_predictions import predict_phases
from fslab.predictions import metric_name, predict_run
from fslab.workloads import WORKLOADS, RunContext

pytestmark = [
    pytest.mark.skipif(shutil.which("bonnie++") is None, reason="needs bonnie++ (apt-get install bonnie++)"),
    pytest.mark.skipif(detect_version() is None, reason="needs a cgroup memory controller"),
]

MODELS = ["hdd-7200", "sata-mlc-ssd"]
BLOCK_TESTS = ("block_write", "rewrite", "block_read")
SMALL = {"size": "256MiB", "ram": "128MiB", "char_size": "1MiB", "files": 1, "seeks": 8192, "seed": 1}


def test_traced_run_is_predicted_test_by_test(mounted_fs, tmp_path: Path) -> None:
    from traced_study import traced_study_support

    why = traced_study_support()
    if why:
        pytest.skip(why)
    bonnie = WORKLOADS.get("bonnie")
    params = bonnie.validate(SMALL)
    art = tmp_path / "art"
    art.mkdir()
    with mounted_fs("ext4", size="1GiB") as (dev, mnt):
        with traced(True, dev, art) as run_trace:
            result = bonnie.run(params, RunContext(workdir=mnt, device=dev, artifact_dir=art, timeout_s=600,
                                                   memory=None))
    assert run_trace is not None and run_trace.result is not None
    stored = json.loads((art / "bonnie-phases.json").read_text())
    assert stored == result.info["phases"]
    assert [p.as_dict() for p in result.phases] == stored["spans"]  # the typed phases are what was stored
    spans = stored["spans"]
    assert [s["key"] for s in spans][:6] == ["putc", "block_write", "rewrite", "getc", "block_read", "seeks"]
    # The boundaries are on the trace's clock: every test lies inside the traced window.
    for span in spans:
        assert run_trace.meta["start_ns"] <= span["start_ns"] <= span["end_ns"] <= run_trace.meta["stop_ns"]

    _, whole = predict_run(run_trace.path, MODELS, bonnie.queue_depth(params), run_trace.result)
    metrics, prov = predict_phases(run_trace.path, result.phases, MODELS)
    tests = prov["tests"]
    assert sum(t["requests"] for t in tests.values()) + prov["requests_between_tests"] == whole["requests"]
    assert tests["block_write"]["written_bytes"] > 0 and tests["block_read"]["read_bytes"] > 0
    values = {m.name: m.value for m in metrics}
    notes = {m.name: m.note for m in metrics}
    for test in BLOCK_TESTS:
        for model in MODELS:
            name = metric_name(model, f"{test}_bytes_per_s")
            assert values[name] is not None and values[name] > 0, (name, notes[name])
            assert "not measured" in notes[name] and "device-bound" in notes[name]
    for test in ("block_write", "block_read"):
        hdd, ssd = (values[metric_name(m, f"{test}_bytes_per_s")] for m in MODELS)
        assert ssd > hdd, (test, hdd, ssd)
    # The figure is the test's own work over the model's time for its requests.
    elapsed = tests["block_read"]["models"]["hdd-7200"]["elapsed_ns"] / 1e9
    assert values[metric_name("hdd-7200", "block_read_bytes_per_s")] == pytest.approx(256 * (1 << 20) / elapsed)
