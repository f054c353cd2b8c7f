"""Trace-driven device models: predict how an I/O stream would fare on an HDD, SSD or RAID.

This is the Python side of the Rust models in ``fslab._core``: it loads model presets
(TOML files in ``fslab/models``, or ``raidN-Mx-PRESET`` built on the fly), applies ``--set``
overrides, reads request lists (CSV, or fslab's trace Parquet), parses synthetic stream
specs, and returns one result dict. Every result is a *prediction* and says so.

Units: parameter names ending ``_us``/``_ms`` are converted to the core's ``_ns``; sizes
(``capacity``, ``*_bytes``) accept ``4GiB``-style strings; request times are nanoseconds,
positions 512-byte sectors, sizes bytes.
"""

from __future__ import annotations

import csv
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core, model_catalog
from .errors import FslabError, SimulationError, SpecError
from .units import given_text, parse_size

RAID_NAME = re.compile(r"^raid(0|5)-(\d+)x-(.+)$")
_TIME_FACTORS = {"_ns": 1, "_us": 1_000, "_ms": 1_000_000}


@dataclass
class Requests:
    """Request columns: issue time (ns), op letter (R, W, D = discard, F = flush), start
    sector (512 B), size (bytes) and force-unit-access flag."""

    time_ns: list[int] = field(default_factory=list)
    op: bytearray = field(default_factory=bytearray)
    sector: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    fua: bytearray = field(default_factory=bytearray)

    def append(self, time_ns: int, op: str, sector: int, nbytes: int, fua: bool = False) -> None:
        self.time_ns.append(int(time_ns))
        self.op.append(ord(op))
        self.sector.append(int(sector))
        self.nbytes.append(int(nbytes))
        self.fua.append(1 if fua else 0)

    def __len__(self) -> int:
        return len(self.time_ns)


# ----------------------------------------------------------------------------- models


def model_names() -> list[str]:
    """Names of the shipped presets (RAID names of any preset are accepted as well)."""
    return model_catalog.model_files()


def _preset(name: str) -> dict[str, Any]:
    path = model_catalog.preset_path(name)
    if path is None:
        raise SpecError(f"unknown model {name!r}; known: {', '.join(model_names())} "
                        "(or raid0-Nx-PRESET / raid5-Nx-PRESET)", field="--model")
    with path.open("rb") as f:
        data = tomllib.load(f)
    return data


# The core's on/off parameters (a whole number in [0, 1] there: crates/fslab-core/src/models/);
# a boolean given for any other parameter is a mistake (ncq_depth = true read as 1).
SWITCHES = frozenset({"write_cache"})
# ... and its named ones (text there), each with the values it takes.
TEXTS = {"kind": 'a model kind: "hdd", "ssd" or "raid"', "member": 'a model\'s name, e.g. "sata-mlc-ssd"',
         "precondition": '"none", "sequential" or "random" (an SSD\'s)'}


def _normalise(key: str, value: Any) -> tuple[str, float | int | str]:
    """One parameter in the core's units: times to ``_ns``, sizes to bytes; a boolean is a
    switch's 1 or 0 (``write_cache = false``), never a time, a size or a count."""
    for suffix, factor in _TIME_FACTORS.items():
        if key.endswith(suffix):
            if isinstance(value, bool):
                raise SpecError(f"is a time: write a number, not {given_text(value)}", field=key)
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise SpecError(f"{value!r} is not a number", field=key) from None
            return key[: -len(suffix)] + "_ns", round(number * factor)
    if isinstance(value, bool):
        if key in SWITCHES:
            return key, int(value)
        if key == "capacity" or key.endswith("_bytes"):
            raise SpecError(f"is a size: write a number of bytes or e.g. '32MiB', not {given_text(value)}", field=key)
        if key in TEXTS:
            raise SpecError(f"takes a name in quotes, not {given_text(value)}: {TEXTS[key]}", field=key)
        raise SpecError(f"takes a number, not {given_text(value)}: true and false are only for the switches "
                        f"({', '.join(sorted(SWITCHES))}); `fslab models NAME` lists a model's parameters", field=key)
    if isinstance(value, str) and (key == "capacity" or key.endswith("_bytes")):
        try:
            return key, parse_size(value)
        except ValueError as exc:
            raise SpecError(str(exc), field=key) from None
    if isinstance(value, (int, float, str)):
        return key, value
    raise SpecError(f"{value!r} is not a number or text", field=key)


