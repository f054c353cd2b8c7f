"""Devices: loop images are made and released; a user's block device is refused unless
it is confirmed, unmounted, unused, not the root device and free of signatures."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fslab.commands import run_command
from fslab.devices import Grant
from fslab.devices.block import preflight as block_preflight
from fslab.devices.block import provision as provision_block
from fslab.devices.image import fslab_loop_devices
from fslab.devices.image import provision as provision_image
from fslab.devices.sections import BlockSection, ImageSection
from fslab.errors import DeviceRefused, FslabError
from partitions import partitioned_loop


def preflight(section: BlockSection, allowed: frozenset[str]) -> dict[str, str]:
    return block_preflight(section, Grant(allowed))


def block(path: str, force: bool = False) -> BlockSection:
    return BlockSection(path=path, force=force)


def _ours(tmp_path: Path) -> list[str]:
    """This test's loop devices, told by backing file: the device number itself may be
    taken by another test's image the moment release frees it (the suite runs in parallel)."""
    return [loop for loop, backing in fslab_loop_devices() if backing.startswith(str(tmp_path))]


def test_image_is_sparse_attached_with_direct_io_and_released(device_support, tmp_path):
    section = ImageSection(size="256MiB")
    with provision_image(section, tmp_path, "t1") as dev:
        image = Path(dev.facts["image"])
        assert image.exists() and image.stat().st_size == 256 << 20
        assert image.stat().st_blocks == 0  # sparse
        assert dev.facts["loop_direct_io"] == "1"
        assert dev.facts["size_bytes"] == 256 << 20
        assert dev.path in {loop for loop, _ in fslab_loop_devices()}
    assert not _ours(tmp_path)
    assert not image.exists()


def test_image_released_when_the_body_fails(device_support, tmp_path):
    section = ImageSection(size="128MiB")
    with pytest.raises(RuntimeError):
        with provision_image(section, tmp_path, "t2"):
            raise RuntimeError("boom")
    assert not _ours(tmp_path)
    assert not list(tmp_path.glob("*.img"))


def test_a_loop_device_still_open_elsewhere_is_gone_when_release_returns(device_support, tmp_path):
    """`losetup -d` on a device another process has open (udev's probe after a change, for
    seconds on a busy machine) only marks it to detach on the last close: release waits for
    that close, so nothing of the run is left when it returns."""
    import subprocess
    import sys

    section = ImageSection(size="64MiB")
    with provision_image(section, tmp_path, "t3") as dev:
        loop = dev.path
        holder = subprocess.Popen([sys.executable, "-c", f"import os, time; fd = os.open({loop!r}, os.O_RDONLY); "
                                   "print('open', flush=True); time.sleep(0.8)"], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        started = time.monotonic()
    waited = time.monotonic() - started
    # at once, before the holder is waited for: gone because release waited for its close
    assert not _ours(tmp_path)
    holder.wait(timeout=30)
    assert waited >= 0.4


def test_full_disk_is_refused_before_anything_is_made(device_support, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    run_command(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small)])
    try:
        with pytest.raises(FslabError, match="not enough free space.*device.image_dir"):
            with provision_image(ImageSection(size="1GiB"), small, "t3"):
                pass
        assert not list(small.iterdir())
    finally:
        run_command(["umount", str(small)])


def test_block_device_needs_confirmation(loop_device):
    with loop_device("128MiB") as dev:
        with pytest.raises(DeviceRefused, match="--destroy-data-on"):
            preflight(block(dev.path), frozenset())
        preflight(block(dev.path), frozenset({dev.path}))  # empty, confirmed: accepted


def test_block_device_with_signature_is_refused_unless_forced(loop_device, tmp_path):
    with loop_device("128MiB") as dev:
        run_command(["mkfs.ext4", "-q", "-F", dev.path])
        with pytest.raises(DeviceRefused, match="ext4.*signature.*force"):
            preflight(block(dev.path), frozenset({dev.path}))
        recorded = preflight(block(dev.path, force=True), frozenset({dev.path}))
        assert list(recorded) == [dev.path]  # keyed by the disk's path: a study may name several
        disk = json.loads(recorded[dev.path])
        assert disk["backing_file"].endswith(".img") and int(disk["size_sectors"]) > 0
        # Per-run provisioning (after preflight) accepts the file system fslab made, also
        # by the unkeyed identity a study stored by an older fslab carries on resume...
        for identity in (recorded, disk):
            with provision_block(block(dev.path), tmp_path, "t", Grant(frozenset({dev.path}), identity)) as h:
                assert h.path == os.path.realpath(dev.path)
        # ...but only on the disk preflight recorded (the identity the job carries).
        other = Grant(frozenset({dev.path}), {dev.path: json.dumps({**disk, "size_sectors": "1"})})
        with pytest.raises(DeviceRefused, match="not the disk this study started on"):
            with provision_block(block(dev.path), tmp_path, "t", other):
                pass
        # A job that carries no identity was never checked: refused.
        with pytest.raises(DeviceRefused, match="carries no identity"):
            with provision_block(block(dev.path), tmp_path, "t", Grant(frozenset({dev.path}))):
                pass


