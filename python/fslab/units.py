"""Sizes and durations: parse the forms users write (``4k``, ``2GiB``, ``30s``) into integers.

One parser, two conventions, chosen by who reads the value:

- fslab's own fields (device size, memory limits, chunk sizes): ``k``, ``m``, ``g``,
  ``t`` and ``KiB``/``MiB``/... are powers of 1024; ``KB``/``MB``/``GB``/``TB`` (upper case,
  two letters) are powers of 1000.
- a fio option (``parse_size(value, kb_base=1024)``): what fio itself reads, so a study
  means what a job file would. fio's default ``kb_base=1024`` is its compatibility mode:
  ``k``, ``K``, ``KB``, ``kB`` are 1024 and ``KiB`` is 1000; with ``kb_base=1000``, ``k``,
  ``KB`` are 1000 and ``KiB`` is 1024 (measured with fio 3.33: ``size=8KiB`` writes 8000
  bytes by default). A bare ``b``/``B`` is bytes in both.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_BINARY = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DECIMAL = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


_PREFIXES = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
FIO_KB_BASES = (1024, 1000)


def _fio_factor(suffix: str, kb_base: int) -> int | None:
    """The multiplier fio gives a size suffix (None: not one it reads)."""
    key = suffix.lower()
    if key in ("", "b"):
        return 1
    if key.endswith("b"):
        key = key[:-1]
    other = key.endswith("i") and suffix.lower().endswith("ib")  # "KiB": the other base
    key = key.removesuffix("i")
    if key not in _PREFIXES:
        return None
    base = (1000 if kb_base == 1024 else 1024) if other else kb_base
    return int(base ** _PREFIXES[key])


def parse_size(value: int | str, *, kb_base: int | None = None) -> int:
    """Return a size in bytes. ``kb_base``: None for fslab's own fields, fio's 1024 or
    1000 for a fio option (see the module). Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError("a size must be a number of bytes or a string like '4k' or '2GiB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; write e.g. 4096, '4k', '512MiB' or '2GiB'")
    number, suffix = float(match.group(1)), match.group(2)
    key = suffix.lower()
    if key.endswith("ib"):
        key = key[:-2]
    factor: int | None
    if kb_base is not None:
        factor = _fio_factor(suffix, kb_base)
    elif suffix in ("KB", "MB", "GB", "TB"):
        factor = _DECIMAL[suffix.lower()]
    else:
        factor = _BINARY.get(key)
    if factor is None:
        raise ValueError(
            f"{value!r}: unknown size suffix {suffix!r}; write e.g. 4096, '4k', '512MiB' or '2GiB'"
        )
    result = number * factor
    if not math.isfinite(result):
        raise ValueError(f"{value!r} is too large to be a size")
    if result != int(result):
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(result)


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_DURATION_FACTOR = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}


def parse_duration_s(value: int | float | str) -> float:
    """Return a duration in seconds from 30, '30s', '2m', '500ms'. Always finite."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '30s' or '2m', not true or false")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        seconds = float(value)
    else:
        match = _DURATION_RE.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration; write e.g. 30, '30s', '2m' or '500ms'")
        seconds = float(match.group(1)) * _DURATION_FACTOR[match.group(2)]
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r} is not a finite duration")
    return seconds


def given_text(value: object) -> str:
    """A value as an error quotes it back: a boolean as the study file spells it (TOML's
    true, not Python's True), anything else as its repr."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


def value_text(value: object) -> str:
    """A parameter's value as the study file writes it: true or false (not Python's True),
    a list in brackets and a table in braces without Python's quotes, anything else as its
    text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    if isinstance(value, dict):  # an inline table: {metric = iops, window = 5 rounds}
        return "{" + ", ".join(f"{k} = {value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def assignments_text(pairs: Iterable[tuple[str, object]], sep: str = ", ") -> str:
    """'rw=read, direct=true': names and values (a mapping's items, maybe filtered) as a
    label or a parameter list says them, each value by ``value_text``."""
    return sep.join(f"{k}={value_text(v)}" for k, v in pairs)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """"1 run", "4 runs", "2 studies": a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def format_bytes(n: float) -> str:
    """Human-readable binary size: 4096 -> '4 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if float(n).is_integer() else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def utc_text(seconds: float) -> str:
    """A Unix time as '2026-12-04 18:06:36 UTC', as reports and messages say it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))
