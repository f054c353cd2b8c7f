"""A real short traced study (ext4 and xfs, fio random writes with fsync, 2 runs each, on
loop devices under tracefs) and what the report makes of it, from the store only:

- the device counters of a traced run come from the snapshot taken when tracing stopped,
  so they equal the trace's counts exactly;
- the trace table shows mean ± CI with n per file system and marks lossy traces;
- ``fslab report --traces DIR`` writes Table 1 (CSV whose numbers equal the stored trace
  metrics), Figure 3, Figure 4 (one CDF line per file system) and LBA plots.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from traced_study import rendered_text as _text

pytestmark = pytest.mark.device

@pytest.fixture(scope="module")
def study(traced_study: tuple[Path, list[dict], list[dict]]) -> tuple[Path, list[dict], list[dict]]:
    return traced_study  # one study for this module and the others that read it (tests/conftest.py)


def _stored(runs: list[dict[str, Any]], fs: str, name: str) -> list[float]:
    return [r["metrics"][name]["value"] for r in runs if r["cell"]["filesystem"] == fs]


def test_device_counters_equal_trace_counts(study) -> None:
    _, runs, _ = study
    assert len(runs) == 4 and {r["cell"]["filesystem"] for r in runs} == {"ext4", "xfs"}
    for run in runs:
        m = run["metrics"]
        assert run["provenance"]["trace"]["complete"] is True
        assert run["provenance"]["trace"]["kernel_filter"] is True
        assert run["provenance"]["trace"]["trace_clock"] in ("mono", "x86-tsc")
        # Cut at idle moments at both ends, so the counts below are equal by construction.
        assert run["provenance"]["trace"]["window"]["counters_exact"] is True
        for op in ("read", "write", "flush", "discard"):
            assert m[f"trace_{op}_requests_count"]["value"] == m[f"device_{op}_requests_count"]["value"], op
        for op in ("read", "write"):
            assert m[f"trace_{op}_sectors_count"]["value"] == m[f"device_{op}_sectors_count"]["value"], op
        # fio's 4 KiB writes (1024, fewer if its 1 s runtime ends first on a busy machine)
        # reach the device merged at most 8:1 (an fsync every 8 writes).
        writes = m["write_io_bytes"]["value"] / 4096
        assert writes >= 64 and m["trace_write_requests_count"]["value"] >= writes / 8


def test_trace_table_from_store(study) -> None:
    from fslab.analysis.stats import summarize
    from fslab.report.sections.trace_tables import report_tables
    from fslab.report.terminal import section_renderable
    from fslab.report.units import fmt

    _, runs, cells = study
    [table] = report_tables(runs, cells)
    assert table.kind == "trace" and table.alerts == []
    text = _text([section_renderable(table)])
    assert "block trace — randwrite" in text and "INCOMPLETE" not in text
    assert "predicted on device models" not in text  # this study simulates nothing
    for fs in ("ext4", "xfs"):
        s = summarize(_stored(runs, fs, "trace_write_requests_count"))
        assert s.n == 2
        # Two runs far apart on a busy machine: the ± would reach below zero, so the
        # interval is said on the log scale instead (both forms are the report's).
        if s.log_ci is not None:
            said = f"{fmt(s.mean)} ({fmt(s.log_ci[0])} to {fmt(s.log_ci[1])}, log scale)"
        else:
            said = f"{fmt(s.mean)} ± {fmt(s.ci_half_width)}"
        assert said in text, (fs, said)
        median_kib = summarize([v / 1024 for v in _stored(runs, fs, "trace_write_size_median_bytes")])
        assert fmt(median_kib.mean) in text

    # One lossy run of xfs (as the hook stores it: lost-events count, a note on every trace
    # metric): only xfs is marked, with the count and how many runs.
    lossy = copy.deepcopy(runs)
    run = next(r for r in lossy if r["cell"]["filesystem"] == "xfs")
    for name, m in run["metrics"].items():
        if name.startswith("trace_"):
            m["note"] = "incomplete trace: 1234 events lost"
    run["metrics"]["trace_lost_events_count"]["value"] = 1234.0
    [table] = report_tables(lossy, cells)
    lines = [line for line in _text([section_renderable(table)]).splitlines() if "INCOMPLETE" in line]
    assert len(lines) == 1 and "xfs" in lines[0]
    assert "INCOMPLETE: 1,234 events lost (1 of 2 runs)" in lines[0]
    # the lossy cell is marked as data, for every renderer to make it stand out
    [(row, column)] = table.alerts
    assert table.rows[row][0] == "xfs" and table.rows[row][column].startswith("INCOMPLETE")
    assert "busy" not in table.note  # every run here was cut at idle moments (checked above)

    # One xfs run whose trace was cut while its device was busy (no idle moment at one end):
    # the note names the file system and how many of its runs, and nothing else.
    busy = copy.deepcopy(runs)
    run = next(r for r in busy if r["cell"]["filesystem"] == "xfs")
    run["provenance"]["trace"]["window"]["counters_exact"] = False
    [table] = report_tables(busy, cells)
    [note] = [line for line in table.note.splitlines() if "busy" in line]
    assert ": xfs 1 run of 2;" in note and "ext4" not in note
    rendered = " ".join(_text([section_renderable(table)]).split())  # however the terminal wrapped it
    assert "may differ from the device's own (/sys/block/<dev>/stat) by up to the requests in flight" in rendered
    # Each line of the note is a paragraph of its own in HTML and Markdown, not run into the one before.
    from fslab.report.html import _section_table
    from fslab.report.markdown import _section

    assert '<p class="note">trace cut while the device was busy' in _section_table(table)
    assert "\n\ntrace cut while the device was busy" in _section(table)


def test_report_traces_writes_seed004_figures(study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.figure
    from typer.testing import CliRunner

    from fslab.cli import app

    results, runs, _ = study
    # Record each figure's lines as it is saved: the data plotted, not just a file.
    saved: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    original = matplotlib.figure.Figure.savefig

    def recording_savefig(self, fname, *args, **kwargs):
        saved[Path(fname).name] = [(ln.get_label(), np.asarray(ln.get_xdata(), float),
                                    np.asarray(ln.get_ydata(), float))
                                   for ax in self.axes for ln in ax.get_lines()]
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", recording_savefig)
    out = tmp_path / "figs"
    done = CliRunner().invoke(app, ["report", "-r", str(results), "--traces", str(out)])
    assert done.exit_code == 0, done.output
    assert "Table 1 — I/O size on the device, randwrite" in done.output
    expected = {"table1_io_size.csv", "fig3_io_counts_randwrite.png",
                "fig4_size_cdf_write_randwrite.png", "lba_randwrite_ext4.png", "lba_randwrite_xfs.png"}
    assert expected <= {p.name for p in out.iterdir()}
    for name in expected - {"table1_io_size.csv"}:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name

    # Table 1: numbers recomputed from trace.parquet equal the stored trace metrics.
    rows = list(csv.DictReader(open(out / "table1_io_size.csv")))
    assert len(rows) == 2 * 4  # file systems x ops
    for row in rows:
        fs, op = row["filesystem"], row["op"]
        assert int(row["n_runs"]) == 2 and row["lost_events"] == "0"
        stored_count = np.mean(_stored(runs, fs, f"trace_{op}_requests_count"))
        assert float(row["requests"]) == pytest.approx(stored_count)
        if op == "write":
            for k in ("min", "median", "mean", "max"):
                stored = np.mean(_stored(runs, fs, f"trace_write_size_{k}_bytes")) / 1024
                assert float(row[f"size_{k}_kib"]) == pytest.approx(stored), k
            assert float(row["size_median_kib"]) == 4.0  # fio's 4 KiB writes, mostly unmerged

    # Figure 4: one line per file system, each a CDF ending at 1, reaching the largest
    # write any of that file system's runs made.
    lines = saved["fig4_size_cdf_write_randwrite.png"]
    assert sorted(label for label, _, _ in lines) == ["ext4 (n=2)", "xfs (n=2)"]
    for label, x, y in lines:
        fs = label.split()[0]
        assert y[-1] == pytest.approx(1.0) and np.all(np.diff(y) > 0) and np.all(np.diff(x) >= 0)
        assert x.max() == pytest.approx(max(_stored(runs, fs, "trace_write_size_max_bytes")) / 1024)
    # Figure 3: bars, not lines; the axis labels carry n.
    assert "fig3_io_counts_randwrite.png" in saved


def test_tracing_cost_is_stated_per_request_from_the_runs_that_measured_it() -> None:
    """The trace table's note: reader CPU and events per completed request, per file
    system, summed over the runs that stored the reader's CPU (older runs are left out)."""
    from fslab.report.sections.trace_tables import tracing_cost

    def run(cpu_ns: float | None, events: float, writes: float, flushes: float) -> dict:
        m = {"trace_events_count": events, "trace_write_requests_count": writes,
             "trace_flush_requests_count": flushes}
        if cpu_ns is not None:
            m["trace_reader_cpu_during_run_ns"] = cpu_ns
        return {"metrics": {k: {"value": v} for k, v in m.items()}}

    text = tracing_cost({"ext4": [run(3000.0, 250.0, 90.0, 10.0), run(1000.0, 150.0, 100.0, 0.0),
                                  run(None, 999.0, 999.0, 0.0)],
                         "xfs": [run(None, 10.0, 5.0, 0.0)]})
    assert text == ("tracing cost (summed over the runs, per request completed): "
                    "ext4 20 ns reader CPU and 2.0 events per request (n=2 runs)")
    assert tracing_cost({"xfs": [run(None, 10.0, 5.0, 0.0)]}) is None