def _normalise_dotted(key: str, value: Any) -> tuple[str, float | int | str]:
    """Normalise on the last name part, so member.t_prog_us becomes member.t_prog_ns."""
    prefix, _, leaf = key.rpartition(".")
    nk, nv = _normalise(leaf, value)
    return (f"{prefix}.{nk}" if prefix else nk), nv


def _flatten(name: str, depth: int = 0) -> dict[str, float | int | str]:
    """Parameters of a model name, with RAID members expanded under ``member.``."""
    if depth > 4:
        raise SpecError(f"model {name!r}: members nest too deeply")
    match = RAID_NAME.match(name)
    if match and model_catalog.preset_path(name) is None:
        level, count, member = match.groups()
        raw: dict[str, Any] = {"kind": "raid", "level": int(level), "members": int(count),
                               "chunk_bytes": "512KiB", "member": member}
    else:
        data = _preset(name)
        raw = {"kind": data.get("model", {}).get("kind"), **data.get("params", {})}
    out: dict[str, float | int | str] = {}
    member = raw.pop("member", None)
    if member is not None:
        for k, v in _flatten(str(member), depth + 1).items():
            out[f"member.{k}"] = v
    for k, v in raw.items():
        nk, nv = _normalise_dotted(k, v)
        out[nk] = nv
    return out


