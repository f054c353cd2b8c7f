"""Soak: a study of 100 real runs (ext4 and xfs on loop images, small fio jobs) is killed
with SIGKILL at random moments, at least 20 times, each time followed by what a user
does — `fslab cleanup --under RESULTS`, then `fslab run ... --resume` — until it
completes. It must end with exactly one stored ok run per planned run, and nothing of
fslab's left behind: no loop device, mount, cgroup, tracefs instance, state file or
process. Prints the number of kills survived; exits non-zero when a check fails.

Seeded (SOAK_SEED), so a failure can be replayed with the same kill times."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fslab.cgroups import leftover_cgroups
from fslab.devices.image import fslab_loop_devices
from fslab.store import Store

MIN_KILLS = 20
SEED = int(os.environ.get("SOAK_SEED", "20261122"))
STUDY = """
[study]
name = "soak"
repetitions = 2
order = "shuffled"
seed = 3
trace = true

[device]
size = "512MiB"
image_dir = "{images}"

[filesystems.ext4]
[filesystems.xfs]

[[workloads]]
kind = "fio"
name = "w"
rw = "randwrite"
size = "8M"
io_size = "2M"
direct = 1
memory = "256MiB"
[workloads.axes]
bs = ["4k", "8k", "16k", "32k", "64k"]
iodepth = [1, 2, 4, 8, 16]
"""  # 2 file systems x 25 cells x 2 repetitions = 100 runs


def fslab(*args: str, **kw) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "fslab", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, **kw)


def listed(state_dir: Path) -> set[tuple[str, str]]:
    """(kind, ident) of everything the state files list now (cgroups and tracefs
    instances are not below the soak's folder, so they are known from here)."""
    import json

    found = set()
    for path in state_dir.glob("fslab-*.json"):
        try:
            found |= {(r["kind"], r["ident"]) for r in json.loads(path.read_text())["resources"]}
        except (OSError, ValueError, KeyError):
            pass
    return found


def leftovers(root: Path, state_dir: Path, seen: set[tuple[str, str]]) -> list[str]:
    found = [f"loop {loop} ({image})" for loop, image in fslab_loop_devices() if image.startswith(str(root))]
    found += [f"mount {line}" for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]
    found += [f"state file {p}" for p in state_dir.glob("fslab-*.json")]
    cgroups = {str(p) for p in leftover_cgroups()}
    found += [f"cgroup {ident}" for kind, ident in seen if kind == "cgroup" and ident in cgroups]
    found += [f"tracefs {ident}" for kind, ident in seen if kind == "tracefs" and Path(ident).exists()]
    ours = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True).stdout.split()
    found += [f"process {pid}" for pid in ours]
    return found


def main() -> None:
    rng = random.Random(SEED)
    root = Path(tempfile.mkdtemp(prefix="fslab-soak-"))
    state_dir = root / "state"
    (root / "state").mkdir()
    seen: set[tuple[str, str]] = set()
    env = {**os.environ, "FSLAB_STATE_DIR": str(state_dir)}
    study = root / "soak.toml"
    study.write_text(STUDY.format(images=root / "images"))
    results = root / "results"
    kills = 0
    attempts = 0
    started = time.monotonic()
    while True:
        args = ["run", str(study), "-r", str(results), "-q"] + (["--resume"] if attempts else [])
        proc = fslab(*args, env=env, start_new_session=True)
        attempts += 1
        # Kill at a random moment while runs are left, until enough kills were survived;
        # then let it finish.
        if kills < MIN_KILLS:
            # preflight (tools, a scratch mkfs and mount per file system) takes a few seconds:
            # kill anywhere from preflight to well into the runs
            deadline = time.monotonic() + rng.uniform(0.5, 12.0)
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                seen |= listed(state_dir)
                cleanup = fslab("cleanup", "--under", str(results), env=env)
                cleanup.wait(120)
                continue
        _, err = proc.communicate(timeout=1800)
        if proc.returncode == 0:
            break
        raise SystemExit(f"FAIL: fslab run exited {proc.returncode} after {kills} kills: {err[-2000:]}")
    with Store(results) as store:
        (row,) = store.studies()
        runs = store.runs(row.id)
    keys = [(r["cell"]["id"], r["repetition"]) for r in runs]
    ok = [r for r in runs if r["status"] == "ok"]
    problems = []
    if len(keys) != len(set(keys)):
        problems.append("a run was stored twice")
    if len(runs) != row.planned_runs or len(ok) != row.planned_runs:
        problems.append(f"{len(ok)} ok of {len(runs)} stored runs for {row.planned_runs} planned")
    left = leftovers(root, state_dir, seen)
    if left:
        problems.append("left behind: " + "; ".join(left[:10]))
    print(f"soak: {row.planned_runs} planned runs, {len(ok)} stored ok, {kills} SIGKILLs survived "
          f"({attempts} starts of `fslab run`), {time.monotonic() - started:.0f} s; "
          f"leftovers: {len(left)}")
    if problems:
        raise SystemExit("FAIL: " + "; ".join(problems))
    print("PASS: exactly one ok run per planned run, nothing left behind")
    subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()
