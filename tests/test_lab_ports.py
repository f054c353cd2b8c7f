"""A closed lab: the scheduler and a worker started exactly as `fslab lab init` prints them
listen on their TLS port and nothing else (Dask's HTTP dashboard, which has no login, is not
served), read from the kernel's own table of listening sockets."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

FSLAB = str(Path(sys.executable).parent / "fslab")


def listening_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state held by ``pid`` (its sockets' inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def printed_commands(lab: Path) -> dict[str, list[str]]:
    done = subprocess.run([FSLAB, "lab", "init", str(lab)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    commands = {}
    for line in done.stdout.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # prose, not a command
            continue
        if words[:1] in (["fslab"], ["dask"]) and len(words) > 1:  # this environment's programs
            commands[words[1]] = [str(Path(sys.executable).parent / words[0]), *words[1:]]
    return commands


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(proc: subprocess.Popen[bytes], log: Path, text: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()[-2000:]
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_printed_scheduler_and_worker_listen_on_their_tls_port_only(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    commands = printed_commands(lab)
    assert "scheduler" in commands, commands  # the scheduler is started by a printed command
    port = free_port()
    scheduler_argv = [w.replace("SCHEDULER_IP", "127.0.0.1").replace("8786", str(port))
                      for w in commands["scheduler"]]
    scheduler = start(scheduler_argv, tmp_path / "scheduler.log")
    worker = None
    try:
        wait_for(scheduler, tmp_path / "scheduler.log", f"tls://127.0.0.1:{port}")
        time.sleep(1)  # anything it would open besides, it opens while starting
        assert listening_ports(scheduler.pid) == {port}, (tmp_path / "scheduler.log").read_text()[-2000:]
        worker_argv = [w.replace("SCHEDULER_IP", "127.0.0.1").replace("8786", str(port))
                       for w in commands["worker"]]
        worker_argv += ["--host", "127.0.0.1", "--scratch", str(tmp_path / "scratch"),
                        "--lock", str(tmp_path / "worker.lock")]
        worker = start(worker_argv, tmp_path / "worker.log")
        wait_for(worker, tmp_path / "worker.log", "Registered to")
        ports = listening_ports(worker.pid)
        # One port: the worker's own TLS listener, which the scheduler reaches it on.
        assert len(ports) == 1, (ports, (tmp_path / "worker.log").read_text()[-2000:])
        assert f":{ports.pop()}" in (tmp_path / "worker.log").read_text()
    finally:
        if worker is not None:
            stop(worker)
        stop(scheduler)
