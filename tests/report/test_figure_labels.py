"""Category labels under bars (Figure 3's file systems, a chart's cases) never overlap and
stay inside the picture, whatever the study names its entries (issue 19: seed-004's
Figure 3 had its labels run into each other). Checked on the drawn figure's pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from fslab.report import trace_plots
from fslab.report.ticks import category_ticks, overlapping

matplotlib.use("Agg")
LONG = ["ext4-default-journal-ordered-mode", "f2fs-with-a-long-entry-name", "ext4-raid0-512KiB-chunks",
        "f2fs-raid0-512KiB-chunks", "ext4-raid5-left-symmetric", "f2fs-raid5-left-symmetric"]


def _inside(fig: Any) -> bool:
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    return all(page.x0 <= b.x0 and b.x1 <= page.x1 and page.y0 <= b.y0
               for b in (t.get_window_extent(renderer) for t in fig.axes[0].get_xticklabels()))


def test_figure3_labels_do_not_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved: list[Any] = []
    original = trace_plots._save

    def keep(fig: Any, out: Any) -> Any:
        saved.append(fig)
        return original(fig, out)

    monkeypatch.setattr(trace_plots, "_save", keep)
    means = {f"{fs} (mean, n=5) on md device": {"requests": {"read": 3.0, "write": 900.0, "flush": 40.0}}
             for fs in LONG}
    out = trace_plots.io_counts(means, tmp_path / "fig3.png", on="on the md device (the bios the file system "
                                "issued) (ext4-raid0, …)")
    assert out.read_bytes()[:4] == b"\x89PNG"
    [fig] = saved
    FigureCanvasAgg(fig)  # closing it left the figure without a canvas that can draw
    fig.canvas.draw()  # as saved: the layout _save made
    assert len([t for t in fig.axes[0].get_xticklabels() if t.get_text()]) == len(LONG)
    assert not overlapping(fig.axes[0]) and _inside(fig)


@pytest.mark.parametrize(("labels", "width_in", "level"), [
    (["ext4", "xfs", "btrfs"], 6.4, True),  # short names stay level
    (LONG * 2, 6.4, False),  # twelve long names in a narrow figure: slanted or upright
])
def test_category_ticks_rotate_only_when_needed(labels: list[str], width_in: float, level: bool) -> None:
    plt = trace_plots._plt()
    fig, ax = plt.subplots(figsize=(width_in, 4))
    ax.bar(range(len(labels)), [1.0] * len(labels))
    category_ticks(ax, list(range(len(labels))), labels)
    fig.canvas.draw()
    assert not overlapping(ax) and _inside(fig)
    assert (ax.get_xticklabels()[0].get_rotation() == 0) is level
    plt.close(fig)
