"""`python -m fslab.job serve DIR` on the host: the server a guest session runs, with the
null study's real jobs (fake device, null file system: no root needed). Each request runs
in a child of one import, its status comes back as a file, a child that dies or a job
that fails is a status and the server goes on, and ``stop`` ends it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import fslab
from fslab.job.entry import write_job
from fslab.job.folder import JobFolder
from test_jobs import null_plan  # same folder, on sys.path under pytest

ENV = {**os.environ, "PYTHONPATH": str(Path(fslab.__file__).resolve().parents[1])}


def _request(folder: Path, n: int, argv: list[str]) -> None:
    tmp = folder / f".req-{n}.json"
    tmp.write_text(json.dumps({"argv": argv, "disks": []}))
    tmp.rename(folder / f"req-{n}.json")


@contextlib.contextmanager
def _server(serve_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m fslab.job serve DIR` on the host, killed at the end if still running."""
    serve_dir.mkdir()
    server = subprocess.Popen([sys.executable, "-m", "fslab.job", "serve", str(serve_dir)], env=ENV)
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _status(folder: Path, n: int, timeout_s: float = 120.0) -> int:
    end = time.monotonic() + timeout_s
    while not (folder / f"status-{n}").exists():
        assert time.monotonic() < end, f"no status-{n} within {timeout_s} s"
        time.sleep(0.05)
    return int((folder / f"status-{n}").read_text())


def test_the_server_runs_each_request_in_a_child_and_stops_when_asked(tmp_path):
    plan = null_plan(tmp_path, fresh="run")
    jobs = plan.jobs[:2]
    serve_dir = tmp_path / "serve"
    with _server(serve_dir) as server:
        folders = []
        for n, job in enumerate(jobs):
            folder = JobFolder(tmp_path / f"job-{n}").make()
            write_job(job, folder.job_file)
            _request(serve_dir, n, ["run", str(folder.job_file), "--out", str(folder.path)])
            folders.append(folder)
        # A job file that is no job: the job's error, as status 2, and the server goes on.
        _request(serve_dir, 2, ["run", str(tmp_path / "missing.json"), "--out", str(tmp_path / "job-x")])
        statuses = [_status(serve_dir, n) for n in range(3)]
        assert statuses == [0, 0, 2]
        assert "missing.json" in (serve_dir / "err-2").read_text()
        for job, folder in zip(jobs, folders, strict=True):
            assert sorted(r.run_key for r in folder.records()) == sorted(r.key for r in job.runs)
            assert all(r.status == "ok" for r in folder.records())
        (serve_dir / "stop").touch()
        assert server.wait(timeout=30) == 0


