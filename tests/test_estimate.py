"""Estimates of time and noise: each run is estimated from runs of its own workload and
backend (a mix of 5-second host runs and 2-minute guest runs is not averaged), a guest's
boot counted per job that boots one (consecutive guest jobs that need the same guest share
it), the basis said; the spread seen per host and workload kind, and the
runs it asks for; `fslab plan -r DIR` and `fslab run`'s plain progress lines say them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fslab.datarecords import replace
from fslab.estimate import Countdown, TimeModel, duration_text
from fslab.jobdata.model import Cell, Job, JobSettings, Run
from fslab.jobdata.record import RunRecord
from fslab.noise import half_width_at, noise_seen, runs_for_precision
from fslab.priors import GUEST_SETUP_IN_BOOT
from fslab.stored import HistoryRun


def cell(cell_id: str, backend: str, params: dict | None = None, kind: str = "fio") -> Cell:
    return Cell(cell_id, "ext4", "ext4", (), (), "w", kind, params or {"rw": "read", "size": 1 << 20}, {},
                backend)


def history_run(study: int, cell_id: str, backend: str, start: float, wall: float, job: str,
                value: float | None = None, host: str = "lab", quick: bool = False, kind: str = "fio",
                params: dict | None = None, study_created_at: float = 1000.0) -> HistoryRun:
    return HistoryRun(study_id=study, study_created_at=study_created_at, quick=quick, cell_id=cell_id,
                      workload="w", workload_kind=kind,
                      params_json=json.dumps(params or {"rw": "read", "size": 1 << 20}), backend=backend,
                      fs_type="ext4", ok=True, started_at=start, finished_at=start + wall, sequence=0, job=job,
                      host=host, boot_s=None, jobs_before_in_boot=None, value=value)


def mixed_history() -> list[HistoryRun]:
    """A study that alternated host runs (5 s, 2 s to set up) and guest runs (120 s, 40 s
    to boot and set up), one job each, from its start at t = 1000 s (history_run's)."""
    rows, t = [], 1000.0
    for i in range(6):
        backend, setup, wall = ("host", 2.0, 5.0) if i % 2 == 0 else ("guest", 40.0, 120.0)
        t += setup
        rows.append(history_run(1, f"{backend}-cell", backend, t, wall, f"job{i}"))
        t += wall
    return rows


def jobs_of(*cells: Cell, runs_each: int = 1) -> list[Job]:
    settings = JobSettings(device={"kind": "image"})
    return [Job(f"j{i}-{k}", c.backend, (Run(c, k),), settings) for i, c in enumerate(cells) for k in range(runs_each)]


def test_each_run_is_estimated_from_its_own_workload_and_backend_with_a_setup_per_job():
    model = TimeModel(mixed_history())
    host, guest = cell("other-host-cell", "host"), cell("other-guest-cell", "guest")
    # One guest for the 4 guest jobs (the same kernel, memory and device, one after another).
    estimate = model.estimate(jobs_of(host, guest, runs_each=4))
    # 4 x (2 + 5) on the host; in the guest one boot and setup as timed (40 s), 4 runs of
    # 120 s, and 3 jobs set up in the booted guest (no such setup timed: the prior). An
    # average over all 6 runs (62.5 s) would have said 8 x 62.5 = 500 s plus setups.
    assert estimate.seconds == pytest.approx(4 * 7 + 40 + 4 * 120 + 3 * GUEST_SETUP_IN_BOOT.mean, abs=1)
    assert estimate.guest_boots == 1 and estimate.guest_boots_untimed == 0
    assert estimate.guest_in_boot == 3 and estimate.guest_in_boot_untimed == 3
    assert estimate.from_history == 8 and estimate.unknown == 0
    assert "about 9 min" in estimate.text() and "8 like ones timed in earlier studies here" in estimate.text()
    assert "1 guest boot included, as timed here" in estimate.text()
    assert ("3 guest jobs in the guest of the job before them (no boot), 3 set up at "
            f"{GUEST_SETUP_IN_BOOT.low:g}–{GUEST_SETUP_IN_BOOT.high:g} s each") in estimate.text()


def test_a_guest_job_boots_unless_the_guest_job_before_it_needs_the_same_guest():
    """Kernel, memory and device decide; a host job between powers the guest off (it
    would run beside the host job); an aged job runs in the guest of the job before it
    when that guest is the same (its aged image copied onto the guest's disk)."""

    def guest_job(name: str, **settings) -> Job:
        base = JobSettings(device={"kind": "image", "size": 1 << 30})
        return Job(name, "guest", (Run(cell(name, "guest"), 0),), replace(base, **settings))

    aged_cell = replace(cell("aged", "guest"), aging={"fill": 0.5})
    aged = Job("aged", "guest", (Run(aged_cell, 0),), JobSettings(device={"kind": "image", "size": 2 << 30}))
    host = Job("host", "host", (Run(cell("h", "host"), 0),), JobSettings(device={"kind": "image"}))
    jobs = [guest_job("a"), host, guest_job("b"), guest_job("c", guest_memory=2 << 30),
            guest_job("d", guest_memory=2 << 30), guest_job("e", guest_kernel="6.12"),
            guest_job("f", device={"kind": "image", "size": 2 << 30}),
            aged, guest_job("g", device={"kind": "image", "size": 2 << 30}),
            guest_job("i", device={"kind": "image", "size": 1 << 30})]
    estimate = TimeModel().estimate(jobs)
    # boots: a, b (a host job between), c, e, f, i; in the guest before: d, aged, g
    assert estimate.guest_boots == 6 and estimate.guest_in_boot == 3


def test_a_setup_in_a_booted_guest_is_learned_apart_from_a_boot():
    """A record whose guest ran jobs before it teaches the in-boot setup, not the boot's."""
    model = TimeModel(mixed_history())
    record = RunRecord(cell_id="g", repetition=0, sequence=0, status="ok", started_at=0.0, finished_at=1.0,
                       provenance={"job": "j", "guest": {"jobs_before_in_boot": 2}})
    model.learn(cell("g", "guest"), record, 4.5)
    assert model.setup_estimate("guest-in-boot", "ext4") == (4.5, 4.5, 4.5)
    assert model.setup_estimate("guest", "ext4") == (40.0, 40.0, 40.0)


def test_a_studys_first_job_is_set_up_from_the_studys_start():
    """A study whose guest jobs all ran in one boot (seed-002's way): its one boot is the
    first job's setup, from the study's start to its first run; the jobs after it in the
    kept guest are the in-boot setups."""
    rows, t = [], 1014.5
    for i in range(3):
        row = history_run(7, f"c{i}", "guest", t, 3.0, f"job{i}", study_created_at=1000.0)
        rows.append({**row, "jobs_before_in_boot": i})
        t += 3.0 + 4.0
    model = TimeModel(rows)
    assert model.setup_estimate("guest", "ext4") == (14.5, 14.5, 14.5)
    assert model.setup_estimate("guest-in-boot", "ext4") == (4.0, 4.0, 4.0)
    text = model.estimate(jobs_of(cell("c0", "guest"))).text()
    assert "1 guest boot included, as timed here" in text and "not timed here yet" not in text


def test_a_gap_of_a_resumed_study_is_not_taken_for_setup():
    rows = mixed_history()
    rows[3] = {**rows[3], "started_at": rows[3]["started_at"] + 86_400, "finished_at": rows[3]["finished_at"] + 86_400}
    assert TimeModel(rows).setup_estimate("guest", "ext4") == (40.0, 40.0, 40.0)


def test_no_history_falls_back_to_stated_runtimes_and_built_in_priors_and_says_what_is_unknown():
    """Nothing timed here: a host fio run is its stated runtime plus the overhead measured on
    the development machine, each job's setup and each guest boot its built-in prior
    (fslab.priors), all said; a run with nothing to go by is counted apart."""
    from fslab.priors import GUEST_SETUP, HOST_RUN_OVERHEAD, HOST_SETUP

    timed = cell("t", "host", {"rw": "read", "size": 1 << 20, "time_based": 1, "runtime": 30})
    untimed = cell("u", "guest")
    estimate = TimeModel().estimate(jobs_of(timed, untimed))
    assert estimate.seconds == pytest.approx(30 + HOST_RUN_OVERHEAD.mean + HOST_SETUP["ext4"].mean + GUEST_SETUP.mean)
    assert estimate.low == pytest.approx(30 + HOST_RUN_OVERHEAD.low + HOST_SETUP["ext4"].low + GUEST_SETUP.low)
    assert estimate.from_prior == 1 and estimate.from_declared == 0 and estimate.unknown == 1
    assert estimate.setups_prior == 2 and estimate.setups_unknown == 0
    text = estimate.text()
    # the unknown guest run is not in it, and the range is of what is counted
    assert text.startswith(f"at least about {duration_text(estimate.seconds)} (")
    assert " for what is counted, from the quicker and slower quarters of runs and set-ups)" in text
    assert "1 from its stated runtime plus what a run adds for layout and start (1.2–3 s on the host" in text
    assert (f"1 guest boot not timed here yet, included at {GUEST_SETUP.low:g}–{GUEST_SETUP.high:g} s each "
            "without KVM (a built-in prior)") in text  # one boot: its range once, not again as a total
    assert "with KVM (used where /dev/kvm boots a stock kernel) 2–6 s each" in text
    assert "setting up 1 file system not timed here yet, included from built-in priors" in text
    assert "1 run with nothing to go by" in text


def test_the_text_names_only_the_overhead_priors_it_used():
    """A host-only estimate says nothing of a guest's run overhead, a guest-only one nothing
    of the host's; a study with both names both."""
    from fslab.priors import GUEST_RUN_OVERHEAD, HOST_RUN_OVERHEAD

    params = {"rw": "read", "size": 1 << 20, "time_based": 1, "runtime": 5}
    host_text = f"{HOST_RUN_OVERHEAD.low:g}–{HOST_RUN_OVERHEAD.high:g} s on the host"
    guest_text = f"{GUEST_RUN_OVERHEAD.low:g}–{GUEST_RUN_OVERHEAD.high:g} s in a TCG guest"
    for backends, named in ((("host",), {host_text}), (("guest",), {guest_text}),
                            (("host", "guest"), {host_text, guest_text})):
        cells = [cell(f"c-{b}", b, params) for b in backends]
        estimate = TimeModel().estimate(jobs_of(*cells))
        assert estimate.from_prior == len(backends) and estimate.prior_in_guest == ("guest" in backends)
        text = estimate.text()
        for phrase in (host_text, guest_text):
            assert (phrase in text) == (phrase in named), (backends, text)
        assert "in a guest" not in text  # no reused-layout prior: no run reused a layout
        # the guest's priors span two machines; the host's come from one
        assert ("the faster one to the slower quarter on the slower" in text) == ("guest" in backends), text


def test_priors_only_where_they_were_measured():
    """A fake device or another workload than fio: no prior is assumed, the estimate says
    what it leaves out and stays a lower bound."""
    null = cell("n", "host", {"sleep": 0.5}, kind="null")
    jobs = [j.__class__(**{**j.__dict__, "settings": JobSettings(device={"kind": "fake"})}) for j in jobs_of(null)]
    estimate = TimeModel().estimate(jobs)
    assert estimate.setups_unknown == 1 and estimate.setups_prior == 0 and estimate.from_prior == 0
    assert not estimate.complete and "no built-in prior for this device" in estimate.text()


def _auto_fio_plan(backend: str, device_size: str, runtime_s: int, fresh: str | None = None,
                   time_based: bool = True):
    """The plan of an auto study of ext4 and xfs on an image, 4 KiB random writes by fio,
    with every cell on ``backend``."""
    from fslab.plan import make_plan
    from fslab.study import parse_spec

    text = f"""
[study]
name = "x"
repetitions = "auto"
{f'fresh = "{fresh}"' if fresh else ""}
[device]
kind = "image"
size = "{device_size}"
[filesystems.ext4]
[filesystems.xfs]
[[workloads]]
kind = "fio"
name = "w"
rw = "randwrite"
bs = "4k"
size = "64M"
runtime = {runtime_s}
{"time_based = 1" if time_based else ""}
"""
    return make_plan(parse_spec(tomllib.loads(text), "x.toml"), backends=lambda *_: (backend, None))


def test_a_host_fio_study_with_no_history_is_estimated_whole_and_says_its_precision():
    """The plan of a host fio study on an image device, no history: 'about', not 'at least';
    and what ±precision it can promise at a typical spread."""
    from fslab.forecast import forecast
    from fslab.noise import half_width_at, runs_for_precision
    from fslab.priors import TYPICAL_CV

    plan = _auto_fio_plan("host", device_size="1GiB", runtime_s=3)
    outlook = forecast(plan, [], "here", "none")
    assert outlook.time_max.complete and outlook.time_max.setups_prior == 40
    # 40 runs of 3 s + 2 s, 40 ext4/xfs setups: what the real study of this plan took (271 s) is in range.
    assert outlook.time_max.low <= 271 <= outlook.time_max.high
    lines = "\n".join(outlook.lines())
    assert "at most about" in lines and "not included" not in lines and "for what is counted" not in lines
    needed = runs_for_precision(TYPICAL_CV, 0.05)
    width = half_width_at(TYPICAL_CV, 20)
    assert width is not None
    assert f"±5% needs about {needed} runs per cell and 20 runs per cell give about ±{width:.0%}" in lines


def test_the_countdown_learns_from_this_studys_runs_as_they_arrive():
    a = cell("a", "host")
    jobs = jobs_of(a, runs_each=3)
    countdown = Countdown(TimeModel())
    countdown.start(jobs, now=100.0)
    assert countdown.left().unknown == 3  # fio without time_based: nothing to go by yet
    record = RunRecord("a", 0, 0, "ok", started_at=103.0, finished_at=113.0, provenance={"job": "j0-0"})
    countdown.record(a, record)
    left = countdown.left()
    assert left.runs == 2 and left.from_study == 2
    assert left.seconds == pytest.approx(2 * (10 + 3))  # 10 s a run, 3 s to set up each job


def test_noise_is_kept_per_host_and_workload_kind_from_full_runs():
    rows = []
    for k, value in enumerate([100.0, 110.0, 90.0]):  # CV 10%
        rows.append(history_run(1, "c1", "host", k, 1, f"j{k}", value=value))
        rows.append(history_run(1, "c2", "host", k, 1, f"j{k}", value=value * 2))  # CV 10% too
        rows.append(history_run(1, "c3", "host", k, 1, f"j{k}", value=value, host="elsewhere"))
        rows.append(history_run(2, "c4", "host", k, 1, f"j{k}", value=value * (1 + k), quick=True))
    seen = noise_seen(rows, "lab")
    assert set(seen) == {("fio", "host")}
    noise = seen[("fio", "host")]
    assert noise.cv == pytest.approx(0.1) and noise.cells == 2 and noise.runs == 6
    assert noise.runs_needed(0.05) == runs_for_precision(0.1, 0.05) == 18
    assert noise.text(0.05).startswith("at the 10.0% CV seen on lab (fio on the host backend, median of 2 cells")
    assert "±5% needs about 18 runs per cell" in noise.text(0.05)


def test_runs_for_precision_and_half_width_agree_with_the_t_interval():
    assert runs_for_precision(0.07, 0.05) == 11  # t(10) x 0.07 / sqrt(11) = 0.047
    assert half_width_at(0.07, 10) == pytest.approx(2.262 * 0.07 / 10 ** 0.5, rel=1e-3)
    assert half_width_at(0.07, 11) <= 0.05 < half_width_at(0.07, 10)
    assert runs_for_precision(5.0, 0.01, limit=50) is None
    assert duration_text(30) == "30 s" and duration_text(600) == "10 min" and duration_text(7200) == "2.0 h"


FAKE_STUDY = """
[study]
name = "estimates"
repetitions = {reps}
drop_caches = false
[device]
kind = "fake"
directory = "{fake}"
[filesystems.null]
[[workloads]]
kind = "null"
name = "w"
noise = 0.05
sleep = 0.3
"""


def fslab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fslab", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})


def fake_study(tmp_path: Path, reps: int) -> Path:
    (tmp_path / "fake").mkdir()
    study = tmp_path / "s.toml"
    study.write_text(FAKE_STUDY.format(reps=reps, fake=tmp_path / "fake"))
    return study


def test_run_prints_time_left_in_plain_lines_and_plan_estimates_from_the_results(tmp_path):
    study = fake_study(tmp_path, 4)
    before = fslab("plan", str(study), "-r", "results", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert "history: no results in results yet" in before.stdout
    assert "4 from their stated runtime only" in before.stdout
    assert ("noise: no run-to-run spread of null on the host backend seen on this host yet (quick runs and cells "
            "of fewer than 3 ok runs do not count)") in before.stdout
    done = fslab("run", str(study), "-r", "results", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("run null w #")]
    assert len(lines) == 4 and all("left" in line for line in lines)
    assert lines[-1].endswith("; nothing left")
    assert "estimated time: at least about 1 s" in done.stderr  # the stated 0.3 s sleep of 4 runs
    assert "1 cell x 4 repetitions, 4 runs to do," in done.stderr
    after = fslab("plan", str(study), "-r", "results", "--json", cwd=tmp_path)
    forecast = json.loads(after.stdout)["forecast"]
    assert forecast["history"].startswith("4 runs of 1 study in results")
    assert forecast["time_max"]["from_history"] == 4 and forecast["time_max"]["setups_unknown"] == 0
    [noise] = forecast["noise"]
    assert noise["workload_kind"] == "null" and noise["cells"] == 1 and 0 < noise["cv"] < 0.2


def test_one_run_to_do_is_said_in_the_singular(tmp_path):
    study = fake_study(tmp_path, 1)
    done = fslab("run", str(study), "-r", "results", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "study 1: 1 cell x 1 repetition, 1 run to do," in done.stderr
    after = fslab("plan", str(study), "-r", "results", "--json", cwd=tmp_path)
    assert json.loads(after.stdout)["forecast"]["history"].startswith("1 run of 1 study in results")


def test_the_range_always_holds_the_estimate() -> None:
    """One slow run among quick ones pulls the mean above the upper quartile: the range is
    widened to hold it ('about 80 s (71–76 s)' read as nonsense)."""
    from fslab.estimate import _Seen

    times = _Seen()
    for seconds in (10.0, 10.0, 10.0, 10.0, 10.0, 100.0):
        times.add(seconds, own=True)
    mean, low, high = times.stats()
    assert mean == 25.0 and low <= mean <= high and high == 25.0 and low == 10.0


def test_with_reuse_layout_only_the_first_run_of_each_layout_pays_for_laying_it_out():
    """A pass whose runs share files (reuse_layout): the first run of each set of files is
    estimated with the layout prior, the rest with the prior of a run on laid-out files."""
    from fslab.priors import HOST_RUN_OVERHEAD, HOST_RUN_OVERHEAD_REUSED, HOST_SETUP

    params = {"rw": "read", "size": 1 << 20, "time_based": 1, "runtime": 10}
    same_files = [cell(f"c{i}", "host", {**params, "rw": rw}) for i, rw in enumerate(("read", "write", "randread"))]
    other_files = cell("c9", "host", {**params, "size": 2 << 20})
    runs = tuple(Run(c, 0) for c in (*same_files, other_files))
    for reuse, expected_reused in ((True, 2), (False, 0)):
        job = Job("j", "host", runs, JobSettings(device={"kind": "image"}, fresh="repetition", reuse_layout=reuse))
        estimate = TimeModel().estimate([job])
        laid_out = 4 - expected_reused
        assert estimate.reused_layouts == expected_reused
        assert estimate.seconds == pytest.approx(4 * 10 + laid_out * HOST_RUN_OVERHEAD.mean
                                                 + expected_reused * HOST_RUN_OVERHEAD_REUSED.mean
                                                 + HOST_SETUP["ext4"].mean)
        assert ("2 on files an earlier run of their pass laid out: 0.4–0.6 s on the host" in estimate.text()) == reuse


def test_an_auto_study_boots_a_guest_in_each_pass():
    """repetitions = "auto" runs pass after pass, each a batch of its own: the guest the
    last job of a pass ran in is powered off before the next pass's first job."""
    from fslab.forecast import forecast

    plan = _auto_fio_plan("guest", device_size="256MiB", runtime_s=1, fresh="run")
    assert plan.auto is not None
    passes = plan.auto.max_n
    outlook = forecast(plan, [], "here", "none")
    # each pass: one boot, the other cell's job in its guest
    assert (outlook.time_max.guest_boots, outlook.time_max.guest_in_boot) == (passes, passes)
    assert (outlook.time_min.guest_boots, outlook.time_min.guest_in_boot) == (plan.auto.min_n, plan.auto.min_n)


def test_each_guest_job_boots_where_the_executor_keeps_no_guest():
    """A Dask worker runs each job in a process of its own, and so in a guest of its own;
    the local executor keeps one for consecutive jobs that need the same guest."""
    from fslab.executors import LocalExecutor
    from fslab.executors.dask import DaskExecutor

    settings = JobSettings(device={"kind": "image", "size": 1 << 30})
    jobs = [Job(f"j{i}", "guest", (Run(cell("c", "guest"), i),), settings) for i in range(4)]
    kept, not_kept = TimeModel().estimate(jobs), TimeModel(guests_kept=False).estimate(jobs)
    assert (kept.guest_boots, kept.guest_in_boot) == (1, 3)
    assert (not_kept.guest_boots, not_kept.guest_in_boot) == (4, 0)
    assert LocalExecutor.keeps_guests_booted and not DaskExecutor.keeps_guests_booted


def test_the_t_quantile_is_scipy_stats():
    """noise takes Student's t quantile from scipy.special (a lighter import): the same
    values as scipy.stats.t.ppf, which the intervals elsewhere use."""
    from scipy import stats

    from fslab.noise import _t

    assert [_t(df) for df in range(1, 300)] == [float(stats.t.ppf(0.975, df)) for df in range(1, 300)]


def test_the_plan_says_what_the_guest_jobs_would_take_under_kvm():
    """Beside the estimate from the times seen here (TCG's, on a machine without KVM), the
    guest jobs as assumed under KVM: built-in priors only (a boot's setup GUEST_SETUP_KVM, a
    job in a shared boot the host's mkfs and mount, a run the host's overhead); host jobs as
    in the main estimate; said in `fslab plan`'s output."""
    from fslab.forecast import Forecast
    from fslab.priors import GUEST_RUN_OVERHEAD, GUEST_SETUP_KVM, HOST_RUN_OVERHEAD, HOST_SETUP

    stated = {"rw": "read", "size": 1 << 20, "time_based": 1, "runtime": 30}
    host, guest = cell("other-host-cell", "host", stated), cell("g", "guest", stated)
    model = TimeModel(mixed_history())  # setups seen here: 2 s on the host, a guest's boot 40 s
    jobs = jobs_of(host, guest, runs_each=3)  # a job a run: the guest's 3 share one boot
    tcg, kvm = model.estimate(jobs), model.estimate(jobs, kvm=True)
    host_part = 3 * (2 + 30 + HOST_RUN_OVERHEAD.mean)  # the same in both
    assert tcg.seconds == pytest.approx(host_part + 40 + 2 * GUEST_SETUP_IN_BOOT.mean
                                        + 3 * (30 + GUEST_RUN_OVERHEAD.mean), abs=1)
    # the boot seen here (TCG's) is not taken for KVM's
    assert kvm.seconds == pytest.approx(host_part + GUEST_SETUP_KVM.mean + 2 * HOST_SETUP["ext4"].mean
                                        + 3 * (30 + HOST_RUN_OVERHEAD.mean), abs=1)
    assert kvm.high == pytest.approx(3 * (2 + 30 + HOST_RUN_OVERHEAD.high) + GUEST_SETUP_KVM.high
                                     + 2 * HOST_SETUP["ext4"].high + 3 * (30 + HOST_RUN_OVERHEAD.high), abs=1)
    forecast = Forecast(6, 6, tcg, tcg, 0.05, time_kvm=kvm, fixed_n=3)
    (line,) = [x for x in forecast.lines() if "with KVM for its guest jobs" in x]
    assert kvm.short() in line and f"{GUEST_SETUP_KVM.low:g}–{GUEST_SETUP_KVM.high:g} s" in line
    assert "not measured" in line
    assert forecast.to_json()["time_with_kvm"]["seconds"] == kvm.seconds
    # its text names the priors its seconds use, not TCG's
    kvm_text = forecast.to_json()["time_with_kvm"]["text"]
    assert f"included at {GUEST_SETUP_KVM.range_text()} each, as assumed under KVM" in kvm_text
    assert "TCG" not in kvm_text and GUEST_SETUP_IN_BOOT.range_text() not in kvm_text


def test_a_fio_runtime_without_time_based_is_a_most_said_as_up_to():
    """fio stops at its runtime or when its size is done, whichever comes first: with
    nothing timed, such runs give about the most a study takes ("up to"), never an
    "about"; beside runs that are estimated, they are said apart and left out of the sum;
    an auto study's "at most" takes them at their most; runtime = 0 is no limit to fio."""
    from fslab.forecast import forecast
    from fslab.priors import HOST_RUN_OVERHEAD, HOST_SETUP

    capped = cell("c", "host", {"rw": "read", "size": 1 << 20, "runtime": 30, "ramp_time": 2})
    alone = TimeModel().estimate(jobs_of(capped, runs_each=2))
    assert alone.capped == 2 and alone.from_declared == alone.from_prior == alone.unknown == 0
    # runs at their runtime plus the overhead's upper quartile, setups at their mean (as an
    # auto study's "at most" counts them, so that the two agree)
    most = 2 * (32 + HOST_RUN_OVERHEAD.high) + 2 * HOST_SETUP["ext4"].mean
    assert alone.capped_s == pytest.approx(2 * (32 + HOST_RUN_OVERHEAD.high))
    assert not alone.complete and alone.capped_only
    assert alone.short() == f"up to about {duration_text(most)}"
    text = alone.text()
    assert text.startswith(f"up to about {duration_text(most)}: 2 runs that stop at their stated runtime or "
                           "when their work is done, whichever comes first (fio's runtime without time_based), "
                           "each taken at that runtime plus the upper quartile"), text
    assert "a built-in prior measured on fslab's development machine)" in text
    assert "setting up 2 file systems not timed here yet" in text

    timed = cell("t", "host", {"rw": "read", "size": 1 << 20, "time_based": 1, "runtime": 10})
    mixed = TimeModel().estimate(jobs_of(timed, capped))
    assert mixed.capped == 1 and mixed.from_prior == 1
    assert mixed.seconds == pytest.approx(10 + HOST_RUN_OVERHEAD.mean + 2 * HOST_SETUP["ext4"].mean)
    text = mixed.text()
    assert text.startswith("at least about ") and "1 run that stops at its stated runtime" in text
    assert f"not included, up to about {duration_text(32 + HOST_RUN_OVERHEAD.high)} more" in text
    assert "counted" not in text.split("1 run that stops", 1)[1].split(";")[0]  # not "counted ... not included"
    upper = 10 + HOST_RUN_OVERHEAD.mean + 2 * HOST_SETUP["ext4"].mean + 32 + HOST_RUN_OVERHEAD.high
    assert mixed.at_most().startswith(f"at most about {duration_text(upper)}")
    assert mixed.upper_seconds == pytest.approx(upper)
    assert mixed.short() == f"at least about {duration_text(mixed.seconds)}"  # no range below the least
    tiny = replace(mixed, seconds=0.3, low=0.3, high=0.3)  # counted: under a second
    assert tiny.short() == "not known yet (what is counted takes under a second)"  # not "at least about 0 s"
    assert tiny.text().startswith("not known yet (what is counted takes under a second)")

    # A device with no setup prior and a run with nothing to go by: neither a least nor a most.
    block = [replace(j, settings=JobSettings(device={"kind": "block"})) for j in jobs_of(capped, cell("u", "host"))]
    partial = TimeModel().estimate(block)
    assert partial.setups_unknown == 2 and partial.unknown == 1 and partial.capped == 1
    assert partial.short() == f"up to about {duration_text(32 + HOST_RUN_OVERHEAD.high)} and what is not timed"
    assert "0 s" not in partial.text() and "1 run with nothing to go by (it ends" in partial.text()
    assert partial.at_most().endswith("; 1 run with nothing to go by, setting up 2 file systems not included")

    never = cell("z", "host", {"rw": "read", "size": 1 << 20, "runtime": 0})
    assert TimeModel().estimate(jobs_of(never)).unknown == 1  # fio's runtime = 0: no limit

    for time_based, first in ((False, "up to about "), (True, "about ")):
        lines = forecast(_auto_fio_plan("host", device_size="1GiB", runtime_s=3, time_based=time_based), [],
                         "here", "none").lines()
        assert lines[1].startswith(f"estimated time, every cell min_repetitions times: {first}"), lines
        assert lines[2].startswith("  every cell max_repetitions times: at most about ") and "up to" not in lines[2]
        assert "not included" not in lines[2]  # each run at about its most, each setup counted
    capped_plan = forecast(_auto_fio_plan("host", device_size="1GiB", runtime_s=3, time_based=False), [], "here",
                           "none")
    top = capped_plan.time_max
    assert top.capped == 40 and top.capped_s == pytest.approx(40 * (3 + HOST_RUN_OVERHEAD.high))
    assert capped_plan.lines()[2] == f"  every cell max_repetitions times: {top.at_most()}"
    assert top.at_most().startswith(f"at most about {duration_text(top.seconds + top.capped_s)}")
