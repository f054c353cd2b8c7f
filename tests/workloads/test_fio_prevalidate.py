"""A study's fio option sets are checked by one `fio --parse-only` of them all (a start of
fio costs 0.1-0.2 s of CPU, seed-002's plan has 50 sets); a set fio rejects still fails
with the error naming its own workload and option."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fslab.errors import SpecError
from fslab.study import load_spec
from fslab.workloads import fio

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")

STUDY = """
[study]
name = "prevalidate"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "a"
rw = "randread"
size = "16M"
[workloads.axes]
bs = ["4k", "8k", "16k"]
iodepth = [1, 4]

[[workloads]]
kind = "fio"
name = "b"
rw = "write"
size = "32M"
{extra}
"""


@pytest.fixture
def parse_only_files(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The job file of each `fio --parse-only` run, with fio's caches emptied."""
    fio._parse_only.cache_clear()
    fio._ACCEPTED.clear()
    files: list[str] = []
    real = fio.run_command

    def recording(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if "--parse-only" in argv:
            files.append(Path(argv[-1]).read_text())
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(fio, "run_command", recording)
    yield files
    fio._parse_only.cache_clear()
    fio._ACCEPTED.clear()


def _sections(files: list[str]) -> list[int]:
    """The number of job sections of each `fio --parse-only` run."""
    return [text.count("\n[job") for text in files]


def test_a_studys_option_sets_are_checked_by_one_start_of_fio(parse_only_files: list[str], tmp_path: Path) -> None:
    from fslab.backends import choose_backend
    from fslab.plan import make_plan

    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(extra=""))
    spec, source, _ = load_spec(str(study))
    # Loading checks the first combination and each axis value of each workload (a, with
    # bs 4k..16k and iodepth 1 and 4, and b): 5 distinct sets, one start of fio.
    assert _sections(parse_only_files) == [5]
    plan = make_plan(spec, backends=choose_backend, quick=False, source=source)
    assert len(plan.cells) == 6 + 1
    # Planning crosses a's axes (6 sets, 2 of them not seen yet: bs 8k and 16k at iodepth 4)
    # and b: one start more.
    assert _sections(parse_only_files) == [5, 2]


def test_an_option_fio_rejects_is_named_with_its_workload(parse_only_files: list[str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(extra="iodeptth = 4"))
    with pytest.raises(SpecError) as info:
        load_spec(str(study))
    assert "workloads[1].iodeptth" in str(info.value) and "fio rejects it" in str(info.value)
    # The file of all 5 sets was refused; then workload a's 4 sets were accepted together,
    # and b's set, asked alone, was the one refused.
    assert _sections(parse_only_files) == [5, 4, 1]


def test_a_set_that_would_load_code_never_reaches_fio(parse_only_files: list[str], tmp_path: Path) -> None:
    """An external ioengine is a shared object fio may load while it parses: without
    --allow-exec the study is refused before fio sees it, and with it the set is asked
    alone, never in a file of all the sets."""
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(extra='ioengine = "external:/nonexistent/engine.so"'))
    with pytest.raises(SpecError, match=r"workloads\[1\]\.ioengine.*--allow-exec"):
        load_spec(str(study))
    assert not any("external:" in text for text in parse_only_files)
    parse_only_files.clear()
    with pytest.raises(SpecError):  # fio cannot load it: named, as before
        load_spec(str(study), allow_exec=True)
    assert [text.count("\n[job") for text in parse_only_files if "external:" in text] == [1]
