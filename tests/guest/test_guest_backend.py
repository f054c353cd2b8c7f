"""The guest backend in a study: file systems this host kernel lacks run in a guest
(backend = "auto"), each job through the same job entry as on the host; md RAID5 over
8 virtio disks; records carry the guest's provenance and console; the table labels
guest columns; nothing is left behind; a resumed study does not repeat guest runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.report.tables import build_table
from fslab.runner import run_study
from fslab.store import Store

pytestmark = pytest.mark.guest

STUDY = """
[study]
name = "guest backend"
repetitions = 1
order = "in-order"
guest_memory = "768MiB"

[device]
{device}

[filesystems.f2fs]
{extra_fs}

[[workloads]]
kind = "fio"
name = "rand-write-4k"
rw = "randwrite"
bs = "4k"
size = "16M"
direct = 1
runtime = 1
time_based = 1
memory = "128MiB"
"""


def _leftovers(tmp: Path) -> list[str]:
    found = [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp) in line]
    found += [line for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
              if str(tmp) in line]
    found += [str(p) for p in tmp.rglob("*.img")]
    found += subprocess.run(["pgrep", "-f", f"qemu-system.*{tmp}"], capture_output=True, text=True).stdout.split()
    return found


def test_auto_runs_f2fs_in_a_guest_beside_ext4_on_the_host(guest_build: GuestBuild, tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    # Two repetitions, each on a fresh file system: guest and host jobs alternate.
    study.write_text(STUDY.format(device='size = "512MiB"', extra_fs="[filesystems.ext4]")
                     .replace("repetitions = 1", 'repetitions = 2\nfresh = "run"'))
    results = tmp_path / "results"
    events: list[tuple[str, str]] = []  # a guest's run is shown as it ends, then stored once
    outcome = run_study(str(study), results_dir=results,
                        on_progress=lambda record, label, state: events.append(("shown", label)),
                        on_record=lambda record, label, state: events.append(
                            ("stored, shown before" if state.shown else "stored", label)))
    assert outcome.runs_failed == 0, outcome
    assert sorted(events) == sorted([("shown", "f2fs rand-write-4k #1"), ("stored", "ext4 rand-write-4k #1"),
                                     ("stored, shown before", "f2fs rand-write-4k #1"),
                                     ("shown", "f2fs rand-write-4k #2"), ("stored", "ext4 rand-write-4k #2"),
                                     ("stored, shown before", "f2fs rand-write-4k #2")]), events
    assert events.index(("shown", "f2fs rand-write-4k #1")) < events.index(
        ("stored, shown before", "f2fs rand-write-4k #1"))
    with Store(results) as store:
        runs = store.runs(store.study().id)
    # Pass by pass, a host job ran between the two guest jobs: the guest was powered off
    # for it (a host run is not measured beside a guest), so each guest job booted its own.
    guest_runs = sorted((r for r in runs if r["cell"]["backend"] == "guest"), key=lambda r: r["repetition"])
    assert [r["provenance"]["guest"]["jobs_before_in_boot"] for r in guest_runs] == [0, 0]
    assert len({r["provenance"]["job"] for r in guest_runs}) == 2
    runs = [r for r in runs if r["repetition"] == 0]
    by_fs = {r["cell"]["filesystem"]: r for r in runs}
    f2fs, ext4 = by_fs["f2fs"], by_fs["ext4"]
    assert f2fs["cell"]["backend"] == "guest" and ext4["cell"]["backend"] == "host"
    guest = f2fs["provenance"]["guest"]
    assert guest["kernel_release"] == guest_build.release and guest["accelerator"] in ("kvm", "tcg")
    assert f2fs["provenance"]["host"]["kernel"] == guest_build.release  # measured on the guest's kernel
    assert f2fs["provenance"]["filesystem"]["mounted_as"] == "f2fs"
    assert f2fs["provenance"]["device"]["kind"] == "vdisk"
    assert f2fs["metrics"]["write_iops"]["value"] > 0
    # the memory limit holds in the guest too (cgroup v2 there)
    assert f2fs["provenance"]["memory_limit"]["limit_bytes"] == 128 << 20
    console = (results / f2fs["artifact_dir"] / "console.log").read_text()
    assert f"kernel {guest_build.release}" in console  # the guest console is kept with the run
    table = build_table(runs, None, [r["cell"] for r in runs])
    assert table.filesystems == ["f2fs (guest 6.1)", "ext4"]  # the study's default guest kernel
    assert _leftovers(tmp_path) == []


def test_raid5_of_8_members_in_a_guest(guest_build: GuestBuild, tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(device='kind = "raid"\nlevel = 5\ndisks = 8\nchunk = "512KiB"\n'
                                          'member_size = "64MiB"', extra_fs="")
                     .replace('guest_memory = "768MiB"', 'guest_memory = "768MiB"\ntrace = true\n'
                              'backend = "guest"'))  # in a guest even where this kernel has md and f2fs
    results = tmp_path / "results"
    outcome = run_study(str(study), results_dir=results)
    assert outcome.runs_failed == 0
    with Store(results) as store:
        (run,) = store.runs(store.study().id)
    device = run["provenance"]["device"]
    assert device["kind"] == "raid" and device["level"] == 5 and len(device["members"]) == 8
    assert device["data_disks"] == 7
    m = {name: v["value"] for name, v in run["metrics"].items()}
    assert m["write_iops"] > 0
    # the md device traced through its bios: the workload's 4 KiB direct writes, as issued
    assert m["trace_write_size_median_bytes"] == 4096 and m["trace_write_requests_count"] > 0
    # its members through their requests: a partial-stripe write on RAID5 reads old data
    # and parity first (read-modify-write), and writes data and parity
    assert m["trace_members_read_requests_count"] > 0
    assert m["trace_members_write_requests_count"] >= m["trace_write_requests_count"]
    array = run["provenance"]["trace"]["array"]
    assert len(array["member_devs"]) == 8 and array["md_dev"] not in array["member_devs"]
    # Nothing is measured twice: retrying the finished study boots no guest at all.
    done = run_study(str(study), results_dir=results, retry_failed=True)
    assert done.study_id == outcome.study_id and done.runs_done == 0
    assert _leftovers(tmp_path) == []


def _wait_for_qemu(tmp: Path, limit_s: float = 240) -> int:
    import time

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-f", f"qemu-system.*{tmp}"], capture_output=True, text=True).stdout.split()
        if found:
            return int(found[0])
        time.sleep(0.2)
    raise AssertionError("no QEMU started")


def test_a_guest_killed_mid_job_fails_its_runs_with_the_console_tail(guest_build: GuestBuild, tmp_path: Path) -> None:
    import os
    import re
    import signal
    import threading
    import time

    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(device='size = "512MiB"', extra_fs="").replace("runtime = 1", "runtime = 120"))
    results = tmp_path / "results"

    def kill_when_running() -> None:
        pid = _wait_for_qemu(tmp_path)
        # The guest's control folder, shared with the host: the job server writes out-0 there
        # when it forks the job's process. A second later the job is in mkfs or fio.
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        share = re.compile(rb"path=(.+?/ctl),mount_tag=fslabctl")
        ctl = next(Path(m.group(1).decode()) for a in argv if (m := share.search(a)))
        deadline = time.monotonic() + 240
        while not (ctl / "serve" / "out-0").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    outcome = run_study(str(study), results_dir=results)
    killer.join()
    assert outcome.runs_failed == 1
    with Store(results) as store:
        (run,) = store.runs(store.study().id)
    assert run["status"] == "failed" and "guest console (last lines)" in run["error"]
    assert "fslab-guest" in run["error"] or "guest died" in run["error"]
    assert (results / run["artifact_dir"] / "error.txt").exists()
    assert _leftovers(tmp_path) == []


def test_sigkilled_runner_leaves_nothing_after_cleanup(guest_build: GuestBuild, tmp_path: Path) -> None:
    import os
    import signal
    import sys

    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(device='size = "512MiB"', extra_fs="").replace("runtime = 1", "runtime = 120"))
    results = tmp_path / "results"
    runner = subprocess.Popen([sys.executable, "-m", "fslab", "run", str(study), "-r", str(results), "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_qemu(tmp_path)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        done = subprocess.run([sys.executable, "-m", "fslab", "cleanup", "--under", str(results)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "remove image" in done.stdout and "guest" in done.stdout
        assert _leftovers(tmp_path) == []
    finally:
        runner.kill()


RESUME_STUDY = """
[study]
name = "guest resume"
repetitions = 2  # one stored before the kill, one measured after the resume
order = "in-order"
guest_memory = "512MiB"

