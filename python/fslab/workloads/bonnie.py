"""Bonnie++ 2.00a: run for real in a memory-limited cgroup, parse its CSV (format 1.98,
50 fields) into per-phase throughput, CPU and maximum-latency metrics.

Two Bonnie++ facts shape this module:

- ``+++++`` in a rate field means the phase finished too quickly for Bonnie++ to time
  (well under a second). It is kept as a note with no number — never a zero — together
  with a size that would measure it. An empty field means the phase was not run.
- Bonnie++ wants its file to be twice RAM so reads cannot come from the page cache. fslab
  keeps that ratio in a small cgroup instead of using a huge file: the run's memory limit
  is passed as ``-r`` and the file is at least twice that. On a device as fast as this
  machine's, a small file is all ``+++++``. ``size = "auto"`` is fixed once per study
  (``fixed_for_study``: twice the memory limit, else half the smallest device), so the
  file systems compared meet one size; the per-char, seek and create counts set to
  "auto" are chosen per run by a probe of a few seconds, to time each phase.

Bonnie++ 2.00a's per-character tests do one read(2)/write(2) system call per byte (seen
with strace), so they measure system-call cost, not the device. Bonnie++ 1.0x used stdio
putc()/getc(); numbers from papers that used it are not comparable in absolute terms.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..cgroups import MemoryLimit, memory_limit
from ..commands import run_command, run_command_stamped
from ..errors import CommandFailed, WorkloadFailed
from ..metrics import MetricKind
from ..units import format_bytes, given_text, parse_duration_s, parse_size
from . import (
    ParamError,
    RunContext,
    Workload,
    WorkloadCapabilities,
    WorkloadResult,
    direct_io_caveats,
    quick_memory,
    register_workload,
)
from .bonnie_phases import ARTIFACT as PHASES_ARTIFACT
from .bonnie_phases import CLOCK as PHASE_CLOCK
from .bonnie_phases import phase_spans

CSV_VERSION = "1.98"
CSV_FIELDS = 50
SIZES_FILE = "bonnie-sizes.json"  # the sizes prepare() chose, read by run()
MIB = 1 << 20
TOO_FAST = "+++++"
# Bonnie++ shows +++++ once a phase ends in less than about half a second; auto sizing
# aims every phase at this many seconds, which leaves a wide margin for probe error.
DEFAULT_PHASE_S = 2.0
QUICK_PHASE_S = 1.0
# A +++++ phase took under ~0.5 s; this many times the work would take >= 2 s.
SUGGEST_FACTOR = 4
# The create tests may take at most this many phase_s in all (six phases, probe rates).
FILES_BUDGET_PHASES = 12
DEFAULT_SEEKS = 8192  # Bonnie++'s defaults for seeks, seeker processes and chunk size
DEFAULT_SEEKERS = 5
DEFAULT_CHUNK = 8192


@dataclass(frozen=True)
class Phase:
    """One Bonnie++ test and where its numbers sit in a CSV line (0-based)."""

    key: str  # metric stem
    label: str  # Bonnie++'s own name for it
    rate_field: int
    cpu_field: int
    latency_field: int
    rate_suffix: str  # "bytes_per_s" (CSV holds KiB/s) or "per_s"
    group: str  # "io", "seeks", "char" or "files": what a bigger value of which option fixes

    @property
    def rate_metric(self) -> str:
        return f"{self.key}_{self.rate_suffix}"

    @property
    def cpu_metric(self) -> str:
        return f"{self.key}_cpu_pct"

    @property
    def latency_metric(self) -> str:
        return f"{self.key}_max_latency_ns"


PHASES: tuple[Phase, ...] = (
    Phase("putc", "Sequential Output, Per Chr (putc)", 9, 10, 38, "bytes_per_s", "char"),
    Phase("block_write", "Sequential Output, Block", 11, 12, 39, "bytes_per_s", "io"),
    Phase("rewrite", "Sequential Output, Rewrite", 13, 14, 40, "bytes_per_s", "io"),
    Phase("getc", "Sequential Input, Per Chr (getc)", 15, 16, 41, "bytes_per_s", "char"),
    Phase("block_read", "Sequential Input, Block", 17, 18, 42, "bytes_per_s", "io"),
    Phase("seeks", "Random Seeks", 19, 20, 43, "per_s", "seeks"),
    Phase("seq_create", "Sequential Create, Create", 26, 27, 44, "per_s", "files"),
    Phase("seq_stat", "Sequential Create, Read (stat)", 28, 29, 45, "per_s", "files"),
    Phase("seq_delete", "Sequential Create, Delete", 30, 31, 46, "per_s", "files"),
    Phase("random_create", "Random Create, Create", 32, 33, 47, "per_s", "files"),
    Phase("random_stat", "Random Create, Read (stat)", 34, 35, 48, "per_s", "files"),
    Phase("random_delete", "Random Create, Delete", 36, 37, 49, "per_s", "files"),
)
PHASE_BY_KEY = {p.key: p for p in PHASES}

# Header fields of a 1.98 line, by position, as 2.00a fills them (checked against runs
# with each option set): the chunk sizes (-s x:chunk, -n ...:chunk) are never printed,
# and the directory count of -n lands in field 25 (bon_csv2txt reads it from 24).
_INFO_FIELDS = {
    1: "bonnie_version", 2: "name", 3: "concurrency", 4: "seed", 5: "file_size",
    7: "seeks", 8: "seekers", 21: "files_k", 22: "file_max_size", 23: "file_min_size",
    25: "file_dirs",
}
_LATENCY_RE = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s)$")
_LATENCY_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


# ---------------------------------------------------------------------------- parsing


@dataclass
class ParsedLine:
    """One Bonnie++ CSV line: numbers, phases too fast to time, phases not run."""

    metrics: dict[str, float] = field(default_factory=dict)
    too_fast: list[str] = field(default_factory=list)  # phase keys shown as +++++
    skipped: list[str] = field(default_factory=list)  # phase keys with empty fields
    info: dict[str, str] = field(default_factory=dict)


def parse_latency_ns(text: str) -> int:
    """'6171us' -> 6171000. Bonnie++ picks us, ms or s by magnitude; ns is accepted too."""
    match = _LATENCY_RE.match(text.strip())
    if not match:
        raise WorkloadFailed(f"bonnie++ latency {text!r} is not a number with unit ns, us, ms or s")
    return round(float(match.group(1)) * _LATENCY_NS[match.group(2)])


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise WorkloadFailed(f"bonnie++ CSV field {what} is {text!r}, not a number") from None


def parse_csv_line(line: str) -> ParsedLine:
    """Parse one CSV line of format 1.98. Raises WorkloadFailed on any other shape."""
    fields = line.strip().split(",")
    if fields[0] != CSV_VERSION:
        raise WorkloadFailed(f"bonnie++ CSV format {fields[0]!r}; fslab reads format {CSV_VERSION}")
    if len(fields) != CSV_FIELDS:
        raise WorkloadFailed(f"bonnie++ CSV line has {len(fields)} fields, format {CSV_VERSION} has {CSV_FIELDS}")
    out = ParsedLine(info={name: fields[i] for i, name in _INFO_FIELDS.items() if fields[i]})
    for phase in PHASES:
        rate, cpu, latency = fields[phase.rate_field], fields[phase.cpu_field], fields[phase.latency_field]
        if rate == "":
            out.skipped.append(phase.key)
            continue
        if rate.startswith("+"):
            out.too_fast.append(phase.key)
        else:
            value = _number(rate, phase.rate_metric)
            # IO rates are in KiB/s (Bonnie++ divides by 1024); the others are per second.
            out.metrics[phase.rate_metric] = value * 1024 if phase.rate_suffix == "bytes_per_s" else value
            if cpu and not cpu.startswith("+"):
                out.metrics[phase.cpu_metric] = _number(cpu, phase.cpu_metric)
        # The latency is timed per operation, so it exists even when the rate is +++++.
        if latency:
            out.metrics[phase.latency_metric] = float(parse_latency_ns(latency))
    return out


def parse_csv_output(stdout: str) -> ParsedLine:
    """The one result line of ``bonnie++ -q`` (other lines, if any, are ignored)."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(CSV_VERSION + ",")]
    if not lines:
        raise WorkloadFailed("bonnie++ printed no CSV result line"
                         + (f": {stdout.strip()[-300:]}" if stdout.strip() else ""))
    if len(lines) > 1:
        raise WorkloadFailed(f"bonnie++ printed {len(lines)} result lines; fslab runs one test per run")
    return parse_csv_line(lines[0])


