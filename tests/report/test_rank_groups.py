"""Ranking within a backend, one phrasing for one effect, caveats beside their cells — on a
stored study (SQLite, read back through the store) with two host columns and two guest
columns of one kernel, planned as fslab plans it; its runs are records with the values each
test chooses (no guest is booted), so every expected number is derived here from them.

- host and guest columns are never ranked against each other: each group has its own best
  and its own Holm family, the table says so under it, no finding crosses groups, and an
  auto study's sequential verdicts pair the same columns;
- the difference of a column is said one way everywhere: (mean − best) / best in %, the
  95% interval of that same difference, in the terminal table, HTML, Markdown, JSON and
  `fslab compare`;
- an interval that excludes 0 beside "no significant difference" says it is Holm's doing;
- a run's provenance caveat is a mark in its cell and a note under the table."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from statistics import mean

import pytest
from typer.testing import CliRunner

from fslab.analysis.contrasts import ratio_ci
from fslab.analysis.stats import compare_groups
from fslab.cli import app
from fslab.jobdata.record import Metric, RunRecord
from fslab.plan import make_plan
from fslab.report.compare import compare, resolve_sides, summary_lines, table_rows
from fslab.report.html import render_html
from fslab.report.labels import caveat_mark, difference_text, percent
from fslab.report.markdown import render_markdown
from fslab.report.outputs import load_report
from fslab.stopping import cell_infos, decide
from fslab.stopping_rule import StoppingRule
from fslab.store import Store
from fslab.study import parse_spec

MIXED = """
[study]
name = "host and guest"
repetitions = 5
seed = 1

[device]
kind = "fake"
directory = "{fake}"

{filesystems}

[[workloads]]
kind = "fio"
name = "rand4k"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
"""
HOST_AND_GUEST = """
[filesystems.ext4]
[filesystems.xfs]
[filesystems.f2fs]
kernel = "6.1"
[filesystems.jfs]
kernel = "6.1"
"""
# Guest numbers far above the host's: ranked together, f2fs would be every column's best.
VALUES = {
    "ext4": [1000.0, 1010.0, 990.0, 1005.0, 995.0],
    "xfs": [600.0, 612.0, 588.0, 604.0, 596.0],
    "f2fs": [3000.0, 3040.0, 2960.0, 3020.0, 2980.0],
    "jfs": [1500.0, 1530.0, 1470.0, 1510.0, 1490.0],
}
JOURNAL = ("direct=1 ran buffered: ext4 mounted with data=journal serves O_DIRECT through the page cache "
           "(every data block is journalled)")
OTHER = "a caveat of the guest's own"


def _chooser(fs: object, device: object, section: object, requested: str) -> tuple[str, None]:
    """The backend the study asks for (a kernel implies the guest); no QEMU is looked for."""
    return ("guest" if requested == "guest" else "host"), None


def store_study(tmp: Path, filesystems: str, values: dict[str, list[float]],
                caveats: dict[str, dict[int, list[str]]] | None = None, auto: StoppingRule | None = None) -> Path:
    """A stored study: fslab's plan of ``filesystems``, a run per planned run with the value
    ``values[fs][repetition]`` of its primary metric and the caveats
    ``caveats[fs][repetition]`` in its provenance; with ``auto``, the stopping rule's
    decisions over those values kept as an auto study's are."""
    (tmp / "fake").mkdir(exist_ok=True)
    text = MIXED.format(fake=tmp / "fake", filesystems=filesystems)
    plan = make_plan(parse_spec(tomllib.loads(text), "mixed.toml"), backends=_chooser)
    results = tmp / "results"
    with Store(results) as store:
        study = store.create_study(name="host and guest", source="mixed.toml", spec_text=text, spec_hash="mixed",
                                   plan=plan, host={})
        for run in plan.runs:
            fs = run.cell.filesystem
            provenance = {"backend": run.cell.backend}
            found = (caveats or {}).get(fs, {}).get(run.repetition)
            if found:
                provenance["caveats"] = found
            store.add_record(study, RunRecord(run.cell.id, run.repetition, run.sequence, "ok", 0.0, 1.0,
                                              (Metric.of("iops", values[fs][run.repetition]),),
                                              provenance=provenance))
        if auto is not None:
            store.set_auto(study, decide(auto, cell_infos(plan.cells), store.primary_values(study),
                                         plan.repetitions).to_facts())
        store.set_status(study, "complete")
    return results


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # ext4's data=journal caveat on 3 of its 5 runs (the note says how many), another on jfs's.
    return store_study(tmp_path_factory.mktemp("mixed"), HOST_AND_GUEST, VALUES,
                       caveats={"ext4": {k: [JOURNAL] for k in (0, 2, 4)}, "jfs": {k: [OTHER] for k in range(5)}})


