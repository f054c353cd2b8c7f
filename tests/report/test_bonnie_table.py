"""The Table IV report section, from stored-run dictionaries shaped like Store.runs()/cells()."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from fslab.report.sections import StudyData, build_sections
from fslab.report.sections.bonnie_table import TABLE_IV_ROWS, build_table_iv, pairwise, table_iv
from fslab.report.terminal import section_renderable

MIB = 1 << 20
NOTE = "too fast to measure (+++++): try size >= 8 GiB"


def cell(fs: str, kind: str = "bonnie") -> dict[str, Any]:
    return {"id": f"{fs}-{kind}", "filesystem": fs, "workload": kind, "workload_kind": kind,
            "axes": {}, "params": {}, "primary_metric": "block_write_bytes_per_s"}


def run(fs: str, values: dict[str, float | None], kind: str = "bonnie") -> dict[str, Any]:
    metrics = {name: {"value": v, "unit": "B/s", "note": NOTE if v is None else None,
                      "higher_is_better": True}
               for name, v in values.items()}
    return {"cell": cell(fs, kind), "status": "ok", "metrics": metrics,
            "provenance": {"tool_info": {"sizes": {"size_bytes": 2048 * MIB},
                                         "memory_limit": {"limit_bytes": 1024 * MIB}}}}


def study() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    runs = []
    # block write: xfs clearly ahead of ext4 (~10%); ext4 and btrfs indistinguishable.
    samples = {
        "ext4": [500, 502, 498, 501, 499],
        "xfs": [550, 552, 548, 551, 549],
        "btrfs": [497, 505, 495, 503, 500],
    }
    for fs, vals in samples.items():
        for i, v in enumerate(vals):
            runs.append(run(fs, {
                "block_write_bytes_per_s": v * MIB,
                "putc_bytes_per_s": (1.6 + 0.01 * i) * MIB,
                "block_read_bytes_per_s": None if fs == "btrfs" else (2000 + i) * MIB,
            }))
    runs.append({"cell": cell("ext4"), "status": "failed", "metrics": {}, "provenance": {}})
    runs.append(run("ext4", {"bw_bytes_per_s": 1.0}, kind="fio"))  # not Bonnie++: left out
    cells = [cell("ext4"), cell("xfs"), cell("btrfs"), cell("ext4", "fio")]
    return runs, cells


def test_rows_columns_and_too_fast_cells() -> None:
    runs, cells = study()
    [(label, filesystems, rows)] = build_table_iv(runs, cells)
    assert label == "bonnie" and filesystems == ["ext4", "xfs", "btrfs"]
    assert [r[0] for r in rows] == [r[0] for r in TABLE_IV_ROWS]
    assert rows[0][1] == "per-char write (putc)" and rows[3][1] == "per-char read (getc)"
    block_write = rows[1][2]
    assert block_write.bests == {"host": "xfs"} and block_write.summaries["ext4"].n == 5
    assert block_write.failed == {"ext4": 1}
    block_read = rows[4][2]
    assert "btrfs" not in block_read.summaries  # +++++ is never averaged (as zero or at all)
    assert block_read.no_number["btrfs"] == [NOTE] * 5


def test_pairwise_significance_with_holm() -> None:
    runs, cells = study()
    [(_, _, rows)] = build_table_iv(runs, cells)
    verdicts = {(v.a, v.b): v for v in pairwise(rows[1][2])}
    assert verdicts[("ext4", "xfs")].significant and verdicts[("ext4", "xfs")].higher == "xfs"
    assert verdicts[("xfs", "btrfs")].significant
    assert not verdicts[("ext4", "btrfs")].significant
    assert all(0 <= v.p_adjusted <= 1 for v in verdicts.values())
    # Only two file systems have block-read numbers: one pair.
    assert len(pairwise(rows[4][2])) == 1


def test_rendered_text_says_units_n_and_too_fast() -> None:
    runs, cells = study()
    console = Console(width=250, record=True)
    for table in table_iv(runs, cells):
        console.print(section_renderable(table))
    text = " ".join(console.export_text().split())
    assert "Random Write" in text and "per-char write (putc)" in text
    assert "ext4 (MiB/s)" in text and "(n=5)" in text
    assert "5x too fast to measure (+++++)" in text
    assert "xfs > ext4" in text and "ext4 ≈ btrfs" in text
    assert "file 2,048 MiB, memory cgroup limit (-r) 1,024 MiB" in text
    assert "one system call per byte" in text
    # The section registered with the report for Bonnie++ cells gives the same table.
    tables, sections = build_sections(StudyData(runs, cells))
    assert tables == table_iv(runs, [c for c in cells if c["workload_kind"] == "bonnie"], paper=False)
    # no section of its own (the study-wide "why" section explains the significant ones)
    assert len(tables) == 1 and [s.id for s in sections] == ["explanations"]


def test_no_bonnie_runs() -> None:
    assert build_table_iv([], [cell("ext4", "fio")]) == []


def test_paper_labels_only_for_a_study_of_seed_000() -> None:
    """A user's own Bonnie++ study gets the table without the paper's row names; a study
    whose [study] paper is seed-000 (the preset) gets them."""
    runs, cells = study()
    [own] = build_sections(StudyData(runs, cells))[0]
    [paper] = build_sections(StudyData(runs, cells, paper="seed-000"))[0]
    [other] = build_sections(StudyData(runs, cells, paper="seed-003"))[0]
    assert other == own
    assert "seed 000" in paper.title and paper.columns[0] == "paper's row"
    assert "Random Write" in [r[0] for r in paper.rows]
    assert "seed 000" not in own.title and "paper's row" not in own.columns
    assert own.columns[0] == "Bonnie++ test" and "paper" not in own.note
    assert [r[0] for r in own.rows] == [r[1] for r in paper.rows]


def test_a_guest_column_is_neither_ranked_nor_paired_with_host_ones() -> None:
    """jfs in the guest writes fastest of all; it is its own group's only column: no 'best',
    no difference, no pair with a host file system; the host columns keep their ranking."""
    runs, cells = study()
    guest = {**cell("jfs"), "backend": "guest", "kernel": "6.1"}
    runs += [{**run("jfs", {"block_write_bytes_per_s": (900 + i) * MIB}), "cell": guest} for i in range(5)]
    cells.insert(3, guest)
    [(_, filesystems, rows)] = build_table_iv(runs, cells)
    assert filesystems == ["ext4", "xfs", "btrfs", "jfs (guest 6.1)"]
    block_write = rows[1][2]
    assert block_write.bests == {"host": "xfs"} and block_write.best_for("jfs (guest 6.1)") is None
    pairs = {(v.a, v.b) for v in pairwise(block_write)}
    assert pairs == {("ext4", "xfs"), ("ext4", "btrfs"), ("xfs", "btrfs")}
    [table] = table_iv(runs, cells)
    row = next(r for r in table.rows if r[1] == "block write")
    jfs = row[table.columns.index("jfs (guest 6.1) (MiB/s)")]
    assert "%" not in jfs and "best" not in jfs
    assert "best" in row[table.columns.index("xfs (MiB/s)")] and "jfs" not in row[-1]
