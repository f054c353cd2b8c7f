"""Trace formats: fslab's Parquet file, tracefs event text (trace/trace_pipe), the
kernel ``blk`` tracer's text and blkparse's default text output.

In memory a trace is columns of numpy arrays with small integer codes (``Trace``); on
disk it is Parquet with readable dictionary columns (event, op, comm) and metadata
under the key ``fslab.trace`` (JSON: source, device, lost events, completeness, clock).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FslabError

EVENT_NAMES = ("issue", "complete", "insert", "queue")
EV_ISSUE, EV_COMPLETE, EV_INSERT, EV_QUEUE = range(4)
OP_NAMES = ("read", "write", "flush", "discard", "other")
OP_READ, OP_WRITE, OP_FLUSH, OP_DISCARD, OP_OTHER = range(5)
# Flag bits decoded from rwbs (the same in the Rust core).
FLAG_BITS = {"preflush": 1, "fua": 2, "ahead": 4, "sync": 8, "meta": 16, "secure": 32}
NO_COMM = 0xFFFF
SECTOR_BYTES = 512
METADATA_KEY = b"fslab.trace"
FORMAT_VERSION = 1

COLUMNS: dict[str, type] = {
    "time_ns": np.uint64, "event": np.uint8, "dev": np.uint32, "sector": np.uint64,
    "nr_sector": np.uint32, "op": np.uint8, "flags": np.uint8, "pid": np.int32,
    "comm": np.uint16,
}


@dataclass
class Trace:
    """Events in time order. ``comm`` indexes ``comm_names`` (NO_COMM: none, e.g. on
    completions). ``meta`` holds source, device, lost_events (None = unknown) and
    complete (False when events were lost)."""

    columns: dict[str, np.ndarray]
    comm_names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["time_ns"])

    @property
    def lost_events(self) -> int | None:
        return self.meta.get("lost_events")

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete", True))

    @classmethod
    def from_lists(cls, rows: dict[str, list], comm_names: list[str], meta: dict[str, Any]) -> Trace:
        cols: dict[str, np.ndarray] = {name: np.asarray(rows[name], dtype=dt) for name, dt in COLUMNS.items()}
        order = np.argsort(cols["time_ns"], kind="stable")
        if not np.all(order[:-1] < order[1:]):
            cols = {k: v[order] for k, v in cols.items()}
        return cls(cols, comm_names, meta)

    @classmethod
    def from_core(cls, raw: dict[str, Any], meta: dict[str, Any]) -> Trace:
        """Columns as the native core returns them (bytes), wrapped without copying."""
        cols: dict[str, np.ndarray] = {name: np.frombuffer(raw[name], dtype=dt) for name, dt in COLUMNS.items()}
        return cls(cols, list(raw["comm_names"]), meta)


# An md array's trace (see job.tracing): the bios queued to the md device (block_bio_queue:
# md is bio-based, it has no requests of its own) and the requests of its members
# (block_rq_issue/complete), told apart by the dev column; meta names which is which.
ARRAY_DEV = "array_dev"
MEMBER_DEVS = "member_devs"


def array_view(trace: Trace, as_event: int) -> Trace:
    """The md device's bios of an array trace, each as one ``as_event`` event (what the
    request-based readers take: a complete for counts and sizes, an issue for replay);
    other traces are returned unchanged. No latency can come from it: a bio-based device
    has no issue-to-complete pair."""
    dev = trace.meta.get(ARRAY_DEV)
    if dev is None:
        return trace
    c = trace.columns
    keep = (c["event"] == EV_QUEUE) & (c["dev"] == dev)
    cols = {name: col[keep] for name, col in c.items()}
    cols["event"] = np.full(int(keep.sum()), as_event, dtype=COLUMNS["event"])
    # An empty write bio (rwbs "FWS": a preflush with no data) is what a flush request is
    # below the array: a cache flush, not a write of zero bytes.
    cols["op"] = np.where((cols["nr_sector"] == 0) & (cols["op"] == OP_WRITE), OP_FLUSH, cols["op"]).astype(
        COLUMNS["op"])
    # The view is a plain trace of one device: taking the view of it again (analyze does,
    # and a report hands it views) must leave it as it is, not filter it to nothing.
    meta = {k: v for k, v in trace.meta.items() if k not in (ARRAY_DEV, MEMBER_DEVS)}
    return Trace(cols, trace.comm_names, {**meta, "view": "array (md bios)"})


def members_view(trace: Trace) -> Trace:
    """The member devices' requests of an array trace; other traces are returned unchanged."""
    members = trace.meta.get(MEMBER_DEVS)
    if trace.meta.get(ARRAY_DEV) is None or not members:
        return trace
    c = trace.columns
    keep = np.isin(c["dev"], np.asarray(members, dtype=np.uint32)) & (c["event"] != EV_QUEUE)
    meta = {k: v for k, v in trace.meta.items() if k != ARRAY_DEV}
    return Trace({name: col[keep] for name, col in c.items()}, trace.comm_names,
                 {**meta, "view": "members (requests)"})


