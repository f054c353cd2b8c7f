"""Grouped bar charts as inline SVG text, drawn from report.model.ChartData: a bar per file
system and case (the mean), its 95% interval as an error bar, each run as a dot so the
spread shows, the unit on the y axis. Layout is computed, not guessed: every case gets a
slot wide enough for its label, so labels never overlap.

An interval that reaches below zero for a quantity that cannot be negative is drawn to the
axis with a hollow end marker (not silently clipped); the caption says so."""

from __future__ import annotations

import math
from html import escape

from ..metrics import display_name
from .data import ChartData
from .units import fmt

# One colour per file system, by its position in the study (kept across every chart).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
CHAR_W = 6.6  # px per character at the 11px label font (a generous average)


def colour(fs: str, filesystems: list[str]) -> str:
    return PALETTE[filesystems.index(fs) % len(PALETTE)] if fs in filesystems else "#555555"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= raw:
            step *= m
            break
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.replace(", ", ",  ").split("  "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def chart_svg(chart: ChartData, filesystems: list[str]) -> str:
    """The chart as one <svg> element (no external references)."""
    n_fs = max(len(chart.filesystems), 1)
    label_lines = {c: _wrap(c, 22) for c in chart.cases}
    longest = max((len(line) for lines in label_lines.values() for line in lines), default=4)
    slot = max(34.0 * n_fs + 24, longest * CHAR_W + 16)
    left, right, top = 78.0, 16.0, 34.0
    bottom = 30.0 + 14 * max((len(v) for v in label_lines.values()), default=1)
    plot_h = 240.0
    arrow = "↑ higher is better" if chart.higher_is_better else "↓ lower is better"
    heading = f"{chart.title} ({arrow})"
    width = max(left + right + slot * max(len(chart.cases), 1), 16 + len(heading) * 7.4)
    height = top + plot_h + bottom
    highest = max([b.high or b.mean for b in chart.bars] + [v for b in chart.bars for v in b.values] + [0.0])
    ticks = nice_ticks(highest * 1.05)
    y_max = ticks[-1] or 1.0

    def y(v: float) -> float:
        return top + plot_h - max(v, 0.0) / y_max * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(chart.title)}" '
           f'data-metric="{escape(chart.metric)}">']
    out.append(f'<text x="8" y="16" class="ct">{escape(heading)}</text>')
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" class="tick" text-anchor="end">{fmt(t)}</text>')
    mid = top + plot_h / 2
    axis_label = f"{display_name(chart.metric)} [{chart.display_unit}]"
    out.append(f'<text x="14" y="{mid:.0f}" class="axis" text-anchor="middle" '
               f'transform="rotate(-90 14 {mid:.0f})">{escape(axis_label)}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" class="axisline"/>')
    bar_w = (slot - 24) / n_fs
    by_key = {(b.filesystem, b.case): b for b in chart.bars}
    for j, case in enumerate(chart.cases):
        x0 = left + j * slot + 12
        for i, fs in enumerate(chart.filesystems):
            b = by_key.get((fs, case))
            if b is None:
                continue
            x = x0 + i * bar_w
            cx = x + bar_w / 2
            col = colour(fs, filesystems)
            out.append(f'<rect id="bar|{escape(fs)}|{escape(case)}" x="{x + 2:.1f}" y="{y(b.mean):.1f}" '
                       f'width="{bar_w - 4:.1f}" height="{y(0) - y(b.mean):.1f}" fill="{col}" fill-opacity="0.55">'
                       f'<title>{escape(fs)}, {escape(case)}: mean {fmt(b.mean)} {escape(chart.display_unit)}'
                       f' (n={b.n})</title></rect>')
            if b.low is not None and b.high is not None:
                lo = y(b.low)
                out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(b.high):.1f}" y2="{lo:.1f}" class="err"/>')
                out.append(f'<line x1="{cx - 5:.1f}" x2="{cx + 5:.1f}" y1="{y(b.high):.1f}" y2="{y(b.high):.1f}" '
                           'class="err"/>')
                if b.crosses_zero:  # the interval goes on below the axis: say so with a hollow marker
                    out.append(f'<circle cx="{cx:.1f}" cy="{lo:.1f}" r="4" class="crosses"><title>interval '
                               f'reaches {fmt(b.low)}: below zero, not drawn</title></circle>')
                else:
                    out.append(f'<line x1="{cx - 5:.1f}" x2="{cx + 5:.1f}" y1="{lo:.1f}" y2="{lo:.1f}" class="err"/>')
            for k, v in enumerate(b.values):
                jitter = ((k % 5) - 2) * min(3.0, bar_w / 12)
                out.append(f'<circle cx="{cx + jitter:.1f}" cy="{y(v):.1f}" r="2.6" class="pt" fill="{col}"/>')
        for k, line in enumerate(label_lines[case]):
            out.append(f'<text x="{left + j * slot + slot / 2:.1f}" y="{top + plot_h + 16 + 14 * k:.1f}" '
                       f'class="tick" text-anchor="middle">{escape(line)}</text>')
    out.append("</svg>")
    return "".join(out)


def legend_html(filesystems: list[str]) -> str:
    return "".join(f'<span class="key"><span class="sw" style="background:{colour(fs, filesystems)}"></span>'
                   f'{escape(fs)}</span>' for fs in filesystems)
