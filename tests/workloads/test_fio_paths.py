"""Every fio option that names a path stays in the run's folder (or on the file system under
test) or is refused when the study is read: inline, as an axis value, in a job file, in a
file it includes, and in the job file's own name. A relative log is written for real beside
the run's results."""

import subprocess
import sys
from pathlib import Path

import pytest

from fio_studies import write_fio_study
from fslab.errors import SpecError
from fslab.runner import run_study
from fslab.study import load_spec
from fslab.workloads import WORKLOADS, ParamError
from fslab.workloads.fio import read_job_files, write_job_files
from fslab.workloads.fio_paths import path_problem

BASE = 'rw = "write"\nbs = "64k"\nsize = "4M"\n'

ESCAPES = ["/etc/passwd", "../../x", "a/../../x", "${HOME}/x", "~/x"]
# fio's HOWTO (3.33): every option whose value is a path fio writes or reads.
LOGS = ["write_iolog", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log"]
UNDER_TEST = ["filename", "filename_format"]
REFUSED = [("read_iolog", "log.txt"), ("replay_redirect", "/dev/sda"), ("merge_blktrace_file", "m.bin"),
           ("profile", "act"), ("directory", "sub"), ("opendir", "sub"), ("mem", "mmaphuge:/hugetlbfs/f"),
           ("buffer_pattern", "'/etc/shadow'"), ("ioengine", "nfs"), ("ioengine", "net"),
           ("ioengine", "rbd"), ("ioscheduler", "../../x"), ("cgroup", "../../x")]


def write_study(tmp_path: Path, workload: str) -> Path:
    return write_fio_study(tmp_path, workload, name="paths")


@pytest.mark.parametrize("key", LOGS + UNDER_TEST)
@pytest.mark.parametrize("value", ESCAPES)
def test_a_path_option_leading_outside_is_refused_naming_field_and_file(tmp_path, key, value):
    path = write_study(tmp_path, BASE + f'{key} = "{value}"')
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert err.value.field == f"workloads[0].{key}" and err.value.source == str(path)
    assert "outside" in str(err.value)


@pytest.mark.parametrize("key,value", REFUSED)
def test_options_fslab_cannot_confine_are_refused(tmp_path, key, value):
    path = write_study(tmp_path, BASE + f'{key} = "{value}"')
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert err.value.field == f"workloads[0].{key}"


def test_relative_names_pass():
    for key in LOGS:
        assert path_problem(key, "mylog") is None
    assert path_problem("filename", "data/a:data/b") is None
    assert path_problem("ioengine", "libaio") is None and path_problem("ioscheduler", "mq-deadline") is None
    assert path_problem("cgroup", "fslab-test") is None and path_problem("mem", "malloc") is None


def test_an_axis_value_leading_outside_is_refused(tmp_path):
    workload = BASE + '[workloads.axes]\nwrite_bw_log = ["bw", "/etc/cron.d/x"]'
    with pytest.raises(SpecError) as err:
        load_spec(str(write_study(tmp_path, workload)))
    assert err.value.field == "workloads[0].axes.write_bw_log[1]"


@pytest.mark.parametrize("line,what", [
    ("write_iolog=/etc/passwd", "write_iolog"), ("write_lat_log = ../../lat", "write_lat_log"),
    ("filename=${HOME}/f", "filename"), ("replay_redirect=/dev/sda", "replay_redirect"),
    ("read_iolog=trace.bin", "read_iolog"), ("[../../escape]", "job name"),
])
def test_a_job_file_line_leading_outside_is_refused_with_its_line(tmp_path, line, what):
    job = tmp_path / "job.fio"
    job.write_text(f"[global]\nsize=4M\n[one]\nrw=write\n{line}\n")
    with pytest.raises(SpecError) as err:
        read_job_files(job, allow_exec=True)
    assert err.value.source == str(job) and err.value.field == "line 5" and what in str(err.value)
    # A job JSON from elsewhere is checked again when the file is written for a run.
    with pytest.raises(SpecError):
        write_job_files({"job.fio": job.read_text()}, tmp_path / "copy", allow_exec=True)


def test_a_job_file_or_include_outside_the_study_folder_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.fio"
    outside.write_text("[one]\nrw=write\nsize=4M\n")
    study_dir = tmp_path / "study"
    study_dir.mkdir()
    fio = WORKLOADS.get("fio")
    for given in (str(outside), "../elsewhere.fio"):
        with pytest.raises(ParamError) as err:
            fio.inputs({"job_file": given}, study_dir, False)
        assert err.value.key == "job_file" and "study file's folder" in str(err.value)
    (study_dir / "link.fio").symlink_to(outside)
    with pytest.raises(ParamError, match="leads outside"):
        fio.inputs({"job_file": "link.fio"}, study_dir, False)
    job = study_dir / "job.fio"
    for include in (str(outside), "../elsewhere.fio"):
        job.write_text(f"[global]\nsize=4M\ninclude {include}\n")
        with pytest.raises(SpecError) as err:
            read_job_files(job, allow_exec=True)
        assert err.value.field == "line 3" and "outside the job file's folder" in str(err.value)
    (study_dir / "inc").mkdir()
    (study_dir / "inc" / "common.fio").write_text("bs=4k\n")
    job.write_text("[global]\nsize=4M\ninclude inc/common.fio\n[one]\nrw=write\n")
    assert "include1-common.fio" in fio.inputs({"job_file": "job.fio"}, study_dir, False)


def test_plan_exits_2_naming_field_file_and_fix(tmp_path):
    path = write_study(tmp_path, BASE + 'write_iolog = "/etc/passwd"')
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "plan", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "workloads[0].write_iolog" in done.stderr and str(path) in done.stderr
    assert "relative name" in done.stderr and "Traceback" not in done.stderr


def test_a_relative_log_is_written_beside_the_run(device_support, tmp_path):
    path = write_study(tmp_path, BASE + 'write_iolog = "iolog.txt"\nwrite_bw_log = "bw"')
    outcome = run_study(str(path), results_dir=tmp_path / "results")
    assert outcome.runs_done == 1 and outcome.runs_failed == 0
    artifacts = tmp_path / "results" / "artifacts"
    logs = sorted(p.name for p in artifacts.rglob("*") if p.name.startswith(("iolog", "bw")))
    assert "iolog.txt" in logs and any(name.startswith("bw_bw") for name in logs)
    assert not list(tmp_path.glob("iolog*")) and not list(Path.cwd().glob("iolog.txt"))
