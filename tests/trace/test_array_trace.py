"""An md array's trace, on real loop devices and real tracepoints: the array's bios come
from block_bio_queue filtered to its device, its members' requests from block_rq_* filtered
to the members, kept apart by the dev column; the run's trace_* metrics are the array's,
trace_members_* the members'. (md itself runs in the guest: tests/guest and seed-004.)
Two loop devices stand in for an array and one member, so what each filter catches is
known exactly: 10 direct 64 KiB writes to the one, 5 direct 4 KiB writes to the other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from fslab.analysis.traces import analyze
from fslab.datarecords import replace
from fslab.report.sections.trace_tables import trace_table
from fslab.simulate import requests_from_trace
from fslab.trace.formats import (
    ARRAY_DEV,
    EV_COMPLETE,
    EV_ISSUE,
    EV_QUEUE,
    MEMBER_DEVS,
    OP_FLUSH,
    OP_WRITE,
    Trace,
    array_view,
    members_view,
    parse_tracefs_text,
    read_parquet,
)


@pytest.fixture
def tracing(device_support: None) -> Path:
    from fslab.errors import MissingCapability
    from fslab.trace.capture import tracefs_root

    try:
        root = tracefs_root()
    except MissingCapability as exc:
        pytest.skip(str(exc))
    if not (root / "events" / "block" / "block_bio_queue").is_dir():
        pytest.skip("no block tracepoints")
    return root


def _direct_writes(path: str, bs: str, count: int) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", f"bs={bs}", f"count={count}", "oflag=direct"],
                   check=True, capture_output=True)


@pytest.mark.device
@pytest.mark.parametrize("method", ["raw", "text"])
def test_array_bios_and_member_requests_are_traced_apart(tracing: Path, loop_device, tmp_path: Path,
                                                         method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from fslab.job import tracing as hook
    from fslab.trace import capture

    if method == "text":  # the fallback reader must decode block_bio_queue too
        monkeypatch.setattr(capture.TraceCapture, "_choose", lambda self: "text")
    with loop_device("64MiB") as array, loop_device("64MiB") as member:
        handle = replace(array, members=(member,))
        with hook.traced(True, handle, tmp_path) as rt:
            _direct_writes(array.path, "64k", 10)
            _direct_writes(member.path, "4k", 5)
        metrics = {m.name: m.value for m in rt.metrics({})}
        stored = read_parquet(tmp_path / hook.ARTIFACT_NAME)
    c = stored.columns
    queued, requests = c["event"] == EV_QUEUE, np.isin(c["event"], [EV_ISSUE, EV_COMPLETE])
    assert set(c["dev"][queued].tolist()) == {array.dev_t}  # bios only on the array
    assert set(c["dev"][requests].tolist()) == {member.dev_t}  # requests only on the members
    assert stored.meta[ARRAY_DEV] == array.dev_t and stored.meta[MEMBER_DEVS] == [member.dev_t]
    assert int(queued.sum()) == 10
    assert metrics["trace_write_requests_count"] == 10
    assert metrics["trace_write_size_median_bytes"] == 65536
    assert "trace_write_latency_mean_ns" not in metrics  # a bio has no completion to pair
    assert metrics["trace_members_write_requests_count"] == 5
    assert metrics["trace_members_write_size_median_bytes"] == 4096
    assert metrics["trace_members_write_latency_mean_ns"] > 0
    assert rt.provenance()["array"]["md_dev"] == array.dev_t
    assert rt.provenance()["events"] == len(stored) == 10 + 2 * 5  # bios, and issue + complete
    # a replay takes the array's bios: the requests a RAID model maps onto its members
    replay = requests_from_trace(stored)
    assert len(replay) == 10 and set(replay.nbytes) == {65536}
    # the report's trace table shows both, and says which rows are which
    run = {"status": "ok", "metrics": {m.name: {"value": m.value, "note": m.note} for m in rt.metrics({})},
           "provenance": {"trace": rt.provenance()}}
    rows = _table_rows(trace_table("w", {"ext4-raid5 (guest 6.1)": [run]}))
    assert rows["write"][:2] == ["10.0", "64.0"] and rows["write (members)"][:2] == ["5.00", "4.00"]


def _table_rows(table) -> dict[str, list[str]]:
    """op -> [requests, size min [KiB]] of a trace table; its note must say where the
    array's rows come from."""
    assert "block_bio_queue" in table.note and "(members)" in table.note
    columns = {name: [row[i] for row in table.rows] for i, name in enumerate(table.columns)}
    return {op: [columns["requests"][i].split()[0], columns["size min [KiB]"][i].split()[0]]
            for i, op in enumerate(columns["op"])}


