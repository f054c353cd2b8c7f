"""Entries on the user's own disks in one study (seed 004's layout on real drives): a
file system's own device may be a disk or an array over named members, each disk
confirmed once with --destroy-data-on and checked before the first mkfs, and no disk
named by two different devices. Loop devices made here stand in for the user's disks
(the same code path); md is not in this host's kernel, so the array entry is checked as
far as planning and preflight go."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends import BACKENDS, choose_backend
from fslab.commands import run_command
from fslab.devices import DEVICES, Grant
from fslab.errors import DeviceRefused, SpecError
from fslab.plan import make_plan
from fslab.preflight import check_plan, device_identity
from fslab.study import load_spec
from partitions import partitioned_loop

WORKLOAD = '[[workloads]]\nkind = "fio"\nname = "w"\nrw = "randwrite"\nbs = "4k"\nsize = "8M"\ndirect = 1\n'


def study_file(tmp_path: Path, entries: str, device: str | None = None) -> Path:
    path = tmp_path / "study.toml"
    device = device or f'size = "512MiB"\nimage_dir = "{tmp_path / "images"}"'
    path.write_text(f'[study]\nname = "entry disks"\nrepetitions = 1\nseed = 1\n[device]\n{device}\n'
                    f'{entries}\n{WORKLOAD}')
    return path


def block(name: str, path: str, fs: str = "ext4", extra: str = "") -> str:
    return f'[filesystems.{name}]\ntype = "{fs}"\ndevice = {{ kind = "block", path = "{path}"{extra} }}\n'


def raid5(name: str, members: list[str]) -> str:
    return (f'[filesystems.{name}]\ntype = "ext4"\n'
            f'device = {{ kind = "raid", level = 5, chunk = "64KiB", members = {json.dumps(members)} }}\n')


def test_a_disk_belongs_to_one_device_and_the_error_names_both_fields(tmp_path: Path) -> None:
    # Entries' own devices on named disks are accepted, alike tables are one shared device.
    accepted = study_file(tmp_path, block("ssd", "/dev/fslab-a") + block("ssd-xfs", "/dev/fslab-a", "xfs")
                          + raid5("r5", ["/dev/fslab-b", "/dev/fslab-c", "/dev/fslab-d"]))
    spec, _, _ = load_spec(str(accepted))
    assert [d.kind for d in spec.devices_in_use()] == ["block", "raid"]
    # A disk that is also an array's member: refused, naming both fields.
    shared = study_file(tmp_path, block("ssd", "/dev/fslab-a") + raid5("r5", ["/dev/fslab-b", "/dev/fslab-a",
                                                                               "/dev/fslab-c"]))
    with pytest.raises(SpecError, match=r"filesystems\.ssd\.device\.path \(/dev/fslab-a\) and "
                                        r"filesystems\.r5\.device\.members\[1\] \(/dev/fslab-a\) name the same disk"):
        load_spec(str(shared))
    # Two different tables (here: force differs) for one disk, and a link to it, likewise.
    forced = study_file(tmp_path, block("one", "/dev/fslab-a") + block("two", "/dev/fslab-a", extra=", force = true"))
    with pytest.raises(SpecError, match=r"filesystems\.one\.device\.path .* filesystems\.two\.device\.path"):
        load_spec(str(forced))
    link = tmp_path / "by-id-link"
    link.symlink_to("/dev/fslab-a")
    linked = study_file(tmp_path, block("one", "/dev/fslab-a") + block("two", str(link)))
    with pytest.raises(SpecError, match="name the same disk"):
        load_spec(str(linked))
    # The study's [device] counts when an entry runs on it.
    members = ["/dev/fslab-a", "/dev/fslab-b", "/dev/fslab-c"]
    on_study_device = study_file(tmp_path, "[filesystems.ext4]\n" + raid5("r5", members),
                                 device='kind = "block"\npath = "/dev/fslab-a"')
    with pytest.raises(SpecError, match=r"device\.path \(/dev/fslab-a\) and filesystems\.r5\.device\.members\[0\]"):
        load_spec(str(on_study_device))


def test_a_disk_and_its_partition_are_one_disk(device_support, tmp_path: Path) -> None:
    with partitioned_loop(tmp_path, "label: gpt\n,16MiB\n", 64 << 20) as (loop, part):
        study = study_file(tmp_path, block("whole", loop) + block("part", part))
        with pytest.raises(SpecError, match=f"{part}\\) name a disk and one of its partitions"):
            load_spec(str(study))


@pytest.fixture
def guest_available(monkeypatch: pytest.MonkeyPatch) -> None:
    # This host's kernel has no md: the array entry is planned for the guest, which needs
    # no QEMU to be planned and preflighted.
    monkeypatch.setattr(BACKENDS.get("guest"), "unavailable", lambda: None)


def test_an_array_entry_on_named_members_is_planned_and_every_disk_checked(loop_device, guest_available,
                                                                           tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        ssd, *members = [stack.enter_context(loop_device("64MiB")).path for _ in range(4)]
        study = study_file(tmp_path, "[filesystems.ext4]\n" + block("ext4-ssd", ssd) + raid5("ext4-raid5", members))
        spec, source, _ = load_spec(str(study))
        plan = make_plan(spec, backends=choose_backend, source=source)
        check_plan(plan, source=source)  # what `fslab plan` checks
        shown = subprocess.run([sys.executable, "-m", "fslab", "plan", str(study)], capture_output=True, text=True,
                               timeout=300)
        assert shown.returncode == 0, shown.stderr
        assert " ".join(f"--destroy-data-on {d}" for d in [ssd, *members]) in " ".join(shown.stdout.split())
        devices = {r.cell.filesystem: j.settings.device for j in plan.jobs for r in j.runs}
        assert devices["ext4"]["kind"] == "image" and devices["ext4-ssd"] == {"kind": "block", "path": ssd,
                                                                                 "force": False}
        assert devices["ext4-raid5"]["kind"] == "raid" and devices["ext4-raid5"]["members"] == members
        # Every disk of every entry must be confirmed, each named in the refusal.
        for missing in (ssd, members[2]):
            allowed = frozenset({ssd, *members} - {missing})
            with pytest.raises(DeviceRefused, match=f"--destroy-data-on {missing}`"):
                device_identity(plan, Grant(allowed), resuming=False)
        everything = frozenset({ssd, *members})
        identity = device_identity(plan, Grant(everything), resuming=False)
        assert identity is not None and sorted(identity) == sorted([ssd, *members])
        # Each job's own device finds its disks in the one identity every job carries.
        grant = Grant(everything, identity)
        raid = DEVICES.get("raid")
        assert raid.guest_passthrough is not None
        assert raid.guest_passthrough(raid.parse(devices["ext4-raid5"]), grant) == members
        with DEVICES.get("block").provision(DEVICES.get("block").parse(devices["ext4-ssd"]), tmp_path, "t",
                                            grant) as handle:
            assert handle.path == os.path.realpath(ssd)
        # A member swapped for another disk after preflight is refused.
        other = stack.enter_context(loop_device("64MiB")).path
        swapped = raid.parse({"kind": "raid", "level": 5, "members": [*members[:2], other]})
        with pytest.raises(DeviceRefused, match=f"{other} was not checked before this job"):
            raid.guest_passthrough(swapped, Grant(everything | {other}, identity))


def has_signature(path: str) -> bool:
    return run_command(["blkid", "-p", path], check=False).returncode != 2


def test_entries_on_two_of_the_users_disks_run_in_one_study(loop_device, tmp_path: Path) -> None:
    """ext4 on an image, ext4 and xfs on one disk (alike tables: one shared device) and ext4
    on a second disk: one study, each disk confirmed once, all checked before any mkfs."""
    from fslab.runner import run_study
    from fslab.store import Store

    with loop_device("512MiB") as first, loop_device("512MiB") as second:
        a, b = first.path, second.path
        study = study_file(tmp_path, "[filesystems.ext4]\n" + block("ext4-ssd", a) + block("xfs-ssd", a, "xfs")
                           + block("ext4-second", b))
        results = tmp_path / "results"
        with pytest.raises(DeviceRefused, match=f"--destroy-data-on {b}`"):
            run_study(str(study), results_dir=results, allowed_devices=frozenset({a}))
        assert not has_signature(a) and not has_signature(b)  # refused before the first mkfs
        outcome = run_study(str(study), results_dir=results, allowed_devices=frozenset({a, b}))
        assert outcome.runs_done == 4 and outcome.runs_failed == 0
        with Store(results) as store:
            row = store.study()
            runs = store.runs(row.id)
        devices = {r["cell"]["filesystem"]: r["provenance"]["device"] for r in runs}
        assert devices["ext4"]["kind"] == "image"
        assert {name: devices[name]["path"] for name in ("ext4-ssd", "xfs-ssd", "ext4-second")} == \
            {"ext4-ssd": a, "xfs-ssd": a, "ext4-second": b}
        assert sorted(row.facts["device_identity"] or {}) == sorted([a, b])
