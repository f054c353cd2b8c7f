"""PostMark: the parser on real PostMark output (tests/data/postmark/README.md) — counts
over PostMark's whole seconds, kilobytes of 1024 bytes, ``Error:`` lines fail a run that
exited 0 — parameters, and a real run on ext4 whose numbers are what PostMark printed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.metrics import unit_of
from fslab.workloads import WORKLOADS, ParamError, RunContext
from fslab.workloads.postmark import config_text, parse_output

DATA = Path(__file__).parents[1] / "data" / "postmark"
W = WORKLOADS.get("postmark")


def test_parse_rates_are_counts_over_postmark_seconds() -> None:
    text = (DATA / "default-small.txt").read_text()
    m, notes, counts = parse_output(text, 100000)
    assert notes == {} and counts["transaction_s"] == 3 and counts["total_s"] == 3
    assert counts["files"] == {"created": 50300, "read": 50123, "appended": 49363, "deleted": 50300}
    assert m["transactions_per_s"] == pytest.approx(100000 / 3)
    assert m["create_files_per_s"] == pytest.approx(50300 / 3)
    # PostMark's own (integer) rates agree with ours
    for kind, name in (("created", "create"), ("read", "read"), ("appended", "append"), ("deleted", "delete")):
        shown = int(re.search(rf"\d+ {kind} \((\d+) per second\)", text).group(1))  # type: ignore[union-attr]
        assert int(m[f"{name}_files_per_s"]) == shown
    assert m["read_bytes_per_s"] == pytest.approx(325.27 * 2**20 / 3)  # "325.27 megabytes read"
    assert m["write_bytes_per_s"] == pytest.approx(328.03 * 2**20 / 3)
    assert unit_of("transactions_per_s") == "transactions/s" and unit_of("read_files_per_s") == "files/s"


def test_kilobytes_are_1024_bytes() -> None:
    # PostMark shows the 10000-byte upper bound of default-small as "9.77 kilobytes"
    assert "9.77 kilobytes" in (DATA / "default-small.txt").read_text() and round(10000 / 1024, 2) == 9.77


def test_an_error_line_fails_although_postmark_exited_0() -> None:
    text = (DATA / "error-exit-0.txt").read_text()
    with pytest.raises(FslabError) as info:
        parse_output(text, 500)
    assert "exits 0 regardless" in str(info.value) and "megabytes written" in str(info.value)


@pytest.mark.parametrize("seconds", [0, 1])
def test_a_span_timed_at_one_second_or_less_has_notes_not_rates(seconds: int) -> None:
    text = (DATA / "default-small.txt").read_text()  # "3 seconds total", "3 seconds of transactions"
    timed, notes, _ = parse_output(text, 100000)
    assert notes == {} and timed["transactions_per_s"] == pytest.approx(100000 / 3)
    short = re.sub(r"\d+ seconds total", f"{seconds} seconds total", text)
    m, notes, _ = parse_output(short, 100000)
    assert set(m) == {"transactions_per_s"} and set(notes) == set(timed) - {"transactions_per_s"}
    assert f"timed it at {seconds} s" in notes["create_files_per_s"]


def test_running_out_of_files_fails_with_postmark_advice() -> None:
    text = (DATA / "out-of-files.txt").read_text()  # PostMark exited 0
    with pytest.raises(FslabError) as info:
        parse_output(text, 30000)
    assert "out of files!" in str(info.value) and "increase the number of files" in str(info.value)


def test_missing_sections_fail() -> None:
    text = (DATA / "subdirs.txt").read_text()
    with pytest.raises(FslabError, match="postmark printed no complete report"):
        parse_output(text.split("Data:")[0], 5000)


def test_params_config_and_quick() -> None:
    p = W.validate({"files": 2000, "size_min": "4k", "size_max": "64k", "subdirs": 10})
    cfg = config_text(p, "/mnt/x")
    assert "set size 4096 65536\n" in cfg and "set subdirectories 10\n" in cfg and cfg.endswith("run\nquit\n")
    assert "subdirectories" not in config_text(W.validate({}), "/mnt/x")  # PostMark refuses 0
    assert W.quick(p) == p  # a shorter PostMark run is one its whole-second timer cannot time
    assert W.data_bytes(p) == 2000 * (4096 + 65536) // 2
    for bad, key in (({"size_min": "20k", "size_max": "10k"}, "size_min"), ({"read_bias": 11}, "read_bias"),
                     ({"transactions": 0}, "transactions"), ({"buffering": "yes"}, "buffering")):
        with pytest.raises(ParamError) as info:
            W.validate(bad)
        assert info.value.key == key


@pytest.mark.skipif(shutil.which("postmark") is None, reason="needs postmark (apt-get install postmark)")
def test_real_run_on_ext4(mounted_fs, tmp_path: Path) -> None:
    params = W.validate({"files": 200, "transactions": 2000, "seed": 3})
    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        # A path as long as fslab's: given as PostMark's location, it crashed PostMark (SIGSEGV)
        work = mnt / ("fslab-" + "0" * 120)
        work.mkdir()
        result = W.run(params, RunContext(workdir=work, device=dev, artifact_dir=tmp_path, timeout_s=60, memory=None))
        left = [p.name for p in work.iterdir()]
    text = (tmp_path / "postmark.out").read_text()
    m, notes, counts = parse_output(text, 2000)
    assert result.metrics == m and result.notes == notes and result.info["counts"] == counts
    # 2000 transactions take well under 2 s here: PostMark's 0 or 1 s is no rate
    assert counts["total_s"] <= 1 and m == {} and "too short to time" in notes["transactions_per_s"]
    assert counts["files"]["created"] == counts["files"]["deleted"] >= 200  # the pool and the mix
    assert "The base number of files is 200" in text and "Transactions: 2000" in text
    assert left == []  # PostMark deletes its files
