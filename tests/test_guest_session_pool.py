"""Which job gets which guest (fslab.backends.guest.session.SessionPool), with the guest
replaced by a record of what was started and closed; and how an image is made fresh
between jobs (``punch_out``), on a real file."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from fslab.backends.guest import session
from fslab.backends.guest.init_script import ALIVE_FILE
from fslab.backends.guest.launcher import GuestFailed
from fslab.backends.guest.session import SessionKey, SessionPool, punch_out
from fslab.datarecords import replace


class _Recorded:
    """A session that records its life instead of booting."""

    log: list[str] = []

    def __init__(self, key: SessionKey, work_dir: Path, guests: Path, env: dict[str, str] | None) -> None:
        self.key = key
        self.reusable = True
        self.guest = self  # alive while not closed
        self.alive = True
        self.name = f"s{len([e for e in self.log if e.startswith('start')])}"

    def start(self) -> _Recorded:
        self.log.append(f"start {self.name}")
        return self

    def close(self, graceful: bool) -> None:
        self.alive = False
        self.log.append(f"close {self.name} {'graceful' if graceful else 'killed'}")


@pytest.fixture
def recorded(monkeypatch) -> list[str]:
    _Recorded.log = []
    monkeypatch.setattr(session, "GuestSession", _Recorded)
    return _Recorded.log


def _key(tmp_path: Path, **changes) -> SessionKey:
    fields = {"kernel": "6.1", "memory_bytes": 512 << 20, "handed": (), "image_sizes": (256 << 20,),
              "share": tmp_path}
    return SessionKey(**{**fields, **changes})


def test_jobs_with_the_same_key_share_a_guest_and_another_key_replaces_it(tmp_path, recorded):
    pool = SessionPool()
    first = pool.session_for(_key(tmp_path), tmp_path, tmp_path, None)
    assert pool.session_for(_key(tmp_path), tmp_path, tmp_path, None) is first
    other = pool.session_for(_key(tmp_path, image_sizes=(1 << 30,)), tmp_path, tmp_path, None)
    assert other is not first
    pool.close(graceful=True)
    assert recorded == ["start s0", "close s0 graceful", "start s1", "close s1 graceful"]


@pytest.mark.parametrize("change", [{"kernel": "6.12"}, {"memory_bytes": 1 << 30},
                                    {"handed": (Path("/dev/sdz"),)}, {"share": Path("/elsewhere")}])
def test_each_part_of_the_key_decides(tmp_path, recorded, change):
    pool = SessionPool()
    first = pool.session_for(_key(tmp_path), tmp_path, tmp_path, None)
    assert pool.session_for(_key(tmp_path, **change), tmp_path, tmp_path, None) is not first
    pool.close(graceful=False)


def test_a_guest_after_a_failed_job_or_a_death_is_never_used_again(tmp_path, recorded):
    pool = SessionPool()
    first = pool.session_for(_key(tmp_path), tmp_path, tmp_path, None)
    first.reusable = False  # its job failed
    second = pool.session_for(_key(tmp_path), tmp_path, tmp_path, None)
    assert second is not first
    second.alive = False  # the guest died (QEMU gone): killed, not shut down
    third = pool.session_for(_key(tmp_path), tmp_path, tmp_path, None)
    assert third is not second
    pool.close(graceful=False)
    assert recorded == ["start s0", "close s0 graceful", "start s1", "close s1 killed", "start s2",
                        "close s2 killed"]


def test_a_punched_image_reads_as_zeros_with_its_size_and_inode(tmp_path):
    image = tmp_path / "disk.img"
    size = 8 << 20
    with open(image, "wb") as f:
        f.truncate(size)
        f.seek(4096)
        f.write(b"old file system" * 1000)
        f.seek(size - 4096)
        f.write(b"x" * 4096)
    inode = image.stat().st_ino
    keeper = os.open(image, os.O_RDONLY)  # QEMU's open file must see the same inode
    try:
        punch_out(image)
        assert image.stat().st_ino == inode and image.stat().st_size == size
        assert os.pread(keeper, size, 0) == bytes(size)
        assert image.stat().st_blocks == 0  # holes again: the next job's disk is sparse
    finally:
        os.close(keeper)


def test_a_lockup_that_lasts_is_a_hung_kernel_and_a_short_one_is_not():
    from fslab.backends.guest.hang import kernel_hang

    short = "[  80.6] watchdog: BUG: soft lockup - CPU#0 stuck for 27s! [busybox:942]\n"
    assert kernel_hang(short) is None  # a vCPU the busy host did not run for a while
    long = short + "[1360.7] watchdog: BUG: soft lockup - CPU#1 stuck for 1219s! [python3:943]\n"
    assert kernel_hang(long) == "the guest's kernel hung: CPU 1 stuck for 1219 s in python3:943 (soft lockup)"
    # before the guest is ready a boot of 2-10 s has stalled: the launcher's lower bar
    assert kernel_hang(short, at_least_s=45) is None
    assert kernel_hang(short.replace("27s", "45s"), at_least_s=45) is not None


def test_a_host_job_between_guest_jobs_runs_with_no_guest_kept(tmp_path, recorded, monkeypatch):
    """A host job measured beside an idle kept guest (its QEMU's memory, its job server's
    polling) would measure another machine than a host job of a host-only study."""

    from fslab.backends import BACKENDS
    from fslab.executors import LocalExecutor
    from test_jobs import null_plan  # tests/ is on sys.path under pytest

    guest = BACKENDS.get("guest")
    monkeypatch.setattr(guest, "_execute_in_session", lambda pool, job, *args: pool.session_for(
        _key(tmp_path), tmp_path, tmp_path, None))
    plan = null_plan(tmp_path, fresh="run")
    host_job = plan.jobs[1]
    assert host_job.backend == "host"
    jobs = [replace(plan.jobs[0], backend="guest"), host_job,
            replace(plan.jobs[2], backend="guest")]
    guests_during_host_runs: list[bool] = []

    def on_record(record, folder) -> None:
        if record.cell_id == host_job.cell.id:
            guests_during_host_runs.append(any(s.alive for s in _Recorded.sessions))

    monkeypatch.setattr(_Recorded, "sessions", [], raising=False)
    original_start = _Recorded.start
    monkeypatch.setattr(_Recorded, "start", lambda self: (_Recorded.sessions.append(self), original_start(self))[1])
    LocalExecutor().run(jobs, tmp_path / "jobs", tmp_path / "work", on_record)
    assert guests_during_host_runs == [False] * len(host_job.runs)
    assert recorded == ["start s0", "close s0 graceful", "start s1", "close s1 graceful"]


def test_a_server_that_is_gone_is_said_with_its_status_and_output(tmp_path):
    """Its shell writes its status to `exited`; one killed by a signal (the guest's OOM
    killer, most likely) prints nothing, so its status is all there is to say."""
    from fslab.backends.guest.session import server_gone

    (tmp_path / "exited").write_text("137\n")
    (tmp_path / "server.log").write_text("")
    assert server_gone(tmp_path) == ("the job server in the guest exited with status 137 (killed by signal 9, "
                                     "e.g. by the guest's OOM killer; more guest_memory in [study] gives it "
                                     "room): (no output)")
    (tmp_path / "exited").write_text("1\n")
    (tmp_path / "server.log").write_text("Traceback ...\nModuleNotFoundError: No module named 'fslab'\n")
    assert server_gone(tmp_path) == ("the job server in the guest exited with status 1: Traceback ...\n"
                                     "ModuleNotFoundError: No module named 'fslab'")


def test_the_console_is_read_a_whole_line_at_a_time_from_where_the_last_look_ended(tmp_path):
    """A hung kernel's line is seen once, whole, even when a look catches it half written."""
    from fslab.backends.guest.session import _lines_from

    console = tmp_path / "console.log"
    console.write_bytes(b"boot\n[1360.7] watchdog: BUG: soft lockup - CPU#1 stu")
    text, seen = _lines_from(console, 5)
    assert text == "" and seen == 5  # only the half line came since offset 5
    with open(console, "ab") as f:
        f.write(b"ck for 1219s! [python3:943]\n")
    text, seen = _lines_from(console, seen)
    assert "stuck for 1219s" in text and seen == console.stat().st_size
    assert _lines_from(console, seen) == ("", seen)


