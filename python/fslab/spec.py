"""The study file's schema (pydantic). It imports no plug-in: reading a file, checking
each plug-in's own fields and naming the field of every error is ``study.py``'s job, and
plug-ins (device kinds, workloads) import this module for their sections.

A study file has four parts: ``[study]`` (name, repetitions, order, ...), ``[device]``
(``kind`` picks the device plug-in, which owns the other fields), ``[filesystems.NAME]``
(one section per file-system configuration) and ``[[workloads]]`` (``kind`` picks the
workload plug-in; optional ``[workloads.axes]``); optionally ``[models.NAME]`` (device
models of its own) and ``[paper]`` (a paper's figures and the study's deviations from it,
``paper.py``: report only). Expansion into cells is ``plan.py``'s.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from .aging_option import AgingOption, aging_shape
from .backend_names import BACKEND_PREFERENCE as BACKEND_PREFERENCE
from .backend_names import Backend, StudyBackend
from .paper import PaperSection
from .stopping_rule import StoppingRule
from .toml_section import TomlBool, TomlSection
from .units import parse_duration_s, parse_size, value_text

# The guest kernel series fslab fetches (backends/guest/kernel.py's META_PACKAGES); any
# other value must be the path of a kernel image.
GUEST_KERNEL_SERIES = ("6.1", "6.12")
# repetitions = "auto": defaults of min_repetitions, max_repetitions and precision.
AUTO_MIN, AUTO_MAX, AUTO_PRECISION = 3, 20, 0.05
# Below this a guest's kernel and Python do not fit: also the floor of a --quick guest.
GUEST_MIN_MEMORY = 256 << 20
GUEST_MAX_MEMORY = 1 << 40  # QEMU's -m on this host's scale: beyond it, a typo
SEED_MAX = (1 << 63) - 1  # the store keeps the seed as SQLite's signed 64-bit INTEGER
# A file-system entry's label: it names a column, a compare side (`fslab compare ext4 xfs`)
# and folders, so it is a plain name, never a path ('..') or empty.
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_+-]{0,63}$"
_LABEL = re.compile(LABEL_PATTERN)


def check_guest_kernel(value: str) -> str:
    """A guest kernel is a known series or the path of a vmlinuz (it holds a '/')."""
    if value in GUEST_KERNEL_SERIES or "/" in value:
        return value
    raise ValueError(f"unknown guest kernel: use {' or '.join(repr(s) for s in GUEST_KERNEL_SERIES)} "
                     "or the path of a kernel image (boot/vmlinuz-*)")


def one_line(value: str, what: str) -> str:
    """A name shown in tables and headings: one line of printable text, not only spaces."""
    if not value.strip():
        raise ValueError(f"{what} is empty: give it a name")
    if not value.isprintable():
        raise ValueError(f"{what} must be one line of printable text (no line breaks or control characters)")
    return value


class StudySection(TomlSection):
    name: str = Field(min_length=1, max_length=200, description="the study's name, shown in every report")
    description: str = Field(default="", max_length=10000, description="what the study asks, in words")
    paper: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.-]+$", description="the published study this study reproduces, "
        "by the name of its preset (e.g. 'seed-003'): report sections that belong to that paper "
        "use its figure and row names and judge its conclusions; recorded with the stored study. Leave it "
        "out for a study of your own")
    repetitions: int | Literal["auto"] = Field(
        default=3, description="runs per cell (1 to 1000), or \"auto\": repeat each cell until its interval is "
        "as narrow as `precision` asks or every comparison it is in has a verdict (fslab.stopping)")
    min_repetitions: int | None = Field(default=None, ge=2, le=1000, description="with repetitions = "
                                        f"\"auto\": runs every cell gets first (default {AUTO_MIN})")
    max_repetitions: int | None = Field(default=None, ge=2, le=1000, description="with repetitions = "
                                        f"\"auto\": runs a cell gets at most (default {AUTO_MAX})")
    precision: float | None = Field(default=None, gt=0, lt=1, description="with repetitions = \"auto\": the "
                                    "half-width of a cell's 95% interval, as a fraction of its mean (0.05: ±5%), "
                                    f"that is enough (default {AUTO_PRECISION})")
    contrast: list[str] = Field(default_factory=list, description="with repetitions = \"auto\": axis contrasts "
                                "that are questions too (\"direct=0/1\"): each pair of cells differing only "
                                "in that axis is tested like the file systems of a case")
    order: Literal["shuffled", "in-order"] = Field(
        default="shuffled", description="the order of a pass's runs: shuffled (seeded by `seed`) or as "
        "the file lists them")
    seed: int | None = Field(default=None, ge=0, le=SEED_MAX, description="order seed, 0 to 2^63-1; drawn "
                             "and recorded if absent")
    backend: StudyBackend = Field(default="auto", description="where each file system runs: host, guest, "
                                  "auto (the host where its kernel can, else the guest) or shared (like auto, "
                                  "but one backend for every entry, so they can be compared)")
    fresh: Literal["run", "repetition"] = Field(
        default="run", description="a new file system for every run, or one per pass (\"repetition\"): "
        "the cells in sequence on it, as the seed papers did")
    reuse_layout: TomlBool = Field(
        default=False, description="with fresh = \"repetition\": a run whose files (names, sizes, block "
        "size) an earlier run of its pass laid out runs on those files instead of laying out its own, as a "
        "paper that made its files once and ran its cases on them did; reads then meet data earlier cases "
        "wrote; every set of files stays until the pass ends, so the device must hold them all. Each run's "
        "provenance names the run that laid its files out")
    trace: TomlBool = Field(default=False, description="a block-layer trace of every run (trace.parquet and "
                        "trace_* metrics)")
    simulate: list[str] = Field(default_factory=list, description="with trace: the device models each "
                                "run's trace is replayed on (shipped names or [models.NAME])")
    drop_caches: TomlBool = Field(default=True, description="drop the page cache before each run")
    guest_kernel: str = Field(default="6.1", description="the guest backend's kernel: 6.1 (Debian 12), "
                              "6.12 (bookworm-backports) or the path of a kernel image")
    guest_memory: int = Field(default=1 << 30, description="the guest's memory (its page cache "
                              "follows it: keep the data-to-memory ratio of the study)")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return one_line(value, "the study's name")

    @field_validator("reuse_layout")
    @classmethod
    def _reuse_layout(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("fresh") != "repetition":
            raise ValueError("needs fresh = \"repetition\" (with a new file system for every run there is "
                             "no earlier run whose files to reuse); set it, or remove reuse_layout")
        return value

    @field_validator("guest_memory", mode="before")
    @classmethod
    def _guest_memory(cls, value: Any) -> int:
        size = parse_size(value)
        if not GUEST_MIN_MEMORY <= size <= GUEST_MAX_MEMORY:
            raise ValueError(f"must be from {GUEST_MIN_MEMORY >> 20} MiB (the guest's kernel and Python) to "
                             f"{GUEST_MAX_MEMORY >> 40} TiB, e.g. guest_memory = \"1GiB\"")
        return size

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, value: Any) -> Any:
        if value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
            raise ValueError('must be a whole number of runs per cell, 1 to 1000, or "auto" (repeat until '
                             "the question is answered)")
        return value

    @field_validator("contrast")
    @classmethod
    def _contrast(cls, values: list[str]) -> list[str]:
        for text in values:
            axis, sep, rest = text.partition("=")
            a, slash, b = rest.partition("/")
            if not (axis and sep and a and slash and b):
                raise ValueError(f"{text!r}: write AXIS=A/B, e.g. direct=0/1")
        return values

    @model_validator(mode="after")
    def _auto_fields(self) -> StudySection:
        if self.repetitions != "auto":
            given = [name for name in ("min_repetitions", "max_repetitions", "precision")
                     if getattr(self, name) is not None] + (["contrast"] if self.contrast else [])
            if given:
                several = len(given) > 1
                raise ValueError(f"{', '.join(given)} only appl{'y' if several else 'ies'} with repetitions = "
                                 f"\"auto\"; set it, or remove {'them' if several else 'it'} (repetitions = "
                                 f"{self.repetitions} runs every cell that often)")
            return self
        low = self.min_repetitions or AUTO_MIN
        high = self.max_repetitions or max(AUTO_MAX, low)
        if high < low:
            raise ValueError(f"max_repetitions ({high}) is below min_repetitions ({low}): raise max_repetitions "
                             "or lower min_repetitions")
        return self

    def stopping_rule(self) -> StoppingRule | None:
        """The rule of an auto study (None: a fixed number of repetitions)."""
        if self.repetitions != "auto":
            return None
        low = self.min_repetitions or AUTO_MIN
        return StoppingRule(min_n=low, max_n=self.max_repetitions or max(AUTO_MAX, low),
                            precision=self.precision or AUTO_PRECISION, contrasts=tuple(self.contrast))

    @field_validator("guest_kernel")
    @classmethod
    def _guest_kernel(cls, value: str) -> str:
        return check_guest_kernel(value)

    @field_validator("aging", mode="before")
    @classmethod
    def _aging(cls, value: Any) -> Any:
        return aging_shape(value, none_allowed=False)

    aging: AgingOption | None = Field(
        default=None, description="age every file system after mkfs, before any workload (fslab.aging)")
    machine_class: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_-]+$", description="with a Dask executor: run every job on "
        "workers started with `fslab worker --class NAME` (the device's machine_class wins)")


class DeviceSection(BaseModel):
    """``[device]``: ``kind`` names the device plug-in; its other fields are the plug-in's
    own (its ``section`` model checks them)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    kind: str = Field(default="image", description="the device kind (its plug-in owns the other fields)")
    machine_class: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_-]+$", description="with a Dask executor: the worker "
        "class (`fslab worker --class NAME`) whose machines have this device")

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class FilesystemSection(TomlSection):
    type: str | None = Field(default=None, description="FS type when the section name is a label")
    mkfs: list[str] = Field(default_factory=list, description="extra mkfs arguments")
    mount: list[str] = Field(default_factory=list, description="mount options, e.g. ['noatime']")
    backend: Backend | None = Field(default=None, description="overrides study.backend for this entry")
    device: DeviceSection | None = Field(default=None, description="this entry's own device (a "
                                         "[filesystems.NAME.device] table), instead of [device]: one "
                                         "study can run a file system on an image and on RAID")
    kernel: str | None = Field(default=None, description="this entry's guest kernel (6.1, 6.12 or a "
                               "path), overriding study.guest_kernel; implies the guest backend, so "
                               "one study can compare kernels on the same file system")
    simulate: list[str] | None = Field(default=None, description="the device models this entry's "
                                       "traced runs are replayed on, instead of study.simulate: each "
                                       "device of a study on its own model (one SSD, RAID0, RAID5)")

    @field_validator("kernel")
    @classmethod
    def _kernel(cls, value: str | None) -> str | None:
        return None if value is None else check_guest_kernel(value)

    def requested_backend(self, study_backend: StudyBackend) -> Backend:
        """This entry's backend request: its own, else the study's (``shared`` not yet
        resolved to one reads as ``auto``); a kernel of its own turns ``auto`` into
        ``guest`` (only a guest can boot another kernel)."""
        requested: Backend = self.backend or ("auto" if study_backend == "shared" else study_backend)
        return "guest" if self.kernel is not None and requested == "auto" else requested


