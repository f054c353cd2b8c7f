"""`fslab compare` pairs only cases defined alike besides the variable under test (issue 19),
from real stored studies: real fio on loop images (buffered psync against direct libaio
at queue depth 32, the issue's case) and the null workload on the fake device (a case that
differs only in ``ops``, one that differs in its timeout, one defined alike). Every output
— the Comparison, terminal, HTML, Markdown and JSON — must list what was left out and why,
and never say the two sides agree when a defining field differs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.report.compare import Comparison, compare, left_out_line, resolve_sides
from fslab.runner import run_study

FIO_STUDY = """
[study]
name = "fio {name}"
repetitions = 3

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "rand4k"
rw = "randread"
bs = "4k"
size = "16M"
runtime = 1
time_based = 1
iodepth = 32
ioengine = "{engine}"
direct = {direct}
"""

NULL_STUDY = """
[study]
name = "null {name}"
repetitions = 3
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w1"
ops = {ops}
noise = 0.05
{timeout}
{extra}
"""

EXTRA_WORKLOAD = """
[[workloads]]
kind = "null"
name = "w2"
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fslab", "compare", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "250"})


def _compare(results: Path, a: int, b: int, variables: list[str] | None = None) -> Comparison:
    side_a, side_b = resolve_sides(f"{results}:{a}", f"{results}:{b}", results, None)
    return compare(side_a, side_b, variables=variables)


@pytest.fixture(scope="module")
def fio_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Study 1: buffered psync; study 2: direct libaio; both at iodepth 32 (which a sync
    engine ignores), so exactly ``direct`` and ``ioengine`` differ."""
    if os.geteuid() != 0 or shutil.which("fio") is None or not Path("/dev/loop-control").exists():
        pytest.skip("needs root, loop devices and fio")
    tmp = tmp_path_factory.mktemp("defs-fio")
    results = tmp / "results"
    for name, engine, direct in (("psync-buffered", "psync", 0), ("libaio-direct", "libaio", 1)):
        path = tmp / f"{name}.toml"
        path.write_text(FIO_STUDY.format(name=name, images=tmp / "images", engine=engine, direct=direct))
        assert run_study(str(path), results_dir=results).runs_failed == 0
    return results


@pytest.fixture(scope="module")
def null_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1: w1 with ops = 10; 2: ops = 50; 3: as 1; 4: as 1 with a 30 s timeout and a
    second workload w2."""
    tmp = tmp_path_factory.mktemp("defs-null")
    (tmp / "fake").mkdir()
    results = tmp / "results"
    for i, (ops, timeout, extra) in enumerate(((10, "", ""), (50, "", ""), (10, "", ""),
                                               (10, "timeout = 30", EXTRA_WORKLOAD))):
        path = tmp / f"s{i}.toml"
        path.write_text(NULL_STUDY.format(name=i, fake=tmp / "fake", ops=ops, timeout=timeout, extra=extra))
        assert run_study(str(path), results_dir=results).runs_failed == 0
    return results


PSYNC_VS_LIBAIO = ("not compared: ext4: rand4k: direct differs (A: 0, B: 1); "
                   "ioengine differs (A: psync, B: libaio)")


def test_buffered_psync_and_direct_libaio_are_not_paired(fio_results: Path, tmp_path: Path) -> None:
    c = _compare(fio_results, 1, 2)
    assert c.rows == [] and c.cases_compared == 0
    assert [n.text() for n in c.not_compared] == [PSYNC_VS_LIBAIO]
    assert [(d.field, d.a, d.b) for d in c.not_compared[0].differences] == [
        ("direct", "0", "1"), ("ioengine", "psync", "libaio")]
    assert "pair them with --variable direct --variable ioengine" in (left_out_line(c) or "")
    # naming one of the two differences is not enough: the other still leaves it out
    partial = _compare(fio_results, 1, 2, ["direct"])
    assert [n.text() for n in partial.not_compared] == [
        "not compared: ext4: rand4k: ioengine differs (A: psync, B: libaio)"]
    html, md = tmp_path / "c.html", tmp_path / "c.md"
    done = _cli(f"{fio_results}:1", f"{fio_results}:2", "--html", str(html), "--markdown", str(md))
    assert done.returncode == 1, done.stderr
    assert PSYNC_VS_LIBAIO in done.stdout and "no case compared" in done.stdout
    assert "−70" not in done.stdout and "B worse" not in done.stdout and "B better" not in done.stdout
    assert "1 case not compared" in done.stderr
    page = html.read_text()
    assert PSYNC_VS_LIBAIO in page and 'id="not-compared"' in page
    assert "agrees" not in page  # a defining field differs: never 'the provenance agrees'
    assert f"- ⚠ {PSYNC_VS_LIBAIO}" in md.read_text()


