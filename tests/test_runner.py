"""End to end on real loop devices, mounts and fio: a study runs, stores, reports and
exports; failures become failed runs; Ctrl-C and SIGTERM leave nothing behind; a study
resumes without measuring anything twice."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.export import EXPORTERS
from fslab.report.tables import build_table
from fslab.runner import run_study
from fslab.store import Store

STUDY = """
[study]
name = "runner test"
repetitions = 2
order = "shuffled"
fresh = "{fresh}"

[device]
size = "512MiB"
image_dir = "{images}"

[filesystems.ext4]
mount = ["noatime"]
[filesystems.xfs]

[[workloads]]
kind = "fio"
name = "randread"
rw = "randread"
bs = "4k"
size = "32M"
direct = 1
runtime = {runtime}
time_based = 1

[[workloads]]
kind = "fio"
name = "seqwrite"
rw = "write"
bs = "1M"
size = "32M"
direct = 1
"""


def write_study(tmp_path: Path, fresh: str = "run", runtime: int = 1, extra: str = "") -> Path:
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(fresh=fresh, images=tmp_path / "images", runtime=runtime) + extra)
    return path


def leftovers(tmp_path: Path) -> list[str]:
    """Mounts, loop devices and images of this test (other tests may run concurrently)."""
    found = [l for l in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in l]
    losetup = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    found += [l for l in losetup.splitlines() if str(tmp_path) in l]
    found += [str(p) for p in tmp_path.rglob("*.img")]
    return found


def test_study_runs_stores_reports_and_exports(device_support, tmp_path):
    results = tmp_path / "results"
    outcome = run_study(str(write_study(tmp_path)), results_dir=results)
    assert outcome.runs_done == 8 and outcome.runs_failed == 0
    assert leftovers(tmp_path) == []
    with Store(results) as store:
        study = store.study()
        runs = store.runs(study.id)
        cells = store.cells(study.id)
    assert study.status == "complete" and len(runs) == 8
    for run in runs:
        m = {k: v["value"] for k, v in run["metrics"].items()}
        prov = run["provenance"]
        assert prov["host"]["kernel"] == os.uname().release
        assert prov["device"]["loop_direct_io"] == "1"
        fs = prov["filesystem"]
        assert fs["mounted_as"] == run["cell"]["fs_type"]
        if run["cell"]["filesystem"] == "ext4":
            assert "noatime" in fs["mount_options_in_effect"]
        assert prov["tools"]["fio"].startswith("fio-")
        assert prov["caches_dropped"] is True
        # fio's own pages (laid out by its layout start) stayed cached across the drop
        assert prov["tool_pages_kept_bytes"] > 0
        if run["cell"]["workload"] == "randread":
            assert m["read_iops"] > 100
            assert m["read_clat_p50_ns"] <= m["read_clat_p99_ns"]
            # direct 4 KiB reads: the device saw about as many reads as fio issued
            issued = m["read_io_bytes"] / 4096
            assert 0.9 * issued <= m["device_read_requests_count"] <= 1.2 * issued + 50
            # the file was laid out before the counters started (fio --create_only)
            assert m["device_write_sectors_count"] * 512 < 32 << 20
        else:
            assert m["write_io_bytes"] == 32 << 20
            assert m["device_write_sectors_count"] * 512 >= 32 << 20
        assert run["metrics"]["read_iops" if "read_iops" in m else "write_iops"]["unit"] == "IOPS"
        art = results / run["artifact_dir"]
        assert json.loads((art / "fio.json").read_text())["jobs"]
        # each run works in a directory of its own on the file system under test
        key = f"{run['cell']['id']}-r{run['repetition'] + 1}"
        assert f"/fslab-{key}\n" in (art / "job.fio").read_text()
        assert (art / "mkfs.txt").exists() and (art / "fsinfo.txt").read_text()
    table = build_table(runs, None, cells)
    assert table.filesystems == ["ext4", "xfs"]
    rows = {r.label: r for r in table.rows}
    assert rows["randread"].metric == "iops" and rows["seqwrite"].metric == "bw_bytes_per_s"
    assert all(s.n == 2 and s.ci_half_width is not None for s in rows["randread"].summaries.values())
    records = json.loads(EXPORTERS.get("json")(study, runs))
    assert len(records) == 8 and {r["status"] for r in records} == {"ok"}
    assert {r["repetition"] for r in records} == {1, 2}  # 1-based, as the console says
    csv_text = EXPORTERS.get("csv")(study, runs)
    header = csv_text.splitlines()[0]
    assert "iops [IOPS]" in header and "param.rw" in header
    assert len(csv_text.strip().splitlines()) == 9


def test_fio_failure_and_timeout_become_failed_runs(device_support, tmp_path):
    extra = """
