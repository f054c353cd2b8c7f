"""Trace plots in the report, from a real short traced study (ext4 and xfs, fio random
writes with fsync, 2 runs each, on loop devices under tracefs): the HTML carries an
LBA-over-time plot per file system and a write-size CDF inline (PNG data URIs, captions
naming the runs), the JSON the plotted numbers (equal to the stored trace metrics) and no
image, the Markdown links PNG files written beside it; a lossy trace is marked."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.device
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def study(traced_study: tuple[Path, list[dict], list[dict]]) -> tuple[Path, list[dict], list[dict]]:
    return traced_study  # one study for this module and the others that read it (tests/conftest.py)


class Figures(HTMLParser):
    """Each <figure>: its id, class, kind, image source and caption text."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: dict[str, dict[str, str]] = {}
        self._open: dict[str, str] | None = None
        self._caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if tag == "figure":
            self._open = {"class": a.get("class", ""), "kind": a.get("data-kind", ""), "caption": ""}
            self.figures[a["id"]] = self._open
        if tag == "img" and self._open is not None:
            self._open["src"] = a["src"]
        if tag == "figcaption":
            self._caption = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "figcaption":
            self._caption = False
        if tag == "figure":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._caption and self._open is not None:
            self._open["caption"] += data


def _stored(runs: list[dict[str, Any]], fs: str, name: str) -> list[float]:
    return [r["metrics"][name]["value"] for r in runs if r["cell"]["filesystem"] == fs]


def test_html_json_markdown_carry_the_trace_plots(study, tmp_path: Path) -> None:
    from fslab.analysis.traces import analyze
    from fslab.report.trace_files import trace_path
    from fslab.trace.formats import load_trace

    results, runs, _ = study
    html, md, js = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(results), "--html", str(html),
                           "--markdown", str(md), "--json", str(js)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    page = Figures()
    page.feed(html.read_text())
    assert "trace-plots" in page.sections
    wanted = {"plot-size_cdf_write_randwrite": "size_cdf", "plot-lba_randwrite_ext4": "lba",
              "plot-lba_randwrite_xfs": "lba"}
    for fig_id, kind in wanted.items():
        fig = page.figures[fig_id]
        assert fig["kind"] == kind and "lossy" not in fig["class"]
        assert fig["src"].startswith("data:image/png;base64,")  # inline: nothing fetched
        assert base64.b64decode(fig["src"].split(",", 1)[1])[:8] == PNG
        assert "Trace complete" in fig["caption"]
    # Each plot names the runs it comes from: the LBA plot the first repetition of its file system.
    for fs in ("ext4", "xfs"):
        first = min((r for r in runs if r["cell"]["filesystem"] == fs), key=lambda r: r["repetition"])
        assert f"repetition 1 of 2 of {fs} randwrite (run id {first['run_id']})" in \
            page.figures[f"plot-lba_randwrite_{fs}"]["caption"]
        assert page.figures[f"plot-lba_randwrite_{fs}"]["caption"].startswith("Where on the device the data")
        for r in runs:
            if r["cell"]["filesystem"] == fs:
                assert f"#{r['repetition'] + 1} (run id {r['run_id']})" in \
                    page.figures["plot-size_cdf_write_randwrite"]["caption"]

    # JSON: the numbers plotted, no picture; they agree with the stored trace metrics.
    plots = {p["id"]: p for p in json.loads(js.read_text())["trace_plots"]}
    assert all("image_png" not in p for p in plots.values())
    cdf = plots["size_cdf_write_randwrite"]["data"]
    for fs in ("ext4", "xfs"):
        mine = [r for r in runs if r["cell"]["filesystem"] == fs]
        issued = {r["run_id"]: analyze(load_trace(trace_path(results, r)))["size_bytes"]["write"]["count"]
                  for r in mine}
        line = cdf["lines"][fs]
        assert line["runs"] == 2
        assert line["data_requests_issued"] == sum(issued.values())
        assert line["percentiles_kib"]["p50"] == 4.0  # fio's 4 KiB writes, mostly unmerged
        assert line["percentiles_kib"]["p100"] * 1024 == max(_stored(runs, fs, "trace_write_size_max_bytes"))
        assert line["percentiles_kib"]["p0"] * 1024 == min(_stored(runs, fs, "trace_write_size_min_bytes"))
        lba = plots[f"lba_randwrite_{fs}"]["data"]
        assert lba["write_data_requests_issued"] == issued[lba["run_id"]]
        assert sum(lba["write_requests_per_bin"]) == lba["write_data_requests_issued"]
        assert 0 <= lba["offset_gib"]["min"] <= lba["offset_gib"]["max"] < 0.5  # on the 512 MiB device

    # Markdown: image links to PNG files written beside it.
    text = md.read_text()
    assert "## Block-trace plots" in text
    for plot_id in plots:
        link = f"r_figures/{plot_id}.png"
        assert f"]({link})" in text
        assert (tmp_path / link).read_bytes()[:8] == PNG


