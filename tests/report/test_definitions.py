"""The report's 'What was run' section: each workload's whole definition, axes listed
together, and the text of each job file as it ran."""

from __future__ import annotations

from fslab.report.sections.definitions import workload_tables
from fslab.stored import StoredCell


def cell(direct: int, memory: int | None) -> StoredCell:
    return StoredCell(
        id=f"c{direct}", filesystem="ext4", fs_type="ext4", mkfs=[], mount=[], workload="jf", workload_kind="fio",
        params={"job_file": "job.fio", "direct": direct}, axes={"direct": direct}, backend="host",
        memory_bytes=memory, timeout_s=None, primary_metric="iops",
        inputs={"job.fio": "[global]\nbs=4k\n[writer]\nrw=randwrite\n"})


def test_a_workload_lists_its_parameters_axes_memory_and_job_file_text() -> None:
    definition, job_file = workload_tables([cell(0, 256 << 20), cell(1, 256 << 20)])
    rows = dict(tuple(r) for r in definition.rows)
    assert rows == {"kind": "fio", "job_file": "job.fio", "direct": "axis: 0 | 1",
                    "memory limit": "256 MiB (268,435,456 B)", "timeout": "the workload's default"}
    assert job_file.title == "workload jf: job.fio as run"
    assert job_file.rows == [["1", "[global]"], ["2", "bs=4k"], ["3", "[writer]"], ["4", "rw=randwrite"]]


def test_an_entry_with_its_own_device_shows_it() -> None:
    from fslab.report.sections.definitions import filesystem_table

    spec = ('[filesystems.ext4]\n[filesystems.ext4-raid5]\ntype = "ext4"\n'
            'device = { kind = "raid", level = 5, disks = 8, chunk = "512KiB" }\n')
    plain, raid = cell(0, None), {**cell(1, None), "filesystem": "ext4-raid5"}
    table = filesystem_table([plain, raid], spec)  # type: ignore[list-item]
    assert [row[-1] for row in table.rows] == ["the study's [device]", "kind=raid, level=5, disks=8, chunk=512KiB"]


def test_metric_given_twice_tabulates_both_in_the_order_given(tmp_path) -> None:
    """`--metric A --metric B`: a row per case and metric, in every output (it kept only
    the last one before); a name no run has is refused naming it."""
    import json
    import subprocess
    import sys

    from fslab.runner import run_study

    (tmp_path / "fake").mkdir()
    study = tmp_path / "s.toml"
    study.write_text(f'[study]\nname = "two metrics"\nrepetitions = 2\n[device]\nkind = "fake"\n'
                     f'directory = "{tmp_path / "fake"}"\n[filesystems.null]\n[[workloads]]\nkind = "null"\n'
                     'name = "w"\nops = 3\nvalue = 7.0\n')
    results = tmp_path / "results"
    run_study(str(study), results_dir=results)
    fslab = [sys.executable, "-m", "fslab", "report", "-r", str(results)]
    done = subprocess.run([*fslab, "--metric", "null_value", "--metric", "ops_count", "--json", "-"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [(r["metric"], r["estimates"][0]["mean"]) for r in rows] == [("null_value", 7.0), ("ops_count", 3.0)]
    bad = subprocess.run([*fslab, "--metric", "ops_count", "--metric", "nope"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "--metric nope: no stored run of study 1 has it" in bad.stderr
    # The name the table shows (no unit suffix) is taken too.
    short = subprocess.run([*fslab, "--metric", "wall", "--json", "-"], capture_output=True, text=True, timeout=60)
    assert short.returncode == 0, short.stderr
    assert [r["metric"] for r in json.loads(short.stdout)["rows"]] == ["wall_s"]


def test_the_memory_limit_is_the_one_the_runs_ran_under() -> None:
    """Seed 000's Bonnie++ ran in its own 512 MiB cgroup (its ``ram``) while the study set
    no memory: 'What was run' said 'none'. It says what each run's provenance records."""
    from fslab.stored import StoredRun

    def run(provenance: dict) -> StoredRun:
        return {"cell": cell(0, None), "provenance": provenance}  # type: ignore[typeddict-item]

    own = {"tool_info": {"memory_limit": {"limit_bytes": 512 << 20, "source": "bonnie ram", "cgroup": "/x"}}}
    [definition, _] = workload_tables([cell(0, None)], [run(own), run(own)])
    assert dict(tuple(r) for r in definition.rows)["memory limit"] == \
        "512 MiB (536,870,912 B), the workload's own cgroup (bonnie ram)"
    studys = {"memory_limit": {"limit_bytes": 256 << 20, "cgroup": "/y", "cgroup_version": 2}}
    [definition, _] = workload_tables([cell(0, 256 << 20)], [run(studys)])
    assert dict(tuple(r) for r in definition.rows)["memory limit"] == "256 MiB (268,435,456 B)"
    [definition, _] = workload_tables([cell(0, None)], [run({})])
    assert dict(tuple(r) for r in definition.rows)["memory limit"] == "none"


def test_a_device_reads_as_the_study_file_writes_it():
    # the report's device line and the plan's share one text: TOML's booleans, sizes in units
    from fslab.report.provenance_facts import device_text

    text = device_text({"kind": "raid", "level": 0, "chunk": 524288, "members": ["/dev/sdb", "/dev/sdc"],
                        "force": True, "rotational": False, "image_dir": None})
    assert text == ("kind=raid, level=0, chunk=512 KiB (524,288 B), members=[/dev/sdb, /dev/sdc], "
                    "force=true, rotational=false")


def test_a_runs_switches_read_yes_or_no():
    from fslab.report.provenance_facts import run_facts

    run = {"provenance": {"caches_dropped": True, "device": {"rotational": False}},
           "cell": {"backend": "host", "fs_type": "ext4"}}
    facts = run_facts(run, quick=False)  # type: ignore[arg-type]
    assert facts["caches dropped"] == "yes" and facts["device rotational"] == "no"
