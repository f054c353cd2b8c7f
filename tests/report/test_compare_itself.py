"""`fslab compare` of a study with itself (R R, R R:1, one file system twice) is refused,
saying why and what to compare instead; two studies of one folder still compare."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.report.compare import resolve_sides
from fslab.runner import run_study

STUDY = """
[study]
name = "{name}"
repetitions = 3
drop_caches = false
[device]
kind = "fake"
directory = "{fake}"
[filesystems.null]
[filesystems.other]
type = "null"
[[workloads]]
kind = "null"
name = "w"
"""


def test_a_study_compared_with_itself_is_refused(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(name="one", fake=tmp_path / "fake"))
    results = tmp_path / "r"
    first = run_study(str(study), results_dir=results).study_id
    for a, b in ((str(results), str(results)), (str(results), f"{results}:{first}"),
                 (f"{tmp_path}/./r", str(results)), ("null", "null")):
        with pytest.raises(FslabError, match="the same runs") as err:
            resolve_sides(a, b, results, None)
        assert "two file systems of one study" in str(err.value)
    a, b = resolve_sides("null", "other", results, None)  # two file systems of one study
    assert (a.filesystem, b.filesystem) == ("null", "other")
    study.write_text(STUDY.format(name="two", fake=tmp_path / "fake"))
    second = run_study(str(study), results_dir=results).study_id
    a, b = resolve_sides(f"{results}:{first}", f"{results}:{second}", results, None)
    assert (a.study_id, b.study_id) == (first, second)
