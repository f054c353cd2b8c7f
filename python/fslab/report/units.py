"""Display scaling: values are stored in base units (B/s, ns, IOPS) and shown in the unit
a storage engineer reads (MiB/s, µs). One place, so every table and export agrees.
One spelling per unit: I/O operations per second are "IOPS" everywhere."""

from __future__ import annotations

_SCALES: dict[str, list[tuple[float, str]]] = {
    "B/s": [(1, "B/s"), (1 << 10, "KiB/s"), (1 << 20, "MiB/s"), (1 << 30, "GiB/s")],
    "B": [(1, "B"), (1 << 10, "KiB"), (1 << 20, "MiB"), (1 << 30, "GiB")],
    "ns": [(1, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")],
    "IOPS": [(1, "IOPS")],
}
# Spellings stored by earlier versions, read as today's.
_ALIASES = {"IO/s": "IOPS"}


def canonical_unit(unit: str) -> str:
    """The one spelling of a unit (results stored before it was fixed say "IO/s")."""
    return _ALIASES.get(unit, unit)


def display_scale(unit: str, magnitude: float) -> tuple[float, str]:
    """(divisor, label) so that ``magnitude / divisor`` reads naturally (>= 1 where possible)."""
    options = _SCALES.get(canonical_unit(unit))
    if not options:
        return 1.0, unit
    chosen = options[0]
    for divisor, label in options:
        if abs(magnitude) >= divisor:
            chosen = (divisor, label)
    return chosen


def fmt(value: float) -> str:
    """Three significant figures, thousands separated: 123456 -> '123,456', 1.234 -> '1.23'."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"
