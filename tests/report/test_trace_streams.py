"""Trace tables and figures of a study with a plain device and an md array count one stream
per figure and say which (issue 19), from stored runs and trace files made here (no
device, no guest): the array's trace holds 6 data bios to the md device and 14 requests
of its members, so a table or figure that counts the wrong stream is off by more than
twice. The LBA plot says which repetition of how many of its cell's stored runs it shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest

from fslab.analysis.traces import DEVICE, MD_DEVICE, MEMBERS, analyze, summary_metrics
from fslab.report import trace_figures
from fslab.report.sections.trace_tables import report_tables
from fslab.report.trace_figures import write_trace_figures
from fslab.report.trace_section import trace_plots_section
from fslab.trace.formats import (
    ARRAY_DEV,
    EV_COMPLETE,
    EV_ISSUE,
    EV_QUEUE,
    MEMBER_DEVS,
    Trace,
    members_view,
    write_parquet,
)

matplotlib.use("Agg")
MD, M1, M2, PLAIN = 9 << 20, (8 << 20) | 1, (8 << 20) | 2, 7 << 20
ARRAY_BIOS = 6  # data bios the file system issued to the md device
MEMBER_REQUESTS = 14  # requests the array issued to its members (split, plus parity)


def _trace(rows: list[tuple[int, int, int, int, int]], meta: dict[str, Any]) -> Trace:
    """Writes: rows of (time_ns, event, dev, sector, nr_sector)."""
    n = len(rows)
    cols = {"time_ns": [r[0] for r in rows], "event": [r[1] for r in rows], "dev": [r[2] for r in rows],
            "sector": [r[3] for r in rows], "nr_sector": [r[4] for r in rows], "op": [1] * n,
            "flags": [0] * n, "pid": [1] * n, "comm": [0] * n}
    return Trace.from_lists(cols, ["w"], {"complete": True, "lost_events": 0, **meta})


def array_trace() -> Trace:
    """6 bios of 128 sectors to the md device; each became 2 member requests of 64
    sectors, and 2 of them a parity write as well."""
    rows = [(100 * i, EV_QUEUE, MD, 128 * i, 128) for i in range(ARRAY_BIOS)]
    t = 1000
    for i in range(MEMBER_REQUESTS):
        dev = M1 if i % 2 else M2
        rows += [(t, EV_ISSUE, dev, 64 * i, 64), (t + 5, EV_COMPLETE, dev, 64 * i, 64)]
        t += 10
    return _trace(rows, {ARRAY_DEV: MD, MEMBER_DEVS: [M1, M2]})


def plain_trace(n: int) -> Trace:
    rows = []
    for i in range(n):
        rows += [(10 * i, EV_ISSUE, PLAIN, 8 * i, 8), (10 * i + 5, EV_COMPLETE, PLAIN, 8 * i, 8)]
    return _trace(rows, {})


def _cell(fs: str) -> dict[str, Any]:
    return {"id": f"{fs}-w", "filesystem": fs, "fs_type": "ext4", "mkfs": [], "mount": [], "workload": "w",
            "workload_kind": "fio", "params": {}, "axes": {}, "backend": "host", "memory_bytes": None,
            "timeout_s": None, "primary_metric": "iops"}


def _run(results: Path, run_id: int, fs: str, repetition: int, trace: Trace | None) -> dict[str, Any]:
    """A stored run as Store.runs gives it; with a trace, its file and trace_* metrics
    as the tracing hook stores them (an array's members' as trace_members_*)."""
    run: dict[str, Any] = {"run_id": run_id, "cell": _cell(fs), "repetition": repetition, "sequence": run_id,
                           "status": "ok", "error": None, "started_at": 0.0, "finished_at": 1.0,
                           "provenance": {}, "artifact_dir": None, "metrics": {}}
    if trace is None:
        return run
    run["artifact_dir"] = f"runs/{run_id}"
    (results / run["artifact_dir"]).mkdir(parents=True)
    write_parquet(trace, results / run["artifact_dir"] / "trace.parquet")
    run["provenance"] = {"trace": {"captured": True, "artifact": "trace.parquet"}}
    flat = summary_metrics(analyze(trace))
    if trace.meta.get(ARRAY_DEV) is not None:
        flat |= {"trace_members_" + k.removeprefix("trace_"): v
                 for k, v in summary_metrics(analyze(members_view(trace))).items()}
    run["metrics"] = {k: {"value": v, "note": None} for k, v in flat.items()}
    return run


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """ext4 on a plain device (2 runs, both traced) and ext4-raid5 on an array (2 runs
    stored, only the second traced: its first failed before the trace was kept)."""
    results = tmp_path / "results"
    runs = [_run(results, 1, "ext4", 0, plain_trace(10)), _run(results, 2, "ext4", 1, plain_trace(12)),
            _run(results, 3, "ext4-raid5", 0, None), _run(results, 4, "ext4-raid5", 1, array_trace())]
    runs[2]["status"] = "failed"
    return results, runs, [_cell("ext4"), _cell("ext4-raid5")]


def test_trace_plots_name_their_stream_and_count_the_tables(study) -> None:
    results, runs, cells = study
    plots, missing = trace_plots_section(results, runs, cells, images=False)
    assert missing == []
    by_id = {p.id: p for p in plots}
    cdf, lba_md, lba_plain = by_id["size_cdf_write_w"], by_id["lba_w_ext4-raid5"], by_id["lba_w_ext4"]
    # Each caption names its stream; the CDF, mixing both, names each with its file systems.
    assert f"on {MD_DEVICE.text} (ext4-raid5)" in cdf.caption and f"on {DEVICE.text} (ext4)" in cdf.caption
    assert cdf.streams == {"ext4": "device", "ext4-raid5": "md"}
    assert lba_md.caption.startswith(f"Where on {MD_DEVICE.text} the data requests")
    assert lba_plain.caption.startswith(f"Where on {DEVICE.text} the data requests")
    assert MEMBERS.text not in cdf.caption + lba_md.caption
    # The figures count what the trace table counts: the md device's bios.
    [table] = report_tables(runs, cells)
    assert cdf.data["lines"]["ext4-raid5"]["data_requests_issued"] == ARRAY_BIOS
    assert lba_md.data["write_data_requests_issued"] == ARRAY_BIOS
    assert runs[3]["metrics"]["trace_write_requests_count"]["value"] == ARRAY_BIOS
    raid_write = next(r for r in table.rows if r[0] == "ext4-raid5")
    assert raid_write[1] == "read" and table.rows[table.rows.index(raid_write) + 1][3].startswith(f"{ARRAY_BIOS}")
    assert f"on {MD_DEVICE.text} (ext4-raid5)" in table.title and f"on {DEVICE.text} (ext4)" in table.title
    assert MEMBERS.text in table.note and "(members)" in table.note
    # Which repetition of how many of its cell's stored runs: the array's only traced run is
    # the second of two stored (never "2 of 1"); the plain device's first of two.
    assert "repetition 2 of 2 of ext4-raid5 w (run id 4)" in lba_md.caption
    assert "repetition 1 of 2 of ext4 w (run id 1)" in lba_plain.caption


def test_table1_and_figures_count_one_stream(study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, runs, cells = study
    drawn: dict[str, Any] = {}

    def io_counts(means: dict[str, Any], out: Path, on: str = "") -> Path:
        drawn["fig3"], drawn["fig3_on"] = means, on
        return out

    def lba_over_time(trace: Trace, out: Path, label: str = "", bins: Any = None, stream: Any = None) -> Path:
        drawn[f"lba {label}"] = (int(np.count_nonzero(trace.columns["nr_sector"])), stream)
        return out

    def size_cdf(traces: dict[str, Trace], out: Path, op: int = 1, title: str = "") -> Path:
        drawn["cdf"] = ({k: int(np.count_nonzero(t.columns["nr_sector"])) for k, t in traces.items()}, title)
        return out

    monkeypatch.setattr(trace_figures.trace_plots, "io_counts", io_counts)
    monkeypatch.setattr(trace_figures.trace_plots, "lba_over_time", lba_over_time)
    monkeypatch.setattr(trace_figures.trace_plots, "size_cdf", size_cdf)
    out = write_trace_figures(results, runs, cells, tmp_path / "figs")
    table1 = {(r["filesystem"], r["op"]): r for r in out.rows}
    raid = table1[("ext4-raid5", "write")]
    assert raid["stream"] == "md" and table1[("ext4", "write")]["stream"] == "device"
    assert raid["requests"] == ARRAY_BIOS
    # Figure 3's bar is Table 1's count; the bar labels name the streams (they differ here).
    assert drawn["fig3"]["ext4-raid5 (mean, n=1) on md device"]["requests"]["write"] == ARRAY_BIOS
    assert drawn["fig3"]["ext4 (mean, n=2) on device"]["requests"]["write"] == table1[("ext4", "write")]["requests"]
    assert f"on {MD_DEVICE.text} (ext4-raid5)" in drawn["fig3_on"]
    # Figure 4 and the LBA plot draw the same bios (non-empty events), and say so.
    counts, title = drawn["cdf"]
    assert counts["ext4-raid5 (n=1)"] == ARRAY_BIOS and MD_DEVICE.text in title
    assert drawn["lba repetition 2 of 2 of ext4-raid5 w"] == (ARRAY_BIOS, MD_DEVICE)
    assert f"Table 1 — I/O size on {DEVICE.text} (ext4); on {MD_DEVICE.text} (ext4-raid5), w" \
        in out.tables[0].title


def test_table1_from_the_trace_files_is_the_reports_table_from_the_stored_metrics(study, tmp_path: Path) -> None:
    """One size table, two sources: the trace files read again give the rows the stored
    metrics give (same columns, same order, same numbers); only the stored side knows an
    array's members (its runs stored them apart)."""
    results, runs, cells = study
    [stored] = report_tables(runs, cells)
    [files] = write_trace_figures(results, runs, cells, tmp_path / "figs").tables
    assert files.columns == stored.columns
    assert files.columns[4:9] == ["size min [KiB]", "size median [KiB]", "size mean [KiB]", "size max [KiB]",
                                  "sequential [%]"]
    assert [r for r in stored.rows if "(members)" not in r[1]] == files.rows
    assert len(files.rows) == 8 and any("(members)" in r[1] for r in stored.rows)
    assert files.title.startswith("Table 1") and stored.title.startswith("block trace")