# ---------------------------------------------------------------------------- options


def _mib(key: str, value: Any, *, allow_zero: bool = True) -> int:
    """A size Bonnie++ takes in whole MiB."""
    try:
        n = parse_size(value)
    except ValueError as exc:
        raise ParamError(key, str(exc)) from None
    if n % MIB:
        raise ParamError(key, f"Bonnie++ takes whole MiB (given: {format_bytes(n)})")
    if n == 0 and not allow_zero:
        raise ParamError(key, "must be more than 0")
    return n


def _int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParamError(key, f"must be a whole number >= {minimum} (given: {given_text(value)})")
    return value


def _file_spec(value: Any) -> str:
    """-n num[:max[:min[:dirs[:chunk]]]], num in units of 1024 files; max -1/-2 make links."""
    parts = str(value).split(":")
    if len(parts) > 5:
        raise ParamError("files", "is num:max:min:dirs:chunk at most (Bonnie++'s -n)")
    names = ("num", "max", "min", "dirs", "chunk")
    numbers: list[int] = []
    for name, part in zip(names, parts):
        try:
            number = parse_size(part) if name in ("max", "min", "chunk") and not part.startswith("-") else int(part)
        except ValueError:
            raise ParamError("files", f"{name} = {part!r} is not a number (spec: num:max:min:dirs)") from None
        numbers.append(number)
    if numbers[0] < 0:
        raise ParamError("files", "num (thousands of files, 1024 each) must be >= 0")
    if len(numbers) > 1 and numbers[1] < -2:
        raise ParamError("files", "max must be a size, -1 (hard links) or -2 (soft links)")
    if len(numbers) > 2 and numbers[1] >= 0 and numbers[2] > numbers[1]:
        raise ParamError("files", f"min ({numbers[2]}) is above max ({numbers[1]})")
    if len(numbers) > 3 and numbers[3] < 1:
        raise ParamError("files", "dirs must be >= 1")
    return ":".join(str(n) for n in numbers)


