"""What the comparison table and the exports say about units, numbering and significance,
on stored-run records built in memory (the shapes Store.runs returns)."""

import csv
import io
import json
from typing import Any

from rich.console import Console

from fslab.export import EXPORTERS
from fslab.report.tables import LEGEND, NO_VERDICT, build_table
from fslab.report.terminal import render_table
from fslab.store import StudyRow


def _cell(fs: str) -> dict[str, Any]:
    return {"id": f"{fs}-w", "filesystem": fs, "fs_type": fs, "workload": "rand", "workload_kind": "fio",
            "backend": "host", "params": {"rw": "randwrite", "bs": 4096, "size": 1 << 20}, "axes": {}}


def _runs(values: dict[str, list[float]], metric: str, unit: str) -> list[dict[str, Any]]:
    higher = unit not in ("ns",)
    runs = []
    for fs, vs in values.items():
        for rep, v in enumerate(vs):
            runs.append({"run_id": len(runs) + 1, "cell": _cell(fs), "repetition": rep, "sequence": len(runs),
                         "status": "ok", "error": None, "started_at": 0.0, "finished_at": 1.0,
                         "artifact_dir": None, "provenance": {},
                         "metrics": {metric: {"value": v, "unit": unit, "note": None,
                                              "higher_is_better": higher}}})
    return runs


def _text(values: dict[str, list[float]], metric: str, unit: str) -> str:
    console = Console(width=250, record=True)
    console.print(render_table(build_table(_runs(values, metric, unit), metric), "t"))
    return console.export_text()


def test_header_states_the_unit_of_the_numbers_shown() -> None:
    # 2-3 ms p99 latencies, stored in ns: shown in ms, and the header must not say "_ns [ms]".
    text = _text({"ext4": [2.1e6, 2.3e6, 2.2e6], "xfs": [3.0e6, 3.2e6, 3.1e6]}, "write_clat_p99_ns", "ns")
    assert "write_clat_p99 [ms] ↓" in text and "_ns [ms]" not in text
    assert "2.20 ± " in text  # the numbers are in ms indeed
    assert "write_clat_p99 is write_clat_p99_ns" in LEGEND


def test_zero_variance_and_small_n_get_no_verdict_mark() -> None:
    text = _text({"ext4": [5.0, 5.0, 5.0], "xfs": [6.0, 6.0, 6.0]}, "iops", "IOPS")
    assert f"-16.7%{NO_VERDICT}" in text and "%*" not in text
    text = _text({"ext4": [5.0, 5.1], "xfs": [9.0, 9.1]}, "iops", "IOPS")
    assert f"-44.2%{NO_VERDICT}" in text
    assert f"{NO_VERDICT} no significance verdict" in LEGEND


def test_one_unit_spelling_and_one_numbering_in_exports() -> None:
    # A run stored by an earlier version ("IO/s", repetition 0) reads as today's.
    runs = _runs({"ext4": [100.0, 110.0]}, "iops", "IO/s")
    study = StudyRow(1, "s", "s.toml", "h", False, "in-order", 1, "run", 2, 2, [], {}, "complete", 0.0, 1.0, "", {})
    records = json.loads(EXPORTERS.get("json")(study, runs))
    assert [r["repetition"] for r in records] == [1, 2]
    assert {r["metrics"]["iops"]["unit"] for r in records} == {"IOPS"}
    rows = list(csv.reader(io.StringIO(EXPORTERS.get("csv")(study, runs))))
    assert "iops [IOPS]" in rows[0]
    assert [row[rows[0].index("repetition")] for row in rows[1:]] == ["1", "2"]
    assert "[IOPS]" in _text({"ext4": [100.0, 110.0, 120.0]}, "iops", "IO/s")


def test_parquet_keeps_numbers_typed_and_reasons_apart() -> None:
    import pyarrow.parquet as pq

    runs = _runs({"ext4": [100.0, 110.0]}, "iops", "IOPS")
    runs[1]["metrics"]["iops"] = {"value": None, "unit": "IOPS", "note": "too fast to measure (+++++)",
                                  "higher_is_better": True}
    study = StudyRow(1, "s", "s.toml", "h", False, "in-order", 1, "run", 2, 2, [], {}, "complete", 0.0, 1.0, "", {})
    table = pq.read_table(io.BytesIO(EXPORTERS.get("parquet")(study, runs)))
    csv_header = next(csv.reader(io.StringIO(EXPORTERS.get("csv")(study, runs))))
    assert table.column_names == csv_header + ["iops [IOPS] note"]
    assert table.column("iops [IOPS]").to_pylist() == [100.0, None]
    assert table.column("iops [IOPS] note").to_pylist() == [None, "too fast to measure (+++++)"]
    assert table.column("param.bs").type == "int64" and table.column("param.rw").to_pylist() == ["randwrite"] * 2
    assert table.column("error").to_pylist() == [None, None]


def test_summary_keeps_no_verdict_apart_from_no_significant_difference() -> None:
    """Two runs a side cannot be tested: the HTML and Markdown list that under 'No verdict',
    never under 'No significant difference' (which claims a test that was not run)."""
    from fslab.report.html import render_html
    from fslab.report.markdown import render_markdown
    from fslab.report.model import build_report

    study = StudyRow(1, "s", "s.toml", "h", False, "in-order", 1, "run", 2, 4, [], {}, "complete", 0.0, 1.0, "", {})
    runs = _runs({"ext4": [100.0, 120.0], "xfs": [300.0, 310.0]}, "iops", "IOPS")
    cells = [{**_cell(fs), "primary_metric": "iops"} for fs in ("ext4", "xfs")]
    report = build_report(study, runs, cells)
    assert [f.decided for f in report.findings] == [False]
    html = render_html(report)
    assert "<h3>No verdict</h3>" in html and "<h3>No significant difference</h3>" not in html
    assert "0 significant differences, 0 comparisons without one, 1 without a verdict" in html
    md = render_markdown(report)
    assert "**No verdict**" in md and "**No significant difference**" not in md


def test_runs_that_agree_to_rounding_show_no_spread() -> None:
    """A deterministic replay of identical traces gives values equal up to float rounding:
    the table says '± 0', not '± 1.73e-13'; a real spread is kept."""
    from fslab.analysis.stats import summarize
    from fslab.report.labels import mean_pm

    assert mean_pm(summarize([368.0, 368.0 + 1e-13, 368.0 - 1e-13]), n_expected=3) == "368 ± 0"
    assert mean_pm(summarize([368.0, 370.0, 366.0]), n_expected=3) != "368 ± 0"