@functools.lru_cache(maxsize=256)
def decode_rwbs(rwbs: str) -> tuple[int, int]:
    """(op, flags) from the kernel's rwbs string: [F]op[F][A][S][M] (blk_fill_rwbs), or
    blktrace's "FN" for a pure flush. The one decoder is the Rust core's (the raw-page
    reader uses it too); a trace has a handful of distinct strings, hence the cache."""
    from .. import _core

    op, flags = _core.trace_decode_rwbs(rwbs)
    return int(op), int(flags)


# ---------------------------------------------------------------- Parquet

def write_parquet(trace: Trace, path: Path) -> None:
    """Write ``trace`` as Parquet (columns: time_ns, event, dev, sector, bytes, op, flags,
    pid, comm; dictionary-encoded strings; metadata under ``fslab.trace``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    c = trace.columns
    comm_codes = c["comm"].astype(np.int32)
    comm_mask = comm_codes == NO_COMM
    names = trace.comm_names or [""]
    table = pa.table({
        "time_ns": pa.array(c["time_ns"], pa.uint64()),
        "event": pa.DictionaryArray.from_arrays(pa.array(c["event"], pa.int8()), pa.array(EVENT_NAMES)),
        "dev": pa.array(c["dev"], pa.uint32()),
        "sector": pa.array(c["sector"], pa.uint64()),
        "bytes": pa.array(c["nr_sector"].astype(np.uint64) * SECTOR_BYTES, pa.uint64()),
        "op": pa.DictionaryArray.from_arrays(pa.array(c["op"], pa.int8()), pa.array(OP_NAMES)),
        "flags": pa.array(c["flags"], pa.uint8()),
        "pid": pa.array(c["pid"], pa.int32()),
        "comm": pa.DictionaryArray.from_arrays(
            pa.array(np.where(comm_mask, 0, comm_codes), pa.int32(), mask=comm_mask), pa.array(names)),
    })
    meta = {**trace.meta, "format_version": FORMAT_VERSION,
            "flag_bits": FLAG_BITS, "sector_bytes": SECTOR_BYTES}
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")


def _codes(column: Any, names: tuple[str, ...]) -> np.ndarray:
    """Our integer codes for a dictionary (or plain string) column of any file."""
    import pyarrow as pa

    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if not pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_encode()
    lookup = np.array([names.index(v) if v in names else len(names) - 1
                       for v in arr.dictionary.to_pylist()] or [0], dtype=np.uint8)
    idx = arr.indices.to_numpy(zero_copy_only=False)
    return lookup[idx]


def read_parquet(path: Path) -> Trace:
    """fslab's Parquet trace (or one with its columns). A file that is not one, is cut
    short or has columns of the wrong type is an FslabError naming it."""
    import pyarrow as pa

    try:
        return _read_parquet(path)
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise FslabError(f"{path}: not a readable Parquet trace ({type(exc).__name__}: "
                         f"{str(exc)[:300]})") from None


def _read_parquet(path: Path) -> Trace:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    raw_meta = (table.schema.metadata or {}).get(METADATA_KEY)
    meta = json.loads(raw_meta) if raw_meta else {"source": str(path)}
    if not isinstance(meta, dict):
        raise ValueError(f"its {METADATA_KEY.decode()} metadata is not a JSON object")
    missing = {"time_ns", "event", "dev", "sector", "bytes", "op"} - set(table.column_names)
    if missing:
        raise FslabError(f"{path}: not an fslab trace (missing columns {sorted(missing)})")
    cols: dict[str, np.ndarray] = {
        "time_ns": table["time_ns"].to_numpy().astype(np.uint64, copy=False),
        "event": _codes(table["event"], EVENT_NAMES),
        "dev": table["dev"].to_numpy().astype(np.uint32, copy=False),
        "sector": table["sector"].to_numpy().astype(np.uint64, copy=False),
        "nr_sector": (table["bytes"].to_numpy() // SECTOR_BYTES).astype(np.uint32),
        "op": _codes(table["op"], OP_NAMES),
        "flags": (table["flags"].to_numpy().astype(np.uint8) if "flags" in table.column_names
                  else np.zeros(table.num_rows, np.uint8)),
        "pid": (table["pid"].to_numpy(zero_copy_only=False).astype(np.int32)
                if "pid" in table.column_names else np.full(table.num_rows, -1, np.int32)),
    }
    comm_names: list[str] = []
    comm = np.full(table.num_rows, NO_COMM, np.uint16)
    if "comm" in table.column_names:
        arr = table["comm"].combine_chunks()
        if not pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_encode()
        comm_names = [str(v) for v in arr.dictionary.to_pylist()]
        idx = arr.indices
        valid = idx.is_valid().to_numpy(zero_copy_only=False)
        comm[valid] = idx.to_numpy(zero_copy_only=False)[valid].astype(np.uint16)
    cols["comm"] = comm
    return Trace(cols, comm_names, meta)


# ---------------------------------------------------------------- text formats

# The largest value each field may hold (its column's type; a device number is the
# kernel's 12-bit major and 20-bit minor). A text line beyond them is not a real event.
_LIMITS = {"time": 2**64 - 1, "sector": 2**64 - 1, "sector count": 2**32 - 1, "pid": 2**31 - 1}
_MAJOR_MAX, _MINOR_MAX = 2**12 - 1, 2**20 - 1


class _Builder:
    """Collects parsed text events into column lists; a value that does not fit its
    column is an FslabError naming the source and the line."""

    def __init__(self, meta: dict[str, Any] | None) -> None:
        self.rows: dict[str, list] = {name: [] for name in COLUMNS}
        self.comms: dict[str, int] = {}
        self.source = str((meta or {}).get("source") or "the trace text")

    def check(self, number: int, major: str, minor: str, **values: int) -> int:
        """The device number of a line, after checking every field's range."""
        where = f"{self.source}: line {number}"
        if int(major) > _MAJOR_MAX or int(minor) > _MINOR_MAX:
            raise FslabError(f"{where}: device {major},{minor} is not a device number "
                             f"(major at most {_MAJOR_MAX}, minor at most {_MINOR_MAX})")
        for name, value in values.items():
            if value > _LIMITS[name]:
                raise FslabError(f"{where}: {name} {value} is out of range (at most {_LIMITS[name]})")
        return _dev(major, minor)

    def add(self, t_ns: int, event: int, dev: int, sector: int, nr: int, rwbs: str,
            pid: int, comm: str | None) -> None:
        if comm is not None and comm not in self.comms and len(self.comms) >= NO_COMM:
            comm = None  # more distinct process names than the column can index
        op, flags = decode_rwbs(rwbs)
        r = self.rows
        r["time_ns"].append(t_ns)
        r["event"].append(event)
        r["dev"].append(dev)
        r["sector"].append(sector)
        r["nr_sector"].append(nr)
        r["op"].append(op)
        r["flags"].append(flags)
        r["pid"].append(pid)
        r["comm"].append(NO_COMM if comm is None else self.comms.setdefault(comm, len(self.comms)))

    def trace(self, meta: dict[str, Any]) -> Trace:
        return Trace.from_lists(self.rows, list(self.comms), meta)


