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
