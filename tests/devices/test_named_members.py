"""An array over the user's named disks: each member checked and confirmed exactly as a
``kind = "block"`` disk, before the study (preflight) and again before a guest is given
it (passthrough); loop devices made here stand in for disks (the same code path)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from fslab.commands import run_command
from fslab.devices import DEVICES, Grant
from fslab.devices.raid import passthrough
from fslab.devices.raid import preflight as raid_preflight
from fslab.errors import DeviceRefused


def raid(members: list[str], **extra: object):  # type: ignore[no-untyped-def]
    return DEVICES.get("raid").parse({"kind": "raid", "level": 5, "chunk": "512KiB", "members": members, **extra})


def test_every_member_is_refused_unconfirmed_mounted_or_holding_data(loop_device, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(loop_device("64MiB")).path for _ in range(4)]
        section = raid(paths)
        assert section.disks == 4 and DEVICES.get("raid").guest_disks(section) == []  # no images
        for missing in paths:  # each member must be named by --destroy-data-on
            allowed = frozenset(p for p in paths if p != missing)
            with pytest.raises(DeviceRefused, match=f"`fslab run ... --destroy-data-on {missing}`"):
                raid_preflight(section, Grant(allowed))
        identity = raid_preflight(section, Grant(frozenset(paths)))
        assert identity is not None and sorted(identity) == sorted(paths)
        assert all(json.loads(v)["backing_file"].endswith(".img") for v in identity.values())
        grant = Grant(frozenset(paths), identity)
        assert passthrough(section, grant) == paths  # handed to the guest: checked again
        # A member mounted (here: the third) is refused before the study and before a guest.
        run_command(["mkfs.ext4", "-q", "-F", paths[2]])
        with pytest.raises(DeviceRefused, match="ext4.*signature.*force"):
            raid_preflight(section, Grant(frozenset(paths)))
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        run_command(["mount", paths[2], str(mnt)])
        try:
            for check in (lambda: raid_preflight(raid(paths, force=True), Grant(frozenset(paths))),
                          lambda: passthrough(section, grant)):
                with pytest.raises(DeviceRefused, match=f"{paths[2]} is mounted.*unmount it first"):
                    check()
        finally:
            run_command(["umount", str(mnt)])
        # A member that is not the disk recorded before the study is refused too.
        other = stack.enter_context(loop_device("64MiB")).path
        swapped = raid([*paths[:3], other])
        with pytest.raises(DeviceRefused, match=f"{other} was not checked before this job"):
            passthrough(swapped, Grant(frozenset([*paths, other]), identity))


def test_members_are_named_once_and_say_how_many_disks() -> None:
    with pytest.raises(ValueError, match="named twice"):
        raid(["/dev/a", "/dev/a", "/dev/b"])
    with pytest.raises(ValueError, match="drop disks"):
        raid(["/dev/a", "/dev/b", "/dev/c"], disks=4)
    inner = DEVICES.get("raid").guest_section(raid(["/dev/a", "/dev/b", "/dev/c"]))
    # in the guest: its first 3 virtio disks, not the host's paths
    assert inner["disks"] == 3 and inner["members"] == [] and inner["vdisks"] == 0
    # every field written: the job reads it as plain data, and it is still a valid section
    assert DEVICES.get("raid").from_job(inner).force is False and DEVICES.get("raid").parse(inner).vdisks == 0
