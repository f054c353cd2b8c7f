"""The study's ``aging`` option as data: the aged state asked for (fill, what fill
measures, pattern, seed) and the file-size distribution it draws from. The study schema
reads it without loading the code that ages a file system (``fslab.aging``)."""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .errors import SpecError
from .toml_section import TomlSection
from .units import parse_size

_SIZES = re.compile(r"^(lognormal|uniform|fixed):([^:]+)(?::([^:]+))?$")


@dataclass(frozen=True)
class FileSizes:
    """A file-size distribution: ``lognormal:MEDIAN:SIGMA``, ``uniform:MIN:MAX`` or
    ``fixed:SIZE`` (sizes as in study files: ``64KiB``, ``1m``)."""

    kind: str
    a: float
    b: float

    @classmethod
    def parse(cls, text: str) -> FileSizes:
        m = _SIZES.match(text.strip())
        if not m:
            raise ValueError(f"{text!r} is not a size distribution; write 'lognormal:64KiB:1.5' "
                             "(median, sigma), 'uniform:4KiB:1MiB' or 'fixed:256KiB'")
        kind, first, second = m.groups()
        a = parse_size(first)
        if a <= 0:
            raise ValueError(f"{text!r}: the size must be above 0 bytes")
        if kind == "fixed":
            if second is not None:
                raise ValueError(f"{text!r}: 'fixed' takes one size, e.g. 'fixed:256KiB'")
            return cls(kind, a, a)
        if second is None:
            raise ValueError(f"{text!r}: {kind} needs two values, e.g. "
                             + ("'lognormal:64KiB:1.5'" if kind == "lognormal" else "'uniform:4KiB:1MiB'"))
        if kind == "lognormal":
            try:
                sigma = float(second)
            except ValueError:
                raise ValueError(f"{text!r}: sigma {second!r} is not a number") from None
            if not 0 <= sigma <= 5:
                raise ValueError(f"{text!r}: sigma must be between 0 and 5")
            return cls(kind, a, sigma)
        b = parse_size(second)
        if b < a:
            raise ValueError(f"{text!r}: the maximum is below the minimum")
        return cls(kind, a, b)

    def draw(self, rng: random.Random, cap: int) -> int:
        """One size in bytes, at least 1 and at most cap."""
        if self.kind == "lognormal":
            size = self.a * math.exp(rng.gauss(0.0, self.b))
        elif self.kind == "uniform":
            size = rng.uniform(self.a, self.b)
        else:
            size = self.a
        return max(1, min(cap, int(size)))


class AgingOption(TomlSection):
    """The study option ``aging = { fill = 0.5, pattern = "random-holes", seed = 7,
    file_sizes = "lognormal:64KiB:1.5" }`` (``rounds = N`` with ``pattern = "churn"``)."""

    fill: float = Field(gt=0, lt=1, description="the aged state: with fill_by = \"data\" the files "
                        "left hold this fraction of the device's bytes; with \"statfs\" this fraction of "
                        "the file system's blocks is in use")
    fill_by: Literal["data", "statfs"] = Field(
        default="data", description="what fill measures: \"data\" (file data as a fraction of the device: "
        "the same data on every file system, comparable) or \"statfs\" (blocks in use, metadata and "
        "reservations included: a 50%-aged xfs holds less data than a 50%-aged ext4)")
    pattern: Literal["random-holes", "churn"] = Field(
        default="random-holes", description="random-holes: fill past the target, delete a random subset, "
        "refill; churn: delete and rewrite a quarter of the target `rounds` times")
    seed: int = Field(default=0, ge=0, lt=1 << 63, description="the seed of every random choice: the "
                      "same seed gives the same files")
    file_sizes: str = Field(default="lognormal:64KiB:1.5", description="the files' size distribution")
    rounds: int | None = Field(default=None, ge=1, le=1000, description="churn: delete/create rounds")
    max_file_size: int = Field(default=64 << 20, description="bytes; no file is larger")

    @field_validator("file_sizes")
    @classmethod
    def _sizes(cls, value: str) -> str:
        FileSizes.parse(value)
        return value

    @field_validator("max_file_size", mode="before")
    @classmethod
    def _max(cls, value: Any) -> int:
        size = parse_size(value)
        if size < 4096:
            raise ValueError("must be at least 4KiB")
        return size

    @model_validator(mode="after")
    def _rounds(self) -> AgingOption:
        if self.pattern == "random-holes" and self.rounds is not None:
            raise ValueError("rounds applies to pattern = 'churn' only; remove it or set pattern = 'churn'")
        return self

    @property
    def churn_rounds(self) -> int:
        return self.rounds if self.rounds is not None else 10

    def key(self) -> str:
        """A stable text naming this option, for caches of aged images."""
        return self.model_dump_json()


def parse_aging(data: Any, *, source: str, field: str = "aging") -> AgingOption:
    """Validate an ``aging`` table; errors name the field (``aging.fill``) and the file."""
    if not isinstance(data, dict):
        raise SpecError("must be a table, e.g. { fill = 0.5, pattern = \"random-holes\", seed = 7 }",
                        source=source, field=field)
    try:
        return AgingOption.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join([field, *(str(p) for p in first["loc"])])
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown aging field; known: {', '.join(AgingOption.model_fields)}"
        elif "input" in first and first["type"] != "missing":
            message += f" (given: {first['input']!r})"
        raise SpecError(message, source=source, field=where) from None


def aging_shape(value: Any, *, none_allowed: bool) -> Any:
    """Before validation: an ``aging`` that is neither a table nor (in a workload) "none"
    gets one error saying both forms, not pydantic's two (one per form, one of them naming
    a class)."""
    if value is None or isinstance(value, (dict, AgingOption)) or (none_allowed and value == "none"):
        return value
    form = 'a table, e.g. aging = { fill = 0.5, pattern = "random-holes" }'
    raise ValueError(f'write "none" or {form}' if none_allowed
                     else f"write {form} (leave it out for no aging)")