def test_mounted_block_device_is_refused(loop_device, tmp_path):
    with loop_device("128MiB") as dev:
        run_command(["mkfs.ext4", "-q", "-F", dev.path])
        mnt = tmp_path / "m"
        mnt.mkdir()
        run_command(["mount", dev.path, str(mnt)])
        try:
            with pytest.raises(DeviceRefused, match="is mounted"):
                preflight(block(dev.path, force=True), frozenset({dev.path}))
        finally:
            run_command(["umount", str(mnt)])


def test_block_device_in_use_is_refused(loop_device):
    with loop_device("128MiB") as dev:
        fd = os.open(dev.path, os.O_RDONLY | os.O_EXCL)
        try:
            with pytest.raises(DeviceRefused, match="in use"):
                preflight(block(dev.path), frozenset({dev.path}))
        finally:
            os.close(fd)


def test_root_device_is_refused(device_support):
    st = os.stat("/")
    uevent = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/uevent")
    names = dict(l.split("=", 1) for l in uevent.read_text().split()) if uevent.exists() else {}
    node = Path("/dev") / names.get("DEVNAME", "-")
    if not node.exists():
        pytest.skip("the root file system is not on a block device here")
    with pytest.raises(DeviceRefused, match="root file system"):
        preflight(block(str(node), force=True), frozenset({str(node), os.path.realpath(node)}))


def test_not_a_block_device(tmp_path, device_support):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(DeviceRefused, match="not a block device"):
        preflight(block(str(f)), frozenset({str(f)}))
    with pytest.raises(DeviceRefused, match="does not exist"):
        preflight(block(str(tmp_path / "nope")), frozenset({str(tmp_path / "nope")}))


def test_loop_device_of_a_deleted_image_is_still_found(device_support, tmp_path):
    # `fslab cleanup` must find a loop device whose image file was already removed.
    with provision_image(ImageSection(size="64MiB"), tmp_path, "t4") as dev:
        image = Path(dev.facts["image"])
        image.unlink()
        assert (dev.path, str(image)) in fslab_loop_devices()


def test_partition_table_refused_and_empty_partition_accepted(device_support, tmp_path):
    with partitioned_loop(tmp_path, "label: gpt\n,64MiB\n", 128 << 20) as (loop, part):
        with pytest.raises(DeviceRefused, match="gpt"):
            preflight(block(loop), frozenset({loop}))
        # A fresh partition carries only its partition-table entry: no data, accepted.
        preflight(block(part), frozenset({part}))
        run_command(["mkfs.ext4", "-q", "-F", part])
        with pytest.raises(DeviceRefused, match="ext4"):
            preflight(block(part), frozenset({part}))


def test_root_disk_is_refused_before_any_confirmation_is_asked():
    """The root disk (and a missing path, a file) is refused for what it is; the message
    must not suggest that --destroy-data-on would make fslab format it."""
    from fslab.devices.block import _root_device_names

    names = sorted(_root_device_names())
    if not names or not Path(f"/dev/{names[-1]}").exists():
        pytest.skip("no block device holds / here")
    root = f"/dev/{names[-1]}"
    with pytest.raises(DeviceRefused) as refused:
        preflight(block(root), frozenset())
    assert "root file system" in str(refused.value) and "--destroy-data-on" not in str(refused.value)
    with pytest.raises(DeviceRefused, match="does not exist") as missing:
        preflight(block("/dev/no-such-disk"), frozenset())
    assert "--destroy-data-on" not in str(missing.value)