def parse_set(items: Iterable[str]) -> dict[str, Any]:
    """``["over_provisioning=0.12", "capacity=4GiB"]`` -> dict; numbers become numbers."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"{item!r}: write NAME=VALUE, e.g. over_provisioning=0.12", field="--set")
        value: Any = text.strip()
        if value in ("true", "false"):  # as a study file writes a switch (write_cache=false)
            out[key.strip()] = value == "true"
            continue
        for conv in (int, float):
            try:
                value = conv(value)
                break
            except ValueError:
                pass
        out[key.strip()] = value
    return out


def model_params(name: str, overrides: Mapping[str, Any] | None = None) -> dict[str, float | int | str]:
    """Resolved parameters of model ``name`` with ``overrides`` applied (core units).
    Raises SpecError for an unknown model or a malformed value."""
    params = _flatten(name)
    for k, v in (overrides or {}).items():
        if k.startswith("member.") and "member.kind" not in params:
            raise SpecError(f"{name!r} has no members", field=k)
        nk, nv = _normalise_dotted(k, v)
        params[nk] = nv
    return params


def model_capacity(params: Mapping[str, Any]) -> int:
    """Logical capacity in bytes a model offers the host, as the model itself computes it.
    Raises SimulationError when the parameters do not make a model."""
    from . import _core

    try:
        return int(_core.model_capacity(dict(params)))
    except ValueError as exc:
        raise SimulationError(str(exc)) from None


# --------------------------------------------------------------------------- requests


_OP_LETTERS = {0: "R", 1: "W", 2: "F", 3: "D"}  # fslab's op codes (trace.formats) -> model ops


def _op_from_text(text: str, where: str) -> tuple[str, bool]:
    """Op letter and FUA flag from ``R``/``read``/``W``/``D``/``F`` or a blktrace rwbs
    string (decoded by fslab's one rwbs decoder)."""
    from .trace.formats import FLAG_BITS, decode_rwbs

    t = text.strip()
    named = {"read": "R", "write": "W", "discard": "D", "trim": "D", "flush": "F"}
    if t.lower() in named:
        return named[t.lower()], False
    op, flags = decode_rwbs(t.upper())
    if op not in _OP_LETTERS:
        raise SpecError(f"unknown op {text!r}; use R, W, D (discard), F (flush) or an rwbs string", field=where)
    return _OP_LETTERS[op], bool(flags & FLAG_BITS["fua"])


_CSV_LIMIT = 2**63 - 1  # times, sectors and sizes are signed 64-bit in the core


def read_csv(path: Path) -> Requests:
    """A request list in CSV with columns time_ns, op, sector, bytes (optional: fua).
    Raises SpecError naming the file and, for a bad row, its line."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return _read_csv_rows(path, csv.DictReader(f))
    except UnicodeDecodeError as exc:
        raise SpecError(f"not a text (UTF-8) CSV file: {exc}", source=str(path)) from None
    except csv.Error as exc:
        raise SpecError(f"not a readable CSV file: {exc}", source=str(path)) from None
    except OSError as exc:
        raise SpecError(f"cannot read it: {exc.strerror or exc}", source=str(path)) from None


def _read_csv_rows(path: Path, reader: csv.DictReader[str]) -> Requests:
    reqs = Requests()
    missing = {"time_ns", "op", "sector", "bytes"} - set(reader.fieldnames or [])
    if missing:
        raise SpecError(f"missing columns {sorted(missing)}; need time_ns, op, sector, bytes",
                        source=str(path))
    for row in reader:
        where = f"line {reader.line_num}"
        if None in row.values() or None in row:
            raise SpecError(f"has {len([v for v in row.values() if v is not None])} fields where the "
                            f"header has {len(reader.fieldnames or [])}", source=str(path), field=where)
        try:
            op, fua = _op_from_text(row["op"], where)
            fua = fua or (row.get("fua") or "").strip().lower() in ("1", "true", "yes")
            numbers = {key: _csv_int(row[key], key) for key in ("time_ns", "sector", "bytes")}
        except ValueError as exc:
            raise SpecError(str(exc), source=str(path), field=where) from None
        except SpecError as exc:
            raise SpecError(str(exc).split(": ", 1)[-1], source=str(path), field=where) from None
        for key, value in numbers.items():
            if not 0 <= value <= _CSV_LIMIT:
                raise SpecError(f"{key} {value} is out of range (0 to {_CSV_LIMIT})",
                                source=str(path), field=where)
        reqs.append(numbers["time_ns"], op, numbers["sector"], numbers["bytes"], fua)
    return reqs


def requests_from_trace(trace: Any, dev: int | None = None) -> Requests:
    """The issue events of one device of an fslab Trace (of an md array's trace, the bios
    queued to the md device), as model requests (ops the models do not know, fslab's
    ``other``, are left out)."""
    import numpy as np

    from .trace.formats import EV_ISSUE, FLAG_BITS, SECTOR_BYTES, array_view

    trace = array_view(trace, EV_ISSUE)  # an md array's trace: the bios queued to the array
    c = trace.columns
    devs = np.unique(c["dev"][c["event"] == EV_ISSUE])
    if dev is None and len(devs) > 1:
        raise SpecError("the trace holds several devices; choose one", field="dev")
    keep = (c["event"] == EV_ISSUE) & np.isin(c["op"], list(_OP_LETTERS))
    if dev is not None:
        keep &= c["dev"] == dev
    reqs = Requests()
    reqs.time_ns = c["time_ns"][keep].astype(np.int64).tolist()
    reqs.op = bytearray(ord(_OP_LETTERS[int(o)]) for o in c["op"][keep])
    reqs.sector = c["sector"][keep].astype(np.int64).tolist()
    reqs.nbytes = (c["nr_sector"][keep].astype(np.int64) * SECTOR_BYTES).tolist()
    reqs.fua = bytearray(((c["flags"][keep] & FLAG_BITS["fua"]) != 0).astype(np.uint8).tobytes())
    return reqs


def read_parquet(path: Path, dev: int | None = None) -> Requests:
    """Requests from a Parquet trace: fslab's own (read by fslab's one trace reader,
    trace.formats.read_parquet) or a foreign one with ``time``/``time_ns``, ``sector``,
    ``bytes`` and ``op`` or ``rwbs`` columns. Times are in nanoseconds."""
    import pyarrow.parquet as pq

    from .trace.formats import METADATA_KEY
    from .trace.formats import read_parquet as read_trace

    schema = pq.read_schema(path)
    if METADATA_KEY in (schema.metadata or {}) or {"time_ns", "event", "op", "bytes"} <= set(schema.names):
        try:
            return requests_from_trace(read_trace(path), dev)
        except SpecError as exc:
            raise SpecError(str(exc).split(": ", 1)[-1], source=str(path), field=exc.field) from None
    return _read_foreign_parquet(path, dev)


def _read_foreign_parquet(path: Path, dev: int | None) -> Requests:
    """A request list from another tool's Parquet: one row per request (issue events
    only where an ``event`` column says so)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    cols = set(table.column_names)
    time_col = "time_ns" if "time_ns" in cols else "time"
    missing = {time_col, "sector", "bytes"} - cols
    if missing or not ({"op", "rwbs"} & cols):
        raise SpecError(f"missing columns {sorted(missing | ({'op'} - cols))}", source=str(path))
    data = table.to_pydict()
    n = table.num_rows
    events = data.get("event", [None] * n)
    devs = data.get("dev", [None] * n)
    if dev is None and len({d for d in devs if d is not None}) > 1:
        raise SpecError("the trace holds several devices; choose one", source=str(path), field="dev")
    ops = data.get("op") or data.get("rwbs")
    flags = data.get("flags", [None] * n)
    reqs = Requests()
    for i in range(n):
        # Only issues stand for requests (insert/queue events would count them twice).
        if events[i] is not None and any(k in str(events[i]) for k in ("complete", "insert", "queue")):
            continue
        if dev is not None and devs[i] != dev:
            continue
        try:
            op, fua = _op_from_text(str(ops[i]), f"row {i}")
        except SpecError:
            continue  # ops the models do not know
        if flags[i] is not None:  # a text flag column: "FUA", or rwbs-like flags
            fua = fua or "fua" in str(flags[i]).lower()
        t = data[time_col][i]
        t = int(t.timestamp() * 1e9) if hasattr(t, "timestamp") else int(t)
        reqs.append(t, op, int(data["sector"][i] or 0), int(data["bytes"][i] or 0), fua)
    return reqs


