"""The paper section's *How much the device accounts for* is a table only when some share
was computed: with none (every measured difference untested), its sentences follow the
figures' table instead of an empty table with only its header. On a stored study whose
runs carry a measured and a predicted rate (no device, no trace)."""

from __future__ import annotations

import html
import tomllib
from pathlib import Path

from fslab.jobdata.record import Metric, RunRecord
from fslab.plan import make_plan
from fslab.report.outputs import load_report
from fslab.store import Store
from fslab.study import parse_spec

STUDY = """
[study]
name = "paper, no share"
repetitions = 2
trace = true
simulate = ["sata-mlc-ssd"]
[device]
kind = "fake"
directory = "{fake}"
[filesystems.ext4]
[filesystems.xfs]
[[workloads]]
kind = "fio"
name = "rand4k"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
[paper]
[[paper.figures]]
claim = "xfs over ext4"
source = "Table 1"
workload = "rand4k"
metric = "iops"
filesystem = "xfs"
versus = "ext4"
ratio = 2
"""
VALUES = {"ext4": [100.0, 104.0], "xfs": [200.0, 196.0]}


def _stored(tmp: Path) -> Path:
    (tmp / "fake").mkdir()
    text = STUDY.format(fake=tmp / "fake")
    plan = make_plan(parse_spec(tomllib.loads(text), "s.toml"),
                     backends=lambda *args: ("host", None))
    results = tmp / "results"
    with Store(results) as store:
        study = store.create_study(name="paper, no share", source="s.toml", spec_text=text, spec_hash="s",
                                   plan=plan, host={})
        for run in plan.runs:
            value = VALUES[run.cell.filesystem][run.repetition - 1]
            metrics = (Metric.of("iops", value), Metric.of("pred_sata-mlc-ssd_iops", value * 3),
                       Metric.of("pred_sata-mlc-ssd_device_requests_count", 1000.0))
            store.add_record(study, RunRecord(run.cell.id, run.repetition, run.sequence, "ok", 0.0, 1.0,
                                              metrics, provenance={"backend": "host", "predictions": {
                                                  "models": {"sata-mlc-ssd": {}}}}))
        store.set_status(study, "complete")
    return results


def test_no_empty_accounts_table(tmp_path: Path) -> None:
    from fslab.report.html import render_html
    from fslab.report.markdown import render_markdown

    report = load_report(_stored(tmp_path), None)
    [section] = [s for s in report.sections if s.id == "paper-beside-fslab"]
    assert all(t.rows for t in section.tables)
    [figures] = section.tables
    assert "no device's share computed" in figures.note  # the sentence is still said
    for text in (render_markdown(report), html.unescape(render_html(report))):
        assert "no device's share computed" in text