def _seconds_to_ns(text: str) -> int:
    whole, _, frac = text.partition(".")
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


def _dev(major: str, minor: str) -> int:
    return (int(major) << 20) | int(minor)


# tracefs event text, as `trace` / `trace_pipe` print it. The ftrace context columns
# (irq flags, optional tgid) vary with options, so only task-pid, [cpu] and time are fixed.
_FTRACE_PREFIX = (r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                  r"(?:\S+\s+)?(?P<ts>\d+\.\d+):\s+")
_TRACEFS_EVENT = re.compile(
    _FTRACE_PREFIX + r"block_rq_(?P<ev>issue|complete|insert):\s+(?P<maj>\d+),(?P<min>\d+)\s+"
    r"(?P<rwbs>[A-Z]*)\s+(?:(?P<bytes>\d+)\s+)?\((?P<cmd>[^)]*)\)\s+(?P<sector>\d+)\s+\+\s+(?P<nr>\d+)"
    r"(?:\s+[a-z]+,\d+,\d+)?\s+\[(?P<tail>[^\]]*)\]"
)
_TRACEFS_EVENT_KIND = {"issue": EV_ISSUE, "complete": EV_COMPLETE, "insert": EV_INSERT}
# block_bio_queue prints no byte count and no command: "maj,min RWBS sector + nr [comm]".
_TRACEFS_BIO = re.compile(
    _FTRACE_PREFIX + r"block_bio_queue:\s+(?P<maj>\d+),(?P<min>\d+)\s+(?P<rwbs>[A-Z]*)\s+"
    r"(?P<sector>\d+)\s+\+\s+(?P<nr>\d+)\s+\[(?P<tail>[^\]]*)\]"
)