[[workloads]]
kind = "fio"
name = "unaligned"
rw = "read"
bs = "4k"
size = "8M"
verify = "md5"
verify_only = 1

[[workloads]]
kind = "fio"
name = "hangs"
rw = "read"
bs = "4k"
size = "8M"
runtime = 30
time_based = 1
timeout = 2
"""
    path = write_study(tmp_path, extra=extra)
    text = path.read_text().replace("[filesystems.xfs]\n", "").replace("repetitions = 2", "repetitions = 1")
    path.write_text(text)
    results = tmp_path / "results"
    outcome = run_study(str(path), results_dir=results)
    assert outcome.runs_done == 4 and outcome.runs_failed == 2
    with Store(results) as store:
        runs = {r["cell"]["workload"]: r for r in store.runs(store.study().id)}
    # Verifying data that was never written with checksums: valid options, fio fails at run time
    unaligned, hangs = runs["unaligned"], runs["hangs"]
    assert unaligned["status"] == "failed" and "fio" in unaligned["error"]
    assert (results / unaligned["artifact_dir"] / "fio.stderr").read_text()
    assert hangs["status"] == "failed" and "timed out" in hangs["error"]
    assert runs["randread"]["status"] == "ok"
    assert leftovers(tmp_path) == []


def _stored(results: Path) -> int:
    db = results / "fslab.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig,fresh", [(signal.SIGINT, "run"), (signal.SIGTERM, "repetition")])
def test_interrupt_cleans_up_and_resume_completes(device_support, tmp_path, sig, fresh):
    study = write_study(tmp_path, fresh=fresh, runtime=2)
    results = tmp_path / "results"
    fslab = [sys.executable, "-m", "fslab.cli"]
    # A suite started with SIGINT ignored (nohup, a background job) would pass that on:
    # the child gets the default handler back, as a run started from a terminal has it.
    proc = subprocess.Popen([*fslab, "run", str(study), "-r", str(results), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 120
    while _stored(results) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(0.5)  # land inside the next run (mkfs, mount or fio)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "resume" in err
    assert leftovers(tmp_path) == []
    with Store(results) as store:
        study_row = store.study()
        before = {(r["cell"]["id"], r["repetition"]): r["run_id"] for r in store.runs(study_row.id)}
    assert study_row.status == "interrupted" and 1 <= len(before) < 8
    done = subprocess.run([*fslab, "run", str(study), "-r", str(results), "--resume", "-q"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Store(results) as store:
        assert len(store.studies()) == 1
        after = store.runs(store.study().id)
        assert store.study().status == "complete"
    assert len(after) == 8
    assert len({(r["cell"]["id"], r["repetition"]) for r in after}) == 8
    for r in after:  # what was measured before the interrupt is kept, not measured again
        key = (r["cell"]["id"], r["repetition"])
        if key in before:
            assert r["run_id"] == before[key]
    if fresh == "repetition":  # a pass cut short says so in the runs that finished it
        flagged = [r for r in after if r["provenance"].get("resumed_pass_without")]
        assert all(r["sequence"] > max(s for s in (a["sequence"] for a in after
                                                    if (a["cell"]["id"], a["repetition"]) in before))
                   for r in flagged)
    assert leftovers(tmp_path) == []


def test_relative_results_directory(device_support, tmp_path, monkeypatch):
    study = write_study(tmp_path)
    text = study.read_text().replace("repetitions = 2", "repetitions = 1")
    study.write_text(text.replace("[filesystems.xfs]\n", ""))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub dir").mkdir()
    # relative, through "..", with a space (which /proc/mounts shows as \040)
    outcome = run_study("study.toml", results_dir=Path("sub dir/../rel results"))
    assert outcome.runs_done == 2 and outcome.runs_failed == 0
    assert (tmp_path / "rel results" / "fslab.sqlite").exists()
    assert leftovers(tmp_path) == []


def test_cleanup_after_sigkill(device_support, tmp_path):
    """SIGKILL gives fslab no chance to clean up; `fslab cleanup` must then do it."""
    try:
        study = write_study(tmp_path, runtime=20)
        # Traced and memory-limited: the kill also leaves a tracefs instance and a cgroup.
        study.write_text(study.read_text().replace("[study]\n", "[study]\ntrace = true\n", 1)
                         .replace('name = "randread"\n', 'name = "randread"\nmemory = "256MiB"\n', 1)
                         .replace('name = "seqwrite"\n', 'name = "seqwrite"\nmemory = "256MiB"\n', 1))
        results = tmp_path / "results"
        fslab = [sys.executable, "-m", "fslab.cli"]
        proc = subprocess.Popen([*fslab, "run", str(study), "-r", str(results), "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        fio_running = False
        while time.monotonic() < deadline and not fio_running:
            time.sleep(0.1)
            # the measured run (not the layout pass), so the cgroup and the trace exist
            ps = subprocess.run(["pgrep", "-f", f"fio --output-format=json --output={results}"], capture_output=True)
            fio_running = ps.returncode == 0
        assert fio_running
        proc.kill()
        proc.wait()
        assert leftovers(tmp_path), "the kill should have left a mount and a loop device"
        from fslab.cgroups import leftover_cgroups
        from fslab.trace.capture import TRACEFS

        instances = [p.name for p in (TRACEFS / "instances").glob(f"fslab-{proc.pid}-*")]
        (state,) = [p for p in Path("/run/fslab").glob(f"fslab-{proc.pid}-*.json")]
        listed = {r["kind"]: r["ident"] for r in json.loads(state.read_text())["resources"]}
        assert {"image", "mount", "cgroup", "tracefs"} <= set(listed), listed
        assert instances and Path(listed["cgroup"]) in leftover_cgroups()
        # `fslab list` tells a study whose process is gone from a running one.
        listing = subprocess.run([*fslab, "list", "-r", str(results)], capture_output=True, text=True, timeout=60)
        assert "interrupted" in listing.stdout and "running" not in listing.stdout
        # An orphaned workload (fio may or may not outlive fslab) keeps the mount busy:
        (mnt,) = [Path(l.split()[1]) for l in Path("/proc/mounts").read_text().splitlines()
                  if str(tmp_path) in l]
        holder = subprocess.Popen(["sleep", "300"], cwd=mnt, start_new_session=True)
        dry = subprocess.run([*fslab, "cleanup", "--dry-run", "--under", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
        assert "would unmount" in dry.stdout and leftovers(tmp_path)
        done = subprocess.run([*fslab, "cleanup", "--under", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "detach /dev/loop" in done.stdout and "killed orphaned" in done.stdout
        assert f"remove cgroup {listed['cgroup']}" in done.stdout and "remove tracefs instance" in done.stdout
        assert holder.wait(timeout=10) == -9
        assert leftovers(tmp_path) == []
        assert not Path(listed["cgroup"]).exists() and not state.exists()
        assert not [p for p in (TRACEFS / "instances").glob(f"fslab-{proc.pid}-*")]
    finally:  # even when an assertion failed: never leave a mount behind
        subprocess.run([sys.executable, "-m", "fslab", "cleanup", "--under", str(tmp_path)],
                       capture_output=True, timeout=120)


def test_resume_after_sigkill_releases_what_the_dead_run_left_and_says_so(device_support, tmp_path):
    """A SIGKILLed run leaves its mount, loop device, image and fio behind; --resume (any
    run into that results directory) releases them before measuring, and says which."""
    try:
        study = write_study(tmp_path, runtime=3)
        study.write_text(study.read_text().replace("repetitions = 2", "repetitions = 1"))
        results = tmp_path / "results"
        fslab = [sys.executable, "-m", "fslab.cli"]
        proc = subprocess.Popen([*fslab, "run", str(study), "-r", str(results), "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if subprocess.run(["pgrep", "-f", f"fio --output-format=json --output={results}"],
                              capture_output=True).returncode == 0:
                break
        proc.kill()
        proc.wait()
        assert leftovers(tmp_path), "the kill should have left a mount and a loop device"
        done = subprocess.run([*fslab, "run", str(study), "-r", str(results), "--resume"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        said = " ".join(done.stderr.split())
        assert f"left by fslab process {proc.pid}, which died" in said
        assert "released: unmount" in said and "released: detach /dev/loop" in said
        assert leftovers(tmp_path) == []
        with Store(results) as store:
            row = store.study()
            assert row.status == "complete" and len(store.stored_runs(row.id)) == row.planned_runs
    finally:
        subprocess.run([sys.executable, "-m", "fslab", "cleanup", "--under", str(tmp_path)],
                       capture_output=True, timeout=120)


def test_one_study_per_results_directory(device_support, tmp_path):
    from fslab.errors import FslabError
    from fslab.study_lock import study_lock

    results = tmp_path / "results"
    results.mkdir()
    with study_lock(results):
        with pytest.raises(FslabError, match="another fslab .* is running a study"):
            run_study(str(write_study(tmp_path)), results_dir=results)
    assert not (results / "fslab.sqlite").exists()  # nothing was started


def test_study_on_a_block_device_the_user_handed_over(loop_device, tmp_path):
    from fslab.errors import DeviceRefused

    with loop_device("512MiB") as dev:
        study = write_study(tmp_path)
        text = study.read_text().replace(f'size = "512MiB"\nimage_dir = "{tmp_path / "images"}"',
                                         f'kind = "block"\npath = "{dev.path}"')
        study.write_text(text.replace("repetitions = 2", "repetitions = 1"))
        results = tmp_path / "results"
        with pytest.raises(DeviceRefused, match="--destroy-data-on"):
            run_study(str(study), results_dir=results)
        outcome = run_study(str(study), results_dir=results, allowed_devices=frozenset({dev.path}))
        assert outcome.runs_done == 4 and outcome.runs_failed == 0
        with Store(results) as store:
            runs = store.runs(store.study().id)
        assert {r["provenance"]["device"]["kind"] for r in runs} == {"block"}
        assert {r["provenance"]["device"]["path"] for r in runs} == {dev.path}
        # fslab's own file system is now on it: a new study must be told to overwrite it
        with pytest.raises(DeviceRefused, match="signature"):
            run_study(str(study), results_dir=tmp_path / "again", allowed_devices=frozenset({dev.path}))


def test_memory_limit_that_kills_the_workload_says_so(device_support, tmp_path):
    """fio in a 1 MiB memory cgroup is killed by the kernel: the run's error names the
    limit, not 'exited with status -9'."""
    from fslab.cgroups import detect_version

    if detect_version() is None:
        pytest.skip("needs a cgroup memory controller")
    study = write_study(tmp_path)
    text = study.read_text().replace('name = "randread"\n', 'name = "randread"\nmemory = "1MiB"\n', 1)
    study.write_text(text.replace("[filesystems.xfs]\n", "").replace("repetitions = 2", "repetitions = 1"))
    outcome = run_study(str(study), results_dir=tmp_path / "results")
    with Store(tmp_path / "results") as store:
        runs = store.runs(store.study().id)
    (killed,) = [r for r in runs if r["cell"]["workload"] == "randread"]
    assert killed["status"] == "failed"
    assert killed["error"].startswith("killed by the memory limit (memory = 1 MiB)"), killed["error"]
    assert outcome.runs_failed == 1 and outcome.runs_failed_total == 1
    assert leftovers(tmp_path) == []


def test_errors_every_run_would_hit_are_found_before_the_first_mkfs(device_support, tmp_path):
    """A file system the device is too small for, a mount option the kernel rejects, a
    job file that does not exist and files larger than the device: one error listing
    each with its field, before anything is stored."""
    study = tmp_path / "bad.toml"
    study.write_text(f"""
