"""fio's client/server mode on a private network: two `fio --server` in network namespaces
of their own drive one fio job against a loop-image ext4 both see (the study runs in a
third namespace; all processes share this machine's mounts, as hosts share storage).
Each server's own I/O log is the check on the per-host figures; a dead server fails the
run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.store import Store
from fslab.workloads import ParamError
from fslab.workloads.fio_clients import client_metrics, parse_clients
from netns import Network, netns_missing, private_network, wait_for

STUDY = """
[study]
name = "fio clients"
repetitions = 1

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "fio"
name = "shared-write"
rw = "write"
bs = "64k"
size = "16M"
direct = 1
write_iolog = "io.log"
clients = {clients}
"""


def nsenter(net: Network, role: str, argv: list[str]) -> list[str]:
    """Only the network namespace: the process keeps this machine's mounts (a new mount
    made by the study is seen by the servers, as shared storage is)."""
    return ["nsenter", f"--net=/run/netns/{net.members[role]}", *argv]


def start_server(net: Network, role: str, cwd: Path) -> subprocess.Popen[bytes]:
    cwd.mkdir(parents=True)
    log = open(cwd / "server.log", "wb")
    proc = subprocess.Popen(nsenter(net, role, ["fio", f"--server=ip:{net.addresses[role]},8765"]),
                            cwd=cwd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    net.processes.append(proc)
    return proc


def listening(net: Network, role: str) -> bool:
    out = subprocess.run(nsenter(net, role, ["ss", "-ltn"]), capture_output=True, text=True).stdout
    return f"{net.addresses[role]}:8765" in out


def iolog_writes(path: Path) -> tuple[int, set[str]]:
    """Bytes written according to a fio iolog (version 3: `time file action offset
    length`) in its last session, and the names of the files written."""
    total, files = 0, set()
    # fio appends a session per run: the layout (--create_only) first, the measured run last.
    last = path.read_text().split("fio version 3 iolog")[-1]
    for line in last.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[2] == "write":
            total += int(parts[4])
            files.add(Path(parts[1]).name)
    return total, files


@pytest.fixture
def network(device_support: None) -> Network:
    missing = netns_missing() or (None if shutil.which("nsenter") and shutil.which("fio") else "needs nsenter and fio")
    if missing:
        pytest.skip(missing)
    with private_network(["fio1", "fio2", "drv"]) as net:
        yield net


def run_study(net: Network, tmp_path: Path, clients: list[str]) -> subprocess.CompletedProcess[str]:
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(images=tmp_path / "images", clients=clients).replace("'", '"'))
    return subprocess.run(nsenter(net, "drv", [sys.executable, "-m", "fslab", "run", str(study),
                                               "-r", str(tmp_path / "results")]),
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "FSLAB_STATE_DIR": str(tmp_path / "state")})


def test_two_servers_one_job_per_host_figures(network: Network, tmp_path: Path) -> None:
    net = network
    for role in ("fio1", "fio2"):
        start_server(net, role, tmp_path / role)
    clients = [f"{net.addresses['fio1']}:8765", f"{net.addresses['fio2']}:8765"]
    for role in ("fio1", "fio2"):
        wait_for(lambda role=role: listening(net, role), 20, f"the fio server in {role}")
    done = run_study(net, tmp_path, clients)
    assert done.returncode == 0, done.stderr[-3000:]
    with Store(tmp_path / "results", read_only=True) as store:
        (run,) = store.runs(store.study().id)
    metrics = {name: m["value"] for name, m in run["metrics"].items()}
    assert metrics["clients_count"] == 2
    for index, role in enumerate(("fio1", "fio2")):
        # The server's own log of what it wrote (in its working directory).
        own, files = iolog_writes(tmp_path / role / "io.log")
        assert own == 16 << 20
        # On the shared file system each server wrote only its own file, named after it.
        assert files == {f"{net.addresses[role]}.job.0.0"}
        assert metrics[f"client{index}_write_io_bytes"] == own
        rate = metrics[f"client{index}_write_bw_bytes_per_s"]
        assert rate == pytest.approx(own / (metrics[f"client{index}_write_runtime_ms"] / 1000))
    assert metrics["write_io_bytes"] == 32 << 20
    # Both servers' direct writes reached the one device under test (its own counters).
    # (plus at most a journal commit of ext4's that fell in the window on a busy machine)
    assert 32 << 20 <= metrics["device_write_sectors_count"] * 512 <= (32 << 20) + (256 << 10)
    longest = max(metrics["client0_write_runtime_ms"], metrics["client1_write_runtime_ms"]) / 1000
    assert metrics["bw_bytes_per_s"] == pytest.approx((32 << 20) / longest)
    print({k: round(v) for k, v in metrics.items() if "write" in k})


def test_a_dead_server_fails_the_run(network: Network, tmp_path: Path) -> None:
    net = network
    start_server(net, "fio1", tmp_path / "fio1")
    wait_for(lambda: listening(net, "fio1"), 20, "the fio server in fio1")
    clients = [f"{net.addresses['fio1']}:8765", f"{net.addresses['fio2']}:8765"]  # none on fio2
    done = run_study(net, tmp_path, clients)
    assert done.returncode == 1, done.stderr[-3000:]
    with Store(tmp_path / "results", read_only=True) as store:
        (run,) = store.runs(store.study().id)
    assert run["status"] == "failed"
    assert f"1 of 2 fio servers reported; missing: {clients[1]}" in run["error"], run["error"]


def test_clients_option_and_all_clients_entry() -> None:
    assert parse_clients(["10.0.0.1", "h2:9000"]) == ["10.0.0.1:8765", "h2:9000"]
    for bad in ([], ["h:0"], ["a b"], ["h:1", "h:1"]):
        with pytest.raises(ParamError):
            parse_clients(bad)
    # fio's "All clients" entry sums job_runtime over hosts: it must not be a host, and
    # the totals come from each host's bytes over the longest host's runtime.
    def entry(host: str, io_bytes: int, runtime_ms: int) -> dict:
        return {"jobname": "j", "hostname": host, "port": 8765, "error": 0,
                "write": {"io_bytes": io_bytes, "total_ios": io_bytes // 4096, "runtime": runtime_ms}}
    report = {"client_stats": [entry("a", 4096000, 1000), entry("b", 8192000, 2000),
                               {**entry("b", 12288000, 3000), "jobname": "All clients"}]}
    metrics, runtime_s = client_metrics(report, ["a:8765", "b:8765"], "")
    assert runtime_s == 2.0 and metrics["client1_write_bw_bytes_per_s"] == 4096000
    assert metrics["bw_bytes_per_s"] == 12288000 / 2.0
