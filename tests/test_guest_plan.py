"""The guest's kernel and memory at plan level (no guest is booted): a kernel per file
system entry makes a kernel axis, each job carries its own kernel, report labels tell two
kernels of one file system apart, and --quick scales the guest's memory with the data."""

from __future__ import annotations

import tomllib

import pytest

from fslab.backends import BACKENDS, choose_backend
from fslab.errors import SpecError
from fslab.jobdata.model import Job
from fslab.plan import GUEST_BASE_MEMORY, guest_memory_floor, make_plan
from fslab.report.labels import fs_column
from fslab.study import load_spec, parse_spec
from fslab.workloads import quick_memory

MiB = 1 << 20

KERNELS = """
[study]
name = "kernels"
repetitions = 2
seed = 1
{study_extra}
[filesystems.ext4-61]
type = "ext4"
backend = "guest"
kernel = "6.1"
[filesystems.ext4-612]
type = "ext4"
{fs_extra}
kernel = "6.12"
[[workloads]]
kind = "fio"
name = "w"
rw = "randwrite"
bs = "4k"
size = "8M"
"""


@pytest.fixture
def guest_available(monkeypatch: pytest.MonkeyPatch) -> None:
    # Planning asks the backend whether it can run here; the plan itself needs no QEMU.
    monkeypatch.setattr(BACKENDS.get("guest"), "unavailable", lambda: None)


def plan_of(text: str, **kw: object):
    return make_plan(parse_spec(tomllib.loads(text), "k.toml"), backends=choose_backend, **kw)


def test_a_kernel_per_entry_makes_a_kernel_axis(guest_available: None) -> None:
    plan = plan_of(KERNELS.format(study_extra="", fs_extra=""))  # no backend: kernel implies guest
    by_fs = {c.filesystem: c for c in plan.cells}
    assert {fs: (c.backend, c.kernel) for fs, c in by_fs.items()} == {
        "ext4-61": ("guest", "6.1"), "ext4-612": ("guest", "6.12")}
    assert by_fs["ext4-61"].id != by_fs["ext4-612"].id
    kernels: dict[str, set[str]] = {}
    for job in plan.jobs:
        kernels.setdefault(job.cell.filesystem, set()).add(job.settings.guest_kernel)
    assert kernels == {"ext4-61": {"6.1"}, "ext4-612": {"6.12"}}
    # the kernel travels with the job to the guest
    again = Job.from_json(plan.jobs[0].to_json())
    assert again.settings.guest_kernel == plan.jobs[0].cell.kernel
    assert again.cell.kernel == plan.jobs[0].cell.kernel
    assert sorted(fs_column(c.to_json()) for c in plan.cells) == ["ext4-61 (guest 6.1)", "ext4-612 (guest 6.12)"]


def test_guest_cells_without_a_kernel_take_the_studys(guest_available: None) -> None:
    plan = plan_of(KERNELS.format(study_extra='guest_kernel = "6.12"\nbackend = "guest"', fs_extra="")
                   .replace('kernel = "6.1"\n', ""))
    assert {c.filesystem: c.kernel for c in plan.cells} == {"ext4-61": "6.12", "ext4-612": "6.12"}
    assert {j.settings.guest_kernel for j in plan.jobs} == {"6.12"}


def test_host_cells_carry_no_kernel_and_keep_their_ids() -> None:
    text = KERNELS.format(study_extra="", fs_extra="").split("[filesystems.ext4-61]")[0]
    text += '[filesystems.ext4]\n[[workloads]]\nkind = "fio"\nname = "w"\nrw = "randwrite"\nbs = "4k"\nsize = "8M"\n'
    (cell,) = plan_of(text).cells
    assert cell.backend == "host" and cell.kernel is None and cell.guest_memory is None
    assert fs_column(cell.to_json()) == "ext4"
    # a stored cell from before cells carried a kernel still reads as a guest column
    assert fs_column({"filesystem": "f2fs", "backend": "guest"}) == "f2fs (guest)"


def test_a_kernel_on_a_host_entry_is_an_error_naming_the_field_and_file() -> None:
    with pytest.raises(SpecError) as info:
        plan_of(KERNELS.format(study_extra="", fs_extra='backend = "host"'))
    text = str(info.value)
    assert "filesystems.ext4-612.kernel" in text and "k.toml" in text and "backend = 'guest'" in text


