"""The report a person reads and `fslab compare`, from real small studies: ext4 and xfs on
loop devices with real fio, stored in SQLite. Study A mounts ext4 with defaults, study B
mounts it with `sync`; everything else is the same. The HTML is parsed and checked for its
sections, charts and provenance rows, rendered in headless Chromium and the screenshot
checked for content; compare finds the mount option and the difference it makes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fslab.datarecords import replace
from fslab.report.compare import compare, resolve_sides
from fslab.report.labels import percent
from fslab.report.model import build_report
from fslab.runner import run_study
from fslab.store import Store

STUDY = """
[study]
name = "report {name}"
repetitions = 5

[device]
size = "512MiB"
image_dir = "{images}"

[filesystems.ext4]
{ext4}
[filesystems.xfs]

[[workloads]]
kind = "fio"
name = "rand4k"
rw = "randwrite"
bs = "4k"
size = "16M"
runtime = 1
time_based = 1
"""


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One results directory, study 1 (ext4 defaults) and study 2 (ext4 mounted sync)."""
    if os.geteuid() != 0 or shutil.which("fio") is None or not Path("/dev/loop-control").exists():
        pytest.skip("needs root, loop devices and fio")
    tmp = tmp_path_factory.mktemp("report")
    results = tmp / "results"
    for name, ext4 in (("A", ""), ("B", 'mount = ["sync"]')):
        path = tmp / f"{name}.toml"
        path.write_text(STUDY.format(name=name, images=tmp / "images", ext4=ext4))
        outcome = run_study(str(path), results_dir=results)
        assert outcome.runs_failed == 0
    return results


class Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.svgs: list[dict[str, str]] = []
        self.bars: list[str] = []
        self.external: list[str] = []
        self.rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if tag == "svg":
            self.svgs.append(a)
        if tag == "rect" and a.get("id", "").startswith("bar|"):
            self.bars.append(a["id"])
        for key in ("src", "href"):
            if key in a:
                self.external.append(a[key])
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_html_report_has_every_section_chart_and_provenance_row(two_studies: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(two_studies), "--study", "2",
                           "--html", str(out), "--markdown", str(tmp_path / "r.md"),
                           "--json", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    page = Parsed()
    page.feed(html)
    assert page.sections == ["summary", "results", "charts", "definitions", "explanations", "failures", "provenance"]
    assert page.external == []  # self-contained: nothing fetched
    assert len(page.svgs) == 1 and page.svgs[0]["data-metric"] == "iops"
    assert sorted(page.bars) == ["bar|ext4|all", "bar|xfs|all"]
    assert html.count('class="pt"') == 10  # every run of both file systems as a dot
    facts = {row[0]: row[1:] for row in page.rows if row}
    assert facts["fact"] == ["ext4", "xfs"]
    for name in ("kernel", "backend", "quick mode", "mkfs command", "mkfs version", "fio version",
                 "mount options in effect", "device image_size_bytes", "host"):
        assert name in facts, name
    assert "sync" in facts["mount options in effect"][0] and "sync" not in facts["mount options requested"][1]
    assert facts["quick mode"] == ["no", "no"]
    assert facts["device image_size_bytes"][0].startswith("512 MiB")
    # the plain-words summary names the comparison with its statistics, in the table's terms
    data = json.loads((tmp_path / "r.json").read_text())
    [other] = [e for e in data["rows"][0]["estimates"] if e["versus_best"]]
    v = other["versus_best"]
    assert f"iops [IOPS], {other['filesystem']} vs {v['reference']}: {percent(v['relative'])} (95% CI" in html
    assert "n = 5 each" in html
    assert [r["metric"] for r in data["rows"]] == ["iops"]
    assert {e["filesystem"]: e["n"] for e in data["rows"][0]["estimates"]} == {"ext4": 5, "xfs": 5}
    md = (tmp_path / "r.md").read_text()
    assert "## Provenance" in md and "| mount options in effect |" in md
    # What was run, for a reader without the study file: the order seed, dates, version, and
    # every parameter of the workload, in every output.
    with Store(two_studies) as store:
        seed = store.study(2).seed
    [definitions] = [s for s in data["sections"] if s["id"] == "definitions"]
    assert f"order shuffled (seed {seed}:" in " ".join(definitions["statements"])
    assert any(s.startswith("started 20") and "finished 20" in s for s in definitions["statements"])
    [workload] = [t for t in definitions["tables"] if t["title"] == "workload rand4k"]
    params = dict(tuple(row) for row in workload["rows"])
    assert {k: params[k] for k in ("rw", "bs", "size", "runtime", "time_based")} == {
        "rw": "randwrite", "bs": "4096", "size": "16777216", "runtime": "1", "time_based": "1"}  # as fio reads them
    assert params["memory limit"] == "none"
    [filesystems] = [t for t in definitions["tables"] if t["title"] == "file systems as made and mounted"]
    assert [row[:4] for row in filesystems["rows"]] == [["ext4", "ext4", "(defaults)", "sync"],
                                                       ["xfs", "xfs", "(defaults)", "(defaults)"]]
    for text in (html, md):
        assert f"seed {seed}:" in text and "randwrite" in text and "time_based" in text
    # ext4 mounted sync against xfs: the significant difference and the I/O behind it (an
    # untraced study: the device's own counters), in every output.
    [why] = [s for s in data["sections"] if s["id"] == "explanations"]
    [line] = why["statements"]
    assert line.startswith("rand4k — iops of ext4 ") and "against xfs: ext4: " in line
    assert "flushes " in line and "(from the device counters, mean over runs)" in line
    assert line in html.replace("&#x27;", "'") and "## Why: the I/O behind each significant difference" in md


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_html_report_renders_in_chromium(two_studies: Path, tmp_path: Path) -> None:
    from PIL import Image

    from fslab.report.html import render_html
    from fslab.report.svg import PALETTE

    with Store(two_studies) as store:
        row = store.study(1)
        report = build_report(row, store.runs(row.id), store.cells(row.id))
    page = tmp_path / "report.html"
    page.write_text(render_html(report))
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,1600",
                    page.as_uri()], capture_output=True, timeout=120, check=True)
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50  # text, tables and a chart, not a blank page
    white = max(count for count, _ in colours)
    assert white < 0.97 * image.width * image.height
    # each file system's bar colour (drawn at 55% opacity over white) is on screen
    present = {rgb for _, rgb in colours}
    for hexcol in PALETTE[:2]:
        r, g, b = (int(hexcol[i:i + 2], 16) for i in (1, 3, 5))
        tinted = tuple(round(0.55 * c + 0.45 * 255) for c in (r, g, b))
        assert any(all(abs(p[k] - tinted[k]) <= 3 for k in range(3)) for p in present), hexcol


