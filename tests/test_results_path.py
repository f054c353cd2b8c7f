"""A results folder whose path fio reads as syntax is refused before anything is made; one
with ':' (escaped for fio) runs; every command fslab prints to paste is shell-quoted, so a
path holding `$(...)` is passed as a name, never run."""

import os
import re
import subprocess
import sys

import pytest

from fio_studies import write_fio_study
from fslab.errors import FslabError
from fslab.runner import run_study

FSLAB = [sys.executable, "-m", "fslab.cli"]

NULL_STUDY = """
[study]
name = "quoting"
repetitions = 1
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w"
fail = {fail}
"""


@pytest.mark.parametrize("name", ["a;b", "a#b", "a${HOME}b", "a\nb"])
def test_a_results_path_fio_cannot_take_is_refused_before_anything_is_made(tmp_path, name):
    study = tmp_path / "s.toml"
    study.write_text(NULL_STUDY.format(fake=tmp_path / "fake", fail="false"))
    results = tmp_path / name / "r"
    with pytest.raises(FslabError, match="fio reads as job-file syntax") as err:
        run_study(str(study), results_dir=results)
    assert "--results" in str(err.value)
    assert not (tmp_path / name).exists()


def test_plan_refuses_the_results_path_a_run_would_refuse(tmp_path):
    # plan promises that what a run would refuse exits 2 there too
    study = tmp_path / "s.toml"
    study.write_text(NULL_STUDY.format(fake=tmp_path / "fake", fail="false"))
    results = tmp_path / "a;b" / "r"
    done = subprocess.run([*FSLAB, "plan", str(study), "-r", str(results)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "fio reads as job-file syntax" in done.stderr and "--results" in done.stderr
    assert not (tmp_path / "a;b").exists()


def test_a_results_path_with_a_colon_runs_fio(device_support, tmp_path):
    study = write_fio_study(tmp_path, 'rw = "write"\nbs = "64k"\nsize = "4M"', name="colon")
    outcome = run_study(str(study), results_dir=tmp_path / "a:b" / "r")
    assert outcome.runs_done == 1 and outcome.runs_failed == 0


def _pasted_commands(text: str) -> list[str]:
    return [c for c in re.findall(r"`([^`]+)`", " ".join(text.split())) if c.startswith("fslab ")]


def test_printed_commands_pass_a_hostile_path_as_one_argument(tmp_path):
    marker = tmp_path / "ran"
    results = tmp_path / f"r $(touch {marker}) 'x'"
    study = tmp_path / "s.toml"
    study.write_text(NULL_STUDY.format(fake=tmp_path / "fake", fail="true"))
    done = subprocess.run([*FSLAB, "run", str(study), "-r", str(results)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 1, done.stdout + done.stderr
    commands = _pasted_commands(done.stdout + done.stderr)
    assert any(" report " in c for c in commands) and any("--retry-failed" in c for c in commands), commands
    for command in commands:
        # Pasted into a shell, with `fslab` standing for a command that prints its arguments.
        shown = subprocess.run(["sh", "-c", "fslab() { printf '%s\\n' \"$@\"; }; " + command],
                               capture_output=True, text=True, timeout=10).stdout.splitlines()
        assert not marker.exists(), command
        if "-r" in shown:  # the results folder, as one argument
            assert shown[shown.index("-r") + 1] in (str(results), str(results.resolve())), (command, shown)
        assert "-r" in shown or "--run" in shown, (command, shown)
    assert sum(" -r " in c for c in commands) >= 2, commands