def _trace(rows: list[tuple[int, int, int, int, int]], meta: dict) -> Trace:
    """rows of (time_ns, event, dev, sector, nr_sector), all writes (an empty one is a
    preflush bio, as rwbs "FWS" decodes)."""
    cols = {"time_ns": [r[0] for r in rows], "event": [r[1] for r in rows], "dev": [r[2] for r in rows],
            "sector": [r[3] for r in rows], "nr_sector": [r[4] for r in rows], "op": [1] * len(rows),
            "flags": [0] * len(rows), "pid": [1] * len(rows), "comm": [0] * len(rows)}
    return Trace.from_lists(cols, ["t"], meta)


def test_views_of_an_array_trace() -> None:
    md, m1, m2 = 9 << 20, (8 << 20) | 1, (8 << 20) | 2
    t = _trace([(1, EV_QUEUE, md, 0, 1024), (2, EV_QUEUE, m1, 0, 8), (3, EV_ISSUE, m1, 0, 8),
                (4, EV_ISSUE, m2, 8, 8), (5, EV_COMPLETE, m1, 0, 8), (6, EV_COMPLETE, m2, 8, 8)],
               {ARRAY_DEV: md, MEMBER_DEVS: [m1, m2]})
    a = array_view(t, EV_COMPLETE)
    assert a.columns["event"].tolist() == [EV_COMPLETE] and a.columns["nr_sector"].tolist() == [1024]
    flushed = _trace([(1, EV_QUEUE, md, 0, 1024), (2, EV_QUEUE, md, 0, 0)], {ARRAY_DEV: md, MEMBER_DEVS: [m1]})
    assert array_view(flushed, EV_ISSUE).columns["op"].tolist() == [OP_WRITE, OP_FLUSH]
    replay = requests_from_trace(flushed)  # a model takes the empty bio as a flush, not a 0-byte write
    assert bytes(replay.op) == b"WF" and replay.nbytes == [1024 * 512, 0]
    m = members_view(t)
    assert m.columns["time_ns"].tolist() == [3, 4, 5, 6] and ARRAY_DEV not in m.meta
    result = analyze(t)
    assert result["requests"]["write"] == 1 and result["size_bytes"]["write"]["median"] == 1024 * 512
    assert analyze(m)["requests"]["write"] == 2
    plain = _trace([(1, EV_ISSUE, m1, 0, 8)], {})
    assert array_view(plain, EV_COMPLETE) is plain and members_view(plain) is plain


def test_bio_queue_text_lines_are_decoded() -> None:
    lines = ["              dd-4242    [001] .....  1234.500000: block_bio_queue: 9,0 WS 2048 + 128 [dd]",
             "              dd-4242    [001] .....  1234.500010: block_rq_issue: 8,16 WS 65536 () 2048 + 128 [dd]"]
    t = parse_tracefs_text(lines)
    assert t.columns["event"].tolist() == [EV_QUEUE, EV_ISSUE]
    assert t.columns["dev"].tolist() == [9 << 20, (8 << 20) | 16]
    assert t.columns["sector"].tolist() == [2048, 2048] and t.columns["nr_sector"].tolist() == [128, 128]
    assert t.comm_names[t.columns["comm"][0]] == "dd"


def test_streams_of_an_array_trace_and_their_views() -> None:
    """An array's trace holds two streams, the md device's bios first; the view of it is
    what analyze counts (so a figure drawn from the view and a table from analyze agree),
    and taking a view of a view leaves it as it is."""
    from fslab.analysis.traces import DEVICE, MD_DEVICE, MEMBERS, data_requests, stream_view, streams

    md, m1, m2 = 9 << 20, (8 << 20) | 1, (8 << 20) | 2
    t = _trace([(1, EV_QUEUE, md, 0, 64), (2, EV_QUEUE, md, 64, 64), (3, EV_QUEUE, md, 128, 0),
                (4, EV_ISSUE, m1, 0, 32), (5, EV_ISSUE, m2, 0, 32), (6, EV_ISSUE, m1, 32, 32),
                (7, EV_COMPLETE, m1, 0, 32), (8, EV_COMPLETE, m2, 0, 32), (9, EV_COMPLETE, m1, 32, 32)],
               {ARRAY_DEV: md, MEMBER_DEVS: [m1, m2]})
    assert streams(t) == (MD_DEVICE, MEMBERS)
    bios = stream_view(t, MD_DEVICE)
    assert int(data_requests(bios).sum()) == analyze(t)["requests"]["write"] == 2  # the empty bio is a flush
    assert analyze(bios)["requests"] == analyze(t)["requests"]
    assert array_view(bios, EV_COMPLETE).columns["time_ns"].tolist() == [1, 2, 3]  # not filtered to nothing
    members = stream_view(t, MEMBERS)
    assert int(data_requests(members).sum()) == analyze(members)["requests"]["write"] == 3
    assert "md device" in MD_DEVICE.text and "member disks" in MEMBERS.text
    plain = _trace([(1, EV_ISSUE, m1, 0, 8), (2, EV_COMPLETE, m1, 0, 8)], {})
    assert streams(plain) == (DEVICE,) and stream_view(plain, DEVICE) is plain
    with pytest.raises(ValueError, match="no stream 'md'"):
        stream_view(plain, MD_DEVICE)