def test_an_unknown_kernel_names_the_choices() -> None:
    with pytest.raises(SpecError) as info:
        plan_of(KERNELS.format(study_extra="", fs_extra="").replace('"6.12"', '"5.10"'))
    text = str(info.value)
    assert "filesystems.ext4-612.kernel" in text and "'6.1' or '6.12'" in text and "5.10" in text
    with pytest.raises(SpecError, match="study.guest_kernel"):
        plan_of(KERNELS.format(study_extra='guest_kernel = "latest"', fs_extra=""))


def test_spec_series_are_the_ones_the_guest_can_fetch() -> None:
    from fslab.backends.guest.kernel import META_PACKAGES
    from fslab.spec import GUEST_KERNEL_SERIES

    assert set(GUEST_KERNEL_SERIES) == set(META_PACKAGES)


def test_quick_scales_the_guest_memory_with_the_data(guest_available: None) -> None:
    """seed-004's f2fs in the guest: --quick divides the file by 8, so the guest's memory
    (its page cache) is divided too, not below what a guest needs to boot; provenance
    gets the study's own value through the job's settings."""
    spec, _, _ = load_spec("seed-004")
    full = make_plan(spec, backends=choose_backend, seed=1)
    quick = make_plan(spec, backends=choose_backend, seed=1, quick=True)
    (f2fs_full,) = [c for c in full.cells if c.filesystem == "f2fs"]
    (f2fs_quick,) = [c for c in quick.cells if c.filesystem == "f2fs"]
    file_full, file_quick = f2fs_full.params["file_size"], f2fs_quick.params["file_size"]
    assert file_quick < file_full
    floor = guest_memory_floor(f2fs_quick.memory_bytes, True, {"kind": "image"})
    expected = max(quick_memory(spec.study.guest_memory, file_full, file_quick), floor)
    assert f2fs_full.guest_memory == spec.study.guest_memory
    assert f2fs_quick.guest_memory == expected < spec.study.guest_memory
    settings = {(j.settings.guest_memory, j.settings.guest_memory_full) for j in quick.jobs
                if j.cell.filesystem == "f2fs"}
    assert settings == {(expected, spec.study.guest_memory)}
    assert {j.settings.guest_memory_full for j in full.jobs} == {None}
    # RAID5's stripe cache is part of what its guest must hold
    (raid5,) = [c for c in quick.cells if c.filesystem == "ext4-raid5"]
    (single,) = [c for c in quick.cells if c.filesystem == "ext4"]
    assert raid5.guest_memory == max(single.guest_memory, floor + 256 * 4096 * 8)


def test_quick_guest_memory_keeps_the_ratio_above_the_floor(guest_available: None) -> None:
    text = KERNELS.format(study_extra='guest_memory = "4GiB"', fs_extra="").replace('size = "8M"', 'size = "2G"')
    (cell, _) = plan_of(text, quick=True).cells
    assert cell.params["size"] == 256 * MiB and cell.guest_memory == 512 * MiB  # 2G:4G as 256M:512M
    small = plan_of(text.replace('"4GiB"', '"1GiB"'), quick=True).cells[0]
    # 128 MiB would not hold the kernel and fslab: floored, the ratio smaller
    assert small.guest_memory == guest_memory_floor(None, False, {"kind": "image"}) == GUEST_BASE_MEMORY


def test_seed_004_runs_each_file_system_on_one_device_raid0_and_raid5(guest_available: None) -> None:
    """A file system's own device (``device = {...}`` in its entry): each job carries the
    device of its entry; the arrays are 8 members with 512 KiB chunks, in the guest."""
    spec, _, _ = load_spec("seed-004")
    plan = make_plan(spec, backends=choose_backend, seed=1)
    devices = {}
    for job in plan.jobs:
        devices.setdefault(job.cell.filesystem, set()).add(
            tuple((k, job.settings.device.get(k)) for k in ("kind", "level", "disks", "chunk")))
    assert devices == {
        "ext4": {(("kind", "image"), ("level", None), ("disks", None), ("chunk", None))},
        "f2fs": {(("kind", "image"), ("level", None), ("disks", None), ("chunk", None))},
        **{f"{fs}-raid{level}": {(("kind", "raid"), ("level", level), ("disks", 8), ("chunk", 512 << 10))}
           for fs in ("ext4", "f2fs") for level in (0, 5)}}
    # Every pair the paper compares on one backend: ext4 runs where f2fs must.
    assert {c.backend for c in plan.cells} == {"guest"} and plan.uncompared() is None
    assert len({c.id for c in plan.cells}) == 6
    # Each device on the model of the paper's device (tests/test_predictions.py checks each entry).
    assert spec.study.simulate == ["samsung-840pro-256"]
    assert {job.settings.simulate for job in plan.jobs if job.settings.device["kind"] == "raid"} == {
        (f"raid{n}-8x-md", f"raid{n}-8x-wb") for n in (0, 5)}


