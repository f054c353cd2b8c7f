"""The shipped device models as a catalog: what each is, where each parameter comes from,
and the published measurements of the device it names.

A model file (``fslab/models/NAME.toml``) has ``[model]`` (kind, description) and
``[params]``. A *named* model — one of a real device — adds:

- ``[sources]``: citation keys -> "title, site — URL" (or the seed paper's table);
- ``[param_sources]``: every parameter -> a source key, or ``derived: how``,
  ``typical: why`` (the class's usual value) or ``simulation: why`` (a setting of the
  simulation, not of the device);
- ``[[published]]``: the device's published measurements ("corners"), each with the
  workload it was taken under (``rw``, ``bs``, ``qd``, ``span``), ``value``, ``unit``,
  ``source``, and optionally ``fresh`` (taken on a drive with nothing written),
  ``derived`` (a parameter was derived from it: it checks arithmetic, not the model),
  ``note`` and ``miss`` (why an honest model cannot reach it).

Generic class models (``sata-mlc-ssd``, ``hdd-7200``, ...) have none of these.
``raidN-Mx-PRESET`` names are built on the fly and are not files (see ``simulate``).

A preset file is all Python needs of a model: its ``kind`` names a model of the core
(``_core.model_kinds``), which brings its own parameters, mechanisms and their words, so
no Python list repeats the models. This module is the one place that knows where preset
files live (``preset_dirs``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from typing import Any

from .errors import SpecError

PARAM_SOURCE_KINDS = ("derived:", "typical:", "simulation:")
CORNER_RWS = ("read", "write", "randread", "randwrite", "seek", "rotation")
CORNER_UNITS = {"MB/s", "IOPS", "ms"}
RAID_PATTERN = ("raidN-Mx-PRESET", "RAID0 or RAID5 of M members of any model PRESET, 512 KiB chunks, "
                "no controller cache (as md), built on the fly: e.g. raid5-8x-samsung-840pro-256")


@dataclass(frozen=True)
class Corner:
    """One published measurement of a device and the workload it was taken under."""

    corner: str
    rw: str
    value: float
    unit: str
    source: str
    bs: str = "4KiB"
    qd: int = 1
    span: str | None = None
    fresh: bool = False
    derived: bool = False
    note: str = ""
    miss: str = ""


@dataclass(frozen=True)
class ModelEntry:
    """A shipped model file, read as data (parameters unresolved, as written)."""

    name: str
    kind: str
    description: str
    params: dict[str, Any]
    param_sources: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    published: tuple[Corner, ...] = ()

    @property
    def named(self) -> bool:
        """A model of a named real device (it cites sources), not a generic class."""
        return bool(self.sources)

    def source_of(self, param: str) -> str:
        """The citation of one parameter: the source's text for a key, else the
        derivation or class note itself; "" when the file gives none."""
        ref = self.param_sources.get(param, "")
        return self.sources.get(ref, ref)


def _corner(name: str, i: int, row: Any) -> Corner:
    where = f"published[{i}]"
    if not isinstance(row, dict):
        raise SpecError("must be a table", source=f"models/{name}.toml", field=where)
    known = set(Corner.__dataclass_fields__)
    unknown = set(row) - known
    if unknown:
        raise SpecError(f"unknown keys {sorted(unknown)}; known: {sorted(known)}",
                        source=f"models/{name}.toml", field=where)
    try:
        corner = Corner(**row)
    except TypeError as exc:
        raise SpecError(f"{exc} (need corner, rw, value, unit, source)",
                        source=f"models/{name}.toml", field=where) from None
    if corner.rw not in CORNER_RWS:
        raise SpecError(f"rw {corner.rw!r} is not one of {CORNER_RWS}", source=f"models/{name}.toml",
                        field=f"{where}.rw")
    if corner.unit not in CORNER_UNITS:
        raise SpecError(f"unit {corner.unit!r} is not one of {sorted(CORNER_UNITS)}",
                        source=f"models/{name}.toml", field=f"{where}.unit")
    return corner


def preset_dirs() -> list[Traversable]:
    """Where preset files live, searched in order (the package's ``fslab/models``)."""
    return [resources.files("fslab.models")]


def preset_path(name: str) -> Traversable | None:
    """The preset file of model ``name``, or None when there is none."""
    for directory in preset_dirs():
        path = directory.joinpath(f"{name}.toml")
        if path.is_file():
            return path
    return None


def load_model(name: str) -> ModelEntry:
    """The shipped model file ``name``. Raises SpecError for an unknown name or a
    malformed ``[[published]]`` row."""
    path = preset_path(name)
    if path is None:
        raise SpecError(f"no shipped model {name!r}; known: {', '.join(model_files())} "
                        f"(and {RAID_PATTERN[0]})", field="NAME")
    with path.open("rb") as f:
        data = tomllib.load(f)
    model = data.get("model", {})
    rows = data.get("published", [])
    return ModelEntry(
        name=name,
        kind=str(model.get("kind", "")),
        description=str(model.get("description", "")),
        params=dict(data.get("params", {})),
        param_sources={k: str(v) for k, v in data.get("param_sources", {}).items()},
        sources={k: str(v) for k, v in data.get("sources", {}).items()},
        published=tuple(_corner(name, i, row) for i, row in enumerate(rows)),
    )


def model_files() -> list[str]:
    """Names of the shipped model files, sorted."""
    return sorted({p.name[:-5] for d in preset_dirs() for p in d.iterdir() if p.name.endswith(".toml")})


def catalog() -> list[ModelEntry]:
    """Every shipped model file, named devices first, then the generic classes."""
    entries = [load_model(n) for n in model_files()]
    return sorted(entries, key=lambda e: (not e.named, e.name))


def citation_problems(entry: ModelEntry) -> list[str]:
    """What a named model fails to cite: a parameter without a source, a source key that
    [sources] lacks, a derivation without its reason, a published row citing nothing
    known. Empty for a generic model (it claims no device)."""
    if not entry.named:
        return []
    problems = []
    for param in entry.params:
        ref = entry.param_sources.get(param)
        if not ref:
            problems.append(f"{param}: no entry in [param_sources]")
        elif ref.startswith(PARAM_SOURCE_KINDS):
            if len(ref.split(":", 1)[1].strip()) < 10:
                problems.append(f"{param}: {ref!r} does not say how or why")
        elif ref not in entry.sources:
            problems.append(f"{param}: source {ref!r} is not in [sources]")
    for extra in set(entry.param_sources) - set(entry.params):
        problems.append(f"[param_sources] names {extra!r}, which [params] does not set")
    for c in entry.published:
        if c.source not in entry.sources:
            problems.append(f"published {c.corner}: source {c.source!r} is not in [sources]")
    for key, text in entry.sources.items():
        if not text.strip():
            problems.append(f"[sources] {key}: empty")
    return problems
