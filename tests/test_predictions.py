"""``simulate = [...]`` in a study: names checked when the study loads, and a real tiny
traced study (ext4 and xfs, 2 runs each) whose runs are replayed on hdd-7200 and
sata-mlc-ssd — stored as pred_<model>_* metrics with units, labelled as predictions and
reported in their own table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fslab.analysis.traces import match_requests
from fslab.errors import SpecError
from fslab.metrics import unit_of
from fslab.predictions import SUFFIXES, replay_queue_depth, split_name
from fslab.study import parse_spec
from fslab.trace.formats import EV_COMPLETE, OP_FLUSH, read_parquet

MODELS = ["hdd-7200", "sata-mlc-ssd"]


def _spec(trace: bool, simulate: list[str]) -> dict[str, Any]:
    return {"study": {"name": "s", "trace": trace, "simulate": simulate},
            "filesystems": {"ext4": {}},
            "workloads": [{"kind": "fio", "name": "w", "rw": "randwrite", "bs": "4k", "size": "16M"}]}


def test_unknown_model_is_a_spec_error_naming_the_entry() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(_spec(True, ["hdd-7200", "ssd-9000"]), "t.toml")
    text = str(info.value)
    assert "study.simulate[1]" in text and "'ssd-9000'" in text
    assert "hdd-7200" in text and "sata-mlc-ssd" in text  # the known models are listed
    raid = ["raid5-4x-sata-mlc-ssd"]
    assert parse_spec(_spec(True, raid), "t.toml").study.simulate == raid


def test_simulate_needs_trace() -> None:
    with pytest.raises(SpecError, match=r"study\.simulate: needs trace = true"):
        parse_spec(_spec(False, MODELS), "t.toml")
    assert parse_spec(_spec(False, []), "t.toml").study.simulate == []


def test_replay_queue_depth() -> None:
    assert replay_queue_depth({}) == 1
    assert replay_queue_depth({"iodepth": 8, "numjobs": 2}) == 16
    assert replay_queue_depth({"threads": 4}) == 4


@pytest.mark.device
def test_traced_study_is_replayed_on_models(tmp_path: Path) -> None:
    from fslab.report.sections.trace_tables import report_tables
    from fslab.report.tables import build_table
    from fslab.report.terminal import section_renderable
    from fslab.simulate import read_requests
    from traced_study import rendered_text as _text
    from traced_study import run_traced_study, traced_study_support

    reason = traced_study_support()
    if reason:
        pytest.skip(reason)
    results, runs, cells = run_traced_study(tmp_path, extra=f"simulate = {MODELS!r}".replace("'", '"'))
    assert len(runs) == 4
    for run in runs:
        m = run["metrics"]
        pred = {name: v for name, v in m.items() if split_name(name)}
        optional = {("sata-mlc-ssd", "write_amplification_steady_ratio"),
                    ("hdd-7200", "write_cache_absorbed_fraction")}
        assert {split_name(n) for n in pred} == {(model, s) for model in MODELS for s in SUFFIXES} | optional
        # Predictions say which settings they assume.
        assert "write cache on, 32 MiB" in m["pred_hdd-7200_iops"]["note"]
        assert "over-provisioning 0.0" in m["pred_sata-mlc-ssd_iops"]["note"]
        assert 0 <= m["pred_hdd-7200_write_cache_absorbed_fraction"]["value"] <= 1
        for name, v in pred.items():
            assert v["unit"] == unit_of(name) and v["value"] is not None, name
            assert "not measured" in v["note"] and "closed loop, qd 1" in v["note"]
        assert run["provenance"]["predictions"]["mode"] == "closed-loop"
        # Every issued request of the trace was replayed (writes, reads and flushes).
        issued = len(read_requests(results / run["artifact_dir"] / "trace.parquet"))
        assert m["pred_hdd-7200_requests_count"]["value"] == issued
        # Every counted write and flush was issued within the trace, except requests
        # already in flight when tracing began (their completion has no issue event).
        trace = read_parquet(results / run["artifact_dir"] / "trace.parquet")
        latency, counted = match_requests(trace)
        in_flight_at_start = int((counted & (latency < 0) & (trace.columns["event"] == EV_COMPLETE)
                                  & (trace.columns["op"] != OP_FLUSH)).sum())
        counted_wf = m["trace_write_requests_count"]["value"] + m["trace_flush_requests_count"]["value"]
        assert issued + in_flight_at_start >= counted_wf
        # Small random writes with a flush every 8: the disk seeks, the SSD does not.
        assert m["pred_sata-mlc-ssd_iops"]["value"] > 3 * m["pred_hdd-7200_iops"]["value"]
        assert m["pred_hdd-7200_latency_p99_ns"]["value"] >= m["pred_hdd-7200_latency_p50_ns"]["value"]

    tables = report_tables(runs, cells)
    assert [t.kind for t in tables] == ["trace", "prediction"]  # HTML and Markdown put predictions apart
    text = _text([section_renderable(t) for t in tables])
    assert text.index("block trace — randwrite") < text.index("predicted on device models (not measured)")
    predicted = text[text.index("predicted on device models"):]
    assert "closed-loop at queue depth 1" in predicted
    for model in MODELS:
        assert model in predicted
    # The measured comparison table never shows a prediction.
    assert all(not row.metric.startswith("pred_") for row in build_table(runs, None, cells).rows)
