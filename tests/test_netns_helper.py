"""The private-network helper leaves /run/netns as it found it, even when two networks
overlap (as two xdist workers' tests do) and the first one made ends first."""

from __future__ import annotations

import pytest

from netns import RUN_NETNS, _is_mount_point, netns_missing, private_network


def test_overlapping_networks_leave_no_run_netns_mount() -> None:
    if netns_missing():
        pytest.skip(netns_missing())
    if _is_mount_point(RUN_NETNS):
        pytest.skip(f"{RUN_NETNS} is a mount point already (made outside this test): nothing to check")
    outer = private_network(["a"])
    outer.__enter__()
    try:
        with private_network(["b"]):
            outer.__exit__(None, None, None)  # the first network ends while the second lives
            outer = None
            assert _is_mount_point(RUN_NETNS)  # still in use by the second
    finally:
        if outer is not None:
            outer.__exit__(None, None, None)
    assert not _is_mount_point(RUN_NETNS)