def test_fslab_trace_plot_shows_the_md_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fslab trace plot` of an array's trace draws every plot from the md device's bios
    (the I/O count already came from them) and names them."""
    from fslab.report import trace_plots

    drawn: dict[str, Any] = {}

    def count(name: str, key: str) -> Any:
        def draw(traces: Any, out: Path, *args: Any, **kwargs: Any) -> Path:
            many = traces if isinstance(traces, dict) else {"one": traces}
            drawn[name] = ({k: (int(np.count_nonzero(t.columns["nr_sector"])) if isinstance(t, Trace)
                                else t["requests"]["write"]) for k, t in many.items()}, kwargs.get(key))
            return out
        return draw

    for name, key in (("size_cdf", "title"), ("iops_over_time", "on"), ("io_counts", "on"),
                      ("lba_over_time", "stream")):
        monkeypatch.setattr(trace_plots, name, count(name, key))
    trace_plots.plot_all({"raid5": array_trace()}, tmp_path)
    for name in ("size_cdf", "iops_over_time", "io_counts", "lba_over_time"):
        counts, named = drawn[name]
        assert list(counts.values()) == [ARRAY_BIOS], name
        assert named == MD_DEVICE or MD_DEVICE.text in named, name


def test_the_predictions_table_reads_the_workloads_figure_in_the_main_tables_unit() -> None:
    """A latency stored in ns (108,474,743) is shown as the main table shows it, 108 ms,
    named without its unit suffix; the device columns keep their own units."""
    from fslab.report.sections.trace_tables import prediction_table

    model = "lg-uj1-2gib"

    def run(rep: int, lat_ns: float) -> dict:
        def m(value: float, unit: str) -> dict:
            return {"value": value, "unit": unit, "note": None}
        return {"repetition": rep, "status": "ok",
                "cell": {"primary_metric": "seq_write_lat_mean_ns"},
                "metrics": {"seq_write_lat_mean_ns": m(lat_ns, "ns"),
                            f"pred_{model}_seq_write_lat_mean_ns": m(lat_ns / 2, "ns"),
                            f"pred_{model}_device_requests_per_s": m(40.0, "requests/s")},
                "provenance": {"predictions": {"mode": "closed-loop", "qd": 1, "models": {model: {}}}}}

    table = prediction_table("alloc", {"fat32": [run(0, 108_474_743.0), run(1, 108_474_743.0)]})
    assert table is not None
    assert table.columns[3:5] == ["seq_write_lat_mean predicted [ms]", "seq_write_lat_mean measured here [ms]"]
    [row] = table.rows
    assert row[3].startswith("54.2") and row[4].startswith("108"), row
    assert "seq_write_lat_mean predicted:" in table.note and "_ns" not in table.note.split(":")[0]