[device]
size = "256MiB"

[filesystems.f2fs]

[[workloads]]
kind = "null"
name = "files"
ops = 10
sleep = 5
"""


def _stored_runs(results: Path) -> int:
    import sqlite3

    db = results / "fslab.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_a_resumed_guest_study_does_not_repeat_stored_runs(guest_build: GuestBuild, tmp_path: Path) -> None:
    """SIGTERM to the runner while a later guest job runs: the study stops with its guest
    gone; --resume boots guests only for the runs not stored, and keeps the stored ones."""
    import signal
    import sys
    import time

    study = tmp_path / "s.toml"
    study.write_text(RESUME_STUDY)
    results = tmp_path / "results"
    fslab = [sys.executable, "-m", "fslab"]
    runner = subprocess.Popen([*fslab, "run", str(study), "-r", str(results), "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while _stored_runs(results) < 1 and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.5)
        assert _stored_runs(results) >= 1, "no guest run was stored"
        _wait_for_qemu(tmp_path)  # the next job's guest is up: kill the runner under it
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=180)
    finally:
        runner.kill()
    assert runner.returncode == 130, err
    assert _leftovers(tmp_path) == []  # the guest's QEMU and its disks went with the runner
    with Store(results) as store:
        row = store.study()
        before = {(r["cell"]["id"], r["repetition"]): (r["run_id"], r["started_at"])
                  for r in store.runs(row.id) if r["status"] == "ok"}
    assert row.status == "interrupted" and len(before) == 1
    done = subprocess.run([*fslab, "run", str(study), "-r", str(results), "--resume", "-q"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    with Store(results) as store:
        assert len(store.studies()) == 1 and store.study().status == "complete"
        after = [r for r in store.runs(store.study().id) if r["status"] == "ok"]
    assert len(after) == 2 and len({(r["cell"]["id"], r["repetition"]) for r in after}) == 2
    for r in after:
        key = (r["cell"]["id"], r["repetition"])
        if key in before:  # stored before the kill: the same row, measured once
            assert (r["run_id"], r["started_at"]) == before[key]
        else:  # measured after the resume, in a guest
            assert r["started_at"] > max(s for _, s in before.values())
            assert r["provenance"]["guest"]["kernel_release"] == guest_build.release
    assert _leftovers(tmp_path) == []
