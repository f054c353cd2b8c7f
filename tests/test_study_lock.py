"""The study lock: one running study per results directory, and the status a reader shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.study_lock import shown_status, study_lock, study_running


def test_a_held_lock_reads_running_and_refuses_a_second_holder(tmp_path: Path) -> None:
    assert not study_running(tmp_path)  # no lock file yet
    with study_lock(tmp_path):
        assert study_running(tmp_path)
        assert shown_status("running", tmp_path) == "running"
        assert (tmp_path / ".lock").read_text().strip().isdigit()  # the holder's pid, for the message
        with pytest.raises(FslabError, match=r"another fslab \(pid \d+\) is running a study"):
            with study_lock(tmp_path):
                pass
    assert not study_running(tmp_path)


def test_a_running_study_without_a_holder_was_interrupted(tmp_path: Path) -> None:
    with study_lock(tmp_path):
        pass
    assert shown_status("running", tmp_path) == "interrupted"
    assert shown_status("complete", tmp_path) == "complete"
    assert shown_status("running", tmp_path / "gone") == "interrupted"


def test_a_finished_study_with_failed_runs_does_not_read_as_a_plain_success(tmp_path: Path) -> None:
    assert shown_status("complete", tmp_path, runs=4, failed=0) == "complete"
    assert shown_status("complete", tmp_path, runs=4, failed=1) == "complete, 1 of 4 runs failed"
    assert shown_status("complete", tmp_path, runs=4, failed=4) == "complete, but every run failed"
