"""Matrix expansion and ordering."""

import tomllib

import pytest

from fslab.backends import choose_backend
from fslab.errors import SpecError
from fslab.plan import QUICK_REPETITIONS, expand_axes, make_plan
from fslab.study import load_spec, parse_spec

STUDY = """
[study]
name = "t"
repetitions = 3
seed = 42
[filesystems.ext4]
[filesystems.xfs]
[[workloads]]
kind = "fio"
name = "w"
bs = "4k"
size = "1G"
runtime = 30
[workloads.axes]
rw = ["read", "write", "randread"]
ioengine = ["psync", "libaio"]
"""


def plan_of(text: str, **kw):
    return make_plan(parse_spec(tomllib.loads(text), "t.toml"), backends=choose_backend, **kw)


def test_axes_are_crossed():
    plan = plan_of(STUDY)
    assert len(plan.cells) == 2 * 3 * 2
    assert len(plan.runs) == 12 * 3
    combos = {(c.filesystem, c.params["rw"], c.params["ioengine"]) for c in plan.cells}
    assert len(combos) == 12


def test_zipped_axes_vary_together():
    spec = parse_spec(tomllib.loads(STUDY.replace(
        'ioengine = ["psync", "libaio"]', 'ioengine = ["psync", "libaio", "sync"]'
    ).replace('runtime = 30', 'runtime = 30\nzip = [["rw", "ioengine"]]')), "t.toml")
    combos = expand_axes(spec.workloads[0])
    assert combos == [{"rw": "read", "ioengine": "psync"}, {"rw": "write", "ioengine": "libaio"},
                      {"rw": "randread", "ioengine": "sync"}]


def test_cell_ids_stable_and_distinct():
    a, b = plan_of(STUDY), plan_of(STUDY)
    assert [c.id for c in a.cells] == [c.id for c in b.cells]
    assert len({c.id for c in a.cells}) == len(a.cells)


def test_shuffle_is_reproducible_from_seed():
    a, b = plan_of(STUDY), plan_of(STUDY)
    assert [r.key for r in a.runs] == [r.key for r in b.runs]
    c = plan_of(STUDY.replace("seed = 42", "seed = 43"))
    assert [r.key for r in a.runs] != [r.key for r in c.runs]
    # every pass holds each cell exactly once, so repetitions stay interleaved
    per_pass = len(a.cells)
    for i in range(a.repetitions):
        chunk = a.runs[i * per_pass:(i + 1) * per_pass]
        assert {r.cell.id for r in chunk} == {c.id for c in a.cells}
        assert {r.repetition for r in chunk} == {i}


def test_in_order():
    plan = plan_of(STUDY.replace("seed = 42", 'order = "in-order"'))
    assert [r.cell.id for r in plan.runs[: len(plan.cells)]] == [c.id for c in plan.cells]


def test_fresh_repetition_groups_a_filesystem_per_job():
    plan = plan_of(STUDY.replace("seed = 42", 'fresh = "repetition"'))
    assert len(plan.jobs) == 2 * 3  # one file system instance per fs per repetition
    for job in plan.jobs:
        assert len({r.cell.filesystem for r in job.runs}) == 1
        assert len({r.repetition for r in job.runs}) == 1
        assert len(job.runs) == 6


def test_quick_scales_down_and_keeps_two_repetitions():
    plan = plan_of(STUDY, quick=True)
    assert plan.quick and plan.repetitions == QUICK_REPETITIONS == 2
    cell = plan.cells[0]
    assert cell.params["size"] < 1 << 30 and cell.params["runtime"] <= 3


def test_guest_only_filesystem_runs_in_a_guest_or_is_skipped_with_a_reason(monkeypatch):
    """auto: jfs (which this host kernel lacks) is planned on the guest backend where it is
    available, and skipped with the reason where it is not."""
    from fslab.backends import BACKENDS

    plan = plan_of(STUDY + "[filesystems.jfs]\n")
    backends = {c.filesystem: c.backend for c in plan.cells}
    if BACKENDS.get("guest").unavailable() is None:
        assert backends == {"ext4": "host", "xfs": "host", "jfs": "guest"} and plan.skipped == ()
    monkeypatch.setattr(BACKENDS.get("guest"), "unavailable", lambda: "qemu-system-x86_64 is not installed")
    plan = plan_of(STUDY + "[filesystems.jfs]\n")
    assert {c.filesystem for c in plan.cells} == {"ext4", "xfs"}
    (skip,) = plan.skipped
    assert skip.filesystem == "jfs" and "qemu-system-x86_64 is not installed" in skip.reason