class _BootedGuest:
    """What ``GuestSession.run_job`` reads of its guest, for a guest whose job server has
    answered every request already (its status files written in advance)."""

    def __init__(self, folder: Path, abandoned: tuple[str, ...], answered: int = 3) -> None:
        from types import SimpleNamespace

        self.control_folder = folder
        self.console_path = folder / "console.log"
        self.console_path.write_text("booted\n")
        self.build = SimpleNamespace(release="6.1.0-test", package="linux-image-test")
        self.kvm, self.cpus, self.boot_s, self.alive = False, 1, 2.5, True
        self.abandoned_boots = abandoned
        self.host_io_errors: list[str] = []
        (folder / session.SERVE_DIR).mkdir()
        for n in range(answered):
            (folder / session.SERVE_DIR / f"status-{n}").write_text("0\n")


def test_a_job_runs_on_what_the_host_wrote_onto_its_disk_and_a_used_disk_is_made_fresh(tmp_path):
    """The aged-image path: the host writes a disk's starting state after ``fresh_disks``
    and the next job keeps it; a disk a job used is punched before the next job. The boots
    abandoned before the guest go to the first job that makes records, not to an aging job."""
    guest = _BootedGuest(tmp_path, ("the guest's kernel hung during boot",))
    disk = tmp_path / "disk.img"
    disk.write_bytes(bytes(1 << 20))
    booted = session.GuestSession(_key(tmp_path), tmp_path, tmp_path, None)
    booted.guest, booted.images = guest, [disk]  # type: ignore[assignment]

    aging = booted.run_job(["age", "job.json"], 60, tmp_path / "aging-console.log", makes_records=False)
    with open(disk, "r+b") as f:
        f.write(b"aged by the aging job")
    booted.fresh_disks()  # the aging job used the disk: it is made fresh
    assert disk.read_bytes() == bytes(1 << 20) and disk.stat().st_blocks == 0
    with open(disk, "r+b") as f:
        f.write(b"the aged image's copy")
    first = booted.run_job(["run", "job.json"], 60, tmp_path / "console-1.log")
    assert disk.read_bytes().startswith(b"the aged image's copy")  # no job ran since: kept
    second = booted.run_job(["run", "job.json"], 60, tmp_path / "console-2.log")
    assert disk.read_bytes() == bytes(1 << 20)  # the first job used it
    assert (aging.jobs_before, first.jobs_before, second.jobs_before) == (0, 1, 2)
    assert aging.abandoned_boots == () and second.abandoned_boots == ()
    assert first.abandoned_boots == ("the guest's kernel hung during boot",)
    requests = sorted(p.name for p in (tmp_path / session.SERVE_DIR).glob("req-*.json"))
    assert requests == ["req-0.json", "req-1.json", "req-2.json"]


