"""When each Bonnie++ test ran, from its progress messages: Bonnie++ (without -q) prints a
test's name to stderr when the test starts ("Writing intelligently...") and "done" when
it ends; stderr is unbuffered, so the moment each piece arrives marks the boundary.
fslab stamps the pieces with CLOCK_MONOTONIC (``commands.run_command_stamped``), the clock
of the block trace's times (tracefs ``trace_clock`` ``mono`` is ktime_get_mono_fast_ns, the
kernel's CLOCK_MONOTONIC; ``x86-tsc`` stamps are mapped onto it), so a request's issue
time tells which test it belongs to.

A test's span is from its name's arrival to the last "done" before the next test's name:
the seek test prints "start 'em..." and one "done..." per seeker process.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from ..units import format_bytes
from .phases import PhaseSpan

ARTIFACT = "bonnie-phases.json"
CLOCK = "CLOCK_MONOTONIC (the block trace's times: its trace_clock 'mono', or 'x86-tsc' mapped onto it)"

# Bonnie++'s progress message for each test (2.00a; 1.0x said "with putc()/getc()").
LABELS: tuple[tuple[str, str], ...] = (
    ("putc", r"Writing (?:a byte at a time|with putc\(\))\.\.\."),
    ("block_write", r"Writing intelligently\.\.\."),
    ("rewrite", r"Rewriting\.\.\."),
    ("getc", r"Reading (?:a byte at a time|with getc\(\))\.\.\."),
    ("block_read", r"Reading intelligently\.\.\."),
    ("seeks", r"start 'em\.\.\."),
    ("seq_create", r"Create files in sequential order\.\.\."),
    ("seq_stat", r"Stat files in sequential order\.\.\."),
    ("seq_delete", r"Delete files in sequential order\.\.\."),
    ("random_create", r"Create files in random order\.\.\."),
    ("random_stat", r"Stat files in random order\.\.\."),
    ("random_delete", r"Delete files in random order\.\.\."),
)
_LABEL_RE = re.compile("|".join(f"(?P<{key}>{pattern})" for key, pattern in LABELS))
_DONE_RE = re.compile(r"done")
CHAR_NOTE = ("Bonnie++ 2.00a's per-char tests make one system call per byte, so they are bound by the CPU "
             "long before the device: the device-bound prediction is an upper bound")


def parse_progress(stamped: list[tuple[int, str]]) -> list[tuple[str, int, int]]:
    """(test key, start ns, end ns) in the order the tests ran, from stderr pieces stamped
    on arrival. A test whose "done" never came (Bonnie++ failed in it) is left out."""
    text = "".join(piece for _, piece in stamped)
    ends: list[int] = []  # offset just past each piece, to find the piece holding a character
    offset = 0
    for _, piece in stamped:
        offset += len(piece)
        ends.append(offset)

    def stamp(pos: int) -> int:  # arrival time of the piece holding character ``pos``
        return stamped[bisect.bisect_right(ends, pos)][0]

    labels: list[tuple[str, int, int]] = []
    for m in _LABEL_RE.finditer(text):
        assert m.lastgroup is not None
        if labels and labels[-1][0] == m.lastgroup:  # several copies (-c) name the test in turn
            continue
        labels.append((m.lastgroup, m.start(), m.end()))
    spans: dict[str, tuple[int, int]] = {}
    order: list[str] = []
    for i, (key, _, end) in enumerate(labels):
        limit = labels[i + 1][1] if i + 1 < len(labels) else len(text)
        dones = [m.start() for m in _DONE_RE.finditer(text, end, limit)]
        if not dones:
            continue
        start_ns, end_ns = stamp(end - 1), stamp(dones[-1] + len("done") - 1)
        if key in spans:  # a test named again later: one span over both
            start_ns, end_ns = min(start_ns, spans[key][0]), max(end_ns, spans[key][1])
        else:
            order.append(key)
        spans[key] = (start_ns, end_ns)
    return [(key, *spans[key]) for key in order]


def phase_spans(stamped: list[tuple[int, str]], choice: dict[str, Any], concurrency: int = 1) -> list[PhaseSpan]:
    """The tests' spans with the work each did, from the sizes the run used (``choice``):
    the block tests and rewrite go over the file (size), the per-char ones over char_size,
    seeks count seeks and each create test its files. ``concurrency`` copies do it each."""
    size, char = int(choice["size_bytes"]), int(choice["char_size_bytes"])
    files = int(str(choice["files"]).split(":")[0]) * 1024
    work: dict[str, tuple[float, str, int, int]] = {  # work, unit, bytes written, bytes read
        "putc": (char, "bytes", char, 0), "getc": (char, "bytes", 0, char),
        "block_write": (size, "bytes", size, 0), "rewrite": (size, "bytes", size, size),
        "block_read": (size, "bytes", 0, size), "seeks": (int(choice["seeks"]), "seeks", 0, 0),
    }
    out = []
    for key, start, end in parse_progress(stamped):
        amount, unit, written, read = work.get(key, (files, "files", 0, 0))
        metric = f"{key}_bytes_per_s" if unit == "bytes" else f"{key}_per_s"  # bonnie.Phase.rate_metric
        out.append(PhaseSpan(key, metric, start, end, amount * concurrency, unit,
                             written * concurrency, read * concurrency,
                             CHAR_NOTE if key in ("putc", "getc") else ""))
    return out


def describe(span: PhaseSpan) -> str:
    """'block_write: 1.00 GiB in 2.31 s' — for logs and provenance."""
    amount = format_bytes(int(span.work)) if span.work_unit == "bytes" else f"{span.work:g} {span.work_unit}"
    return f"{span.key}: {amount} in {(span.end_ns - span.start_ns) / 1e9:.3g} s"