OPTIONS_HELP = {
    "size": ("'auto' (fixed once for the study: twice the memory limit, else half the smallest device) "
             "or a size in MiB; 0 skips the IO tests"),
    "ram": "'auto' (half of size, as Bonnie++ asks) or a size: the memory cgroup limit, passed as -r",
    "chunk_size": "IO chunk, a power of two from 256 B to 1 MiB (Bonnie++ default 8 KiB)",
    "seeks": "'auto' (at least Bonnie++'s 8192, more where the probe says they would take under phase_s) or a number",
    "seekers": "number of seeking processes (default 5)",
    "char_size": "'auto', a size for the per-character tests (-f), or 0 to skip them",
    "direct": "O_DIRECT for the block tests (-D); needs char_size = 0",
    "files": "'auto', 0 (skip), or num:max:min:dirs for the create tests (-n; num in 1024s)",
    "fsync": "fsync after every write (-b)",
    "concurrency": "copies of the test run at once (-c)",
    "seed": "random seed (-z), for repeatable seeks and file names",
    "phase_s": "seconds each phase should take when sizes are 'auto' (default 2)",
}


class BonnieWorkload(Workload):
    name = "bonnie"
    capabilities = WorkloadCapabilities(traceable=True, memory_limited=True, phases=True)
    tools = {"bonnie++": "bonnie++"}
    metrics = {
        "bytes_per_s": MetricKind("B/s", True, "throughput"),
        "per_s": MetricKind("ops/s", True, "operations per second"),
        "cpu_pct": MetricKind("%", False, "CPU used"),
        "max_latency_ns": MetricKind("ns", False, "longest latency of one operation (Bonnie++'s latency)"),
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(OPTIONS_HELP))
        if unknown:
            raise ParamError(unknown[0], "is not a bonnie option; known: " + ", ".join(OPTIONS_HELP))
        for key, value in params.items():
            if isinstance(value, (list, dict)):
                raise ParamError(key, "takes one value; to vary it, put it under [workloads.axes]")
        out: dict[str, Any] = {}
        size = params.get("size", "auto")
        out["size"] = "auto" if size == "auto" else _mib("size", size)
        ram = params.get("ram", "auto")
        out["ram"] = "auto" if ram == "auto" else _mib("ram", ram, allow_zero=False)
        if out["size"] != "auto" and out["ram"] != "auto" and out["size"] and out["size"] < 2 * out["ram"]:
            raise ParamError("size", f"Bonnie++ needs size >= 2 x ram ({format_bytes(2 * out['ram'])}), "
                                     f"so the file cannot sit in the page cache")
        if "chunk_size" in params:
            try:
                chunk = parse_size(params["chunk_size"])
            except ValueError as exc:
                raise ParamError("chunk_size", str(exc)) from None
            if chunk < 256 or chunk > MIB or chunk & (chunk - 1):
                raise ParamError("chunk_size", f"must be a power of two from 256 to 1048576 bytes (given: {chunk})")
            out["chunk_size"] = chunk
        for key, minimum in (("seeks", 1), ("seekers", 1), ("concurrency", 1), ("seed", 0)):
            if key in params and not (key == "seeks" and params[key] == "auto"):
                out[key] = _int(key, params[key], minimum)
        out.setdefault("seeks", "auto")
        for key in ("direct", "fsync"):
            value = params.get(key, 0)
            if value not in (0, 1, True, False):
                raise ParamError(key, f"must be 0 or 1 (given: {given_text(value)})")
            out[key] = int(value)
        char = params.get("char_size", 0 if out["direct"] else "auto")
        out["char_size"] = "auto" if char == "auto" else _mib("char_size", char)
        if out["direct"] and out["char_size"] != 0:
            raise ParamError("char_size", "Bonnie++ runs O_DIRECT (direct = 1) only without the per-character "
                                          "tests: set char_size = 0")
        files = params.get("files", "auto")
        out["files"] = "auto" if files == "auto" else _file_spec(files)
        try:
            phase_s = parse_duration_s(params.get("phase_s", DEFAULT_PHASE_S))
        except ValueError as exc:
            raise ParamError("phase_s", str(exc)) from None
        if phase_s < 1:
            raise ParamError("phase_s", "below 1 s Bonnie++ may still show +++++; give at least 1")
        out["phase_s"] = phase_s
        return out

    def fixed_for_study(self, params: dict[str, Any], *, device_bytes: int | None,
                        memory: int | None) -> dict[str, Any]:
        """``size = "auto"`` becomes one size for every file system of the study: twice the
        memory limit (Bonnie++'s file-to-RAM rule, the limit being the run's RAM), else half
        the smallest device with the limit (-r) half of that. A probe per run would size
        each file system by its own speed and compare them at different sizes. The rule
        is kept in ``size_rule``; the per-char, seek and create counts stay probed per run
        (they aim at phase_s seconds each; each run records them)."""
        if params.get("size") != "auto":
            return params
        out = dict(params)
        limit = params["ram"] if isinstance(params.get("ram"), int) else memory
        if device_bytes is None:
            out["size_rule"] = "probed per run: the device's size is not known before it is made"
            return out
        room = device_bytes * 2 // 3 // (64 * MIB) * 64 * MIB  # the create tests share the device
        if limit is not None:
            size = _round_up(2 * limit, 64 * MIB)
            if size > room:
                raise ParamError("size", f"'auto' is twice the memory limit ({format_bytes(size)}), more than "
                                 f"two thirds of the smallest device ({format_bytes(device_bytes)}): raise the "
                                 "device's size or lower the memory limit")
            out["size"] = size
            out["size_rule"] = f"twice the memory limit ({format_bytes(limit)}), fixed for the study"
            return out
        size = device_bytes // 2 // (64 * MIB) * 64 * MIB
        if size < 128 * MIB:
            raise ParamError("size", f"'auto' is half the smallest device, {format_bytes(size)}: too little for "
                             "Bonnie++ (at least 128 MiB); raise the device's size or give a size")
        out["size"] = size
        if out.get("ram") == "auto":
            out["ram"] = size // 2
        out["size_rule"] = (f"half the smallest device ({format_bytes(device_bytes)}), fixed for the study; "
                            "-r and the memory limit half of it")
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        """Auto sizes aim at 1 s phases; explicit sizes are capped near what times here."""
        out = dict(params)
        out["phase_s"] = min(out.get("phase_s", DEFAULT_PHASE_S), QUICK_PHASE_S)
        if isinstance(out.get("size"), int) and out["size"] > 1 << 30:
            full = out["size"]
            out["size"] = 1 << 30
            if isinstance(out.get("ram"), int):  # -r shrinks with the file: same ratio
                out["ram"] = quick_memory(out["ram"], full, out["size"])
        if isinstance(out.get("char_size"), int):
            out["char_size"] = min(out["char_size"], 2 * MIB)
        return out

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        """The big file's size; None for 'auto' (the probe sizes it, cgroup = size / 2)."""
        size = params.get("size")
        return size if isinstance(size, int) else None

    def caveats(self, params: dict[str, Any], filesystem: Mapping[str, Any]) -> list[str]:
        return direct_io_caveats(params.get("direct") in (1, True), filesystem)  # -D

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["block_write_bytes_per_s", "block_read_bytes_per_s", "rewrite_bytes_per_s",
                "putc_bytes_per_s", "getc_bytes_per_s", "seeks_per_s"]

    def tool_versions(self) -> dict[str, str | None]:
        return {"bonnie++": _bonnie_version()}

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        size = params.get("size")
        if isinstance(size, int):
            # Generous: 20 MB/s for each of four passes over the file, plus the create tests.
            return 4 * size / 20e6 + 3600
        return 3600.0

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        """Probe the device and choose sizes before counters and traces start (the probe
        writes and creates files); ``run`` reads the choice from the artifact directory."""
        choice = _choose_sizes(params, ctx)
        (ctx.artifact_dir / SIZES_FILE).write_text(json.dumps(choice, indent=2) + "\n")
        return True

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        sizes = ctx.artifact_dir / SIZES_FILE
        if not sizes.exists():  # called without prepare (tests, other drivers)
            self.prepare(params, ctx)
        choice = json.loads(sizes.read_text())
        with _memory(choice["ram_bytes"], ctx.memory) as (cg, source):
            argv = bonnie_argv(params, choice, ctx.workdir)
            timeout = ctx.timeout_s or self.default_timeout_s({**params, "size": choice["size_bytes"]})
            try:
                done, stamped = run_command_stamped(argv, timeout=timeout, preexec=cg.enter, cwd=str(ctx.workdir))
            except CommandFailed as exc:
                (ctx.artifact_dir / "bonnie.txt").write_text(exc.stdout + exc.stderr)
                raise
            limit = {**cg.describe(), "source": source}
        csv_lines = [ln for ln in done.stdout.splitlines() if ln.startswith(CSV_VERSION + ",")]
        (ctx.artifact_dir / "bonnie.csv").write_text("".join(ln + "\n" for ln in csv_lines))
        (ctx.artifact_dir / "bonnie.txt").write_text(
            "".join(ln + "\n" for ln in done.stdout.splitlines() if not ln.startswith(CSV_VERSION + ",")))
        (ctx.artifact_dir / "bonnie-progress.txt").write_text(done.stderr)
        parsed = parse_csv_output(done.stdout)
        spans = phase_spans(stamped, choice, int(params.get("concurrency") or 1))
        phases = {"clock": PHASE_CLOCK, "artifact": PHASES_ARTIFACT, "spans": [s.as_dict() for s in spans]}
        (ctx.artifact_dir / PHASES_ARTIFACT).write_text(json.dumps(phases, indent=2) + "\n")
        notes = {PHASE_BY_KEY[k].rate_metric: too_fast_note(PHASE_BY_KEY[k], params, choice)
                 for k in parsed.too_fast}
        notes.update({PHASE_BY_KEY[k].rate_metric: skipped_note(PHASE_BY_KEY[k]) for k in parsed.skipped})
        info: dict[str, Any] = {
            "bonnie_version": parsed.info.get("bonnie_version"),
            "csv_format": CSV_VERSION,
            "argv": argv,
            "csv_header": parsed.info,
            "memory_limit": limit,
            "sizes": choice,
            "too_fast": parsed.too_fast,
            "skipped": parsed.skipped,
            # When each test ran (bonnie_phases), as provenance; the result's phases carry it typed.
            "phases": phases,
        }
        return WorkloadResult(parsed.metrics, done.wall_s, info=info, notes=notes, phases=spans)