def test_a_guest_whose_agent_stops_marking_it_alive_is_killed_long_before_the_jobs_deadline(
        tmp_path, monkeypatch):
    """A frozen guest (QEMU runs, its vCPUs make no progress) ends the job within a look of
    the agent's last mark growing older than FROZEN_AFTER_S; a guest the agent marks alive
    runs its job to the end, however long it takes."""
    monkeypatch.setattr(session, "HANG_LOOK_S", 0.05)
    monkeypatch.setattr(session, "FROZEN_AFTER_S", 1.0)
    killed: list[bool] = []

    def booted(folder: Path) -> session.GuestSession:
        folder.mkdir()
        guest = _BootedGuest(folder, (), answered=0)
        guest.kill = lambda: killed.append(True)  # type: ignore[attr-defined]
        guest.console_tail = lambda: "booted"  # type: ignore[attr-defined]
        s = session.GuestSession(_key(tmp_path), folder, folder, None)
        s.guest, s.images = guest, []  # type: ignore[assignment]
        return s

    # Marked alive before the job and again while it runs, for longer than FROZEN_AFTER_S
    # in all: the job ends on its own.
    alive = booted(tmp_path / "alive")
    mark = tmp_path / "alive" / ALIVE_FILE
    mark.write_text("10\n")

    def job_ends() -> None:
        for beat in range(6):
            time.sleep(0.4)
            mark.write_text(f"{11 + beat}\n")  # the agent's beat, faster than FROZEN_AFTER_S
        (tmp_path / "alive" / session.SERVE_DIR / "status-0").write_text("0\n")

    ender = threading.Thread(target=job_ends)
    ender.start()
    outcome = alive.run_job(["run", "job.json"], 60, tmp_path / "console-alive.log")
    ender.join()
    assert outcome.exit_status == 0 and not killed and alive.reusable

    # A mark that is not renewed: killed a look after FROZEN_AFTER_S, with the reason, not at
    # the deadline (5 s: a guard that failed to act ends this test then, unraised). The
    # mark's own time does not matter (a clock set a day ahead here), only that it stays.
    frozen = booted(tmp_path / "frozen")
    mark = tmp_path / "frozen" / ALIVE_FILE
    mark.write_text("10\n")
    os.utime(mark, (os.path.getmtime(mark) + 86400,) * 2)
    started = time.monotonic()
    with pytest.raises(GuestFailed, match=r"the guest froze: its agent, which marks it alive every 5 s, "
                                          r"had not done so for \d+ s while its QEMU process lived on; the "
                                          r"guest was killed \d+ s into the job, not at its deadline"):
        frozen.run_job(["run", "job.json"], 5, tmp_path / "console-frozen.log")
    assert 1.0 < time.monotonic() - started < 5
    assert killed == [True] and not frozen.reusable
