"""A guest job's runs are shown as each ends, while the guest still runs, and stored only
after its job ends (with the guest's facts), once each. The guest backend's own code runs
here, watching the job folder; only the booted guest (its session) is replaced by one
that runs the job entry on the host (fake device, null file system and workload: no root
needed)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fslab.backends.guest import backend as guest_backend
from fslab.backends.guest import session
from fslab.datarecords import replace
from fslab.job.entry import run_job
from fslab.job.folder import JobFolder, RecordWatcher
from fslab.jobdata.record import RunRecord
from test_jobs import null_plan  # same folder, on sys.path under pytest


class _HostSession:
    """A session whose "guest" runs each job with ``run`` on the host."""

    def __init__(self, run, abandoned_boots: tuple[str, ...] = ()) -> None:
        self.run = run
        self.reusable = True
        self.abandoned_boots = abandoned_boots

    def run_job(self, argv, deadline_s: float, console, known=None) -> session.JobOutcome:
        self.run(JobFolder(Path(argv[argv.index("--out") + 1])))
        return session.JobOutcome(exit_status=0, timed_out=False, console_tail="", host_io_errors=(), kvm=False,
                                  kernel_release="6.1.0-test", kernel_package="linux-image-test",
                                  memory_bytes=1 << 30, cpus=1, boot_s=0.5, jobs_before=0,
                                  abandoned_boots=self.abandoned_boots)


def _fake_guest(monkeypatch, run, abandoned_boots: tuple[str, ...] = ()) -> None:
    fake = _HostSession(run, abandoned_boots)
    monkeypatch.setattr(session.SessionPool, "session_for", lambda self, *args: fake)


def _wait_for(condition, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_guest_jobs_runs_are_shown_as_they_end_and_stored_once_after_the_guest(tmp_path, monkeypatch):
    host_job = null_plan(tmp_path, fresh="repetition").jobs[0]
    assert len(host_job.runs) == 3
    job = replace(host_job, backend="guest", settings=replace(
        host_job.settings, device={"kind": "image", "size": 64 << 20}))
    shown: list[RunRecord] = []
    stored: list[RunRecord] = []
    seen_while_running: list[bool] = []

    def fake_guest(folder: JobFolder) -> None:
        def after_each(record: RunRecord) -> None:  # the next run starts only once this one was shown
            written = len(folder.record_lines())
            seen_while_running.append(_wait_for(lambda: len(shown) == written))
            assert not stored, "nothing is stored while the guest runs"

        run_job(host_job, folder, tmp_path / "guest-work", after_each)

    _fake_guest(monkeypatch, fake_guest)
    folder = JobFolder(tmp_path / "job")
    guest_backend.GuestBackend().execute(job, folder, tmp_path / "work", stored.append, shown.append)

    assert seen_while_running == [True, True, True]
    keys = [(r.cell_id, r.repetition) for r in stored]
    assert [(r.cell_id, r.repetition) for r in shown] == keys and len(set(keys)) == 3
    assert all("guest" not in r.provenance for r in shown)  # known only after the guest exits
    assert all(r.provenance["guest"]["kernel_release"] == "6.1.0-test" for r in stored)
    assert all(r.status == "ok" for r in stored)


def test_without_a_progress_callback_the_guest_backend_still_stores_every_run(tmp_path, monkeypatch):
    host_job = null_plan(tmp_path, fresh="repetition").jobs[0]
    job = replace(host_job, backend="guest", settings=replace(
        host_job.settings, device={"kind": "image", "size": 64 << 20}))

    _fake_guest(monkeypatch, lambda folder: run_job(host_job, folder, tmp_path / "guest-work"))
    stored: list[RunRecord] = []
    guest_backend.GuestBackend().execute(job, JobFolder(tmp_path / "job"), tmp_path / "work", stored.append)
    assert len(stored) == 3 and all(r.provenance["guest"]["cpus"] == 1 for r in stored)


def test_a_boot_abandoned_before_the_guest_is_in_each_runs_provenance(tmp_path, monkeypatch):
    host_job = null_plan(tmp_path, fresh="repetition").jobs[0]
    job = replace(host_job, backend="guest", settings=replace(
        host_job.settings, device={"kind": "image", "size": 64 << 20}))
    why = ("the guest's kernel hung: CPU 1 stuck for 45 s in swapper/0:1 (soft lockup), "
           "during boot: abandoned after 46 s")
    stored: list[RunRecord] = []
    _fake_guest(monkeypatch, lambda folder: run_job(host_job, folder, tmp_path / "guest-work"), (why,))
    guest_backend.GuestBackend().execute(job, JobFolder(tmp_path / "job"), tmp_path / "work", stored.append)
    assert [r.provenance["guest"]["boots_abandoned"] for r in stored] == [[why]] * 3
    stored.clear()
    _fake_guest(monkeypatch, lambda folder: run_job(host_job, folder, tmp_path / "guest-work-2"))
    guest_backend.GuestBackend().execute(job, JobFolder(tmp_path / "job-2"), tmp_path / "work-2", stored.append)
    assert len(stored) == 3 and all("boots_abandoned" not in r.provenance["guest"] for r in stored)


def test_the_watcher_hands_on_a_record_written_just_before_the_job_ended(tmp_path):
    """The thread looks once a second; the last look when the block ends catches the rest,
    and a line cut short (a killed writer) is not a record."""
    plan = null_plan(tmp_path, fresh="repetition")
    source = JobFolder(tmp_path / "source")
    run_job(plan.jobs[0], source, tmp_path / "work")
    lines = source.record_lines()
    folder = JobFolder(tmp_path / "out").make()
    shown: list[RunRecord] = []
    with RecordWatcher(folder, shown.append, interval_s=60.0):
        folder.records_file.write_text(lines[0] + lines[1][:10])
    assert [r.run_key for r in shown] == [RunRecord.from_line(lines[0]).run_key]


def test_each_look_reads_only_what_was_added_and_a_half_line_waits(tmp_path):
    plan = null_plan(tmp_path, fresh="repetition")
    source = JobFolder(tmp_path / "source")
    run_job(plan.jobs[0], source, tmp_path / "work")
    lines = source.record_lines()
    folder = JobFolder(tmp_path / "out").make()
    assert folder.new_record_lines(0) == ([], 0)  # no file yet
    folder.records_file.write_text(lines[0] + lines[1][:10])
    got, offset = folder.new_record_lines(0)
    assert got == [lines[0]] and offset == len(lines[0].encode())
    with open(folder.records_file, "a") as f:
        f.write(lines[1][10:])
    assert folder.new_record_lines(offset) == ([lines[1]], offset + len(lines[1].encode()))


def test_an_error_in_the_progress_callback_is_raised_when_the_block_ends(tmp_path):
    plan = null_plan(tmp_path, fresh="repetition")
    folder = JobFolder(tmp_path / "out")

    def broken(record: RunRecord) -> None:
        raise ValueError("drawing failed")

    with pytest.raises(ValueError, match="drawing failed"):
        with RecordWatcher(folder, broken, interval_s=0.05):
            run_job(plan.jobs[0], folder, tmp_path / "work")
            time.sleep(0.3)


def test_fslab_run_prints_a_guest_run_when_it_ends_and_not_again_when_stored(tmp_path, capsys):
    from fslab import cli
    from fslab.estimate import TimeEstimate
    from fslab.runner import StudyProgress

    view = cli._RunProgress(quiet=False)
    view.plain = True
    view.task = view.progress.add_task("runs", total=3, last="", eta="")
    folder = JobFolder(tmp_path / "out")
    run_job(null_plan(tmp_path, fresh="repetition").jobs[0], folder, tmp_path / "work")
    first, second, third = folder.records()
    left = TimeEstimate(seconds=120.0, low=60.0, high=180.0, runs=2, from_study=2)
    view.on_progress(first, "null value #1", StudyProgress(0, left, shown=True))
    view.on_record(first, "null value #1", StudyProgress(1, left, shown=True))  # stored: said already
    view.on_record(second, "null value #2", StudyProgress(2, left))  # a run not shown before (a host's)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("run null value #1: ok (") and "(in the guest; stored when its job ends)" in lines[0]
    assert lines[0].endswith(f"; {left.short()} left") and "in the guest" not in lines[1]
    assert view.progress.tasks[0].completed == 2


class _StoresAtTheEnd:
    """A backend shaped like the guest's: each run is handed to on_progress as it ends,
    every record to on_record only when the job ends."""

    name = "host"

    def __init__(self, host):
        self.host = host

    def unavailable(self):
        return None

    def supports(self, fs, device, section):
        return None

    def execute(self, job, folder, work_dir, on_record, on_progress=None):
        ended: list[RunRecord] = []

        def each(record: RunRecord) -> None:
            ended.append(record)
            if on_progress is not None:
                on_progress(record)

        self.host.execute(job, folder, work_dir, each)
        for record in ended:
            on_record(record)


def test_the_runner_shows_each_run_once_and_stores_it_when_its_job_ends(tmp_path, monkeypatch):
    from fslab.backends import BACKENDS
    from fslab.runner import run_study
    from fslab.store import Store
    from test_jobs import write_study

    monkeypatch.setitem(BACKENDS._entries, "host", _StoresAtTheEnd(BACKENDS.get("host")))
    events: list[tuple[str, str, bool, int, int]] = []

    def stored_now() -> int:
        with Store(tmp_path / "r", read_only=True) as store:
            return len(store.stored_runs(1))

    def on_progress(record, label, state):
        events.append(("shown", label, state.shown, state.done, stored_now()))

    def on_record(record, label, state):
        events.append(("stored", label, state.shown, state.done, state.left.runs))

    outcome = run_study(str(write_study(tmp_path, reps=1, fresh="repetition")), results_dir=tmp_path / "r",
                        on_record=on_record, on_progress=on_progress)
    assert outcome.runs_done == 6 and outcome.runs_failed == 0
    shown = [e for e in events if e[0] == "shown"]
    stored = [e for e in events if e[0] == "stored"]
    assert len(shown) == 6 and len({e[1] for e in shown}) == 6  # each run once
    assert [e[1] for e in stored] == [e[1] for e in shown] and all(e[2] for e in stored)
    # A job's three runs are all shown before the first of them is stored.
    assert [e[0] for e in events[:6]] == ["shown"] * 3 + ["stored"] * 3
    assert all(e[4] == e[3] for e in shown)  # shown runs were not in the store yet
    assert stored[-1][4] == 0  # time left counted each run once: nothing left at the end