def test_naming_direct_and_ioengine_pairs_them_and_says_so(fio_results: Path, tmp_path: Path) -> None:
    c = _compare(fio_results, 1, 2, ["direct", "ioengine"])
    assert c.not_compared == [] and [r.key for r in c.rows] == ["ext4: rand4k"]
    assert c.rows[0].n_a == c.rows[0].n_b == 3
    under = [(d.fact, d.a, d.b) for d in c.differences if d.under_test]
    assert under == [("direct", "0", "1"), ("ioengine", "psync", "libaio")]
    assert not any(d.fact in ("direct", "ioengine") for d in c.warnings)
    header = "variable under test: direct, ioengine (named with --variable)"
    html, md = tmp_path / "c.html", tmp_path / "c.md"
    flags = ["--variable", "direct", "--variable", "ioengine"]
    done = _cli(f"{fio_results}:1", f"{fio_results}:2", *flags, "--html", str(html), "--markdown", str(md))
    assert done.returncode == 0, done.stderr
    assert header in done.stdout and "under test: direct: A 0 / B 1" in done.stdout
    assert "not compared:" not in done.stdout
    assert header in html.read_text() and header in md.read_text()
    assert "None: every case of A and B was compared." in md.read_text()
    data = json.loads(_cli(f"{fio_results}:1", f"{fio_results}:2", "--json", *flags).stdout)
    assert data["variables"] == ["direct", "ioengine"] and data["variable_under_test"] == header
    assert data["not_compared"] == [] and len(data["rows"]) == 1


def test_a_case_that_differs_only_in_ops_is_not_paired(null_results: Path, tmp_path: Path) -> None:
    c = _compare(null_results, 1, 2)
    assert c.rows == [] and [n.text() for n in c.not_compared] == [
        "not compared: null: w1: ops differs (A: 10, B: 50)"]
    md = tmp_path / "c.md"
    done = _cli(f"{null_results}:1", f"{null_results}:2", "--markdown", str(md))
    assert done.returncode == 1
    assert "not compared: null: w1: ops differs (A: 10, B: 50)" in done.stdout
    assert "Their definitions differ in ops" in md.read_text()
    assert [r.key for r in _compare(null_results, 1, 2, ["ops"]).rows] == ["null: w1"]


def test_the_json_output_carries_the_not_compared_list(null_results: Path) -> None:
    done = _cli(f"{null_results}:1", f"{null_results}:2", "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["not_compared"] == [{"case": "null: w1", "reason": "definitions differ",
                                     "differences": [{"field": "ops", "a": "10", "b": "50"}]}]
    assert data["not_compared_text"] == ["not compared: null: w1: ops differs (A: 10, B: 50)"]
    assert data["cases_compared"] == 0 and data["rows"] == []


