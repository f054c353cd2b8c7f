"""A Dask scheduler and fslab workers on a private network (tests/netns.py) for the Dask
executor's tests: plaintext with --insecure (test_dask_executor) or mutual TLS with a lab
made by `fslab lab init` (test_dask_tls). Every process is stopped and every namespace
deleted when the context ends."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from netns import Network, private_network

PORT = 8786


@dataclass
class Cluster:
    net: Network
    root: Path
    env: dict[str, str]
    workers: dict[str, subprocess.Popen[bytes]]
    lab: Path | None  # None: plaintext (dask:// with --insecure)

    @property
    def scheduler(self) -> str:
        return f"{self.net.addresses['sched']}:{PORT}"

    @property
    def url(self) -> str:
        return f"{'tls' if self.lab else 'dask'}://{self.scheduler}"

    @property
    def access(self) -> list[str]:
        """The flags of `fslab worker` and `fslab run` for this cluster."""
        return ["--tls", str(self.lab)] if self.lab else ["--insecure"]

    def start_worker(self, role: str, machine_class: str) -> None:
        scratch = self.root / f"scratch-{role}"
        self.workers[role] = self.net.start(role, [
            sys.executable, "-m", "fslab", "worker", self.url if self.lab else self.scheduler, *self.access,
            "--class", machine_class, "--name", role, "--host", self.net.addresses[role],
            "--scratch", str(scratch), "--lock", str(self.root / f"{role}.lock")], self.root / f"{role}.log",
            hostname=f"fslab-{role}", env=self.env)

    def client_code(self) -> str:
        """Python that opens a Dask client `c` of the driver's role on this cluster."""
        if self.lab is None:
            return f"from distributed import Client; c = Client('tcp://{self.scheduler}', timeout='20s')"
        return ("from distributed import Client; from distributed.security import Security; "
                f"s = Security(tls_ca_file='{self.lab}/ca.pem', tls_client_cert='{self.lab}/driver.pem', "
                f"tls_client_key='{self.lab}/driver-key.pem', require_encryption=True); "
                f"c = Client('tls://{self.scheduler}', timeout='20s', security=s)")

    def worker_names(self) -> list[str]:
        """The names of the workers the scheduler has now (asked as the driver)."""
        code = (self.client_code() + "; import json; workers = c.scheduler_info(n_workers=-1)['workers']; "
                "print(json.dumps(sorted(str(w['name']) for w in workers.values()))); c.close()")
        done = self.net.run("drv", [sys.executable, "-c", code], timeout=90, env=self.env)
        assert done.returncode == 0, done.stderr[-2000:]
        import json

        return list(json.loads(done.stdout.strip().splitlines()[-1]))

    def wait_workers(self, count: int) -> None:
        probe = self.client_code() + f"; c.wait_for_workers({count}, timeout=60); c.close()"
        done = self.net.run("drv", [sys.executable, "-c", probe], timeout=90, env=self.env)
        assert done.returncode == 0, done.stderr[-2000:]

    def fslab_run_argv(self, study: Path, results: Path, *extra: str) -> list[str]:
        return self.net.argv("drv", [sys.executable, "-m", "fslab", "run", str(study), "-r", str(results),
                                     "--executor", self.url, *self.access, *extra])

    def fslab_run(self, study: Path, results: Path, *extra: str, timeout: float = 300
                  ) -> subprocess.CompletedProcess[str]:
        return self.net.run("drv", [sys.executable, "-m", "fslab", "run", str(study), "-r", str(results),
                                    "--executor", self.url, *self.access, *extra],
                            timeout=timeout, env=self.env)


def scheduler_argv(net: Network, lab: Path | None) -> list[str]:
    """The scheduler as docs/lab.md starts it: `fslab scheduler` with the lab's files (TLS,
    no HTTP), or a plaintext `dask scheduler` for --insecure."""
    if lab is not None:
        return [sys.executable, "-m", "fslab", "scheduler", "--tls", str(lab), "--host", net.addresses["sched"],
                "--port", str(PORT)]
    return [str(Path(sys.executable).parent / "dask"), "scheduler", "--host", net.addresses["sched"],
            "--port", str(PORT), "--no-dashboard"]


@contextlib.contextmanager
def running_cluster(root: Path, lab: Path | None, extra_roles: tuple[str, ...] = ()) -> Iterator[Cluster]:
    """A scheduler, workers w1 (class nvme) and w2 (class hdd) and a driver namespace."""
    # State files apart from every other fslab on this machine: the workers' cleanup of
    # dead jobs' leftovers sees only this test's.
    env = {"FSLAB_STATE_DIR": str(root / "state")}
    with private_network(["sched", "w1", "w2", "drv", *extra_roles]) as net:
        net.start("sched", scheduler_argv(net, lab), root / "sched.log", env=env)
        cluster = Cluster(net, root, env, {}, lab)
        cluster.start_worker("w1", "nvme")
        cluster.start_worker("w2", "hdd")
        cluster.wait_workers(2)
        yield cluster
