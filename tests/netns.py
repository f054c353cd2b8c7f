"""A private network on one machine for tests of distributed pieces: network namespaces
joined by veth pairs to a bridge in a hub namespace of their own, addresses in a
10.213.X.0/24 this test picks. Nothing touches the host's own network: every address
and link lives in a namespace made here, and everything is deleted on exit (also when
the test fails), processes first."""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


def netns_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "needs iproute2 and util-linux (ip, unshare)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Network:
    tag: str
    subnet: str  # "10.213.X"
    members: dict[str, str] = field(default_factory=dict)  # role -> namespace name
    addresses: dict[str, str] = field(default_factory=dict)  # role -> IPv4 address
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def argv(self, role: str, argv: list[str], hostname: str | None = None) -> list[str]:
        """``argv`` run inside ``role``'s namespace (with its own host name if given)."""
        prefix = ["ip", "netns", "exec", self.members[role]]
        if hostname is None:
            return prefix + argv
        quoted = " ".join(_quote(a) for a in argv)
        return prefix + ["unshare", "--uts", "sh", "-c", f"hostname {hostname} && exec {quoted}"]

    def start(self, role: str, argv: list[str], log: Path, hostname: str | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """A long-running process in ``role``'s namespace (stopped when the network goes)."""
        out = open(log, "ab")
        proc = subprocess.Popen(self.argv(role, argv, hostname), stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        out.close()
        self.processes.append(proc)
        return proc

    def run(self, role: str, argv: list[str], timeout: float, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(role, argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


@contextlib.contextmanager
def private_network(roles: list[str]) -> Iterator[Network]:
    """One namespace per role, all on one bridge; torn down whatever happens."""
    tag = f"fs{os.getpid() % 100000}{random.randrange(100):02d}"
    net = Network(tag, f"10.213.{random.randrange(1, 250)}")
    hub = f"{tag}-hub"
    made: list[str] = []
    try:
        with _run_netns_lock():
            # The first `ip netns add` bind-mounts /run/netns onto itself and leaves it. The
            # marker says the tests made that mount, so whichever test ends last (in any
            # process: xdist workers overlap) unmounts it; a mount made otherwise is left.
            if not _is_mount_point(RUN_NETNS):
                Path(TESTS_MADE_RUN_NETNS).touch()
            _ip("netns", "add", hub)
            made.append(hub)
        _ip("-n", hub, "link", "set", "lo", "up")
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        for index, role in enumerate(roles):
            ns = f"{tag}-{role}"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("link", "add", f"{tag}h{index}", "netns", hub, "type", "veth",
                "peer", "name", "eth0", "netns", ns)
            _ip("-n", hub, "link", "set", f"{tag}h{index}", "master", "br0", "up")
            address = f"{net.subnet}.{index + 1}"
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            net.members[role] = ns
            net.addresses[role] = address
        yield net
    finally:
        for proc in net.processes:
            stop(proc)
        with _run_netns_lock():
            for ns in reversed(made):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            marker = Path(TESTS_MADE_RUN_NETNS)
            if marker.exists() and _is_mount_point(RUN_NETNS) and not any(Path(RUN_NETNS).iterdir()):
                subprocess.run(["umount", RUN_NETNS], capture_output=True, check=True)
                marker.unlink()


RUN_NETNS = "/run/netns"
TESTS_MADE_RUN_NETNS = "/run/fslab-tests-made-netns-mount"


@contextlib.contextmanager
def _run_netns_lock() -> Iterator[None]:
    with open("/run/fslab-tests-netns.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _is_mount_point(path: str) -> bool:
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, wait_s: float = 60) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(check, timeout: float, what: str, interval: float = 0.2):  # type: ignore[no-untyped-def]
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
