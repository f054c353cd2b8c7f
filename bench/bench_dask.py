"""Dask executor: what scheduling costs per job, and how much two workers speed a study of
many short jobs up over one. A scheduler and two fslab workers run in network namespaces
of their own on this machine (tests/netns.py), the driver in a third.

- Per-job scheduling overhead: the same study of short jobs (null workload on loop-image
  ext4) run locally with one process per job (FSLAB_JOB_PROCESS=1, the work a worker
  does) and through Dask on one worker, alternated; (Dask - local) / jobs, median.
  That difference is within this shared machine's noise, so also: the idle gap on the
  worker between one job's end and the next job's start (from the stored provenance:
  result sent, store written, next task assigned and started), median over all jobs;
  and the round trip of an empty Dask task, the floor of it all.
- Speed-up: the study on one worker (pinned by machine_class) vs on two, alternated;
  wall(one) / wall(two), median. Each job sleeps 2 s so that, on this one machine, the
  two "machines" do not just share its CPUs (on two real machines they would not).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from netns import private_network  # noqa: E402  (the same private network the tests use)

PAIRS = int(os.environ.get("BENCH_DASK_PAIRS", "3"))
JOBS = 6
PORT = 8786
STUDY = """
[study]
name = "bench dask"
repetitions = 2
order = "in-order"
{extra}

[device]
size = "64MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "null"
name = "null"
sleep = {sleep}
[workloads.axes]
value = [1.0, 2.0, 3.0]
"""  # 3 cells x 2 repetitions = 6 jobs


def _idle_gaps_s(results: Path) -> list[float]:
    """Per worker, the time between a job's end and the start of its next job."""
    from fslab.store import Store

    with Store(results, read_only=True) as store:
        runs = store.runs(store.study().id)
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        w = run["provenance"]["worker"]
        by_worker.setdefault(w["address"], []).append((w["job_started_at"], w["job_finished_at"]))
    gaps = []
    for spans in by_worker.values():
        spans.sort()
        gaps += [start - end for (_, end), (start, _) in zip(spans, spans[1:])]
    return gaps


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[-6:])} failed: {done.stderr[-1500:]}")
    return time.monotonic() - started


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-dask-", dir="/var/tmp"))
    env = {"FSLAB_STATE_DIR": str(root / "state")}
    py = sys.executable
    with private_network(["sched", "w1", "w2", "drv"]) as net:
        scheduler = f"{net.addresses['sched']}:{PORT}"
        net.start("sched", [str(Path(py).parent / "dask"), "scheduler", "--host", net.addresses["sched"],
                            "--port", str(PORT), "--no-dashboard"], root / "sched.log", env=env)
        for role, cls in (("w1", "one"), ("w2", "other")):
            # Plaintext on the bench's private namespaces (--insecure): the overhead measured is
            # Dask's own, without TLS.
            net.start(role, [py, "-m", "fslab", "worker", scheduler, "--insecure", "--class", cls, "--name", role,
                             "--host", net.addresses[role], "--scratch", str(root / f"scratch-{role}"),
                             "--lock", str(root / f"{role}.lock")], root / f"{role}.log", env=env)
        probe = (f"from distributed import Client; import time; c = Client('tcp://{scheduler}', timeout='30s'); "
                 "c.wait_for_workers(2, timeout=60); inc = lambda x: x + 1; n = 200; t = time.perf_counter()\n"
                 "for i in range(n): c.submit(inc, i, pure=False, resources={'bench': 1}).result()\n"
                 "print((time.perf_counter() - t) / n * 1000); c.close()")
        done = net.run("drv", [py, "-c", probe], timeout=300, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"the cluster did not come up: {done.stderr[-1500:]}")
        empty_task_ms = float(done.stdout.strip().splitlines()[-1])

        def study(name: str, sleep: float, extra: str = "") -> Path:
            path = root / name / "study.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(STUDY.format(extra=extra, sleep=sleep, images=path.parent / "images"))
            return path

        def run(path: Path, results: Path, executor: str | None, extra_env: dict[str, str] | None = None) -> float:
            argv = [py, "-m", "fslab", "run", str(path), "-r", str(results), "-q"]
            argv += ["--executor", executor, "--insecure"] if executor else []
            return _timed(net.argv("drv", argv), {**env, **(extra_env or {})})

        dask = f"dask://{scheduler}"
        short_one = study("short-one", 0.0, 'machine_class = "one"')
        sleepy_one = study("sleepy-one", 2.0, 'machine_class = "one"')
        sleepy_two = study("sleepy-two", 2.0)
        local_s, dask1_s, one_s, two_s = [], [], [], []
        for i in range(PAIRS):
            local_s.append(run(short_one, root / f"r-local-{i}", None, {"FSLAB_JOB_PROCESS": "1"}))
            dask1_s.append(run(short_one, root / f"r-dask1-{i}", dask))
            one_s.append(run(sleepy_one, root / f"r-one-{i}", dask))
            two_s.append(run(sleepy_two, root / f"r-two-{i}", dask))
        gaps = [g for i in range(PAIRS) for g in _idle_gaps_s(root / f"r-dask1-{i}")]
    overhead_ms = (statistics.median(dask1_s) - statistics.median(local_s)) / JOBS * 1000
    ratio = statistics.median(one_s) / statistics.median(two_s)
    print(f"empty Dask task round trip: {empty_task_ms:.1f} ms (mean of 200)")
    print(f"{JOBS} short jobs, median of {PAIRS}: local (one process per job) {statistics.median(local_s):.1f} s, "
          f"Dask on one worker {statistics.median(dask1_s):.1f} s -> scheduling overhead "
          f"{overhead_ms:.0f} ms per job")
    print(f"worker idle between jobs (job end -> next job start, same worker): median "
          f"{statistics.median(gaps) * 1000:.0f} ms over {len(gaps)} gaps (min {min(gaps) * 1000:.0f}, "
          f"max {max(gaps) * 1000:.0f})")
    print(f"{JOBS} jobs of 2 s sleep, median of {PAIRS}: one worker {statistics.median(one_s):.1f} s, "
          f"two workers {statistics.median(two_s):.1f} s")
    print(f"speed-up two workers vs one: {ratio:.2f}x (ideal 2.00x)")
    print(f"raw wall times (s): local {local_s}, dask-1 {dask1_s}, one {one_s}, two {two_s}")
    import shutil

    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