F2FS, JFS = "f2fs (guest 6.1)", "jfs (guest 6.1)"


def test_host_and_guest_columns_are_ranked_apart(mixed: Path) -> None:
    report = load_report(mixed, None)
    [row] = report.rows
    assert report.rank_groups == {"host": ["ext4", "xfs"], "guest 6.1": [F2FS, JFS]}
    # Each group's best is its own highest mean, never the highest of the row.
    assert row.bests == {"host": max(("ext4", "xfs"), key=lambda fs: mean(VALUES[fs])),
                         "guest 6.1": F2FS}
    groups = {e.filesystem: e.group for e in row.estimates}
    versus = {e.filesystem: e.versus_best for e in row.estimates}
    assert versus["ext4"] is None and versus[F2FS] is None  # a best is compared with nothing
    assert versus["xfs"] is not None and versus["xfs"].reference == "ext4"
    assert versus[JFS] is not None and versus[JFS].reference == F2FS
    # Holm within a group: one comparison in each (a family of 1), as a test of that pair alone.
    alone = {c.a: c for c in compare_groups({"ext4": VALUES["ext4"], "xfs": VALUES["xfs"]}, "ext4")}
    assert versus["xfs"].family == 1 and versus["xfs"].p_adjusted == pytest.approx(alone["xfs"].p_value)
    # No finding names a host column and a guest column together.
    for finding in report.findings:
        named = {fs for fs in groups if re.search(rf"(^|, ){re.escape(fs)} vs |vs {re.escape(fs)}:", finding.text)}
        assert len(named) == 2 and len({groups[fs] for fs in named}) == 1, finding.text
    # Said under the table, in every renderer.
    note = (f"Ranked within each backend: host (ext4, xfs); guest 6.1 ({F2FS}, {JFS}) — each has its own best; "
            "columns of different backends or guest kernels are not compared")
    assert report.legend.startswith(note)
    done = CliRunner().invoke(app, ["report", "-r", str(mixed)], terminal_width=400)
    assert done.exit_code == 0, done.output
    assert note in " ".join(done.output.split())
    assert note in render_html(report) and note in render_markdown(report)


def _terminal_cells(output: str, label: str) -> list[str]:
    line = next(ln for ln in output.splitlines() if ln.startswith(f"│ {label} "))
    return [c.strip() for c in line.strip("│").split("│")]


