"""Several jobs in one booted guest (fslab.backends.guest.session), in one real boot:
each job runs in a child of the guest's job server and finds its disk as a new boot would
(zeros, though the guest had cached what the last one wrote), a job that fails leaves
its guest unused, and an interrupt kills the guest and removes its images."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import fslab
from fslab.backends.guest.backend import GuestBackend
from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import GuestFailed
from fslab.backends.guest.session import SessionKey
from fslab.job.entry import write_job
from fslab.job.folder import JobFolder
from test_jobs import null_plan  # tests/ is on sys.path under pytest

pytestmark = pytest.mark.guest

MiB = 1 << 20
MARK = b"fslab-mark"


def _qemu_of(tmp: Path) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"qemu-system.*{tmp}"], capture_output=True, text=True).stdout.split()


def test_jobs_share_a_boot_on_fresh_disks_and_an_interrupt_leaves_nothing(guest_build: GuestBuild,
                                                                         tmp_path: Path) -> None:
    jobs_dir = tmp_path / "jobs"
    jobs_dir.mkdir()
    # The null study's jobs (fake device, null file system) run in the guest unchanged; the
    # fake device's folder lies in the shared folder, which the guest may write.
    plan = null_plan(jobs_dir, fresh="run", sleep=600.0)
    work = tmp_path / "work"
    work.mkdir()
    key = SessionKey(kernel="6.1", memory_bytes=512 * MiB, handed=(), image_sizes=(64 * MiB,), share=jobs_dir)
    backend = GuestBackend()
    outcomes = []

    def run(n: int, deadline_s: float = 600) -> JobFolder:
        folder = JobFolder(jobs_dir / f"job-{n}").make()
        write_job(plan.jobs[n], folder.job_file)
        outcomes.append(session.run_job(["run", str(folder.job_file), "--out", str(folder.path)], deadline_s,
                                        folder.console_file))
        return folder

    with pytest.raises(KeyboardInterrupt), backend.keep_booted():
        assert backend._pool is not None
        # The guest imports the fslab this test imports (a checkout's, not the venv's).
        env = {"PYTHONPATH": str(Path(fslab.__file__).resolve().parents[1])}
        session = backend._pool.session_for(key, work, work / "guests", env)
        assert session.guest is not None
        (image,) = session.images
        first = run(0)
        assert outcomes[0].exit_status == 0 and outcomes[0].jobs_before == 0
        assert sorted(r.run_key for r in first.records()) == sorted(r.key for r in plan.jobs[0].runs)
        assert "fslab-guest: ready" in first.console_file.read_text()  # the boot's console is the first job's

        # A job leaves data on the disk, written through and cached in the guest, and a
        # process that holds the disk open (so the guest keeps its cache when the job ends).
        written = session.guest.run(["sh", "-c", "(exec 3</dev/vda; exec sleep 3600) > /dev/null 2>&1 < /dev/null & "
                                     f"sleep 1; printf {MARK.decode()} > /dev/vda && sync && head -c 10 /dev/vda"], 60)
        assert written.stdout.encode() == MARK
        assert image.read_bytes()[:len(MARK)] == MARK

        second = run(1)
        assert outcomes[1].exit_status == 0 and outcomes[1].jobs_before == 1  # the same guest
        assert outcomes[1].boot_s == outcomes[0].boot_s
        assert all(r.status == "ok" for r in second.records())
        assert "fslab-guest: ready" not in second.console_file.read_text()  # only its own part
        # The next job's disk is fresh: holes on the host, zeros in the guest, not its cache.
        assert image.stat().st_blocks == 0
        seen = session.guest.run(["sh", "-c", "head -c 10 /dev/vda | od -An -tx1"], 60).stdout.split()
        assert seen == ["00"] * len(MARK)

        # A job whose process fails: its guest runs nothing more.
        bad = session.run_job(["run", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")], 600,
                              tmp_path / "bad-console.log")
        assert bad.exit_status == 2 and not session.reusable
        assert _qemu_of(tmp_path), "the guest runs until the block ends"

        # A kernel that says it has been stuck for minutes is hung: the guest is killed
        # then, not at the job's deadline (the kernel's own words, as a hung one prints them).
        # Said 5 s from now: the host takes the console's length when the job starts, within
        # milliseconds of this command's return, and reads only what comes after it.
        session.guest.run(["sh", "-c", "(sleep 5; echo '<2>watchdog: BUG: soft lockup - CPU#1 stuck for 999s! "
                           "[fio:77]' > /dev/kmsg) > /dev/null 2>&1 < /dev/null &"], 60)
        slow = next(i for i, job in enumerate(plan.jobs) if job.runs[0].cell.workload == "slow")  # sleeps 600 s
        with pytest.raises(GuestFailed, match="kernel hung: CPU 1 stuck for 999 s in fio:77"):
            run(slow, deadline_s=240)
        assert _qemu_of(tmp_path) == []
        raise KeyboardInterrupt
    assert _qemu_of(tmp_path) == []
    assert list(work.rglob("*.img")) == []
    assert [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in line] == []
