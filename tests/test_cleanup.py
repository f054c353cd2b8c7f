"""`fslab cleanup` releases exactly what the state files of dead fslab processes list, and
leaves a live process's resources alone (not even listing them in a dry run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fslab.cgroups import detect_version
from fslab.cleanup import cleanup
from fslab.devices.image import fslab_loop_devices

HOLDER = textwrap.dedent("""
    import os, subprocess, sys, time
    from pathlib import Path
    from fslab.cgroups import memory_limit
    from fslab.devices.image import provision
    from fslab.devices.sections import ImageSection
    from fslab.filesystems import FILESYSTEMS, mounted

    work = Path(sys.argv[1])
    ext4 = FILESYSTEMS.get("ext4")
    with provision(ImageSection(size="128MiB"), work, f"{os.getpid()}-holder") as dev:
        ext4.make(dev, [])
        with mounted(ext4, dev, [], work / "mnt-holder") as mnt, memory_limit(64 << 20) as cg:
            # an orphan-to-be: a process working on the mount, in the cgroup
            child = subprocess.Popen(["sleep", "600"], cwd=mnt.mountpoint, preexec_fn=cg.enter)
            print(json.dumps({"cgroup": str(cg.path), "child": child.pid}), flush=True)
            time.sleep(600)
""").replace("import os,", "import json, os,")


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv("FSLAB_STATE_DIR", str(path))
    return path


def test_dead_process_resources_are_released_live_ones_left_alone(device_support, tmp_path, state_dir):
    if detect_version() is None:
        pytest.skip("needs a cgroup memory controller")
    work = tmp_path / "work"
    work.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(work)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "FSLAB_STATE_DIR": str(state_dir)})
    try:
        facts = json.loads(holder.stdout.readline())
        cgroup, child = Path(facts["cgroup"]), facts["child"]
        (state,) = state_dir.glob("fslab-*.json")
        kinds = [r["kind"] for r in json.loads(state.read_text())["resources"]]
        assert kinds == ["image", "mount", "cgroup"]  # written down in the order they were made
        # Alive: a dry run lists none of its resources, only that it is running.
        lines = cleanup(dry_run=True)
        assert lines == [f"leave the resources of fslab process {holder.pid}: it is still running"]
        assert cgroup.exists() and (work / "mnt-holder").is_dir()
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        # Dead: a dry run says what it would do and does nothing.
        planned = cleanup(dry_run=True, under=work)
        assert f"unmount {work / 'mnt-holder'}" in planned and f"remove cgroup {cgroup}" in planned
        assert any(line.startswith("detach /dev/loop") for line in planned)
        assert cgroup.exists() and state.exists()
        done = cleanup(under=work)
        # Newest first: the cgroup (its orphaned process killed), the mount, the loop, the image.
        order = [next(i for i, line in enumerate(done) if line.startswith(p))
                 for p in ("remove cgroup", "unmount", "detach", "remove image")]
        assert order == sorted(order), done
        assert not cgroup.exists()
        assert not [l for l, image in fslab_loop_devices() if image.startswith(str(work))]
        assert str(work / "mnt-holder") not in Path("/proc/mounts").read_text()
        assert not list(work.glob("*.img")) and not state.exists()
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    finally:
        holder.kill()
        holder.wait()
        cleanup(under=work)


def test_cleanup_under_another_folder_leaves_a_dead_process_alone(tmp_path, state_dir):
    state_dir.mkdir()
    state = state_dir / "fslab-999999999-1.json"
    state.write_text(json.dumps({"pid": 999999999, "start_time": 1, "resources": [
        {"kind": "directory", "ident": str(tmp_path / "a" / "x"), "under": str(tmp_path / "a"), "info": None}]}))
    (tmp_path / "a" / "x").mkdir(parents=True)
    assert cleanup(under=tmp_path / "b") == []
    assert (tmp_path / "a" / "x").exists() and state.exists()
    assert cleanup(under=tmp_path / "a") == [f"remove {tmp_path / 'a' / 'x'}"]
    assert not (tmp_path / "a" / "x").exists() and not state.exists()


def test_cleanup_under_a_folder_leaves_a_dead_processs_unlisted_tracefs_instance(tmp_path, state_dir):
    """An instance no state file lists (bench/ makes such) is not released by `fslab cleanup
    --under DIR`, which releases only what is registered below DIR: a sweep there took a
    parallel study's instance before that study's own cleanup could. (Only `fslab cleanup`
    sweeps them; not called here, since it would sweep a parallel test's too.)"""
    from fslab.trace.capture import TRACEFS, remove_instance

    if os.geteuid() != 0 or not (TRACEFS / "instances").is_dir():
        pytest.skip("needs root and tracefs")
    inst = TRACEFS / "instances" / "fslab-999999999-5eed"  # above pid_max: never a live process
    inst.mkdir()
    try:
        assert cleanup(under=tmp_path) == []
        assert inst.is_dir()
    finally:
        remove_instance(inst)