[study]
name = "doomed"
repetitions = 1

[device]
size = "256MiB"
image_dir = "{tmp_path / 'images'}"

[filesystems.ext4]
mount = ["no_such_option"]
[filesystems.xfs]

[[workloads]]
kind = "fio"
name = "from-file"
job_file = "missing.fio"

[[workloads]]
kind = "fio"
name = "too-big"
rw = "write"
bs = "1M"
size = "1G"
""")
    results = tmp_path / "results"
    with pytest.raises(FslabError) as failed:
        run_study(str(study), results_dir=results)
    text = str(failed.value)
    assert "filesystems.xfs: xfs refuses a device below 300 MiB" in text and "larger than 300MB" in text
    assert "filesystems.xfs.mkfs" not in text  # said once, not again by its mkfs on a scratch image
    assert "filesystems.ext4.mount" in text
    assert "workloads[0].job_file: 'missing.fio' not found" in text
    assert "workloads[1]" in text and "more than 90% of the 256 MiB device" in text
    with Store(results) as store:
        assert store.studies() == []
    assert leftovers(tmp_path) == []


def test_a_full_results_disk_stops_the_study_with_the_resume_command(device_support, tmp_path):
    """The results directory's disk fills up mid-study: no traceback, exit 2, the runs stored
    so far kept, nothing left mounted, and the printed command resumes once space is freed."""
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(results)], check=True)
    try:
        study = tmp_path / "s.toml"
        study.write_text(f'[study]\nname = "full"\nrepetitions = 12\ndrop_caches = false\n[device]\n'
                         f'size = "256MiB"\nimage_dir = "{tmp_path / "images"}"\n[filesystems.ext4]\n'
                         '[[workloads]]\nkind = "fio"\nname = "w"\nrw = "write"\nbs = "64k"\nsize = "8M"\n')
        fslab = [sys.executable, "-m", "fslab", "run", str(study), "-r", str(results)]
        done = subprocess.run(fslab, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "disk is full" in done.stderr
        assert f"`fslab run {study} -r {results} --resume`" in " ".join(done.stderr.split())
        assert [line for line in leftovers(tmp_path) if not line.startswith("tmpfs ")] == []
        subprocess.run(["mount", "-o", "remount,size=16m", str(results)], check=True)
        with Store(results) as store:
            kept = len(store.stored_runs(store.study().id))
        assert 0 < kept < 12
        done = subprocess.run([*fslab, "--resume"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        with Store(results) as store:
            assert len(store.stored_runs(store.study().id)) == 12
    finally:
        subprocess.run(["umount", str(results)], check=False)


def test_a_run_refuses_to_measure_beside_a_live_fslab_process_holding_resources_there(tmp_path):
    """A live fslab process (a job of an earlier run that outlived it) still holds
    something in the results directory: the run refuses, naming the pid and the fix, and
    stores nothing; once that process is dead, the next run releases what it left and
    says so."""
    from fslab.errors import FslabError

    results = tmp_path / "results"
    held = results / "work" / "held-by-another"
    held.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom fslab.resources import tracked\n"
         f"with tracked('directory', {str(held)!r}, under={str(results)!r}):\n"
         "    print('ready', flush=True)\n    time.sleep(120)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        (tmp_path / "fake").mkdir()
        study = tmp_path / "s.toml"
        study.write_text(f'[study]\nname = "beside"\nrepetitions = 1\n[device]\nkind = "fake"\n'
                         f'directory = "{tmp_path / "fake"}"\n[filesystems.null]\n[[workloads]]\nkind = "null"\n'
                         'name = "w"\n')
        with pytest.raises(FslabError, match=rf"fslab process {holder.pid} is still running and holds resources "
                                             rf"in {results.resolve()}.*`kill {holder.pid}`"):
            run_study(str(study), results_dir=results)
        with Store(results) as store:
            assert store.studies() == []
        assert held.is_dir()  # a live process's resources are never touched
        holder.kill()
        holder.wait()
        notices: list[str] = []
        outcome = run_study(str(study), results_dir=results, on_notice=notices.append)
        assert outcome.runs_failed == 0
        assert notices == [f"released: remove {held} (left by fslab process {holder.pid}, which died)"]
        assert not held.exists()
    finally:
        holder.kill()


def test_a_study_refused_by_the_host_checks_leaves_no_results_directory(device_support, tmp_path):
    """Data larger than the device is refused before the first mkfs, exit 2; a results
    directory that run made is removed again (no empty store, lock file or work folder),
    one that was there keeps what it had."""
    study = tmp_path / "big.toml"
    study.write_text('[study]\nname = "too big"\nrepetitions = 1\n[device]\nsize = "64MiB"\n'
                     f'image_dir = "{tmp_path / "images"}"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\n'
                     'name = "w"\nrw = "write"\nbs = "1M"\nsize = "256M"\n')
    results = tmp_path / "new-results"
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(study), "-r", str(results)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "256" in done.stderr, done.stderr
    assert not results.exists()
    kept = tmp_path / "old-results"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    done = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(study), "-r", str(kept)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and (kept / "notes.txt").read_text() == "mine"