class WorkloadSection(TomlSection):
    """A workload: ``kind`` picks the plug-in, which validates the remaining parameters."""

    model_config = ConfigDict(extra="allow")

    kind: str = Field(description="the workload kind (its plug-in owns the other parameters)")
    name: str = Field(min_length=1, max_length=100, description="the workload's name in tables and reports")
    axes: dict[str, list[Any]] = Field(default_factory=dict, description="parameters with several "
                                       "values, crossed into cells (any of the workload's parameters)")
    zip: list[list[str]] = Field(
        default_factory=list, description="groups of axes that vary together instead of crossed"
    )
    memory: int | None = Field(default=None, description="memory-cgroup limit for the workload")
    timeout: float | None = Field(default=None, description="seconds before the run is killed")
    aging: AgingOption | Literal["none"] | None = Field(
        default=None, description="this workload's aging; 'none' runs it on an un-aged file system "
        "even when [study] sets aging")

    @field_validator("aging", mode="before")
    @classmethod
    def _aging(cls, value: Any) -> Any:
        return aging_shape(value, none_allowed=True)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        one_line(value, "the workload's name")
        if "/" in value or value.strip() in (".", ".."):
            raise ValueError("a workload's name is not a path: no '/', not '.' or '..'")
        return value

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> int | None:
        if value is None:
            return None
        size = parse_size(value)
        if size < 1 << 20:
            raise ValueError("a memory limit below 1 MiB leaves the tool no room; give e.g. memory = \"512MiB\"")
        return size

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> float | None:
        if value is None:
            return None
        seconds = parse_duration_s(value)
        if not 0 < seconds <= 7 * 86400:
            raise ValueError("must be above 0 and at most a week (seconds, or e.g. '10m')")
        return seconds

    @field_validator("axes")
    @classmethod
    def _axes(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in axes.items():
            if not values:
                raise ValueError(f"axis {key!r} has no values; give at least one")
            if len({repr(v) for v in values}) != len(values):
                raise ValueError(f"axis {key!r} repeats a value: {value_text(values)}")
        return axes

    @model_validator(mode="after")
    def _zips(self) -> WorkloadSection:
        seen: set[str] = set()
        for group in self.zip:
            for axis in group:
                if axis not in self.axes:
                    raise ValueError(f"zip names {axis!r}, which is not in axes ({', '.join(sorted(self.axes))})")
                if axis in seen:
                    raise ValueError(f"axis {axis!r} is in two zip groups")
                seen.add(axis)
            lengths = {len(self.axes[a]) for a in group}
            if len(lengths) > 1:
                raise ValueError(f"zipped axes {', '.join(group)} must have equally many values")
        return self

    @property
    def params(self) -> dict[str, Any]:
        """The workload's own parameters (everything but the common fields)."""
        return dict(self.model_extra or {})

    def aging_in_effect(self, study: AgingOption | None) -> AgingOption | None:
        """The workload's own aging, else the study's; ``"none"`` turns the study's off."""
        if self.aging == "none":
            return None
        return self.aging if isinstance(self.aging, AgingOption) else study


class ModelDefinition(BaseModel):
    """``[models.NAME]``: a device model of the study's own, a shipped one (``base``) with
    some parameters changed (a RAID controller's write-back cache, an HDD's write cache
    off), named in ``simulate`` like a shipped model. Its other keys are the model's
    parameters (as `fslab simulate --set` takes them)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    base: str = Field(description="the shipped model it starts from (`fslab simulate --list`)")
    description: str | None = Field(default=None, description="what it stands for, in words")

    @property
    def overrides(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class StudySpec(TomlSection):
    study: StudySection = Field(description="the study as a whole")
    device: DeviceSection = Field(default_factory=DeviceSection, description="the device every "
                                  "file-system entry without its own is made on")
    filesystems: dict[str, FilesystemSection] = Field(min_length=1, description="one entry per "
                                                      "file-system configuration, by label")
    workloads: list[WorkloadSection] = Field(min_length=1, description="what runs on each file system")
    models: dict[str, ModelDefinition] = Field(default_factory=dict, description="device models of the "
                                               "study's own, named in simulate")
    paper: PaperSection | None = Field(default=None, description="the published figures this study can be "
                                       "compared on and its deviations from the paper's setup (report only: "
                                       "no cell depends on it)")

    def device_of(self, filesystem: str) -> DeviceSection:
        """The device a file-system entry runs on: its own, else the study's."""
        own = self.filesystems[filesystem].device
        return own if own is not None else self.device

    def devices_in_use(self) -> list[DeviceSection]:
        """The distinct devices the file-system entries run on, in the file's order."""
        seen: dict[str, DeviceSection] = {}
        for name in self.filesystems:
            device = self.device_of(name)
            seen.setdefault(repr(sorted(device.model_dump().items(), key=str)), device)
        return list(seen.values())

    @field_validator("filesystems")
    @classmethod
    def _labels(cls, entries: dict[str, FilesystemSection]) -> dict[str, FilesystemSection]:
        for label in entries:
            if not _LABEL.match(label):
                raise ValueError(f"file-system label {label!r} is not a plain name: use letters, digits, '-', "
                                 "'_' and '+' (starting with a letter or digit, at most 64), e.g. "
                                 "[filesystems.ext4-noatime] with type = 'ext4'")
        return entries

    @model_validator(mode="after")
    def _unique_workload_names(self) -> StudySpec:
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(dupes)}")
        return self
