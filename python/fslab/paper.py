"""A study's ``[paper]`` table: the published figures it can be compared on and how its
setup differs from the paper's. Report-only facts: they name cells (workload, file-system
entry, case) and metrics, but are no part of any cell (plan.py's cell payload never sees
them), so adding or editing them changes no cell id.

A figure is either one number (``value`` in ``unit``) or a ratio between two cells
(``filesystem`` over ``versus``) or between two device models of one cell (``model`` over
``versus_model``): most of a paper's claims are ratios and orderings ("about 5x", "more
than 1x": higher). ``source`` says where in the paper it stands ("Figure 1, §4").

Schema only here (pydantic, imported by spec.py); ``paper_check`` checks each figure
against the study when it loads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The units a paper's figure may be given in: unit -> (fslab's stored unit, its factor).
UNITS: dict[str, tuple[str, float]] = {
    "IOPS": ("IOPS", 1.0), "KIOPS": ("IOPS", 1e3),
    "B/s": ("B/s", 1.0), "KB/s": ("B/s", 1e3), "MB/s": ("B/s", 1e6), "KiB/s": ("B/s", 1024.0),
    "MiB/s": ("B/s", float(1 << 20)),
    "ns": ("ns", 1.0), "us": ("ns", 1e3), "ms": ("ns", 1e6), "s": ("ns", 1e9),
    "B": ("B", 1.0), "KiB": ("B", 1024.0), "requests": ("requests", 1.0),
}
Relation = Literal["about", "more than", "less than"]


class PaperFigure(BaseModel):
    """``[[paper.figures]]``: one published figure and the cell(s) it stands beside."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: str = Field(min_length=1, description="what the paper states, in a few words of your own")
    source: str = Field(min_length=1, description="where in the paper: table or figure, and section or page "
                        "(e.g. 'Table IV, p. 4')")
    workload: str = Field(description="the study's workload (its name) the figure is about")
    metric: str = Field(description="the metric fslab stores for it (e.g. write_iops)")
    filesystem: str = Field(description="the study's file-system entry the figure is of (a ratio's numerator)")
    case: dict[str, Any] = Field(default_factory=dict, description="the case: a value for every axis of "
                                 "the workload (e.g. {rw = 'write', direct = 0})")
    value: float | None = Field(default=None, gt=0, description="the paper's number, in `unit`")
    unit: str | None = Field(default=None, description=f"the unit of `value`: {', '.join(UNITS)}")
    versus: str | None = Field(default=None, description="a ratio's denominator: another file-system entry "
                               "(same workload and case)")
    ratio: float | None = Field(default=None, gt=0, description="the paper's ratio, filesystem over versus "
                                "(or model over versus_model); 1 with relation 'more than' says only 'higher'")
    relation: Relation = Field(default="about", description="how the paper states the ratio: about, more "
                               "than or less than it")
    model: str | None = Field(default=None, description="the device model standing for the paper's device "
                              "(the predicted column); by default the first both cells were replayed on")
    versus_model: str | None = Field(default=None, description="a ratio between two device models of one "
                                     "cell (the paper's two devices are two models here)")

    @model_validator(mode="after")
    def _one_kind(self) -> PaperFigure:
        if (self.value is None) == (self.ratio is None):
            raise ValueError("give either value (with unit) or ratio (with versus or versus_model), not "
                             f"{'both' if self.value is not None else 'neither'}")
        if self.value is not None:
            if self.unit not in UNITS:
                raise ValueError(f"value needs a unit, one of {', '.join(UNITS)} (given: {self.unit!r})")
            if self.versus is not None or self.versus_model is not None:
                raise ValueError("versus and versus_model belong to a ratio; a value is one cell's")
        else:
            if self.unit is not None:
                raise ValueError("a ratio has no unit; remove unit")
            if self.versus is None and self.versus_model is None:
                raise ValueError("a ratio needs versus (another file-system entry) or versus_model")
            if self.versus_model is not None and self.model is None:
                raise ValueError("versus_model needs model (the ratio's numerator model)")
            if self.versus == self.filesystem and self.versus_model is None:
                raise ValueError("versus names the same entry as filesystem: name another, or give versus_model")
        return self

    @property
    def denominator(self) -> str:
        """The file-system entry of a ratio's denominator (the same entry for a model ratio)."""
        return self.versus or self.filesystem


class PaperSection(BaseModel):
    """``[paper]``: the paper's figures this study can be compared on and its deviations
    from the paper's setup, shown above them in the report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    figures: list[PaperFigure] = Field(default_factory=list, description="the paper's figures "
                                       "([[paper.figures]] rows)")
    deviations: list[str] = Field(default_factory=list, description="how this study's setup differs from "
                                  "the paper's, one sentence each")
