"""The rule of a ``repetitions = "auto"`` study, as data: how many passes at least and at
most, how precise a cell must be, at which level comparisons are tested. The study schema
builds it and the stored facts carry it (``to_json``); deciding with it is
``fslab.stopping``'s business."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .datarecords import asdict

SPENDING_DEFAULT = "pocock"


@dataclass(frozen=True)
class StoppingRule:
    """``repetitions = "auto"``: at least ``min_n`` and at most ``max_n`` passes; a cell is
    precise enough when its interval's half-width is at most ``precision`` of its mean;
    comparisons are tested at family-wise ``alpha`` with the ``spending`` function."""

    min_n: int = 3
    max_n: int = 20
    precision: float = 0.05
    alpha: float = 0.05
    spending: str = SPENDING_DEFAULT
    contrasts: tuple[str, ...] = ()  # "axis=a/b": pairs of cells that differ only in that axis

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "contrasts": list(self.contrasts)}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> StoppingRule:
        return StoppingRule(int(data["min_n"]), int(data["max_n"]), float(data["precision"]),
                            float(data["alpha"]), str(data["spending"]), tuple(data.get("contrasts", ())))

    def describe(self) -> str:
        return (f"{self.min_n}–{self.max_n} repetitions per cell, until its 95% interval is within "
                f"±{self.precision:.0%} of its mean or every comparison it is in has a verdict")