def test_identical_cases_pair_with_no_warning(null_results: Path, tmp_path: Path) -> None:
    c = _compare(null_results, 1, 3)
    assert c.not_compared == [] and c.warnings == [] and c.differences == []
    assert [r.key for r in c.rows] == ["null: w1"] and c.cases_compared == 1
    html = tmp_path / "c.html"
    done = _cli(f"{null_results}:1", f"{null_results}:3", "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stdout and "not compared" not in done.stdout
    assert "None: every case of A and B was compared." in html.read_text()


def test_a_timeout_and_a_case_on_one_side_only_are_listed(null_results: Path) -> None:
    c = _compare(null_results, 1, 4)
    assert [n.text() for n in c.not_compared] == [
        "not compared: null: w1: timeout differs (A: none, B: 30 s)", "not compared: null: w2: only in B"]
    c = _compare(null_results, 1, 4, ["timeout"])
    assert [r.key for r in c.rows] == ["null: w1"]
    assert [n.text() for n in c.not_compared] == ["not compared: null: w2: only in B"]


def test_an_unknown_variable_is_refused_naming_the_valid_fields(null_results: Path) -> None:
    with pytest.raises(FslabError, match=r"--variable opz: .*Valid fields: .*\bmemory\b.*\bops\b.*\btimeout\b"):
        _compare(null_results, 1, 2, ["opz"])
    done = _cli(f"{null_results}:1", f"{null_results}:2", "--variable", "opz")
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert "--variable opz: no field of that name defines the cases compared here" in message
    assert "Valid fields: aging, backend, device, device.kind" in message and "ops" in message


def test_a_device_section_defines_a_case_sizes_read_alike() -> None:
    """The [device] section defines a case (an entry's own section over the study's);
    '4GiB' and its bytes read alike, a field left to its default on one side differs
    ('not set': the plug-in's defaults are not the report's to load), and where the images
    go is not part of it (a warning when it differs)."""
    from fslab.report.case_definitions import covers, definition, device_sections, differing

    spelled = device_sections('[device]\nsize = "4GiB"\nimage_dir = "/a"\n[filesystems.ext4]\n'
                              '[filesystems.xfs.device]\nkind = "image"\nsize = "1GiB"\n')
    in_bytes = device_sections('[device]\nsize = 4294967296\nimage_dir = "/b"\n[filesystems.ext4]\n')
    unwritten = device_sections('[filesystems.ext4]\n')
    assert spelled["ext4"] == {**in_bytes["ext4"], "image_dir": "/a"}
    cell = {"id": "c", "filesystem": "ext4", "fs_type": "ext4", "mkfs": [], "mount": [], "workload": "w",
            "workload_kind": "fio", "params": {"bs": 4096}, "axes": {}, "backend": "host", "memory_bytes": None,
            "timeout_s": None, "primary_metric": "iops"}
    assert differing(definition(cell, spelled["ext4"]), definition(cell, in_bytes["ext4"])) == []
    assert [(d.field, d.a, d.b) for d in differing(definition(cell, spelled["ext4"]),
                                                   definition(cell, unwritten["ext4"]))] == [
        ("device.size", "4294967296", "not set")]
    small = {**cell, "filesystem": "xfs", "memory_bytes": 256 << 20}
    diffs = differing(definition(cell, spelled["ext4"]), definition(small, spelled["xfs"]))
    assert [(d.field, d.a, d.b) for d in diffs] == [
        ("memory", "no limit", "256 MiB (268,435,456 B)"), ("device.size", "4294967296", "1073741824")]
    assert covers("device", "device.size") and not covers("device.size", "device.kind")
    assert not covers("dev", "device.size")


def test_a_job_file_defines_a_case_by_its_text() -> None:
    """Two cells that name the same job file but read different texts differ in
    ``inputs.NAME`` (the SHA-256 of the text), which ``--variable inputs`` covers."""
    from fslab.report.case_definitions import covers, definition, differing, valid_variables

    cell = {"id": "c", "filesystem": "ext4", "fs_type": "ext4", "mkfs": [], "mount": [], "workload": "w",
            "workload_kind": "fio", "params": {"job_file": "job.fio"}, "axes": {}, "backend": "host",
            "memory_bytes": None, "timeout_s": None, "primary_metric": "iops", "inputs": {"job.fio": "bs=4k\n"}}
    edited = {**cell, "inputs": {"job.fio": "bs=8k\n"}}
    a, b = definition(cell, {}), definition(edited, {})
    [diff] = differing(a, b)
    assert diff.field == "inputs.job.fio" and diff.a.startswith("SHA-256 ") and diff.a != diff.b
    assert covers("inputs", diff.field) and {"inputs", "inputs.job.fio", "job_file"} <= set(valid_variables([a, b]))