# blk tracer / blkparse actions kept: queue, insert, issue (D), complete.
_BLK_ACTIONS = {"Q": EV_QUEUE, "I": EV_INSERT, "D": EV_ISSUE, "C": EV_COMPLETE}
# the kernel's `blk` tracer: ftrace context, then "maj,min  ACT RWBS sector + nr [comm|error]"
_BLK_TRACER = re.compile(
    _FTRACE_PREFIX + r"(?P<maj>\d+),(?P<min>\d+)\s+(?P<act>[A-Z]{1,2})\s+(?P<rwbs>[A-Z]+)\s+"
    r"(?:(?P<sector>\d+)\s+(?:\+\s+(?P<nr>\d+)\s+)?)?\[(?P<tail>[^\]]*)\]"
)
# blkparse default: "maj,min cpu seq time pid ACT RWBS sector + nr [comm|error]". A request
# without data (a flush) has no "+ nr", and its completion keeps the sector: "C FN 0 [0]".
_BLKPARSE = re.compile(
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+(?P<ts>\d+\.\d+)\s+(?P<pid>\d+)\s+"
    r"(?P<act>[A-Z]{1,2})\s+(?P<rwbs>[A-Z]+)\s+(?:(?P<sector>\d+)\s+(?:\+\s+(?P<nr>\d+)\s+)?)?\[(?P<tail>[^\]]*)\]"
)


def parse_tracefs_text(lines: Iterable[str], meta: dict[str, Any] | None = None) -> Trace:
    """block_rq_issue/complete/insert and block_bio_queue lines as tracefs prints them;
    other lines ignored. Times are the trace clock in seconds (microsecond resolution with
    the default clocks)."""
    b = _Builder(meta)
    for number, line in enumerate(lines, 1):
        m = _TRACEFS_EVENT.match(line)
        if m is None:
            m = _TRACEFS_BIO.match(line)
            if m is None:
                continue
            ev = EV_QUEUE
        else:
            ev = _TRACEFS_EVENT_KIND[m["ev"]]
        comm = m["tail"] if ev != EV_COMPLETE else None
        t_ns, sector, nr, pid = _seconds_to_ns(m["ts"]), int(m["sector"]), int(m["nr"]), int(m["pid"])
        dev = b.check(number, m["maj"], m["min"], time=t_ns, sector=sector, pid=pid, **{"sector count": nr})
        b.add(t_ns, ev, dev, sector, nr, m["rwbs"], pid, comm)
    return b.trace({"format": "tracefs-text", **(meta or {})})


