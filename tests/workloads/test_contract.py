"""The workload contract answers for its own parameters: each plug-in says its queue depth
(for replaying its trace on a device model) and its caveats (O_DIRECT a file system served
buffered), and hands its phases back typed; no module outside the workload plug-ins reads
those parameter names or the phases out of a result's free-form ``info``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fslab.workloads import WORKLOADS, Workload, WorkloadResult
from fslab.workloads.phases import PhaseSpan

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "fslab"
# Parameter names of the plug-ins that once decided a replay's depth or a caveat outside
# them (fio's direct/iodepth/numjobs, Bonnie++'s direct/concurrency, fs_mark's, sysbench's
# and MobiBench's threads, fio's and dbench's clients), and the phases a result carried
# in ``info`` (``info["phases"]["spans"]``), and fio's ``rw``, which once chose the charts' axis
# outside it (``Workload.chart_axis`` now).
PLUG_IN_NAMES = {"direct", "iodepth", "numjobs", "threads", "concurrency", "clients", "phases", "spans", "rw"}
JOURNALLED = {"mounted_as": "ext4", "mount_options_in_effect": "rw,relatime,data=journal"}
ORDERED = {"mounted_as": "ext4", "mount_options_in_effect": "rw,relatime"}


def _reads_of(names: set[str], tree: ast.AST) -> list[tuple[int, str]]:
    """Where ``tree`` reads one of ``names`` as a key: ``x["name"]``, ``x.get("name")`` (or
    pop/setdefault), ``"name" in x``."""
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault") and node.args
              and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
              and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)):
            key = node.left.value
        if key in names:
            found.append((node.lineno, str(key)))
    return found


def test_no_module_outside_the_plug_ins_reads_their_parameter_names() -> None:
    outside = [p for p in PACKAGE.rglob("*.py") if "workloads" not in p.relative_to(PACKAGE).parts]
    assert len(outside) > 100
    found = [f"{p.relative_to(PACKAGE.parent)}:{line} reads {key!r}"
             for p in outside for line, key in _reads_of(PLUG_IN_NAMES, ast.parse(p.read_text()))]
    assert found == [], ("ask the workload instead (Workload.queue_depth, Workload.caveats, "
                         f"WorkloadResult.phases): {found}")


def test_the_reading_check_finds_each_form() -> None:
    code = 'a = p["iodepth"]\nb = p.get("direct", 0)\nc = "threads" in p\nd = p["bs"]\ne = f(iodepth=1)\n'
    assert _reads_of(PLUG_IN_NAMES, ast.parse(code)) == [(1, "iodepth"), (2, "direct"), (3, "threads")]


@pytest.mark.parametrize("kind, params, depth", [
    ("fio", {"iodepth": 8, "numjobs": 2}, 16),
    ("fio", {"iodepth": 32}, 32),
    ("fio", {"numjobs": 4, "iodepth": 0}, 4),  # 0 counts as fio's default, 1
    ("fio", {}, 1),
    ("mobibench", {"threads": 4}, 4),
    ("sysbench", {"threads": 8}, 8),
    ("fsmark", {"threads": 3}, 3),
    ("bonnie", {"concurrency": 2}, 1),  # as before: Bonnie++'s copies were never counted
    ("dbench", {"clients": 4}, 1),  # as before: dbench's clients were never counted
    ("alloc", {}, 1),
])
def test_each_workload_answers_its_queue_depth(kind: str, params: dict, depth: int) -> None:
    assert WORKLOADS.get(kind).queue_depth(params) == depth


def test_direct_io_served_buffered_is_the_caveat_of_the_workloads_that_ask_for_it() -> None:
    fio, bonnie = WORKLOADS.get("fio"), WORKLOADS.get("bonnie")
    (why,) = fio.caveats({"direct": 1}, JOURNALLED)
    assert "direct=1 ran buffered" in why and "data=journal" in why
    assert bonnie.caveats({"direct": True}, JOURNALLED) == [why]
    assert fio.caveats({"direct": 0}, JOURNALLED) == []
    assert fio.caveats({"direct": 1}, ORDERED) == []
    assert fio.caveats({"direct": 1}, {"mounted_as": "xfs", "mount_options_in_effect": "data=journal"}) == []
    # A workload that asks for no O_DIRECT has no such caveat, whatever its parameters hold.
    assert WORKLOADS.get("null").caveats({"direct": 1}, JOURNALLED) == []
    assert Workload().caveats({}, JOURNALLED) == [] and Workload().queue_depth({"iodepth": 9}) == 1


def test_phases_are_a_typed_field_of_the_result() -> None:
    span = PhaseSpan("block_write", "block_write_bytes_per_s", 10, 20, 1024.0, "bytes", writes_bytes=1024)
    result = WorkloadResult({"block_write_bytes_per_s": 1.0}, 1.0, phases=[span])
    assert result.phases[0].start_ns == 10 and result.phases[0].as_dict()["writes_bytes"] == 1024
    assert WorkloadResult({}, 0.0).phases == []


def test_the_charts_default_axis_is_the_workloads_own() -> None:
    from fslab.cli import _default_chart_axis

    fio_cells = [{"workload_kind": "fio", "axes": {"rw": rw}} for rw in ("read", "randwrite")]
    assert WORKLOADS.get("fio").chart_axis == "rw"
    assert _default_chart_axis(fio_cells) == "rw"  # type: ignore[arg-type]
    # Not varied by the study, or a workload that names no axis: none, the user's --by decides.
    assert _default_chart_axis([{"workload_kind": "fio", "axes": {}}]) is None  # type: ignore[list-item]
    assert _default_chart_axis([{"workload_kind": "bonnie", "axes": {"rw": "x"}}]) is None  # type: ignore[list-item]