def _partition_of_a_loop_device(tmp_path: Path) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """(the loop device, a node of its first partition), an MBR disk of one 200 MiB partition."""
    return partitioned_loop(tmp_path, "label: dos\n,200MiB\n", 256 << 20)


def _partition_study(tmp_path: Path, part: str, trace: bool) -> Path:
    study = tmp_path / "study.toml"
    study.write_text(f"""[study]
name = "on a partition"
repetitions = 1
trace = {'true' if trace else 'false'}

[device]
kind = "block"
path = "{part}"

[filesystems.ext4]
type = "ext4"

[[workloads]]
kind = "fio"
name = "w"
rw = "randwrite"
bs = "4k"
size = "16M"
runtime = 1
time_based = 1
direct = 1
""")
    return study


def test_a_study_on_a_partition_counts_the_partitions_own_requests(device_support, tmp_path):
    """A partition has no /sys/block entry of its own (the run read its counters there and
    crashed): its counters are its own, from /sys/class/block, and its queue facts its disk's."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    with _partition_of_a_loop_device(tmp_path) as (loop, part):
        study = _partition_study(tmp_path, part, trace=False)
        done = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(study), "-r", str(tmp_path / "r"),
                               "--destroy-data-on", part], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs = json.loads(subprocess.run([sys.executable, "-m", "fslab.cli", "export", "-r", str(tmp_path / "r"),
                                          "--format", "json"], capture_output=True, text=True,
                                         check=True).stdout)
    (run,) = runs
    assert run["status"] == "ok", run
    value = {name: m["value"] for name, m in run["metrics"].items()}
    fio_bytes = value["write_io_bytes"]
    # fio's direct 4 KiB writes, each a request on the partition, plus ext4's own few
    assert fio_bytes >= 4 << 20
    assert fio_bytes / 4096 <= value["device_write_requests_count"] <= fio_bytes / 4096 * 1.05 + 200
    assert fio_bytes <= value["device_write_sectors_count"] * 512 <= fio_bytes * 1.05 + (8 << 20)


def test_tracing_a_partition_is_refused_naming_its_whole_disk(device_support, tmp_path):
    """The kernel makes a partition's requests on its whole disk, under the disk's number:
    a trace of the partition would hold no event. A traced study and `trace capture` say so
    before anything is made."""
    with _partition_of_a_loop_device(tmp_path) as (loop, part):
        study = _partition_study(tmp_path, part, trace=True)
        ran = subprocess.run([sys.executable, "-m", "fslab.cli", "run", str(study), "-r", str(tmp_path / "r"),
                              "--destroy-data-on", part], capture_output=True, text=True, timeout=300)
        captured = subprocess.run([sys.executable, "-m", "fslab.cli", "trace", "capture", "-d", part,
                                   "-o", str(tmp_path / "t.parquet"), "--", "true"],
                                  capture_output=True, text=True, timeout=60)
        signature = run_command(["blkid", "-p", part], check=False).stdout
    for done in (ran, captured):
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert f"is a partition of {loop}" in done.stderr, done.stderr
    assert "study.trace" in ran.stderr and "set study.trace = false" in ran.stderr
    assert f"trace {loop}" in captured.stderr
    assert "ext4" not in signature  # refused before mkfs


def test_a_partitions_disk_errors_and_its_missing_flush_count(device_support, tmp_path):
    """The kernel fails a partition's requests on its whole disk (the error lines name the
    disk) and counts its flushes only there: the partition's kernel names include the disk,
    and its counters leave the flush fields out rather than report a false 0."""
    from fslab.devices import handle_for, read_block_stat
    from fslab.kernel_log import DiskErrorWatch

    if not os.access("/dev/kmsg", os.W_OK):
        pytest.skip("needs root's /dev/kmsg")
    with _partition_of_a_loop_device(tmp_path) as (loop, part):
        disk, handle = Path(loop).name, handle_for(part)
        names = handle.kernel_names()
        assert names == {handle.sysfs_name, disk}
        stats = read_block_stat(handle.sysfs_name)
        assert "flush_ios" not in stats and "write_ios" in stats
        assert "flush_ios" in read_block_stat(disk)
        with DiskErrorWatch() as watch, open("/dev/kmsg", "w") as kmsg:
            kmsg.write(f"critical space allocation error, dev {disk}, sector 4096 op 0x1:(WRITE)\n")
            kmsg.flush()
            assert [line.split(",")[0] for line in watch.take(names)] == ["critical space allocation error"]