def test_quickstart_preset_shape():
    spec, _, _ = load_spec("quickstart")
    plan = make_plan(spec, backends=choose_backend)
    assert {c.filesystem for c in plan.cells} == {"ext4", "xfs", "btrfs"}
    assert len(plan.cells) == 12 and plan.repetitions == 3


BOOLEAN_AXIS = """
[study]
name = "b"
repetitions = "auto"
contrast = ["{contrast}"]
[device]
kind = "fake"
[filesystems.plain]
type = "null"
[[workloads]]
kind = "null"
name = "w"
[workloads.axes]
fail = [true, false]
"""


def test_a_boolean_axis_reads_as_the_study_file_writes_it():
    # labels say fail=true, not Python's fail=True; a contrast names the values so, and
    # Python's spelling (what labels showed before) still pairs the same cells
    plan = plan_of(BOOLEAN_AXIS.format(contrast="fail=true/false"))
    assert sorted(c.label for c in plan.cells) == ["w [fail=false]", "w [fail=true]"]
    assert plan_of(BOOLEAN_AXIS.format(contrast="fail=True/False")).cells == plan.cells
    with pytest.raises(SpecError, match=r"\(fail takes false, true\)"):
        plan_of(BOOLEAN_AXIS.format(contrast="fail=1/0"))


def test_a_fio_switch_goes_to_fio_as_1_or_0():
    plan = plan_of(STUDY.replace("runtime = 30", "runtime = 30\noverwrite = true\nnorandommap = false"))
    assert {(c.params["overwrite"], c.params["norandommap"]) for c in plan.cells} == {(1, 0)}


def test_values_a_workload_reads_alike_are_refused_naming_both():
    # fio reads direct = 1 and direct = true alike: one run twice, under one cell id
    with pytest.raises(SpecError, match=r"direct = 1 and direct = true are the same run to the fio workload") as err:
        plan_of(STUDY.replace('ioengine = ["psync", "libaio"]', "direct = [1, true]"))
    assert err.value.field == "workloads[0].axes"


def test_quick_keeps_cells_apart_that_it_scales_alike():
    # --quick caps runtime = [5, 10] at the same second: still two cells, two ids
    plan = plan_of(STUDY.replace("runtime = 30\n", "").replace('ioengine = ["psync", "libaio"]',
                                                               "runtime = [5, 10]"), quick=True)
    runtimes = {(c.filesystem, c.params["rw"]): set() for c in plan.cells}
    assert len({c.id for c in plan.cells}) == len(plan.cells) == 2 * 3 * 2
    for c in plan.cells:
        runtimes[(c.filesystem, c.params["rw"])].add(c.params["runtime"])
    assert all(len(values) == 1 for values in runtimes.values())  # the same quick runtime for both


def test_a_quick_cell_it_did_not_merge_keeps_the_id_earlier_builds_gave_it():
    # only cells --quick scaled alike get what it scaled in their ids: any other quick cell
    # keeps its id, so a --quick study stored by an earlier build resumes as itself (pinned:
    # the ids 7ed2351 gave these cells)
    ids = {(c.filesystem, c.params["rw"], c.params["ioengine"]): c.id for c in plan_of(STUDY, quick=True).cells}
    assert ids[("ext4", "randread", "libaio")] == "9fc240d1d918"
    assert ids[("ext4", "randread", "psync")] == "d962cec65ecb"
    assert ids[("ext4", "read", "libaio")] == "cb399c03abbc"


def test_the_device_lines_follow_the_study_file_not_the_shuffled_jobs():
    from fslab.cli_plan_view import device_lines

    text = ('[study]\nname = "d"\n[filesystems.a]\ntype = "ext4"\n[filesystems.b]\ntype = "xfs"\n'
            '[filesystems.b.device]\nsize = "2GiB"\n[filesystems.c]\ntype = "ext4"\n[filesystems.c.device]\n'
            'size = "3GiB"\n[[workloads]]\nkind = "fio"\nname = "w"\nrw = "read"\nsize = "16M"\n')
    spec = parse_spec(tomllib.loads(text), "t.toml")
    seen = {tuple(device_lines(spec, plan_of(text, seed=seed))) for seed in range(6)}
    assert len(seen) == 1
    [lines] = seen
    assert [line.rsplit("(", 1)[1] for line in lines] == ["a)", "b)", "c)"]