def test_compare_finds_the_mount_option_and_its_effect(two_studies: Path, tmp_path: Path) -> None:
    a, b = resolve_sides(f"{two_studies}:1", f"{two_studies}:2", two_studies, None)
    # Buffered 4 KiB writes on a shared machine spread widely (CV up to ~80% at n = 5), so
    # the rank test: B's runs all below A's give an exact p of 2/252 before Holm.
    # Comparing studies nothing is the variable by default: ext4's case (mounted sync in B)
    # is left out, xfs's (alike) compared; named, the mount option pairs ext4's.
    plain = compare(a, b, test="mann-whitney")
    assert [n.text() for n in plain.not_compared] == ["not compared: ext4: rand4k: mount differs "
                                                      "(A: defaults, B: sync)"]
    assert [r.key for r in plain.rows] == ["xfs: rand4k"]
    c = compare(a, b, test="mann-whitney", variables=["mount"])
    assert c.mode == "studies" and c.not_compared == []
    under = {d.fact: (d.a, d.b) for d in c.differences if d.under_test}
    assert under["ext4: mount options requested"] == ("—", "sync")
    assert "sync" in under["ext4: mount options in effect"][1]
    assert not any(d.fact.startswith(("xfs: mount", "ext4: mount")) for d in c.warnings)
    rows = {r.key: r for r in c.rows}
    ext4 = rows["ext4: rand4k"]
    assert ext4.significant and ext4.verdict == "B worse" and ext4.relative is not None and ext4.relative < -0.5
    assert ext4.high is not None and ext4.high < 0  # the whole interval says slower
    assert ext4.n_a == ext4.n_b == 5
    done = subprocess.run([sys.executable, "-m", "fslab", "compare", f"{two_studies}:1", f"{two_studies}:2",
                           "--test", "mann-whitney", "--variable", "mount",
                           "--html", str(tmp_path / "c.html"), "--markdown", str(tmp_path / "c.md")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "under test: ext4: mount options requested: A — / B sync" in done.stdout
    assert "variable under test: mount (named with --variable)" in done.stdout
    page = Parsed()
    page.feed((tmp_path / "c.html").read_text())
    assert page.sections == ["summary", "warnings", "not-compared", "comparisons"]
    assert "B worse" in (tmp_path / "c.md").read_text()


@pytest.mark.parametrize("test", ["welch", "mann-whitney"])
def test_identical_runs_on_both_sides_find_nothing(two_studies: Path, test: str) -> None:
    """The statistics of two sides holding the same values: no difference, p = 1. (Naming
    one study twice is refused before any test: tests/report/test_compare_itself.py.)"""

    a, _ = resolve_sides(f"{two_studies}:1", f"{two_studies}:2", two_studies, None)
    b = replace(a, name=f"{a.name} (again)")
    c = compare(a, b, test=test)
    assert c.rows and all(r.verdict == "no significant difference" for r in c.rows)
    assert all(r.p_adjusted == 1.0 and r.relative == 0.0 for r in c.rows)
    assert c.warnings == []


def test_export_carries_each_runs_configuration(two_studies: Path) -> None:
    import csv
    import io

    from fslab.export import EXPORTERS

    with Store(two_studies) as store:
        row = store.study(2)
        rows = list(csv.DictReader(io.StringIO(EXPORTERS.get("csv")(row, store.runs(row.id)))))
    by_fs = {r["filesystem"]: r for r in rows}
    assert by_fs["ext4"]["prov.mount_options_requested"] == "sync"
    assert "sync" in by_fs["ext4"]["prov.mount_options_in_effect"].split(",")
    assert by_fs["xfs"]["prov.mkfs_command"].startswith("mkfs.xfs")
    assert {r["prov.kernel"] for r in rows} == {os.uname().release}
    assert {r["prov.device_kind"] for r in rows} == {"image"}


def test_parquet_export_is_the_csv_typed(two_studies: Path, tmp_path: Path) -> None:
    import csv
    import io

    import pyarrow.parquet as pq

    out = tmp_path / "runs.parquet"
    done = subprocess.run([sys.executable, "-m", "fslab", "export", "-r", str(two_studies), "--study", "2",
                           "--format", "parquet", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out)
    csv_text = subprocess.run([sys.executable, "-m", "fslab", "export", "-r", str(two_studies), "--study", "2",
                               "--format", "csv"], capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert table.column_names == list(rows[0])  # same columns, same order (no run lacks a number here)
    assert table.num_rows == len(rows) == 10
    assert {r["quick"] for r in rows} == {"false"}  # the study file's word, not Python's False
    types = {f.name: str(f.type) for f in table.schema}
    assert types["run_id"] == types["repetition"] == types["param.bs"] == "int64"
    assert types["quick"] == "bool" and types["iops [IOPS]"] == "double"
    assert table.schema.field("iops [IOPS]").metadata == {b"unit": b"IOPS"}
    for record, row in zip(table.to_pylist(), rows):
        assert str(record["run_id"]) == row["run_id"]
        assert record["iops [IOPS]"] == pytest.approx(float(row["iops [IOPS]"]))
        for key in ("prov.kernel", "prov.backend", "prov.mount_options_in_effect", "prov.mkfs_command"):
            assert record[key] == row[key] and record[key]
    by_fs = {r["filesystem"]: r for r in table.to_pylist()}
    assert "sync" in by_fs["ext4"]["prov.mount_options_in_effect"].split(",")
    assert by_fs["xfs"]["prov.mount_options_requested"] is None  # not '' : nothing was asked
    refused = subprocess.run([sys.executable, "-m", "fslab", "export", "-r", str(two_studies), "--format",
                              "parquet"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--out FILE" in refused.stderr and refused.stdout == ""