def test_a_child_killed_by_a_signal_is_a_status_and_the_server_goes_on(tmp_path):
    """The status of a child that died by signal N is 128+N, as a shell says it."""
    plan = null_plan(tmp_path, fresh="run", sleep=60.0)
    slow = next(j for j in plan.jobs if any(r.cell.workload == "slow" for r in j.runs))
    serve_dir = tmp_path / "serve"
    with _server(serve_dir) as server:
        folder = JobFolder(tmp_path / "job").make()
        write_job(slow, folder.job_file)
        _request(serve_dir, 0, ["run", str(folder.job_file), "--out", str(folder.path)])
        child = _child_of(server.pid)
        os.kill(child, signal.SIGKILL)
        assert _status(serve_dir, 0) == 128 + signal.SIGKILL
        _request(serve_dir, 1, ["run", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")])
        assert _status(serve_dir, 1) == 2
        (serve_dir / "stop").touch()
        assert server.wait(timeout=30) == 0


def _child_of(pid: int, timeout_s: float = 60.0) -> int:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError(f"the server {pid} forked no child within {timeout_s} s")


FIO_STUDY = """
[study]
name = "warm"
repetitions = 1

[device]
size = "64MiB"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "w"
rw = "randwrite"
bs = "4k"
size = "4M"
runtime = 1
time_based = 1
"""


def test_the_server_computes_once_what_every_child_would(tmp_path, monkeypatch):
    """warm() fills the caches a child inherits: the tools' versions and executables' files."""
    import tomllib

    from fslab import commands, provenance, toolpages
    from fslab.backends import choose_backend
    from fslab.job.serve import warm
    from fslab.plan import make_plan
    from fslab.study import parse_spec

    spec = parse_spec(tomllib.loads(FIO_STUDY), "warm.toml")
    (job,) = make_plan(spec, backends=choose_backend, source="warm.toml", study_dir=tmp_path).jobs
    job_file = tmp_path / "job.json"
    write_job(job, job_file)
    monkeypatch.setattr(toolpages, "_FILES", {})
    monkeypatch.setattr(commands, "_VERSIONS", {})
    # The file system's tool is asked through fs_tool_version (its cache is commands'),
    # which finds nothing to ask where mke2fs is not on PATH: recorded here either way.
    fs_asked: list[str] = []
    real_fs_version = provenance.fs_tool_version
    monkeypatch.setattr(provenance, "fs_tool_version", lambda fs: fs_asked.append(fs) or real_fs_version(fs))
    warm(["run", str(job_file), "--out", str(tmp_path / "out")])
    assert any(Path(path).name == "fio" for path, *_ in toolpages._FILES)
    assert ("fio", "--version") in {argv for argv, *_ in commands._VERSIONS}
    assert fs_asked == ["ext4"]
    assert not (tmp_path / "out").exists()  # nothing of the job was done


def test_a_job_gets_the_signal_dispositions_of_a_job_in_a_fresh_guest(tmp_path):
    """The session starts the server in the background of `sh -c` (as a shell starts an
    asynchronous list, with SIGINT and SIGQUIT ignored); a job run in a fresh guest by its
    agent ignores neither, nor may the tools it starts."""
    plan = null_plan(tmp_path, fresh="run", sleep=60.0)
    slow = next(j for j in plan.jobs if any(r.cell.workload == "slow" for r in j.runs))
    serve_dir = tmp_path / "serve"
    serve_dir.mkdir()
    pid_file = tmp_path / "server.pid"
    subprocess.run(["sh", "-c", f"{sys.executable} -m fslab.job serve {serve_dir} > /dev/null 2>&1 < /dev/null & "
                    f"echo $! > {pid_file}"], env=ENV, check=True)
    server = int(pid_file.read_text())
    try:
        folder = JobFolder(tmp_path / "job").make()
        write_job(slow, folder.job_file)
        _request(serve_dir, 0, ["run", str(folder.job_file), "--out", str(folder.path)])
        child = _child_of(server)
        end = time.monotonic() + 60
        while not (folder.path / "work").exists():  # the job has begun (its child set itself up)
            assert time.monotonic() < end, "the job did not begin within 60 s"
            time.sleep(0.05)
        ignored = next(int(line.split()[1], 16) for line in Path(f"/proc/{child}/status").read_text().splitlines()
                       if line.startswith("SigIgn:"))
        assert ignored & (1 << (signal.SIGINT - 1) | 1 << (signal.SIGQUIT - 1)) == 0, hex(ignored)
        os.kill(child, signal.SIGINT)  # the job unwinds as it would on Ctrl-C
        assert _status(serve_dir, 0, timeout_s=30) == 130
    finally:
        os.kill(server, signal.SIGKILL)


PRELOAD_CHECK = """
import json, sys
from pathlib import Path
from fslab.job.serve import warm
before = set(sys.modules)
warm(["run", sys.argv[1], "--out", sys.argv[2]])
loaded = set(sys.modules) - before
print(json.dumps({m: m in loaded for m in ("numpy", "pyarrow.parquet", "fslab.trace.capture",
                                            "fslab.analysis.traces", "pydantic", "fslab.fragmentation")}))
"""


@pytest.mark.parametrize("extra,expected", [
    ("", set()),
    ("trace = true", {"numpy", "pyarrow.parquet", "fslab.trace.capture", "fslab.analysis.traces"}),
    ('aging = { fill = 0.5, seed = 1 }', {"pydantic", "fslab.fragmentation"}),
])
def test_the_server_imports_once_what_a_traced_or_aged_jobs_children_would(tmp_path, extra, expected):
    """In a fresh interpreter (the job server's): warm() of a traced job loads numpy, the
    trace reader and analysis and pyarrow's Parquet writer, of an aged job the aging option's
    pydantic model and the layout facts, and of a plain fio job none of them."""
    import tomllib

    from fslab.backends import choose_backend
    from fslab.plan import make_plan
    from fslab.study import parse_spec

    if extra.startswith("trace"):  # a [study] field
        text = FIO_STUDY.replace("repetitions = 1\n", f"repetitions = 1\n{extra}\n")
    else:  # a workload's
        text = FIO_STUDY + extra + "\n"
    spec = parse_spec(tomllib.loads(text), "warm.toml")
    (job,) = make_plan(spec, backends=choose_backend, source="warm.toml", study_dir=tmp_path).jobs
    job_file = tmp_path / "job.json"
    write_job(job, job_file)
    done = subprocess.run([sys.executable, "-c", PRELOAD_CHECK, str(job_file), str(tmp_path / "out")],
                          capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert {m for m, yes in loaded.items() if yes} == expected, loaded
    assert not (tmp_path / "out").exists()  # nothing of the job was done
