"""The kernel axis: the 6.12 series boots too and brings the in-kernel ntfs3 driver that
6.1's guest lacks (where ntfs runs through ntfs-3g)."""

from __future__ import annotations

import pytest

from fslab.backends.guest.build import build
from fslab.backends.guest.launcher import GuestConfig, run_in_guest
from fslab.errors import FslabError

pytestmark = pytest.mark.guest


def test_kernel_6_12_boots_with_ntfs3(guest_build: object) -> None:
    try:
        b612 = build("6.12")
    except FslabError as exc:
        pytest.skip(f"the 6.12 kernel package cannot be had here: {exc}")
    assert b612.release.startswith("6.12.")
    r = run_in_guest(GuestConfig(kernel="6.12"),
                     ["sh", "-c", "uname -r; modprobe ntfs3 && grep -w ntfs3 /proc/filesystems"],
                     120, b612)
    assert r.exit_status == 0, r.stderr
    assert r.kernel_release == b612.release
    assert r.stdout.split() == [b612.release, "ntfs3"]
