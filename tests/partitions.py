"""A loop device with a partition table, and a node of its first partition, for tests of
disks the user hands over as partitions."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from fslab.commands import run_command


@contextlib.contextmanager
def partitioned_loop(tmp_path: Path, table: str, size: int) -> Iterator[tuple[str, str]]:
    """``with partitioned_loop(tmp_path, "label: gpt\\n,64MiB\\n", 128 << 20) as (loop, part):``
    a loop device on a ``size``-byte image partitioned by sfdisk's ``table``, and a node of
    its first partition in tmp_path; the loop device is detached on the way out."""
    image = tmp_path / "disk.img"
    image.write_bytes(b"")
    os.truncate(image, size)
    run_command(["sfdisk", "--quiet", str(image)], input_text=table)
    loop = run_command(["losetup", "--find", "--show", "--partscan", str(image)]).stdout.strip()
    try:
        sysfs = Path(f"/sys/class/block/{Path(loop).name}p1/dev")
        if not sysfs.exists():
            run_command(["partx", "--add", loop], check=False)
        for _ in range(50):  # the kernel scans the table shortly after attaching
            if sysfs.exists():
                break
            time.sleep(0.1)
        major, minor = (int(x) for x in sysfs.read_text().split(":"))
        part = str(tmp_path / "part1")  # without udev (containers) no node is made for us
        os.mknod(part, 0o600 | stat.S_IFBLK, os.makedev(major, minor))
        yield loop, part
    finally:
        run_command(["losetup", "-d", loop])