@cache
def _bonnie_version() -> str | None:
    """'2.00a': bonnie++ has no --version; its usage text (-h) ends with the version."""
    if shutil.which("bonnie++") is None:
        return None
    done = run_command(["bonnie++", "-h"], timeout=20, check=False)
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


@contextlib.contextmanager
def _memory(ram_bytes: int, given: MemoryLimit | None) -> Iterator[tuple[MemoryLimit, str]]:
    """The study's cgroup if it set ``memory``, else one of our own of ``ram`` bytes."""
    if given is not None:
        yield given, "workload memory"
        return
    with memory_limit(ram_bytes) as cg:
        yield cg, "bonnie ram"


def bonnie_argv(params: dict[str, Any], choice: dict[str, Any], directory: Path) -> list[str]:
    """The command line for one run. Sizes in ``choice`` are bytes, Bonnie++ takes MiB."""
    size = f"{choice['size_bytes'] // MIB}"
    chunk = params.get("chunk_size", DEFAULT_CHUNK)
    seekers = params.get("seekers", DEFAULT_SEEKERS)
    if (chunk, choice["seeks"], seekers) != (DEFAULT_CHUNK, DEFAULT_SEEKS, DEFAULT_SEEKERS):
        size += f":{chunk}:{choice['seeks']}:{seekers}"
    # No -q: its progress messages (stderr) say when each test ran (bonnie_phases); the
    # text table and the CSV line then share stdout (split into bonnie.txt and bonnie.csv).
    # No -x: with it Bonnie++ drops the text table.
    argv = ["bonnie++", "-u", "root", "-m", "fslab", "-d", str(directory),
            "-s", size, "-r", str(choice["ram_bytes"] // MIB), "-n", choice["files"]]
    char = choice["char_size_bytes"]
    # -f alone skips the per-char tests; -fN (attached: the argument is optional) sets their size.
    argv.append("-f" if char == 0 else f"-f{char // MIB}")
    if params.get("direct"):
        argv.append("-D")
    if params.get("fsync"):
        argv.append("-b")
    if params.get("concurrency"):
        argv += ["-c", str(params["concurrency"])]
    if "seed" in params:
        argv += ["-z", str(params["seed"])]
    return argv


# ---------------------------------------------------------------------------- notes


def too_fast_note(phase: Phase, params: dict[str, Any], choice: dict[str, Any]) -> str:
    """'too fast to measure (+++++): try size >= 4GiB' — the option that would time it."""
    if phase.group == "io":
        hint = f"size >= {format_bytes(SUGGEST_FACTOR * choice['size_bytes'])}"
    elif phase.group == "char":
        hint = f"char_size >= {format_bytes(SUGGEST_FACTOR * choice['char_size_bytes'])}"
    elif phase.group == "seeks":
        hint = f"seeks >= {SUGGEST_FACTOR * choice['seeks']}"
    else:
        num = int(choice["files"].split(":")[0])
        rest = choice["files"].split(":")[1:]
        hint = "files = '" + ":".join([str(SUGGEST_FACTOR * max(num, 1)), *rest]) + "'"
    return f"too fast to measure (+++++): try {hint}"


def skipped_note(phase: Phase) -> str:
    why = {"char": "per-char tests off (char_size = 0)", "files": "create tests off (files = 0)"}
    return f"not run ({why.get(phase.group, 'IO tests off (size = 0)')})"


# ---------------------------------------------------------------------------- auto sizing


def _choose_sizes(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Sizes in bytes and the -n spec, probing the device first where any is 'auto'."""
    given_limit = ctx.memory.limit_bytes if ctx.memory else None
    ram = params.get("ram", "auto")
    if given_limit is not None and ram != "auto" and ram != given_limit:
        raise WorkloadFailed(f"bonnie ram = {format_bytes(ram)} differs from the workload's memory = "
                         f"{format_bytes(given_limit)}; give only one (both set the cache size)")
    needs_probe = "auto" in (params.get("size", "auto"), params.get("char_size", "auto"),
                             params.get("files", "auto"), params.get("seeks", "auto"))
    probe = probe_device(ctx.workdir) if needs_probe else None
    target = float(params.get("phase_s", DEFAULT_PHASE_S))
    stat = os.statvfs(ctx.workdir)
    free = stat.f_bavail * stat.f_frsize
    warnings: list[str] = []

    size = params.get("size", "auto")
    if size == "auto":
        assert probe is not None
        size = _round_up(max(probe["write_bytes_per_s"], probe["read_bytes_per_s"]) * target, 64 * MIB)
        size = max(size, 2 * (given_limit or 0), 128 * MIB)
        # The created files share the device with the big file: keep a third of it free.
        room = (free * 2 // 3) // (64 * MIB) * 64 * MIB
        if room < 128 * MIB:
            raise WorkloadFailed(f"only {format_bytes(free)} free on the device: too little for Bonnie++ "
                             "(raise device.size)")
        if size > room:
            warnings.append(f"size {format_bytes(size)} would time every phase but only "
                            f"{format_bytes(room)} fits on the device; some phases may show +++++")
            size = room
    if ram == "auto":
        ram = given_limit if given_limit is not None else max(size // 2 // MIB * MIB, 16 * MIB)
    if size and size < 2 * ram:
        if params.get("size", "auto") == "auto":
            size = 2 * ram
        else:
            raise WorkloadFailed(f"bonnie size {format_bytes(size)} is below twice the memory limit "
                             f"{format_bytes(ram)}: Bonnie++ refuses it, and the page cache would hold the file")

    char = params.get("char_size", "auto")
    if char == "auto":
        assert probe is not None
        char = _round_up(max(probe["char_write_bytes_per_s"], probe["char_read_bytes_per_s"]) * target, MIB)

    files = params.get("files", "auto")
    if files == "auto":
        assert probe is not None
        # Python's own per-call overhead makes the probe slower than Bonnie++'s C loop;
        # a margin on the rates keeps the estimate on the safe (bigger) side. Stat of
        # cached inodes runs several times faster than create or delete, so timing it
        # can take minutes of creating and deleting: do that only within a budget, else
        # time create/delete and let the stat phases show +++++ (with their suggestion).
        rates = {k: 1.5 * probe[f"{k}_per_s"] for k in ("create", "stat", "delete")}
        per_file_s = 2 / probe["create_per_s"] + 2 / probe["stat_per_s"] + 2 / probe["delete_per_s"]
        num = max(1, math.ceil(max(rates.values()) * target / 1024))
        if num * 1024 * per_file_s > FILES_BUDGET_PHASES * target:
            basic = max(1, math.ceil(max(rates["create"], rates["delete"]) * target / 1024))
            warnings.append(f"timing the stat phases needs about {num * 1024} files (about "
                            f"{num * 1024 * per_file_s:.0f} s of create/delete); using {basic * 1024}: "
                            "the stat phases may show +++++")
            num = basic
        inode_room = int(stat.f_favail * 0.8) // 1024 if stat.f_files else num  # btrfs reports 0 inodes
        if num > inode_room:
            warnings.append(f"{num * 1024} files would time every create phase but the file system has "
                            f"room for about {inode_room * 1024}; some may show +++++")
            num = max(1, inode_room)
        files = str(num)
    seeks = params.get("seeks", "auto")
    if seeks == "auto":
        assert probe is not None
        # Bonnie++ seeks from 5 processes and half its reads hit the cache: here it ran
        # about 6x the probe's single-threaded uncached rate, so allow 8x.
        seeks = max(DEFAULT_SEEKS, _round_up(8 * probe["random_8k_reads_per_s"] * target, 1024))
    return {
        "size_bytes": int(size), "ram_bytes": int(ram), "char_size_bytes": int(char), "files": files,
        "seeks": int(seeks),
        "phase_s": target, "auto": [k for k in ("size", "ram", "char_size", "files", "seeks")
                                    if params.get(k, "auto") == "auto"],
        "probe": probe, "warnings": warnings, "free_bytes": free,
    }


def _round_up(value: float, step: int) -> int:
    return max(step, math.ceil(value / step) * step)


PROBE_DIR = ".fslab-probe"


def probe_device(mountpoint: Path, budget_s: float = 0.4) -> dict[str, float]:
    """About two seconds of measurement on the mounted file system: sequential write and
    read and random 8 KiB reads, one-byte write and read system calls (what Bonnie++'s
    per-char tests do), and create/stat/unlink of empty files. Rates per second;
    everything it made is removed again."""
    directory = mountpoint / PROBE_DIR
    directory.mkdir(exist_ok=True)
    try:
        out = _probe_sequential(directory / "seq", budget_s)
        out.update(_probe_chars(directory / "chars", budget_s / 4))
        out.update(_probe_files(directory / "files", budget_s))
        return {k: round(v, 1) for k, v in out.items()}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _probe_sequential(path: Path, budget_s: float, block: int = MIB, cap: int = 1 << 30) -> dict[str, float]:
    """Buffered, like Bonnie++'s block tests: write then fsync; drop the file from the page
    cache (fadvise) so the sequential read and the random 8 KiB reads reach the device."""
    buf = os.urandom(block)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        written = 0
        start = time.monotonic()
        while written < cap and time.monotonic() - start < budget_s:
            written += os.write(fd, buf)
        os.fsync(fd)
        write_rate = written / (time.monotonic() - start)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        done = 0
        start = time.monotonic()
        while done < written and time.monotonic() - start < budget_s:
            chunk = os.pread(fd, block, done)
            if not chunk:
                break
            done += len(chunk)
        read_rate = done / max(time.monotonic() - start, 1e-6)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        rng = random.Random(0)
        pages = max(1, written // 8192)
        seeks = 0
        start = time.monotonic()
        while time.monotonic() - start < budget_s / 2:
            for _ in range(100):
                os.pread(fd, 8192, rng.randrange(pages) * 8192)
            seeks += 100
        seek_rate = seeks / (time.monotonic() - start)
    finally:
        os.close(fd)
    path.unlink()
    return {"write_bytes_per_s": write_rate, "read_bytes_per_s": read_rate, "random_8k_reads_per_s": seek_rate}


def _probe_chars(path: Path, budget_s: float) -> dict[str, float]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        count = 0
        start = time.monotonic()
        while time.monotonic() - start < budget_s:
            for _ in range(1000):
                os.write(fd, b"x")
            count += 1000
        write_rate = count / (time.monotonic() - start)
        os.lseek(fd, 0, os.SEEK_SET)
        reads = 0
        start = time.monotonic()
        while reads < count and time.monotonic() - start < budget_s:
            for _ in range(1000):
                os.read(fd, 1)
            reads += 1000
        read_rate = reads / (time.monotonic() - start)
    finally:
        os.close(fd)
    return {"char_write_bytes_per_s": write_rate, "char_read_bytes_per_s": read_rate}


def _probe_files(directory: Path, budget_s: float, cap: int = 20000) -> dict[str, float]:
    directory.mkdir()
    names: list[str] = []
    start = time.monotonic()
    while len(names) < cap and time.monotonic() - start < budget_s:
        for _ in range(100):
            name = f"{len(names):07d}"
            os.close(os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            names.append(name)
    create_rate = len(names) / (time.monotonic() - start)
    order = names[:]
    random.Random(0).shuffle(order)
    start = time.monotonic()
    for name in order:
        os.stat(directory / name)
    stat_rate = len(order) / max(time.monotonic() - start, 1e-6)
    start = time.monotonic()
    for name in order:
        os.unlink(directory / name)
    delete_rate = len(order) / max(time.monotonic() - start, 1e-6)
    directory.rmdir()
    return {"create_per_s": create_rate, "stat_per_s": stat_rate, "delete_per_s": delete_rate}


register_workload(BonnieWorkload())