def test_a_file_systems_own_device_is_validated_with_its_path() -> None:
    base = KERNELS.format(study_extra="", fs_extra="")
    with pytest.raises(SpecError) as info:
        plan_of(base.replace('kernel = "6.12"', 'kernel = "6.12"\ndevice = { kind = "raid", level = 6 }'))
    assert "filesystems.ext4-612.device.level" in str(info.value)
    with pytest.raises(SpecError) as info:
        plan_of(base.replace('kernel = "6.12"', 'kernel = "6.12"\ndevice = { kind = "tape" }'))
    assert "filesystems.ext4-612.device.kind" in str(info.value) and "raid" in str(info.value)
    # An entry's own device may be one of the user's disks (fslab.named_disks), named by
    # one device only: here also an array member of the other entry.
    with pytest.raises(SpecError) as info:
        plan_of(base.replace('kernel = "6.12"', 'kernel = "6.12"\ndevice = { kind = "block", path = "/dev/sdz" }')
                .replace('kernel = "6.1"', 'kernel = "6.1"\ndevice = { kind = "raid", level = 5, members = '
                         '["/dev/sdx", "/dev/sdy", "/dev/sdz"] }'))
    assert "filesystems.ext4-61.device.members[2] (/dev/sdz) and filesystems.ext4-612.device.path" in str(info.value)


def test_plan_estimate_counts_a_boot_per_guest_job_and_says_when_time_is_unknown(
        guest_available: None) -> None:
    from fslab.estimate import TimeModel

    plan = plan_of(KERNELS.format(study_extra="", fs_extra=""))
    estimate = TimeModel().estimate(plan.jobs)
    assert estimate.guest_boots == estimate.guest_boots_untimed == len(plan.jobs)
    assert f"not known: none of the {len(plan.runs)} runs has been timed here" in estimate.text()


def test_ntfs3_needs_the_6_12_guest_and_says_where_to_set_it() -> None:
    text = '[study]\nname = "n"\n[filesystems.ntfs3]\n{extra}\n[[workloads]]\nkind = "null"\nname = "n"\n'
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text.format(extra="")), "n.toml")
    assert err.value.field == "study.guest_kernel" and "ntfs3 needs a guest kernel" in str(err.value)
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text.format(extra='kernel = "6.1"')), "n.toml")
    assert err.value.field == "filesystems.ntfs3.kernel"
    spec = parse_spec(tomllib.loads(text.format(extra='kernel = "6.12"')), "n.toml")
    assert spec.filesystems["ntfs3"].kernel == "6.12"


def test_a_study_mixing_backends_is_told_which_file_systems_it_will_not_compare(guest_available: None) -> None:
    mixed = KERNELS.format(study_extra="", fs_extra="").replace(
        '[filesystems.ext4-61]\ntype = "ext4"\nbackend = "guest"\nkernel = "6.1"',
        '[filesystems.ext4-host]\ntype = "ext4"\nbackend = "host"')
    text = plan_of(mixed).uncompared()
    assert text == ("file systems on different backends are not compared with each other: ext4-host (host); "
                    "ext4-612 (guest 6.12). To compare them, run them on one backend (backend = \"guest\" in "
                    "[study] or in each entry)")
    for preset in ("seed-002", "seed-003", "seed-003-usb", "seed-004"):
        spec, _, _ = load_spec(preset)
        assert make_plan(spec, backends=choose_backend, seed=1, quick=True).uncompared() is None, preset