def test_one_difference_reads_the_same_in_every_renderer(mixed: Path, tmp_path: Path) -> None:
    """xfs against ext4 (host) and jfs against f2fs (guest): the same signed percent, from the
    stored values, in the terminal table, the HTML table and summary, the Markdown table and
    summary, and JSON; its interval in the same direction and scale."""
    done = CliRunner().invoke(app, ["report", "-r", str(mixed), "--html", str(tmp_path / "r.html"),
                                    "--markdown", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.json")],
                              terminal_width=400)
    assert done.exit_code == 0, done.output
    terminal = _terminal_cells(done.output, "rand4k")
    html, md = (tmp_path / "r.html").read_text(), (tmp_path / "r.md").read_text()
    data = json.loads((tmp_path / "r.json").read_text())
    [row] = data["rows"]
    estimates = {e["filesystem"]: e for e in row["estimates"]}
    columns = ["workload", "metric [unit]", *data["filesystems"]]
    for fs, best in (("xfs", "ext4"), (JFS, F2FS)):
        mine, theirs = VALUES[fs.split(" ")[0]], VALUES[best.split(" ")[0]]
        expected = mean(mine) / mean(theirs) - 1
        assert expected < 0  # said from the column's side: lower than its best
        r = ratio_ci(mine, theirs)
        v = estimates[fs]["versus_best"]
        assert v["reference"] == best and v["relative"] == pytest.approx(expected)
        assert (v["low"], v["high"]) == (pytest.approx(r.low - 1), pytest.approx(r.high - 1))
        assert v["low"] < expected < v["high"]  # the interval of that same difference
        number = percent(expected)
        assert v["text"] == difference_text(expected, r.low - 1, r.high - 1)
        assert v["text"].startswith(f"{number} (95% CI {percent(r.low - 1)} to {percent(r.high - 1)})")
        cell = terminal[columns.index(fs)]
        assert f"  {number}*" in cell  # significant at these spreads
        assert f"{number}*" in html and f"{number}*" in md  # the table cell
        sentence = f"iops [IOPS], {fs} vs {best}: {number} (95% CI {percent(r.low - 1)} to {percent(r.high - 1)}; "
        assert sentence in html and sentence in md
        assert any(f["text"].startswith(f"rand4k: {sentence}") for f in data["findings"])
    # No other wording of an effect (a ratio, 'N% higher') is left in the summary.
    for finding in data["findings"]:
        assert not re.search(r"×|higher|lower| had ", finding["text"]), finding["text"]


def test_compare_says_b_against_a_in_percent(mixed: Path) -> None:
    a, b = resolve_sides("ext4", "xfs", mixed, None)
    c = compare(a, b)
    [r] = c.rows
    expected = mean(VALUES["xfs"]) / mean(VALUES["ext4"]) - 1
    ci = ratio_ci(VALUES["xfs"], VALUES["ext4"])
    text = difference_text(expected, ci.low - 1, ci.high - 1)
    _, rows = table_rows(c)
    assert rows[0][4] == text and r.verdict == "B worse"
    [line] = summary_lines(c)
    assert line.startswith(f"rand4k: iops [IOPS], B vs A: {percent(expected)} (95% CI {percent(ci.low - 1)} to "
                           f"{percent(ci.high - 1)}; ") and line.endswith("— significant: B worse.")


HOLM = """
[filesystems.a]
type = "ext4"
[filesystems.b]
type = "ext4"
[filesystems.c]
type = "ext4"
"""


def test_an_interval_excluding_zero_without_significance_says_holm(tmp_path: Path) -> None:
    base = [100.0, 102.0, 98.0, 101.0, 99.0]
    values = {"a": base, "b": [x - 2.5 for x in base], "c": [x - 2.6 for x in base]}
    # Each alone would be significant; Holm over the two is not.
    tested = compare_groups(values, "a")
    assert all(t.p_value is not None and t.p_value < 0.05 and not t.significant for t in tested)
    results = store_study(tmp_path, HOLM, values)
    report = load_report(results, None)
    [row] = report.rows
    for e in row.estimates:
        if e.versus_best is None:
            continue
        v = e.versus_best
        assert v.high is not None and v.high < 0  # the interval excludes 0 ...
        assert v.verdict == "no significant difference after Holm correction across 2 comparisons"
        [finding] = [f for f in report.findings if f" {e.filesystem} vs a:" in f.text]
        assert not finding.significant and finding.text.endswith(f"— {v.verdict}.")
        assert f"{percent(v.high)}; p = " in finding.text


def test_caveats_are_marked_beside_their_cell_and_said_under_the_table(mixed: Path, tmp_path: Path) -> None:
    report = load_report(mixed, None)
    mark, second = caveat_mark(1), caveat_mark(2)  # numbered as the table is read: ext4's column first
    [caveat, other] = report.caveats
    assert caveat.mark == mark and caveat.text == JOURNAL and caveat.cells == ["ext4 on rand4k (3 of 5 runs)"]
    assert other.mark == second and other.text == OTHER and other.cells == [f"{JFS} on rand4k (5 of 5 runs)"]
    [row] = report.rows
    assert row.caveats == {"ext4": [mark], JFS: [second]}
    note = f"{mark} {JOURNAL} — ext4 on rand4k (3 of 5 runs)"
    done = CliRunner().invoke(app, ["report", "-r", str(mixed), "--json", str(tmp_path / "r.json")],
                              terminal_width=400)
    cells = _terminal_cells(done.output, "rand4k")
    assert cells[2].endswith(f"best  {mark}") and all(mark not in c for c in cells[3:])
    assert cells[5].endswith(f"*  {second}")
    assert note in " ".join(done.output.split())
    html, md = render_html(report), render_markdown(report)
    assert html.count(mark) == 2 and md.count(mark) == 2  # the cell and its note
    assert f"best  {mark}</td>" in html and f'<p class="warn caveat">{note}</p>' in html
    assert f"best  {mark} |" in md and f"- {note}" in md
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["caveats"][0] == {"mark": mark, "text": JOURNAL, "cells": caveat.cells}
    assert data["rows"][0]["caveats"] == {"ext4": [mark], JFS: [second]}


def test_an_auto_study_pairs_the_columns_the_table_ranks(tmp_path: Path) -> None:
    """The stopping rule compares within a backend and kernel; the table's groups are the same
    sets, so every comparison shown takes the sequential test's verdict (none is left as
    'not compared by the stopping rule')."""
    results = store_study(tmp_path, HOST_AND_GUEST, VALUES, auto=StoppingRule(min_n=3, max_n=5))
    report = load_report(results, None)
    [row] = report.rows
    versus = [e.versus_best for e in row.estimates if e.versus_best is not None]
    assert len(versus) == 2
    assert all(v.method.startswith("welch-t, group-sequential") and v.significant for v in versus)
    assert {(e.filesystem, e.versus_best.reference) for e in row.estimates if e.versus_best} == {
        ("xfs", "ext4"), (JFS, F2FS)}


def test_a_verdict_never_contradicts_its_interval() -> None:
    """Each way a verdict and its (uncorrected, log-scale) interval can meet: the plain words
    where they agree, and why where they seem not to."""
    from fslab.report.labels import NOT_SIGNIFICANT, SIGNIFICANT, verdict_text

    assert verdict_text(True, -0.4, -0.3, 2) == SIGNIFICANT
    assert verdict_text(False, -0.1, 0.05, 2) == NOT_SIGNIFICANT
    assert verdict_text(False, None, None, 2) == NOT_SIGNIFICANT  # no interval to contradict
    assert verdict_text(False, -0.1, -0.01, 3).endswith("after Holm correction across 3 comparisons")
    assert "the interval, on the log ratio of means, excludes 0" in verdict_text(False, 0.01, 0.1, 1)
    assert "Mann–Whitney U" in verdict_text(False, 0.01, 0.1, 1, test="Mann–Whitney U")
    assert verdict_text(False, -0.1, -0.01, 3, sequential=True).endswith("group-sequential test's α spending")
    assert verdict_text(True, -0.1, 0.02, 1).startswith(f"{SIGNIFICANT} (") and "reaches 0" in \
        verdict_text(True, -0.1, 0.02, 1)


def test_entries_on_different_devices_are_ranked_within_their_device(tmp_path: Path) -> None:
    """seed-004's shape: ext4 and xfs on the study's device, and again on a device of their
    own: each device is a rank group with its own best, never one column's device against
    another's (the own-device pair's far higher numbers would otherwise be every best)."""
    other = tmp_path / "other"
    other.mkdir()
    own = f'device = {{ kind = "fake", directory = "{other}" }}'
    filesystems = f"""
[filesystems.ext4]
[filesystems.xfs]
[filesystems.ext4-own]
type = "ext4"
{own}
[filesystems.xfs-own]
type = "xfs"
{own}
"""
    values = {"ext4": VALUES["ext4"], "xfs": VALUES["xfs"], "ext4-own": VALUES["f2fs"], "xfs-own": VALUES["jfs"]}
    results = store_study(tmp_path, filesystems, values)
    report = load_report(results, None)
    [row] = report.rows
    assert len(report.rank_groups) == 2
    assert sorted(report.rank_groups.values()) == [["ext4", "xfs"], ["ext4-own", "xfs-own"]]
    assert set(row.bests.values()) == {"ext4", "ext4-own"}
    versus = {e.filesystem: e.versus_best for e in row.estimates}
    assert versus["xfs"].reference == "ext4" and versus["xfs-own"].reference == "ext4-own"
    assert "Ranked within each backend and device" in report.legend
    # A study on one device keeps its groups as they were: by backend alone.
    (tmp_path / "one").mkdir()
    assert list(load_report(store_study(tmp_path / "one", HOST_AND_GUEST, VALUES), None).rank_groups) == [
        "host", "guest 6.1"]
