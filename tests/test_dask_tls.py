"""The lab network: a Dask scheduler and two fslab workers over mutual TLS with a lab made
by `fslab lab init`, each in its own network namespace, and a stranger's namespace on the
same network. A study runs through it; a client or worker without the lab's certificate
is refused by the real TLS handshake and nothing it sent runs (a marker file the
submitted function would write stays absent, while the same function sent with the lab's
driver certificate writes its own); plaintext is refused without --insecure."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dask_cluster import Cluster, running_cluster
from fslab.executors.lab import init_lab
from fslab.store import Store
from netns import netns_missing

pytest.importorskip("distributed", reason="the Dask executor needs `pip install -e '.[dask]'`")
pytest.importorskip("cryptography", reason="fslab lab init needs `pip install -e '.[dask]'`")

STUDY = """
[study]
name = "tls"
repetitions = 1
order = "in-order"

[device]
size = "64MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "null"
name = "null"
sleep = 1.0
[workloads.axes]
value = [1.0, 2.0, 3.0, 4.0]
"""

# Run in the stranger's namespace. The control (the lab's driver certificate) writes its
# markers through the scheduler (Client.run) and straight to a worker (its "run" handler):
# both paths work, so the attempts below fail for want of a certificate, not of a path.
ATTEMPTS = r"""
import asyncio, json, ssl, sys
from pathlib import Path
from distributed import Client
from distributed.core import rpc
from distributed.protocol.pickle import dumps
from distributed.security import Security

lab, other, markers, sched = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]

def mark(name):
    def write():
        (markers / name).write_text("ran")
    return write

def driver_security(d, ca):
    return Security(tls_ca_file=str(ca), tls_client_cert=str(d / "driver.pem"),
                    tls_client_key=str(d / "driver-key.pem"), require_encryption=True)

def context(ca, cert_dir=None):
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
    ctx.check_hostname = False
    if cert_dir is not None:
        ctx.load_cert_chain(str(cert_dir / "driver.pem"), str(cert_dir / "driver-key.pem"))
    return ctx

async def worker_run(address, name, **connection_args):
    async with rpc(address, connection_args=connection_args, timeout=4) as worker:
        await worker.run(function=dumps(mark(name)))

outcome = {}
c = Client(f"tls://{sched}", timeout="20s", security=driver_security(lab, lab / "ca.pem"))
workers = sorted(c.scheduler_info(n_workers=-1)["workers"])
c.run(mark("control-via-scheduler"))
c.close()
asyncio.run(worker_run(workers[0], "control-direct", ssl_context=context(lab / "ca.pem", lab)))

def attempt(name, action):
    try:
        action()
        outcome[name] = "accepted"
    except Exception as exc:
        chain, seen = [], exc
        while seen is not None and len(chain) < 4:  # why the comm closed, as far as told
            chain.append(f"{type(seen).__name__}: {seen}"[:160])
            seen = seen.__cause__ or seen.__context__
        outcome[name] = "refused: " + " <- ".join(chain)

def via_client(address, security, name):
    def action():
        c = Client(address, timeout="4s", security=security)
        try:
            c.submit(mark(name), pure=False).result(timeout=10)
            c.run(mark(name + "-run"))
        finally:
            c.close()
    return action

attempt("client-plaintext", via_client(f"tcp://{sched}", None, "client-plaintext"))
attempt("client-other-ca", via_client(f"tls://{sched}", driver_security(other, lab / "ca.pem"), "client-other-ca"))
for i, w in enumerate(workers):
    host_port = w.split("://", 1)[1]
    attempt(f"worker{i}-plaintext",
            lambda: asyncio.run(worker_run(f"tcp://{host_port}", f"worker{i}-plaintext")))
    attempt(f"worker{i}-no-cert",
            lambda: asyncio.run(worker_run(w, f"worker{i}-no-cert", ssl_context=context(lab / "ca.pem"))))
    attempt(f"worker{i}-other-ca",
            lambda: asyncio.run(worker_run(w, f"worker{i}-other-ca", ssl_context=context(lab / "ca.pem", other))))
print(json.dumps({"workers": workers, "outcome": outcome}))
"""

# A plain Dask worker (no fslab probe in front) holding a certificate of another CA.
RAW_WORKER = r"""
import asyncio, sys
from distributed import Worker
from distributed.security import Security
d, sched = sys.argv[1], sys.argv[2]
s = Security(tls_ca_file=f"{d}/ca.pem", tls_worker_cert=f"{d}/worker.pem", tls_worker_key=f"{d}/worker-key.pem",
             require_encryption=True)
