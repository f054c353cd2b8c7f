"""`fslab run B.toml --resume` in a folder whose unfinished study came from A.toml resumes
nothing and starts nothing: it names the study it would have to resume (A's, with the
command that continues it) and how to start B as a new study."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from fslab.runner import run_study
from fslab.store import Store

STUDY = """
[study]
name = "{name}"
repetitions = 2
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w"
value = {value}
"""


def test_resume_of_another_study_file_is_refused_naming_the_unfinished_one(tmp_path: Path) -> None:
    a, b = tmp_path / "A.toml", tmp_path / "B.toml"
    a.write_text(STUDY.format(name="study A", fake=tmp_path / "fake", value=1.0))
    b.write_text(STUDY.format(name="study B", fake=tmp_path / "fake", value=2.0))
    results = tmp_path / "r"
    outcome = run_study(str(a), results_dir=results)
    with Store(results) as store:  # as a killed run of A leaves it
        store.set_status(outcome.study_id, "interrupted")
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(b), "-r", str(results), "--resume"],
                          capture_output=True, text=True, timeout=300)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"study {outcome.study_id} ('study A', from {a}" in said, said
    assert f"`fslab run {shlex.quote(str(a))} -r {shlex.quote(str(results))} --resume`" in said, said
    assert "without --resume" in said and "Traceback" not in said
    with Store(results, read_only=True) as store:
        assert [s.name for s in store.studies()] == ["study A"]  # nothing started
    # Its own file resumes as before.
    again = run_study(str(a), results_dir=results, resume=True)
    assert again.study_id == outcome.study_id
