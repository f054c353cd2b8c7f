"""fio's JSON, parsed into metrics, on output captured from real fio runs."""

from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.workloads.fio import job_file_text, metrics_from_report, parse_json_output

DATA = Path(__file__).parents[1] / "data" / "fio"


def test_randrw_with_fsync():
    report = parse_json_output((DATA / "randrw-fsync.json").read_text())
    metrics, runtime_s = metrics_from_report(report)
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
    metrics, _ = metrics_from_report(parse_json_output(text))
    assert metrics["read_iops"] > 0 and metrics["write_iops"] > 0
    assert "a_read_clat_p99_ns" in metrics and "b_write_clat_p99_ns" in metrics
    assert "read_clat_p99_ns" not in metrics  # no cross-job percentile is invented


def test_not_json_is_an_error():
    with pytest.raises(FslabError, match="no JSON"):
        parse_json_output("fio: something went wrong\n", "fio: bad option")
    with pytest.raises(FslabError, match="not valid JSON"):
        parse_json_output('{"jobs": [')


def test_job_file_text():
    text = job_file_text({"rw": "randread", "bs": 4096, "size": 1 << 20}, Path("/mnt/x"))
    assert "directory=/mnt/x" in text and "rw=randread" in text and "bs=4096" in text
