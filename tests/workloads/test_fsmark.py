"""fs_mark: the parser on real fs_mark 3.3 output (tests/data/fsmark/README.md), parameters,
quick scaling, and a real run on ext4 whose files and rate match what fs_mark printed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fslab.errors import CommandFailed, FslabError
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, ParamError, RunContext
from fslab.workloads.fsmark import metrics_from, parse_output

DATA = Path(__file__).parents[1] / "data" / "fsmark"
W = WORKLOADS.get("fsmark")


def test_parse_two_iterations_with_fsync() -> None:
    text = (DATA / "S1-2t-dirs.txt").read_text()
    rows = parse_output(text)
    assert [(r.count, r.size) for r in rows] == [(600, 4096), (1200, 4096)]
    first, second = rows
    metrics = metrics_from(rows, text)
    # All files over the time of both iterations: 1200 / (600/r1 + 600/r2).
    assert metrics["create_files_per_s"] == pytest.approx(1200 / (600 / first.files_per_s + 600 / second.files_per_s))
    assert metrics["app_overhead_ns"] == (first.app_overhead_us + second.app_overhead_us) * 1000
    assert unit_of("create_files_per_s") == "files/s" and unit_of("app_overhead_ns") == "ns"


def test_parse_no_sync_single_line_keeps_the_printed_rate() -> None:
    text = (DATA / "S0-1t.txt").read_text()
    (row,) = parse_output(text)
    printed = text.split("App Overhead\n")[1].split()  # FSUse% Count Size Files/sec Overhead
    assert (row.count, row.size, row.files_per_s, row.app_overhead_us) == \
        (int(printed[1]), int(printed[2]), float(printed[3]), int(printed[4]))
    assert (row.count, row.size) == (2000, 0)
    assert metrics_from([row], text)["create_files_per_s"] == float(printed[3])


@pytest.mark.parametrize("cut", ["header", "row", "garbled"])
def test_unreadable_output_fails_with_the_tool_last_lines(cut: str) -> None:
    text = (DATA / "S0-1t.txt").read_text()
    head, _, table = text.partition("FSUse%")
    broken = {"header": head, "row": head + "FSUse%" + table.splitlines()[0] + "\n",
              "garbled": text.rstrip() + "\n   6  500  0  fast  12\n"}[cut]
    with pytest.raises(FslabError) as info:
        parse_output(broken)
    assert "fs_mark printed no" in str(info.value)
    assert "App overhead is time in microseconds" in str(info.value)  # fs_mark's own words


def test_params_and_quick() -> None:
    p = W.validate({"sync": "post_fsync", "file_size": "64k", "files_per_dir": 100})
    assert p["sync"] == 5 and p["file_size"] == 65536 and p["files"] == 10000
    q = W.quick(p)
    assert q["files"] == 1250 and {k: q[k] for k in ("sync", "file_size", "files_per_dir", "threads")} == \
        {"sync": 5, "file_size": 65536, "files_per_dir": 100, "threads": 1}
    assert W.quick(W.validate({"files": 300}))["files"] == 300
    for bad, key in (({"sync": "sometimes"}, "sync"), ({"sync": 7}, "sync"), ({"threads": 0}, "threads"),
                     ({"file_size": "4q"}, "file_size"), ({"dirs": [1, 2]}, "dirs"), ({"depth": 1}, "depth")):
        with pytest.raises(ParamError) as info:
            W.validate(bad)
        assert info.value.key == key


pytestmark_run = pytest.mark.skipif(shutil.which("fs_mark") is None, reason="needs fs_mark (apt-get install fsmark)")


@pytestmark_run
def test_real_run_on_ext4_matches_what_fs_mark_printed(mounted_fs, tmp_path: Path) -> None:
    params = W.validate({"files": 200, "threads": 2, "files_per_dir": 40, "dirs": 5, "sync": "fsync"})
    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        work = mnt / "run"
        work.mkdir()
        before = dev.read_stat()
        result = W.run(params, RunContext(workdir=work, device=dev, artifact_dir=tmp_path,
                                          timeout_s=120, memory=None))
        after = dev.read_stat()
        made = sum(1 for p in (work / "fsmark").rglob("*") if p.is_file())
    assert made == 400  # -k: 2 threads x 200 files kept
    (row,) = parse_output((tmp_path / "fsmark.out").read_text())
    # one iteration: its files over its time, as fs_mark printed it (to its 0.1 files/s)
    assert row.files_per_s > 0 and result.metrics["create_files_per_s"] == pytest.approx(row.files_per_s, abs=0.05)
    assert result.info["sync_mode"] == "fsync" and "-N" in result.info["argv"]
    assert after["flush_ios"] - before["flush_ios"] >= 200  # an fsync per file reaches the device


@pytestmark_run
def test_a_crash_fails_with_the_tool_own_lines(tmp_path: Path) -> None:
    params = W.validate({"files": 10})
    work = tmp_path / "work"
    work.mkdir()
    (work / "fsmark").touch()  # a file where fs_mark makes its directory: creat() fails
    art = tmp_path / "art"
    art.mkdir()
    with pytest.raises(CommandFailed) as info:
        W.run(params, RunContext(workdir=work, device=None, artifact_dir=art,  # type: ignore[arg-type]
                                 timeout_s=30, memory=None))
    assert info.value.returncode == 1
    assert "Error in creat: Not a directory" in str(info.value)  # fs_mark's own line (stderr)
    assert "FSUse%" in str(info.value)  # and the last of its stdout
    assert "Traceback" not in str(info.value)
    assert (art / "fsmark.out").read_text().startswith("\n#  fs_mark")  # kept beside the run
