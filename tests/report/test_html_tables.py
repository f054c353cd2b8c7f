"""HTML tables stay readable however wide a study makes them (issue 19: Table IV's and
seed-004's first column shrank to one character, and the wide table was clipped): the label
column keeps a width, only values too long for their column break, and a table wider
than the page scrolls inside itself. The rules are checked as written, and in Chromium by
the pixels of a rendered wide table."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fslab.report.html import CSS, _table

GREEN = (0, 255, 0)  # painted on the first column in the test page only, to measure it


def _rules(css: str) -> dict[str, dict[str, str]]:
    """selector -> {property: value} of a flat stylesheet (no @-rules, as the report's)."""
    out: dict[str, dict[str, str]] = {}
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        decls = dict(d.split(":", 1) for d in body.replace("\n", "").split(";") if ":" in d)
        out.setdefault(selector.strip(), {}).update({k.strip(): v.strip() for k, v in decls.items()})
    return out


def test_css_keeps_first_columns_and_scrolls_wide_tables() -> None:
    rules = _rules(CSS)
    assert rules["table"]["overflow-x"] == "auto" and rules["table"]["display"] == "block"
    assert rules["table"]["max-width"] == "100%"
    first = rules["th:first-child,td:first-child"]
    assert float(first["min-width"].removesuffix("em")) >= 8
    # 'anywhere' lets a cell's narrowest width be one character: the table then squeezes
    # its label column to that; 'break-word' breaks only what cannot fit otherwise.
    assert "anywhere" not in CSS and rules["th,td"]["overflow-wrap"] == "break-word"


def _wide_table() -> str:
    """Table IV of seed-004's six file systems on the guest: long column names, long cells."""
    columns = ["paper's row", "Bonnie++ test"] + [f"{fs} (guest 6.1.0-28-amd64) (MiB/s)" for fs in
                                                  ("ext4", "f2fs", "ext4-raid0", "f2fs-raid0", "ext4-raid5",
                                                   "f2fs-raid5")]
    rows = [[row, test] + ["2,006 ± 5.89 (n=5) -0.2%"] * 6 for row, test in
            (("Random Write", "per-char write (putc)"), ("Sequential Rewrite", "rewrite"),
             ("Sequential Read", "block read"))]
    return _table(columns, rows, 2)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_first_column_is_wide_in_chromium(tmp_path: Path) -> None:
    from PIL import Image

    page = tmp_path / "t.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset=utf-8><style>{CSS}"
                    "td:first-child{background:#00ff00}</style></head><body>"
                    f"{_wide_table()}</body></html>")
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--force-device-scale-factor=1", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1300,600", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    pixels = image.load()
    runs = []
    for y in range(0, height, 4):  # the longest stretch of the painted column on any row
        run = best = 0
        for x in range(width):
            run = run + 1 if pixels[x, y] == GREEN else 0
            best = max(best, run)
        runs.append(best)
    # 'Sequential Rewrite' in 13px type needs ~120 px; one character, as before, ~25 px.
    assert max(runs) >= 120, max(runs)
