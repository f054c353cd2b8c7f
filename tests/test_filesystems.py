"""Each host file system is made, mounted with the asked options, described by its own
tool, and unmounted."""

from pathlib import Path

import pytest

from fslab.datarecords import replace
from fslab.filesystems import FILESYSTEMS, describe, mount_options_in_effect, quiesce

HOST_FS = ["ext2", "ext3", "ext4", "xfs", "btrfs"]


@pytest.mark.parametrize("fs", HOST_FS)
def test_make_mount_describe(mounted_fs, fs):
    with mounted_fs(fs, size="512MiB", options=("noatime",)) as (dev, mnt):
        kind, options = mount_options_in_effect(mnt)
        assert kind == fs
        assert "noatime" in options.split(",")
        (mnt / "probe").write_bytes(b"x" * 4096)
        assert quiesce(dev) < 60
        info, text = describe(FILESYSTEMS.get(fs), dev, mnt)
        assert text  # the tool's full output is kept
        if fs.startswith("ext"):
            features = info["Filesystem features"]
            assert ("has_journal" in features) == (fs != "ext2")
            assert ("extent" in features) == (fs == "ext4")
        elif fs == "xfs":
            assert int(info["bsize"]) == 4096
        else:
            assert int(info["sectorsize"]) == 4096
    assert not mnt.exists() or not any(mnt.iterdir())
    assert str(mnt) not in Path("/proc/mounts").read_text()


def test_user_mkfs_arguments_take_effect(mounted_fs):
    with mounted_fs("ext4", size="256MiB", mkfs_args=("-b", "1024", "-O", "^has_journal")) as (dev, mnt):
        info, _ = describe(FILESYSTEMS.get("ext4"), dev, mnt)
        assert info["Block size"] == "1024"
        assert "has_journal" not in info["Filesystem features"]


def test_user_extended_options_keep_eager_init(mounted_fs):
    # mke2fs keeps only the last -E; fslab merges its lazy_*=0 with the user's, so a
    # user's -E cannot bring back background inode-table writes during measurements.
    argv = FILESYSTEMS.get("ext4").mkfs_argv("/dev/x", ["-E", "stride=16"])
    assert argv.count("-E") == 1
    assert argv[argv.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0,stride=16"
    with mounted_fs("ext4", size="256MiB", mkfs_args=("-E", "stride=16")) as (dev, mnt):
        from fslab.commands import run_command

        groups = run_command(["dumpe2fs", dev.path]).stdout
        assert "RAID stride:              16" in groups
        # Inode tables zeroed at mkfs time (absent with lazy_itable_init=1).
        assert "ITABLE_ZEROED" in groups


def test_guest_only_filesystems_say_so():
    for name in ("jfs", "f2fs", "nilfs2", "vfat", "ntfs3"):
        assert FILESYSTEMS.get(name).needs_guest
    # ntfs-3g needs only FUSE, which this kernel has: the host runs it too
    assert not FILESYSTEMS.get("ntfs").needs_guest


def test_mkfs_extended_options_are_merged_key_by_key_never_repeated():
    ext4 = FILESYSTEMS.get("ext4")
    same = ext4.mkfs_argv("/dev/x", ["-E", "lazy_itable_init=0,lazy_journal_init=0"])
    assert same.count("-E") == 1
    assert same[same.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0"
    mine = ext4.mkfs_argv("/dev/x", ["-E", "lazy_itable_init=1,stride=16"])
    assert mine[mine.index("-E") + 1] == "lazy_itable_init=1,lazy_journal_init=0,stride=16"


def test_direct_io_under_data_journal_is_a_caveat_of_the_run(device_support, tmp_path):
    """ext4 data=journal serves O_DIRECT through the page cache: a direct=1 run says so."""
    from fslab.runner import run_study
    from fslab.store import Store

    study = tmp_path / "s.toml"
    study.write_text(f'[study]\nname = "dj"\nrepetitions = 1\ndrop_caches = false\n[device]\nsize = "256MiB"\n'
                     f'image_dir = "{tmp_path}"\n[filesystems.journal]\ntype = "ext4"\nmount = ["data=journal"]\n'
                     '[filesystems.ordered]\ntype = "ext4"\n[[workloads]]\nkind = "fio"\nname = "w"\n'
                     'rw = "randwrite"\nbs = "4k"\nsize = "16M"\ndirect = 1\nruntime = 1\ntime_based = 1\n')
    run_study(str(study), results_dir=tmp_path / "r")
    with Store(tmp_path / "r") as store:
        runs = {r["cell"]["filesystem"]: r for r in store.runs(store.study().id)}
    assert runs["journal"]["provenance"]["caveats"] == [
        "direct=1 ran buffered: ext4 mounted with data=journal serves O_DIRECT through the page cache "
        "(every data block is journalled)"]
    assert "caveats" not in runs["ordered"]["provenance"]


def test_a_file_system_runs_on_the_host_where_this_kernel_has_it() -> None:
    """needs_guest says a stock kernel here lacks it; the host backend still takes it when
    this host's kernel has it (distribution kernels ship f2fs, jfs and nilfs2 as modules)."""

    from fslab.backends import choose_backend
    from fslab.devices import DEVICES
    from fslab.filesystems import FILESYSTEMS, host_kernel_has

    listed = {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines()}
    assert host_kernel_has("ext4") == ("ext4" in listed)
    image = DEVICES.get("image")
    f2fs = FILESYSTEMS.get("f2fs")
    assert f2fs.needs_guest
    assert f2fs.on_host == host_kernel_has("f2fs")
    section = image.parse({"kind": "image"})
    backend, _ = choose_backend(f2fs, image, section, "auto")
    assert backend == ("host" if f2fs.on_host else "guest")
    # A guest-marked type that this kernel has (ext4 stands in for it) runs on the host.
    like_f2fs_here = replace(FILESYSTEMS.get("ext4"), name="ext4-as-module", needs_guest=True,
                                          kernel_type="ext4")
    assert like_f2fs_here.on_host == ("ext4" in listed)
    assert choose_backend(like_f2fs_here, image, section, "auto")[0] == ("host" if "ext4" in listed else "guest")


def test_drop_caches_writes_back_then_empties_the_cache(mounted_fs):
    """What a run starts from: the previous writes on the device, none of them cached."""
    import subprocess

    from fslab.pagecache import drop_caches

    with mounted_fs("ext4", size="256MiB") as (dev, mnt):
        data = mnt / "dirty"
        data.write_bytes(b"\x5a" * (8 << 20))  # buffered, not synced
        written_before = dev.read_stat()["write_sectors"]
        drop_caches()
        assert dev.read_stat()["write_sectors"] - written_before >= (8 << 20) // 512
        resident = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(data)],
                                  check=True, capture_output=True, text=True).stdout
        assert int(resident) == 0
        assert quiesce(dev) < 60
