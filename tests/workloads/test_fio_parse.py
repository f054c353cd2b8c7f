"""fio's JSON, parsed into metrics, on output captured from real fio runs."""

import re
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.workloads.fio import job_file_text, metrics_from_report, parse_json_output

DATA = Path(__file__).parents[1] / "data" / "fio"


def test_randrw_with_fsync():
    report = parse_json_output((DATA / "randrw-fsync.json").read_text())
    metrics, runtime_s, notes = metrics_from_report(report)
    assert notes == {}
    job = report["jobs"][0]
    assert metrics["read_iops"] == pytest.approx(job["read"]["iops"])
    assert metrics["write_iops"] == pytest.approx(job["write"]["iops"])
    assert metrics["iops"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert metrics["read_clat_p99_ns"] == job["read"]["clat_ns"]["percentile"]["99.000000"]
    assert metrics["read_clat_p50_ns"] <= metrics["read_clat_p99_ns"] <= metrics["read_clat_p99_9_ns"]
    assert metrics["sync_lat_mean_ns"] > 0
    assert 0.5 < runtime_s < 2


def test_two_jobs_with_text_before_json():
    text = (DATA / "two-jobs.json").read_text()
    assert not text.startswith("{")  # fio printed a job line first
    metrics, _, _ = metrics_from_report(parse_json_output(text))
    assert metrics["read_iops"] > 0 and metrics["write_iops"] > 0
    assert "job0_a_read_clat_p99_ns" in metrics and "job1_b_write_clat_p99_ns" in metrics
    assert "read_clat_p99_ns" not in metrics  # no cross-job percentile is invented


def test_stonewalled_phases_are_never_summed():
    """fio's examples/ssd-test.fio shape: four groups, one after another. Each group is
    reported under its own name; there is no headline sum of phases that never overlapped."""
    report = parse_json_output((DATA / "ssd-test.json").read_text())
    metrics, runtime_s, notes = metrics_from_report(report)
    jobs = report["jobs"]
    assert [j["groupid"] for j in jobs] == [0, 1, 2, 3]
    assert "iops" not in metrics and "bw_bytes_per_s" not in metrics and "read_iops" not in metrics
    assert "group0_iops" in notes["iops"] and "stonewall" in notes["iops"]
    assert metrics["group0_read_iops"] == pytest.approx(jobs[0]["read"]["iops"])
    assert metrics["group1_iops"] == pytest.approx(jobs[1]["read"]["iops"])
    assert metrics["group3_write_bw_bytes_per_s"] == pytest.approx(jobs[3]["write"]["bw_bytes"])
    assert metrics["job2_seq_write_write_iops"] == pytest.approx(jobs[2]["write"]["iops"])
    # Each phase on its own, so the whole run lasted their sum.
    assert runtime_s == pytest.approx(sum(j["job_runtime"] for j in jobs) / 1000)


def test_numjobs_copies_keep_their_own_numbers():
    """numjobs=2 gives two entries named alike; both stay, and the group is their I/Os over
    the longer runtime (fio's group line)."""
    report = parse_json_output((DATA / "numjobs2.json").read_text())
    metrics, _, notes = metrics_from_report(report)
    first, second = (j["write"] for j in report["jobs"])
    assert metrics["job0_writers_write_iops"] == pytest.approx(first["iops"])
    assert metrics["job1_writers_write_iops"] == pytest.approx(second["iops"])
    longest_s = max(first["runtime"], second["runtime"]) / 1000
    assert metrics["iops"] == pytest.approx((first["total_ios"] + second["total_ios"]) / longest_s)
    assert metrics["iops"] == metrics["write_iops"]
    assert notes == {}


def _fio_group_line_bytes_per_s(text: str) -> float:
    """The bandwidth fio prints in its "Run status group" line (normal output), in B/s."""
    match = re.search(r"WRITE: bw=([\d.]+)(KiB|MiB|GiB)/s", text)
    assert match, text
    return float(match.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[match.group(2)]


def test_a_group_of_jobs_of_unequal_length_is_what_fio_says_it_is():
    """unequal-jobs.fio: two jobs in one group, 16 MiB at 8 MiB/s and 4 MiB at 4 MiB/s, run
    once with --output-format=normal,json. The group's figure is fio's group line (20 MiB
    over the longer job's 2 s: 10.0 MiB/s), not the sum of the jobs' rates (12.3 MiB/s)."""
    report = parse_json_output((DATA / "unequal-jobs.json").read_text())
    metrics, _, _ = metrics_from_report(report)
    a, b = (j["write"] for j in report["jobs"])
    assert a["bw_bytes"] + b["bw_bytes"] > 1.2 * metrics["bw_bytes_per_s"]  # the old, wrong sum
    fio_says = _fio_group_line_bytes_per_s((DATA / "unequal-jobs.txt").read_text())
    assert metrics["write_bw_bytes_per_s"] == pytest.approx(fio_says, rel=0.005)  # fio rounds to 0.1 MiB/s
    assert metrics["write_iops"] == pytest.approx((a["total_ios"] + b["total_ios"]) * 1000 / a["runtime"])
    assert metrics["write_io_bytes"] == 20 << 20


def test_not_json_is_an_error():
    with pytest.raises(FslabError, match="no JSON"):
        parse_json_output("fio: something went wrong\n", "fio: bad option")
    with pytest.raises(FslabError, match="not valid JSON"):
        parse_json_output('{"jobs": [')


def test_job_file_text():
    text = job_file_text({"rw": "randread", "bs": 4096, "size": 1 << 20}, Path("/mnt/x"))
    assert "directory=/mnt/x" in text and "rw=randread" in text and "bs=4096" in text
