"""md RAID on the host where the kernel has md: the probe on given /proc/mdstat texts and
module answers; planning (``auto``: the host where the probe finds md, the guest
otherwise, each with its reason); image members on real loop devices, released when a
Ctrl-C arrives before the array exists; an array on the host where this kernel has md
(skipped, saying so, where it has not: the guest test builds one there)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fslab.backends import BACKENDS, choose_backend
from fslab.devices import DEVICES, HostProbe
from fslab.devices import raid as raid_module
from fslab.devices.image import fslab_loop_devices
from fslab.devices.md_kernel import host_md, loaded_personalities, md_support
from fslab.plan import make_plan
from fslab.resources import _current
from fslab.study import parse_spec

MDSTAT = """Personalities : [raid0] [raid6] [raid5] [raid4]
md127 : active raid5 loop3[3] loop2[1] loop1[0]
      65408 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/3] [UUU]

unused devices: <none>
"""


def answers(loadable: set[str], asked: list[str]):  # type: ignore[no-untyped-def]
    def loadable_module(module: str) -> bool:
        asked.append(module)
        return module in loadable
    return loadable_module


def test_mdstat_names_the_loaded_personalities() -> None:
    assert loaded_personalities(MDSTAT) == {"raid0", "raid6", "raid5", "raid4"}
    assert loaded_personalities("Personalities : \nunused devices: <none>\n") == set()


def test_no_mdstat_and_no_md_module_means_no_md() -> None:
    asked: list[str] = []
    probe = md_support(5, None, answers(set(), asked))
    assert not probe.available and "has no md" in probe.finding and asked == ["md_mod"]


@pytest.mark.parametrize(("level", "module"), [(0, "raid0"), (5, "raid456")])
def test_md_to_load_needs_the_levels_module_too(level: int, module: str) -> None:
    probe = md_support(level, None, answers({"md_mod", module}, []))
    assert probe.available and f"{module} module to load" in probe.finding
    other = "raid456" if module == "raid0" else "raid0"
    probe = md_support(level, None, answers({"md_mod", other}, []))
    assert not probe.available and f"no RAID{level}" in probe.finding and module in probe.finding


def test_a_loaded_personality_needs_no_module() -> None:
    asked: list[str] = []
    probe = md_support(5, MDSTAT, answers(set(), asked))
    assert probe.available and "raid5 personality loaded" in probe.finding and asked == []
    # md is loaded, RAID5 is not and cannot be: no RAID5 here
    probe = md_support(5, "Personalities : [raid0]\n", answers(set(), asked))
    assert not probe.available and "has md but no RAID5" in probe.finding and asked == ["raid456"]


STUDY = """
[study]
name = "r"
backend = "{backend}"
[device]
kind = "raid"
level = {level}
disks = 3
member_size = "64MiB"
[filesystems.ext4]
[[workloads]]
kind = "null"
name = "n"
"""


def plan_of(backend: str = "auto", level: int = 5):  # type: ignore[no-untyped-def]
    spec = parse_spec(tomllib.loads(STUDY.format(backend=backend, level=level)), "s.toml")
    return make_plan(spec, backends=choose_backend)


def test_auto_plans_the_array_on_the_host_where_the_probe_finds_md(monkeypatch: pytest.MonkeyPatch) -> None:
    levels: list[int] = []

    def probe(level: int) -> HostProbe:
        levels.append(level)
        return HostProbe(True, "this host kernel has md (md loaded, raid0 personality loaded)")

    monkeypatch.setattr(raid_module, "host_md", probe)
    plan = plan_of(level=0)
    assert {c.backend for c in plan.cells} == {"host"} and set(levels) == {0}
    (placed,) = plan.placed
    assert (placed.filesystem, placed.backend) == ("ext4", "host") and "raid0 personality loaded" in placed.reason
    assert {j.settings.device.get("vdisks") for j in plan.jobs} == {None}  # the host makes its members


def test_auto_plans_the_array_in_a_guest_where_the_probe_finds_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(raid_module, "host_md", lambda level: HostProbe(False, "this host kernel has no md (test)"))
    monkeypatch.setattr(BACKENDS.get("guest"), "unavailable", lambda: None)
    plan = plan_of()
    assert {c.backend for c in plan.cells} == {"guest"}
    (placed,) = plan.placed
    assert placed.backend == "guest" and placed.reason == "host: this host kernel has no md (test)"
    # asked for the host, it is skipped with the same reason
    plan = plan_of(backend="host")
    assert plan.cells == () and "this host kernel has no md (test)" in plan.skipped[0].reason


def test_in_the_guest_the_members_are_its_virtio_disks_by_the_section() -> None:
    kind = DEVICES.get("raid")
    section = kind.parse({"kind": "raid", "level": 5, "disks": 3, "member_size": "64MiB"})
    inner = kind.parse(kind.guest_section(section))
    assert section.vdisks is None and inner.vdisks == 0 and inner.disks == 3
    with pytest.raises(ValueError, match="vdisks is written by the guest backend"):
        kind.parse({"kind": "raid", "level": 5, "members": ["/dev/a", "/dev/b", "/dev/c"], "vdisks": 0})


def _listed() -> list[str]:
    return [r.kind for r in _current().entries.values()]


def test_image_members_are_listed_first_and_released_on_ctrl_c(device_support: None, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    section = DEVICES.get("raid").parse({"kind": "raid", "level": 5, "disks": 3, "member_size": "64MiB"})
    seen: dict[str, object] = {}

    def ctrl_c(level: int) -> None:  # arrives once the members exist, before the array does
        seen["loops"] = {loop: backing for loop, backing in fslab_loop_devices()
                         if backing.startswith(str(tmp_path))}
        seen["listed"] = _listed()
        seen["dio"] = [Path(f"/sys/block/{Path(loop).name}/loop/dio").read_text().strip()
                       for loop in seen["loops"]]  # type: ignore[union-attr]
        raise KeyboardInterrupt

    monkeypatch.setattr(raid_module, "load_md", ctrl_c)
    before = _listed()
    with pytest.raises(KeyboardInterrupt):
        with raid_module.provision(section, tmp_path / "work", "t1"):
            pass
    loops = seen["loops"]
    assert isinstance(loops, dict) and len(loops) == 3
    assert sorted(Path(b).name for b in loops.values()) == [f"fslab-t1-m{i}.img" for i in range(3)]
    assert seen["dio"] == ["1", "1", "1"]
    assert seen["listed"] == [*before, "image", "image", "image"]
    assert not [loop for loop, backing in fslab_loop_devices() if backing.startswith(str(tmp_path))]
    assert list((tmp_path / "work").iterdir()) == [] and _listed() == before


def test_an_image_array_on_the_host(device_support: None, tmp_path: Path) -> None:
    """Where this kernel has md: RAID5 over 3 image members, as md reports it, then gone."""
    if not host_md(5).available:
        pytest.skip(f"this kernel has no md: {host_md(5).finding} (the guest test builds arrays there)")
    section = DEVICES.get("raid").parse({"kind": "raid", "level": 5, "disks": 3, "chunk": "64KiB",
                                         "member_size": "64MiB"})
    with raid_module.provision(section, tmp_path, "h1") as handle:
        md = Path(f"/sys/block/{handle.sysfs_name}/md")
        assert (md / "level").read_text().strip() == "raid5"
        assert int((md / "raid_disks").read_text()) == 3 and int((md / "chunk_size").read_text()) == 64 << 10
        assert _listed()[-4:] == ["image", "image", "image", "md"]
    assert not Path(f"/sys/block/{handle.sysfs_name}/md").exists()
    assert not [loop for loop, backing in fslab_loop_devices() if backing.startswith(str(tmp_path))]
    assert list(tmp_path.iterdir()) == []
