"""The report model and compare on the no-root tier: a fake device, the null file system
and the null workload run for real (stored in SQLite), plus charts drawn from stored runs
whose interval reaches below zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.report.compare import compare, resolve_sides
from fslab.report.model import build_report
from fslab.report.svg import chart_svg
from fslab.runner import run_study
from fslab.store import Store

NULL_STUDY = """
[study]
name = "null {name}"
repetitions = 3
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]
{mount}
[filesystems.other]
type = "null"

[[workloads]]
kind = "null"
name = "value"
[workloads.axes]
value = [1.0, 3.0]
"""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    (tmp_path / "fake").mkdir()
    out = tmp_path / "results"
    for name, mount in (("a", ""), ("b", 'mount = ["noatime"]')):
        path = tmp_path / f"{name}.toml"
        path.write_text(NULL_STUDY.format(name=name, fake=tmp_path / "fake", mount=mount))
        assert run_study(str(path), results_dir=out).runs_failed == 0
    return out


def test_report_sections_from_the_store(results: Path) -> None:
    with Store(results) as store:
        row = store.study(1)
        report = build_report(row, store.runs(row.id), store.cells(row.id))
    assert report.filesystems == ["null", "other"]
    assert [r.label for r in report.rows] == ["value [value=1.0]", "value [value=3.0]"]
    assert all(e.n == 3 and e.text.endswith("(n=3)") for r in report.rows for e in r.estimates)
    [chart] = report.charts
    assert chart.cases == ["value=1.0", "value=3.0"] and chart.display_unit == "1"
    assert len(chart.bars) == 4 and all(len(b.values) == 3 for b in chart.bars)
    provenance = {r[0]: r[1:] for r in report.provenance}
    assert provenance["backend"] == ["host", "host"] and provenance["quick mode"] == ["no", "no"]
    assert report.failed == [] and report.runs_stored == report.runs_planned == 12


def test_the_paper_a_study_reproduces_is_recorded_with_it(tmp_path: Path) -> None:
    """``[study] paper`` is stored with the study (its facts), where report sections read
    it: from the stored study, never from its source."""
    (tmp_path / "fake").mkdir()
    for name, paper in (("mine", ""), ("again", 'paper = "seed-000"')):
        path = tmp_path / f"{name}.toml"
        path.write_text(NULL_STUDY.format(name=name, fake=tmp_path / "fake", mount="")
                        .replace("[study]", f"[study]\n{paper}"))
        run_study(str(path), results_dir=tmp_path / "results")
    with Store(tmp_path / "results", read_only=True) as store:
        mine, again = store.study(1), store.study(2)
    assert mine.facts["paper"] is None and mine.paper is None
    assert again.facts["paper"] == "seed-000" and again.paper == "seed-000"
    assert again.source == str(tmp_path / "again.toml")


def test_compare_names_the_mount_option_and_untestable_rows(results: Path) -> None:
    a, b = resolve_sides(f"{results}:1", f"{results}:2", results, None)
    # Comparing studies, nothing is the variable unless named: null's cases (mounted
    # noatime in B) are left out, other's (alike) are compared with no warning.
    c = compare(a, b)
    assert [n.text() for n in c.not_compared] == [
        f"not compared: null: value [value={v}]: mount differs (A: defaults, B: noatime)" for v in ("1.0", "3.0")]
    assert {r.key for r in c.rows} == {"other: value [value=1.0]", "other: value [value=3.0]"}
    assert c.warnings == [] and c.cases_compared == 2
    # Named, the mount option pairs null's cases and is the variable, not a warning.
    c = compare(a, b, variables=["mount"])
    assert c.not_compared == [] and len(c.rows) == 4
    under = {d.fact: (d.a, d.b) for d in c.differences if d.under_test}
    assert under["null: mount options requested"] == ("—", "noatime")
    assert not any(d.fact.startswith("null: mount") for d in c.warnings)
    assert not any(d.fact.startswith("other:") for d in c.differences)
    # every run gave the requested value: no spread, so no test (never a verdict by default)
    assert all(r.p_adjusted is None and r.verdict.startswith("no verdict") for r in c.rows)
    # two file systems of one study: the mount option is the variable under test, not a warning
    a, b = resolve_sides("null", "other", results, 2)
    c = compare(a, b)
    assert [d.fact for d in c.differences if d.under_test] == ["mount options requested", "mount options in effect"]
    assert c.warnings == []


def test_compare_refuses_mixed_sides(results: Path) -> None:
    from fslab.errors import FslabError

    with pytest.raises(FslabError, match=r"'ext9' is neither a results directory \(.*ext9 does not exist\) nor "
                       r"a file system of study 1 .*its file systems: null, other; the hosts that ran it: "
                       r"[^\n]+\.\nValid arguments: .*two hosts that ran one study"):
        resolve_sides("null", "ext9", results, 1)


def test_compare_typos_say_what_was_tried_and_what_is_valid(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "a-file").write_text("")
    done = subprocess.run([sys.executable, "-m", "fslab", "compare", "typo-a", "a-file"], cwd=tmp_path,
                          capture_output=True, text=True)
    message = " ".join(done.stderr.split())
    assert done.returncode == 2
    assert f"{tmp_path / 'typo-a'} does not exist" in message and f"{tmp_path / 'a-file'} is not a directory" in message
    assert f"--results {tmp_path / 'fslab-results'}: it holds no fslab.sqlite" in message
    assert "Valid arguments: two results directories" in message
    assert "`fslab compare res:1 res:2`" in message and "`fslab compare ext4 xfs -r DIR [--study N]`" in message


def test_interval_below_zero_is_marked_not_clipped_silently() -> None:
    from fslab.report.data import Bar, ChartData

    chart = ChartData("w: m", "m", "MiB/s", True, ["all"], ["a"],
                      [Bar("a", "all", 2, 1.0, -3.0, 5.0, [0.1, 1.9], True)])
    svg = chart_svg(chart, ["a"])
    assert 'class="crosses"' in svg and "below zero" in svg
    assert "m [MiB/s]" in svg


def test_plan_shows_options_device_and_estimate(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "fake").mkdir()
    path = tmp_path / "s.toml"
    path.write_text(NULL_STUDY.format(name="p", fake=tmp_path / "fake", mount='mount = ["noatime"]'))
    done = subprocess.run([sys.executable, "-m", "fslab", "plan", str(path)], capture_output=True, text=True,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "mount options" in done.stdout and "noatime" in done.stdout
    assert f"device: kind=fake, directory={tmp_path / 'fake'}" in done.stdout
    assert "12 from their stated runtime only" in done.stdout  # the null workload's sleep: 0 s


def test_png_svg_charts_mark_intervals_below_zero(tmp_path: Path) -> None:
    """`fslab report --charts`: an interval that reaches below zero for values that cannot be
    negative but are not all positive (a zero among them: no log scale) is drawn to the axis
    with a marker and its lower end written under the chart; positive values get their
    log-scale interval, which stays above zero (no marker)."""
    from fslab.analysis.stats import summarize
    from fslab.report.charts import write_charts
    from fslab.report.units import fmt

    def run(fs: str, value: float, rep: int) -> dict:
        cell = {"id": fs, "filesystem": fs, "fs_type": fs, "workload": "w", "workload_kind": "null",
                "backend": "host", "params": {}, "axes": {}, "primary_metric": "iops"}
        return {"run_id": rep, "cell": cell, "repetition": rep, "status": "ok", "provenance": {},
                "metrics": {"iops": {"value": value, "unit": "IOPS", "note": None, "higher_is_better": True}}}

    runs = [run("wide", 0.0, 0), run("wide", 50.0, 1), run("narrow", 40.0, 0), run("narrow", 42.0, 1),
            run("positive", 1.0, 0), run("positive", 50.0, 1)]
    cells = [runs[0]["cell"], runs[2]["cell"], runs[4]["cell"]]
    [svg] = [p for p in write_charts(runs, cells, tmp_path) if p.suffix == ".svg"]
    text = svg.read_text()
    s = summarize([0.0, 50.0])
    assert s.mean - s.ci_half_width < 0  # n = 2 and a wide spread: the t interval crosses zero
    assert not s.log_scale and summarize([1.0, 50.0]).log_scale
    assert 'id="crosses|wide|' in text and "crosses|narrow" not in text and "crosses|positive" not in text
    assert 'id="crosses-note"' in text
    assert f"lower ends: wide, all: {fmt(s.mean - s.ci_half_width)}" in text  # matplotlib keeps text in comments
