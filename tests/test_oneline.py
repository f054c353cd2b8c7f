"""`fslab run --fs ext4,xfs --fio 'rw=randwrite bs=4k fsync=1'`: the study file it writes is
a real study file (read back by the same reading as any), repeats until answered, and an
error names the option the user typed before anything is written."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.errors import SpecError
from fslab.oneline import fio_options, write_study
from fslab.study import load_spec


def test_fio_words_become_options() -> None:
    assert fio_options("rw=randwrite bs=4k fsync=1 'name_x=a b' time_based") == {
        "rw": "randwrite", "bs": "4k", "fsync": 1, "name_x": "a b", "time_based": 1}


def test_the_written_file_is_a_study_file_that_repeats_until_answered(tmp_path: Path) -> None:
    path = write_study("ext4,xfs", "rw=randwrite bs=4k fsync=1", None, tmp_path)
    assert path.parent == tmp_path and path.suffix == ".toml"
    spec, _, _ = load_spec(str(path))
    assert spec.study.repetitions == "auto"
    assert list(spec.filesystems) == ["ext4", "xfs"]
    [workload] = spec.workloads
    data = tomllib.loads(path.read_text())["workloads"][0]
    assert data == {"kind": "fio", "name": "fio", "size": "256M", "runtime": 5, "time_based": 1,
                    "rw": "randwrite", "bs": "4k", "fsync": 1}
    assert "fslab run --fs ext4,xfs --fio 'rw=randwrite bs=4k fsync=1'" in path.read_text()
    # The user's options win over the defaults; --save puts the file where asked.
    saved = write_study("ext4,btrfs", "rw=read size=64M runtime=2", tmp_path / "mine" / "s.toml", tmp_path)
    assert saved == tmp_path / "mine" / "s.toml"
    assert tomllib.loads(saved.read_text())["workloads"][0]["size"] == "64M"


@pytest.mark.parametrize("fs,fio,says", [
    ("ext4,xfs", "rw=randwirte bs=4k", "option rw: 'randwirte' is not an fio pattern"),
    ("ext4,xfs", "rw=randwrite iodeptth=4", "option iodeptth: fio rejects it"),
    ("ext4,xfs", "rw=randwrite bs=4k bs=8k", "bs is given twice"),
    ("ext4,xfs", "rw=randwrite filename=/etc/passwd", "filename is set by fslab"),
    ("ext4,xfs", "", "give fio options"),
    ("ext4,xfss", "rw=randwrite", "--fs: xfss: not a file system fslab knows"),
    ("ext4", "rw=randwrite", "name at least two file systems"),
])
def test_a_bad_option_is_refused_naming_it_and_nothing_is_written(tmp_path: Path, fs: str, fio: str,
                                                                  says: str) -> None:
    with pytest.raises(SpecError, match=None) as caught:
        write_study(fs, fio, None, tmp_path / "results")
    assert says in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_an_option_that_runs_a_program_is_refused_in_the_one_line_study_s_words(tmp_path: Path) -> None:
    # there is no study file to trust in a one-line study: the fix names --allow-exec only
    with pytest.raises(SpecError) as caught:
        write_study("ext4,xfs", "rw=randwrite exec_prerun=ls", None, tmp_path / "results")
    assert "--allow-exec" in str(caught.value) and "study file" not in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_run_takes_a_study_file_or_a_one_line_study_not_both(tmp_path: Path) -> None:
    for argv in (["run"], ["run", "quickstart", "--fs", "ext4,xfs", "--fio", "rw=read"],
                 ["run", "--fs", "ext4,xfs"]):
        result = CliRunner().invoke(app, [*argv, "-r", str(tmp_path / "r")])
        assert isinstance(result.exception, SpecError) and "one-line study" in str(result.exception)
    assert not (tmp_path / "r").exists()
