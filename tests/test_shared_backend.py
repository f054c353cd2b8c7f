"""backend = "shared": auto, but one backend for every entry, so the file systems of a
comparison share a kernel (the presets of seed-002/003/004 use it): the host where its
kernel runs them all (a stock distribution kernel has jfs, f2fs and md), else the guest."""

import tomllib
from typing import Any

from fslab.plan import make_plan
from fslab.study import parse_spec

STUDY = """
[study]
name = "s"
backend = "shared"
[filesystems.ext4]
[filesystems.jfs]
[filesystems.xfs-own]
type = "xfs"
backend = "host"
[[workloads]]
kind = "fio"
name = "w"
rw = "read"
size = "16M"
"""


def chooser(host_has: set[str]):
    """A backend chooser for a host whose kernel has ``host_has``; the guest has all."""

    def choose(fs: Any, device: Any, section: Any, requested: str) -> tuple[str | None, str | None]:
        names = ("host", "guest") if requested == "auto" else (requested,)
        for name in names:
            if name == "guest" or fs.name in host_has:
                return name, None
        return None, f"host: this host kernel cannot mount {fs.name}: skipped"

    return choose


def backends_of(host_has: set[str], text: str = STUDY) -> tuple[dict[str, str], list[str]]:
    plan = make_plan(parse_spec(tomllib.loads(text), "s.toml"), backends=chooser(host_has))
    return {c.filesystem: c.backend for c in plan.cells}, [p.reason for p in plan.placed]


def test_all_on_the_host_where_its_kernel_has_them_all() -> None:
    placed, reasons = backends_of({"ext4", "jfs", "xfs"})
    assert placed == {"ext4": "host", "jfs": "host", "xfs-own": "host"}
    assert reasons == ['backend = "shared" puts every entry on one backend'] * 2


def test_all_in_the_guest_when_the_host_lacks_one_saying_which() -> None:
    placed, reasons = backends_of({"ext4", "xfs"})
    # an entry that names its own backend keeps it
    assert placed == {"ext4": "guest", "jfs": "guest", "xfs-own": "host"}
    assert set(reasons) == {'backend = "shared" puts every entry on one backend; the host cannot run jfs '
                            "(this host kernel cannot mount jfs)"}


def test_auto_still_places_each_on_its_own() -> None:
    placed, _ = backends_of({"ext4", "xfs"}, STUDY.replace('backend = "shared"', 'backend = "auto"'))
    assert placed == {"ext4": "host", "jfs": "guest", "xfs-own": "host"}