def test_lossy_trace_is_marked_in_its_plots(study, tmp_path: Path) -> None:
    from fslab.report.html import render_html
    from fslab.report.outputs import load_report
    from fslab.report.trace_files import trace_path
    from fslab.trace.formats import load_trace, write_parquet

    results, runs, _ = study
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    xfs = min((r for r in runs if r["cell"]["filesystem"] == "xfs"), key=lambda r: r["repetition"])
    path = trace_path(copy, xfs)
    assert path is not None
    trace = load_trace(path)
    trace.meta.update(complete=False, lost_events=1234)  # as capture stores a trace that lost events
    write_parquet(trace, path)
    seen: list[tuple[int, int]] = []
    report = load_report(copy, None, trace_plots=True, images=True,
                         progress=lambda done, total, what: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]  # one step per trace file read
    page = Figures()
    page.feed(render_html(report))
    lossy = {k for k, f in page.figures.items() if "lossy" in f["class"]}
    with_it = {f"plot-{p.id}" for p in report.trace_plots if xfs["run_id"] in p.run_ids}
    assert lossy == with_it and {"plot-lba_randwrite_xfs", "plot-size_cdf_write_randwrite"} <= lossy
    for fig_id in lossy:
        assert "INCOMPLETE trace: 1,234 events lost" in page.figures[fig_id]["caption"]
    assert "Trace complete" in page.figures["plot-lba_randwrite_ext4"]["caption"]
    data = {p.id: p for p in report.trace_plots}
    assert data["lba_randwrite_xfs"].lost_events == 1234 and data["lba_randwrite_ext4"].complete


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_trace_plots_render_in_chromium(study, tmp_path: Path) -> None:
    """The inline images decode and show in a browser: the LBA plots' write dots (matplotlib's
    tab:red at 60% over white) and the CDF lines (tab:blue, tab:orange) are on screen."""
    from PIL import Image

    from fslab.report.html import render_html
    from fslab.report.outputs import load_report

    results, _, _ = study
    report = load_report(results, None, trace_plots=True, images=True)
    page = tmp_path / "plots.html"
    # The plots section alone, so the screenshot holds the images and not the tables above them.
    html = render_html(report)
    start = html.index('<section id="trace-plots">')
    page.write_text(html[:html.index("<body>") + 6] + html[start:html.index("</section>", start) + 10]
                    + "</body></html>")
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,1800",
                    page.as_uri()], capture_output=True, timeout=120, check=True)
    present = {rgb for _, rgb in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 22) or []}

    def near(rgb: tuple[int, int, int], tolerance: int = 12) -> bool:
        return any(all(abs(p[k] - rgb[k]) <= tolerance for k in range(3)) for p in present)

    red = tuple(round(0.6 * c + 0.4 * 255) for c in (0xD6, 0x27, 0x28))
    assert near(red)  # write dots of the LBA plots
    assert near((0x1F, 0x77, 0xB4)) and near((0xFF, 0x7F, 0x0E))  # the two CDF lines