async def main():
    async with Worker(f"tls://{sched}", nthreads=1, name="stranger", security=s, death_timeout=6):
        pass
try:
    asyncio.run(main())
except Exception as exc:
    print("refused:", type(exc).__name__, exc)
    sys.exit(3)
print("joined")
"""


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The lab (`fslab lab init`, as a user runs it) and a stranger's lab (another CA)."""
    root = tmp_path_factory.mktemp("labs")
    done = subprocess.run([sys.executable, "-m", "fslab", "lab", "init", str(root / "lab")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "fslab scheduler --tls" in done.stdout and "fslab worker tls://" in done.stdout
    init_lab(root / "other", common_name="someone else")
    return root / "lab", root / "other"


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, labs: tuple[Path, Path]) -> Iterator[Cluster]:
    missing = netns_missing()
    if missing:
        pytest.skip(missing)
    with running_cluster(tmp_path_factory.mktemp("dask-tls"), lab=labs[0], extra_roles=("stranger",)) as cluster:
        yield cluster


def test_lab_init_keeps_its_keys_to_root(labs: tuple[Path, Path]) -> None:
    lab, _ = labs
    assert stat.S_IMODE(lab.stat().st_mode) == 0o700
    keys = sorted(p.name for p in lab.iterdir() if p.name.endswith("-key.pem"))
    assert keys == ["ca-key.pem", "driver-key.pem", "scheduler-key.pem", "worker-key.pem"]
    assert all(stat.S_IMODE((lab / k).stat().st_mode) == 0o600 for k in keys)
    for role in ("scheduler", "worker", "driver"):  # signed by the lab's CA, and only by it
        ok = subprocess.run(["openssl", "verify", "-CAfile", str(lab / "ca.pem"), str(lab / f"{role}.pem")],
                            capture_output=True, text=True)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        other = subprocess.run(["openssl", "verify", "-CAfile", str(labs[1] / "ca.pem"), str(lab / f"{role}.pem")],
                               capture_output=True, text=True)
        assert other.returncode != 0
    again = subprocess.run([sys.executable, "-m", "fslab", "lab", "init", str(lab)], capture_output=True, text=True)
    assert again.returncode == 2 and "already holds a lab" in again.stderr


def test_a_study_runs_through_a_tls_scheduler_and_two_tls_workers(tls_cluster: Cluster, tmp_path: Path) -> None:
    study = tmp_path / "s" / "study.toml"
    study.parent.mkdir()
    study.write_text(STUDY.format(images=tmp_path / "s" / "images"))
    results = tmp_path / "results"
    done = tls_cluster.fslab_run(study, results)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--insecure" not in done.stderr
    with Store(results, read_only=True) as store:
        runs = store.runs(store.study().id)
    assert len(runs) == 4 and all(r["status"] == "ok" for r in runs)
    workers = {r["provenance"]["worker"]["name"]: r["provenance"]["worker"]["address"] for r in runs}
    assert set(workers) == {"w1", "w2"}, workers  # both machines took jobs
    assert all(address.startswith("tls://") for address in workers.values()), workers


def test_without_the_lab_certificate_nothing_runs_on_the_workers(tls_cluster: Cluster, labs: tuple[Path, Path],
                                                                  tmp_path: Path) -> None:
    lab, other = labs
    markers = tmp_path / "markers"
    markers.mkdir()
    os.chmod(markers, 0o777)
    done = tls_cluster.net.run("stranger", [sys.executable, "-c", ATTEMPTS, str(lab), str(other), str(markers),
                                            tls_cluster.scheduler], timeout=240, env=tls_cluster.env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    outcome = report["outcome"]
    assert len(report["workers"]) == 2 and len(outcome) == 8, report
    # Every attempt without the lab's certificate failed in the connection (not in this
    # script: the control above went the same ways).
    refused = {name: why for name, why in outcome.items() if why.startswith("refused: CommClosedError")
               or why.startswith("refused: FatalCommClosedError")}
    assert refused == outcome, outcome
    ran = sorted(p.name for p in markers.iterdir())
    # The lab's driver certificate ran the same function both ways (twice through the
    # scheduler: once per worker); nothing else ran anywhere.
    assert ran == ["control-direct", "control-via-scheduler"], ran
    print(json.dumps(outcome, indent=1))


def test_a_worker_with_a_certificate_from_another_ca_is_refused(tls_cluster: Cluster, labs: tuple[Path, Path],
                                                                tmp_path: Path) -> None:
    lab, other = labs
    # It trusts the lab's CA (the public half is no secret) but its key is another CA's.
    mixed = tmp_path / "mixed"
    mixed.mkdir(mode=0o700)
    shutil.copy(lab / "ca.pem", mixed / "ca.pem")
    for name in ("worker.pem", "worker-key.pem"):
        shutil.copy2(other / name, mixed / name)
    net = tls_cluster.net
    fslab_worker = [sys.executable, "-m", "fslab", "worker", f"tls://{tls_cluster.scheduler}", "--name", "stranger",
                    "--host", net.addresses["stranger"], "--scratch", str(tmp_path / "scratch"),
                    "--lock", str(tmp_path / "stranger.lock")]
    t0 = time.time()
    done = net.run("stranger", [*fslab_worker, "--tls", str(mixed)], timeout=60, env=tls_cluster.env)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "refused this worker's certificate" in message and "copy that lab's ca.pem" in message, message
    # A worker of a wholly other lab does not trust the scheduler either.
    done = net.run("stranger", [*fslab_worker, "--tls", str(other)], timeout=60, env=tls_cluster.env)
    assert done.returncode == 2 and "is not of this lab" in " ".join(done.stderr.split()), done.stderr
    assert time.time() - t0 < 30  # said at once, not after Dask's retries
    # Dask's own worker, without fslab's handshake in front, does not join either.
    raw = net.run("stranger", [sys.executable, "-c", RAW_WORKER, str(mixed), tls_cluster.scheduler],
                  timeout=120, env=tls_cluster.env)
    assert raw.returncode == 3 and "refused" in raw.stdout, raw.stdout + raw.stderr[-2000:]
    assert tls_cluster.worker_names() == ["w1", "w2"]
    # A driver of another lab is told so before anything is planned or stored.
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(images=tmp_path / "images"))
    done = net.run("drv", [sys.executable, "-m", "fslab", "run", str(study), "-r", str(tmp_path / "r"),
                           "--executor", f"tls://{tls_cluster.scheduler}", "--tls", str(other)],
                   timeout=60, env=tls_cluster.env)
    assert done.returncode == 2 and "is not of this lab" in " ".join(done.stderr.split()), done.stderr[-2000:]


def test_plaintext_is_refused_without_insecure_with_the_fix(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(images=tmp_path / "images"))
    for argv in (["run", str(study), "-r", str(tmp_path / "r"), "--executor", "tcp://10.0.0.1:8786"],
                 ["run", str(study), "-r", str(tmp_path / "r"), "--executor", "dask://10.0.0.1:8786"],
                 ["worker", "10.0.0.1:8786", "--scratch", str(tmp_path / "scratch")]):
        done = subprocess.run([sys.executable, "-m", "fslab", *argv], capture_output=True, text=True, timeout=60)
        message = " ".join(done.stderr.split())
        assert done.returncode == 2, (argv, message)
        assert "pass --insecure to allow anyone who can reach 10.0.0.1:8786 to run code as root" in message, message
        assert "use tls://10.0.0.1:8786 with --tls DIR from `fslab lab init DIR`" in message, message
    assert not (tmp_path / "r").exists() and not (tmp_path / "scratch").exists()  # refused before anything


def test_access_flags_are_checked(tmp_path: Path) -> None:
    from fslab.errors import SpecError
    from fslab.executors.lab import scheduler_access

    init_lab(tmp_path / "lab")
    lab = tmp_path / "lab"
    assert scheduler_access("S", "10.0.0.1:1", "worker", lab, False).address == "tls://10.0.0.1:1"
    plain = scheduler_access("S", "10.0.0.1:1", "worker", None, True)
    assert plain.address == "tcp://10.0.0.1:1" and "run code as root" in (plain.warning() or "")
    for url, tls, insecure, words in (("tls://h:1", lab, True, "--insecure allows nothing"),
                                      ("tcp://h:1", lab, False, "use tls://h:1"),
                                      ("tls://h", lab, False, "tls://HOST:PORT")):
        with pytest.raises(SpecError, match=words):
            scheduler_access("S", url, "worker", tls, insecure)
    os.chmod(lab / "worker-key.pem", 0o644)
    with pytest.raises(SpecError, match="chmod 600"):
        scheduler_access("S", "tls://h:1", "worker", lab, False)
    (lab / "driver.pem").unlink()
    with pytest.raises(SpecError, match="driver.pem is missing"):
        scheduler_access("S", "tls://h:1", "driver", lab, False)