def _parse_blk_like(lines: Iterable[str], pattern: re.Pattern[str], fmt: str,
                    meta: dict[str, Any] | None) -> Trace:
    b = _Builder(meta)
    for number, line in enumerate(lines, 1):
        m = pattern.match(line)
        if m is None or m["act"] not in _BLK_ACTIONS:
            continue
        ev = _BLK_ACTIONS[m["act"]]
        if ev == EV_COMPLETE:
            comm = None  # the bracket holds the error code
        else:
            comm = m["tail"]
        t_ns, sector, nr, pid = (_seconds_to_ns(m["ts"]), int(m["sector"] or 0), int(m["nr"] or 0),
                                 int(m["pid"]))
        dev = b.check(number, m["maj"], m["min"], time=t_ns, sector=sector, pid=pid, **{"sector count": nr})
        b.add(t_ns, ev, dev, sector, nr, m["rwbs"], pid, comm)
    return b.trace({"format": fmt, **(meta or {})})


def parse_blk_tracer_text(lines: Iterable[str], meta: dict[str, Any] | None = None) -> Trace:
    """The kernel ``blk`` tracer's text (``echo blk > current_tracer``; trace/trace_pipe)."""
    return _parse_blk_like(lines, _BLK_TRACER, "blk-tracer-text", meta)


def parse_blkparse_text(lines: Iterable[str], meta: dict[str, Any] | None = None) -> Trace:
    """blkparse's default output. Its time column is seconds since the trace started."""
    return _parse_blk_like(lines, _BLKPARSE, "blkparse-text", meta)


def detect_format(path: Path) -> str:
    """'parquet', 'tracefs-text', 'blk-tracer-text' or 'blkparse-text' (from content)."""
    with open(path, "rb") as f:
        head = f.read(4)
        if head == b"PAR1":
            return "parquet"
        f.seek(0)
        sample = f.read(256 << 10).decode("utf-8", "replace").splitlines()
    counts = {"tracefs-text": 0, "blk-tracer-text": 0, "blkparse-text": 0}
    for line in sample:
        if _TRACEFS_EVENT.match(line):
            counts["tracefs-text"] += 1
        elif _BLKPARSE.match(line):
            counts["blkparse-text"] += 1
        elif _BLK_TRACER.match(line):
            counts["blk-tracer-text"] += 1
    best = max(counts, key=lambda k: counts[k])
    if counts[best] == 0:
        raise FslabError(f"{path}: not a trace fslab can read (expected Parquet, tracefs "
                         "block_rq_* text, blk tracer text or blkparse output)")
    return best


_TEXT_PARSERS = {
    "tracefs-text": parse_tracefs_text,
    "blk-tracer-text": parse_blk_tracer_text,
    "blkparse-text": parse_blkparse_text,
}


def load_trace(path: Path, fmt: str = "auto") -> Trace:
    """Read a trace in any supported format (detected from its content by default)."""
    path = Path(path)
    if not path.is_file():
        raise FslabError(f"trace file {path} not found")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "parquet":
        return read_parquet(path)
    if fmt not in _TEXT_PARSERS:
        raise FslabError(f"unknown trace format {fmt!r}; known: parquet, {', '.join(_TEXT_PARSERS)}")
    with open(path, encoding="utf-8", errors="replace") as f:
        # Text from another machine says nothing about lost events: unknown, not zero.
        return _TEXT_PARSERS[fmt](f, {"source": str(path), "lost_events": None, "complete": True})
