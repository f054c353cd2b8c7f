"""fio options that run programs as root (exec_prerun, exec_postrun, ioengine=exec, external
engines) are refused unless the user passes --allow-exec: inline in the study file when it
is read, and in a job file (or a file it includes) when the job file is copied. Allowed,
they run for real: a marker file proves it."""

from pathlib import Path

import pytest

from fio_studies import write_fio_study
from fslab.errors import SpecError
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import load_spec
from fslab.workloads.fio import JOB_FILE_INPUT, read_job_files, runs_program, write_job_files

INLINE = 'rw = "write"\nbs = "64k"\nsize = "4M"\nexec_prerun = "touch {marker}"'


def write_study(tmp_path: Path, workload: str) -> Path:
    return write_fio_study(tmp_path, workload, name="exec test")


def write_job_file(tmp_path: Path, marker: Path, name: str = "job.fio") -> Path:
    path = tmp_path / name
    path.write_text("; a user's job file\n[global]\nrw=write\nbs=64k\nsize=4M\n\n"
                    f"[one]\nexec_postrun = touch {marker}\n")
    return path


@pytest.mark.parametrize("key,value", [
    ("exec_prerun", "touch /tmp/x"), ("exec_postrun", "reboot"), ("ioengine", "exec"),
    ("ioengine", "external:/tmp/engine.so"), ("ioengine", "./engine.so"), ("program", "/bin/sh"),
    ("EXEC_PRERUN", "true"),
])
def test_options_that_run_programs_are_named(key, value):
    assert runs_program(key, value)


@pytest.mark.parametrize("key,value", [
    ("write_iolog", "log.txt"), ("read_iolog", "log.txt"), ("ioengine", "libaio"),
    ("ioengine", "psync"), ("description", "exec_prerun is refused"), ("name", "exec"),
])
def test_ordinary_options_are_not(key, value):
    assert runs_program(key, value) is None


def test_inline_exec_is_refused_when_the_study_is_read(tmp_path):
    path = write_study(tmp_path, INLINE.format(marker=tmp_path / "m"))
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert err.value.field == "workloads[0].exec_prerun"
    assert err.value.source == str(path)
    assert "--allow-exec" in str(err.value)
    spec, _, _ = load_spec(str(path), allow_exec=True)
    assert spec.workloads[0].params["exec_prerun"].startswith("touch")


def test_a_refused_study_leaves_no_results_directory(tmp_path):
    path = write_study(tmp_path, INLINE.format(marker=tmp_path / "m"))
    with pytest.raises(SpecError, match="--allow-exec"):
        run_study(str(path), results_dir=tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_exec_as_an_axis_value_is_refused(tmp_path):
    workload = 'rw = "write"\nsize = "4M"\n[workloads.axes]\nioengine = ["psync", "exec"]'
    with pytest.raises(SpecError) as err:
        load_spec(str(write_study(tmp_path, workload)))
    assert err.value.field == "workloads[0].axes.ioengine[1]"


def test_job_file_exec_is_refused_with_file_and_line(tmp_path):
    job = write_job_file(tmp_path, tmp_path / "m")
    with pytest.raises(SpecError) as err:
        read_job_files(job, allow_exec=False)
    assert err.value.source == str(job) and err.value.field == "line 8"
    assert "exec_postrun" in str(err.value) and "--allow-exec" in str(err.value)
    assert "exec_postrun" in read_job_files(job, allow_exec=True)[JOB_FILE_INPUT]


def test_exec_in_an_included_file_is_refused(tmp_path):
    inner = tmp_path / "inc" / "inner.fio"
    inner.parent.mkdir()
    inner.write_text("[two]\nrw=read\nexec_prerun=id\n")
    outer = tmp_path / "outer.fio"
    outer.write_text("[global]\nsize=1M\ninclude inc/inner.fio\n")
    with pytest.raises(SpecError) as err:
        read_job_files(outer, allow_exec=False)
    assert err.value.source == str(inner) and err.value.field == "line 3"
    # Allowed, the included file travels as an input of its own, which the job file names;
    # written out for a run, the copy names it absolutely (the copy lives elsewhere).
    inputs = read_job_files(outer, allow_exec=True)
    assert list(inputs) == [JOB_FILE_INPUT, "include1-inner.fio"]
    assert "include include1-inner.fio" in inputs[JOB_FILE_INPUT]
    assert inputs["include1-inner.fio"] == inner.read_text()
    written = write_job_files(inputs, tmp_path / "copy", allow_exec=True)
    assert f"include {(tmp_path / 'copy' / 'include1-inner.fio').resolve()}" in written.read_text()
    with pytest.raises(SpecError, match="exec_prerun"):  # a job JSON from elsewhere is checked again
        write_job_files(inputs, tmp_path / "copy2", allow_exec=False)
    outer.write_text("include missing.fio\n")
    with pytest.raises(SpecError, match="missing.fio"):
        read_job_files(outer, allow_exec=True)


def test_include_is_not_a_workload_parameter(tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(str(write_study(tmp_path, 'rw = "read"\nsize = "4M"\ninclude = "x.fio"')))
    assert err.value.field == "workloads[0].include"


def test_job_file_exec_refused_before_anything_is_made(device_support, tmp_path):
    marker = tmp_path / "job-marker"
    write_job_file(tmp_path, marker)
    path = write_study(tmp_path, 'job_file = "job.fio"')
    with pytest.raises(SpecError) as err:
        run_study(str(path), results_dir=tmp_path / "results")
    # The study's field and the job file's line, both named.
    assert err.value.source == str(path)
    assert f"workloads[0].job_file: {tmp_path / 'job.fio'}: line 8" in str(err.value)
    assert "exec_postrun" in str(err.value)
    assert not marker.exists()
    assert not list((tmp_path / "images").glob("*.img"))
    # Refused before anything ran: no study row of it either (no phantom "interrupted" one).
    assert not (tmp_path / "results" / "fslab.sqlite").exists() or not Store(tmp_path / "results").studies()


@pytest.mark.parametrize("where", ["inline", "job_file"])
def test_allowed_exec_runs_for_real(device_support, tmp_path, where):
    marker = tmp_path / f"{where}-marker"
    if where == "inline":
        workload = INLINE.format(marker=marker)
    else:
        write_job_file(tmp_path, marker)
        workload = 'job_file = "job.fio"'
    path = write_study(tmp_path, workload)
    assert not marker.exists()
    outcome = run_study(str(path), results_dir=tmp_path / "results", allow_exec=True)
    assert outcome.runs_done == 1 and outcome.runs_failed == 0
    assert marker.exists(), "fio's exec option did not run"
    # fio writes the command's output by relative name: it is kept with the run.
    kept = list((tmp_path / "results" / "artifacts").rglob("*run.txt"))
    assert [p.name for p in kept] == ["job.prerun.txt" if where == "inline" else "one.postrun.txt"]
