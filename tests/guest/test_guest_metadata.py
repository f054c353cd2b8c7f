"""fs_mark and PostMark in the guest on f2fs (which this host's kernel lacks): the host's
tools reach the guest over the 9p root, run through the same job entry, and store the
numbers they printed, labelled with the guest backend."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.runner import run_study
from fslab.store import Store
from fslab.workloads.fsmark import metrics_from
from fslab.workloads.fsmark import parse_output as parse_fsmark
from fslab.workloads.postmark import parse_output as parse_postmark

pytestmark = [pytest.mark.guest,
              pytest.mark.skipif(shutil.which("fs_mark") is None or shutil.which("postmark") is None,
                                 reason="needs fsmark and postmark (make setup)")]

STUDY = """
[study]
name = "metadata workloads in the guest"
repetitions = 1
order = "in-order"
backend = "guest"

[device]
size = "512MiB"

[filesystems.f2fs]

[[workloads]]
kind = "fsmark"
name = "fsmark"
files = 200
sync = "fsync"

[[workloads]]
kind = "postmark"
name = "postmark"
files = 500
transactions = 10000
"""


def test_fsmark_and_postmark_on_f2fs_in_the_guest(guest_build: GuestBuild, tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    results = tmp_path / "results"
    assert run_study(str(study), results_dir=results).runs_failed == 0
    with Store(results, read_only=True) as store:
        runs = {r["cell"]["workload"]: r for r in store.runs(store.study().id)}
    for name, run in runs.items():
        assert run["status"] == "ok" and run["cell"]["backend"] == "guest", name
        assert run["provenance"]["filesystem"]["mounted_as"] == "f2fs", name
    art = {name: results / run["artifact_dir"] for name, run in runs.items()}
    fsmark_text = (art["fsmark"] / "fsmark.out").read_text()
    fsmark = {k: v["value"] for k, v in runs["fsmark"]["metrics"].items()}
    assert fsmark["create_files_per_s"] == pytest.approx(
        metrics_from(parse_fsmark(fsmark_text), fsmark_text)["create_files_per_s"])
    postmark = {k: v["value"] for k, v in runs["postmark"]["metrics"].items()}
    expected, notes, counts = parse_postmark((art["postmark"] / "postmark.out").read_text(), 10000)
    assert counts["transaction_s"] >= 2 and notes == {}  # long enough under TCG to be timed
    assert {k: postmark[k] for k in expected} == pytest.approx(expected)
    assert postmark["transactions_per_s"] == pytest.approx(10000 / counts["transaction_s"])