def read_requests(path: str | Path) -> Requests:
    """A request list from ``.csv`` or ``.parquet``. Raises SpecError."""
    p = Path(path)
    if p.is_dir():
        raise SpecError("is a directory: give a .csv or .parquet request list", source=str(p))
    if not p.is_file():
        raise SpecError("no such file", source=str(p))
    if p.suffix.lower() == ".parquet":
        import pyarrow as pa

        try:
            return read_parquet(p)
        except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
            raise SpecError(f"not a readable Parquet request list ({type(exc).__name__}: "
                            f"{str(exc)[:300]})", source=str(p)) from None
        except FslabError as exc:
            if str(p) in str(exc):
                raise
            raise SpecError(str(exc), source=str(p)) from None
    return read_csv(p)


_SYNTH_KEYS = {"rw", "bs", "count", "span", "offset", "seed", "rwmixread", "rate", "rate_iops",
               "poisson", "fsync", "fsync_every"}


def _request_count(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number of requests; write e.g. count=100000") from None
    if count < 1:
        raise ValueError(f"{count} requests: a stream needs at least 1 request")
    return count


def _csv_int(text: str, column: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{column} {text!r} is not a whole number") from None


def _synthetic_number(key: str, text: str) -> float:
    """A number of the stream; its range is the core's to check (`generate`), but for a
    rate written as 0, which the core cannot tell from no rate at all."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if key != "rwmixread" and value == 0:
        raise ValueError(f"{text} requests/s: a rate must be above 0 (e.g. rate=20000), or left out "
                         "for every request at time 0")
    return value


def parse_synthetic(spec: str, default_span: int) -> dict[str, Any]:
    """``rw=randwrite,bs=4k,count=100000,span=4GiB,seed=1`` -> the core's stream dict.
    Also: offset, rwmixread (% reads), rate (requests/s, open loop), poisson=1, fsync=N."""
    out: dict[str, Any] = {"span": default_span}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _SYNTH_KEYS:
            raise SpecError(f"{part!r}: use KEY=VALUE with KEY in {sorted(_SYNTH_KEYS)}", field="--synthetic")
        try:
            if key == "count":  # a number of requests, not a size: no suffixes, at least one
                out[key] = _request_count(value)
            elif key in ("bs", "span", "offset"):
                out[key] = parse_size(value)
            elif key in ("rate", "rate_iops", "rwmixread"):
                out["rate_iops" if key == "rate" else key] = _synthetic_number(key, value)
            elif key in ("poisson",):
                out[key] = value.lower() in ("1", "true", "yes")
            elif key in ("fsync", "fsync_every"):
                out["fsync_every"] = int(value)
            elif key == "seed":
                out[key] = int(value)
            else:
                out[key] = value
        except ValueError as exc:
            raise SpecError(str(exc), field=f"--synthetic {key}") from None
    if out["span"] > default_span:
        raise SpecError(f"span {out['span']} B exceeds the model's capacity of {default_span} B",
                        field="--synthetic span")
    return out


# ------------------------------------------------------------------------------ runs


def _label(result: dict[str, Any], model: str, params: Mapping[str, Any], qd: int, open_loop: bool,
           source: str) -> dict[str, Any]:
    result.update({
        "prediction": True,
        "model": model,
        "mode": "open-loop" if open_loop else "closed-loop",
        "qd": None if open_loop else qd,
        "source": source,
        "params": dict(params),
        "mb_per_s_unit": "10^6 bytes per second",
    })
    return result


def simulate_requests(
    requests: Requests | Iterable[tuple[int, str, int, int] | tuple[int, str, int, int, bool]],
    model_name: str,
    overrides: Mapping[str, Any] | None = None,
    qd: int = 1,
    open_loop: bool = False,
    per_io: bool = False,
    source: str = "requests",
) -> dict[str, Any]:
    """Replay ``requests`` (named ``source`` in the result, e.g. the trace file's path) on
    model ``model_name`` (closed loop at queue depth ``qd``, or open
    loop at the requests' own times) and return the prediction: ``requests``, ``iops``,
    ``mb_per_s`` (10^6 B/s), ``latency_ns`` {mean, p50, p99, max}, ``write_amplification``,
    ``gc_runs``, ``erases``, ``counters``, ``model_facts`` (what the model assumed and
    derived: the over-provisioning simulated and usable, steady-state write amplification,
    the HDD's cache settings and the share of written bytes its write cache absorbed),
    ``time_by_mechanism_ns`` (where the model's time went: nanoseconds of work per
    mechanism, see ``fslab.mechanisms``), plus ``latencies_ns`` when ``per_io``.
    Raises SpecError for bad names or values, SimulationError when the model rejects input."""
    if not isinstance(requests, Requests):
        cols = Requests()
        for row in requests:
            t, op, sector, nbytes, *rest = row
            letter, fua = _op_from_text(str(op), "requests")
            cols.append(t, letter, sector, nbytes, bool(rest[0]) if rest else fua)
        requests = cols
    if qd < 1:
        raise SpecError("queue depth must be at least 1", field="qd")
    params = model_params(model_name, overrides)
    try:
        result = _core.simulate(params, requests.time_ns, bytes(requests.op), requests.sector,
                                requests.nbytes, bytes(requests.fua), qd, open_loop, per_io)
    except ValueError as exc:
        raise SimulationError(f"model {model_name}: {exc}") from None
    return _label(result, model_name, params, qd, open_loop, source)


def simulate_synthetic(
    spec: str | Mapping[str, Any],
    model_name: str,
    overrides: Mapping[str, Any] | None = None,
    qd: int = 1,
    open_loop: bool = False,
    per_io: bool = False,
) -> dict[str, Any]:
    """Like ``simulate_requests`` for a synthetic stream (a spec string or a parsed dict).
    The stream is generated in the core, so large counts cost no Python time."""
    params = model_params(model_name, overrides)
    synth = parse_synthetic(spec, model_capacity(params)) if isinstance(spec, str) else dict(spec)
    try:
        result = _core.simulate_synthetic(params, synth, qd, open_loop, per_io)
    except ValueError as exc:
        raise SimulationError(f"model {model_name}: {exc}") from None
    source = spec if isinstance(spec, str) else ",".join(f"{k}={v}" for k, v in synth.items())
    return _label(result, model_name, params, qd, open_loop, f"synthetic:{source}")
