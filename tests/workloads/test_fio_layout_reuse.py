"""reuse_layout: runs of a pass whose files are the same run on the files the first of
them laid out (as a paper that made its files once did); a run that fails on them makes
the next one lay them out again. Real fio on ext4 on a loop device."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fio_studies import write_fio_study
from fslab.errors import SpecError
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import load_spec
from fslab.workloads import WORKLOADS

fio = WORKLOADS.get("fio")

WORKLOAD = """bs = "4k"
size = "16M"
nrfiles = 2
runtime = 1
time_based = 1
[workloads.axes]
rw = {rw}"""



def write_study(tmp_path: Path, *, rw: list[str], fresh: str = "repetition", reuse: bool = True) -> Path:
    study = f'fresh = "{fresh}"' + ("\nreuse_layout = true" if reuse else "")
    return write_fio_study(tmp_path, WORKLOAD.format(rw=str(rw).replace("'", '"')), name="layout reuse",
                           study_extra=study)


def test_cells_that_differ_in_how_they_do_io_share_a_layout_and_files_do_not() -> None:
    base = fio.validate({"rw": "read", "bs": "4k", "size": "16M", "nrfiles": 2, "runtime": 1})
    same = [fio.validate({**base, **change}) for change in (
        {"rw": "randwrite"}, {"ioengine": "libaio", "iodepth": 8}, {"direct": 1}, {"runtime": 5})]
    other = [fio.validate({**base, **change}) for change in (
        {"size": "32M"}, {"nrfiles": 3}, {"bs": "64k"}, {"numjobs": 2}, {"filesize": "1M"})]
    key = fio.layout_key(base)
    assert key is not None
    assert all(fio.layout_key(p) == key for p in same)
    assert all(fio.layout_key(p) != key for p in other)
    assert len({fio.layout_key(p) for p in other}) == len(other)


def test_reuse_needs_a_pass_on_one_file_system(tmp_path: Path) -> None:
    path = write_study(tmp_path, rw=["read"], fresh="run")
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert str(err.value).startswith(f"{path}: invalid study file")
    assert 'study.reuse_layout: needs fresh = "repetition"' in str(err.value)


def _runs(results: Path) -> list[dict]:
    store = Store(results, read_only=True)
    try:
        return sorted(store.runs(store.study().id), key=lambda r: r["sequence"])
    finally:
        store.close()


def test_later_runs_use_the_first_runs_files_until_one_fails(device_support, tmp_path: Path) -> None:
    # in order: read lays out; randread reuses; trim fails on files (fio refuses), so its
    # files are dropped; write lays them out again; randwrite reuses those.
    path = write_study(tmp_path, rw=["read", "randread", "trim", "write", "randwrite"])
    results = tmp_path / "results"
    run_study(str(path), results_dir=results)
    runs = _runs(results)
    assert [r["cell"]["params"]["rw"] for r in runs] == ["read", "randread", "trim", "write", "randwrite"]
    assert [r["status"] for r in runs] == ["ok", "ok", "failed", "ok", "ok"], [r["error"] for r in runs]
    layout = [r["provenance"]["layout"] for r in runs]
    assert len({entry["directory"] for entry in layout}) == 1
    keys = [f"{r['cell']['id']}-r1" for r in runs]
    assert [entry["reused"] for entry in layout] == [False, True, True, False, True]
    assert [entry["laid_out_by"] for entry in layout] == [keys[0], keys[0], keys[0], keys[3], keys[3]]
    # Only a run that laid out files ran fio's layout step (and let the file system settle).
    for run, entry in zip(runs, layout):
        art = results / run["artifact_dir"]
        assert (art / "fio-layout.json").exists() == (not entry["reused"]), run["cell"]["params"]["rw"]
        assert ("prepare_quiesce_s" in run["provenance"]) == (not entry["reused"])
    # A reused run read files that were there: fio read 4 KiB blocks, not nothing.
    assert runs[1]["metrics"]["iops"]["value"] > 0
    # The report says how the files were made.
    markdown = tmp_path / "report.md"
    subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(results), "--markdown", str(markdown)],
                   check=True, capture_output=True)
    assert ("a fresh file system per repetition; each set of files laid out once per pass (reuse_layout): "
            "3 of 5 runs ran on files an earlier run of their pass laid out") in markdown.read_text()


def test_without_reuse_every_run_lays_out_its_own(device_support, tmp_path: Path) -> None:
    path = write_study(tmp_path, rw=["read", "randread"], reuse=False)
    results = tmp_path / "results"
    run_study(str(path), results_dir=results)
    runs = _runs(results)
    assert all("layout" not in r["provenance"] for r in runs)
    assert all((results / r["artifact_dir"] / "fio-layout.json").exists() for r in runs)
