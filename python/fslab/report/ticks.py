"""Category labels under the bars of a matplotlib chart (a file system, a workload case)
that never run into each other, however long the names a study gives its entries."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

LABEL_WIDTH = 16  # characters per line of a category label before it wraps
# Tried in turn until no two labels overlap: a slanted label needs less room across than a
# level one, an upright one only its lines' height.
ROTATIONS = (0, 35, 90)


def wrap(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` with each of its lines wrapped to ``width`` characters (a word longer than
    that is broken: a name without spaces would otherwise stay one long line)."""
    return "\n".join(textwrap.fill(line, width, break_long_words=True) or line for line in label.split("\n"))


def _thickness(label: Any, renderer: Any) -> float:
    """A label's extent across its own baseline (its lines' height), in pixels."""
    angle = label.get_rotation()
    label.set_rotation(0)
    height = float(label.get_window_extent(renderer).height)
    label.set_rotation(angle)
    return height


def overlapping(ax: Any, pad_px: float = 2.0) -> bool:
    """Whether any two neighbouring x tick labels of the axis overlap as laid out now
    (window pixels). Level and upright labels are compared by their boxes; slanted ones are
    parallel strips through their ticks, which overlap when two neighbours' half
    thicknesses add up to more than the strips' distance across (their boxes overlap long
    before the letters do)."""
    renderer = ax.figure.canvas.get_renderer()
    ticks = sorted(((float(ax.transData.transform((t.get_loc(), 0))[0]), t.label1)
                    for t in ax.xaxis.get_major_ticks() if t.label1.get_visible() and t.label1.get_text()),
                   key=lambda pair: pair[0])
    pairs = list(zip(ticks, ticks[1:]))
    angle = ticks[0][1].get_rotation() % 180 if ticks else 0.0
    if angle in (0.0, 90.0):
        return any(a.get_window_extent(renderer).padded(pad_px / 2).overlaps(
            b.get_window_extent(renderer).padded(pad_px / 2)) for (_, a), (_, b) in pairs)
    across = abs(math.sin(math.radians(angle)))
    return any((_thickness(a, renderer) + _thickness(b, renderer)) / 2 + pad_px > (xb - xa) * across
               for (xa, a), (xb, b) in pairs)


def category_ticks(ax: Any, positions: Sequence[float], labels: Sequence[str], width: int = LABEL_WIDTH,
                   **font: Any) -> None:
    """Label ``positions`` on the x axis with ``labels``: wrapped to ``width``, level if they
    fit, else wrapped to twice that and slanted, else upright. The figure's tight layout
    makes room below the axis. Costs one draw of the figure per rotation tried."""
    level = [wrap(label, width) for label in labels]
    # Across a turned label are its lines: fewer, longer ones need less room between ticks.
    turned = [wrap(label, 2 * width) for label in labels]
    for angle in ROTATIONS:
        # Set anew each time: a drawn axis takes its tick texts from the ticks' formatter.
        slanted = angle not in (0, 90)
        texts = level if angle == 0 else turned
        ax.set_xticks(list(positions), texts, rotation=angle,
                      ha="right" if slanted else "center", rotation_mode="anchor" if slanted else "default",
                      **font)
        ax.figure.tight_layout()
        ax.figure.canvas.draw()
        if not overlapping(ax):
            return
