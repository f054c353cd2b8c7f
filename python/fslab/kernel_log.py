"""Block I/O errors the kernel logged on a run's disks while it ran.

A write the disk refused is not a measurement of a file system: a run can still end
with status 0 (ext4 retries, logs and goes on), so its numbers would be stored as if
nothing happened. ``DiskErrorWatch`` reads the kernel log (/dev/kmsg, one record per
read; see Documentation/ABI/testing/dev-kmsg) from the moment it opens and picks out the
block layer's error lines for the named disks, so the caller can fail the run that saw
them. In a QEMU guest these are the errors the host returned for the virtio disk.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from .datarecords import datarecord, field
from .errors import FslabError
from .units import counted

KMSG = "/dev/kmsg"
# A failed run's provenance key for the error lines that failed it.
KERNEL_IO_ERRORS = "kernel_io_errors"
# "I/O error, dev vda, sector 233474 op 0x1:(WRITE) ..." (blk_print_req_error, 5.x-6.x),
# "blk_update_request: I/O error, dev sda, ..." (4.x), "Buffer I/O error on dev vda1, ...",
# and the block layer's other statuses ("critical space allocation error, dev loop1, ...").
_IO_ERROR = re.compile(r"\berror,? (?:on )?dev ([\w.-]+)")


def kernel_names(sysfs_name: str) -> set[str]:
    """A block device's kernel name and those of every device below it (dm and md
    slaves, recursively; a partition's whole disk): an error on any of them is an error
    of the run's device."""
    names = {sysfs_name}
    device = Path("/sys/class/block") / sysfs_name
    slaves = device / "slaves"
    if slaves.is_dir():
        for lower in slaves.iterdir():
            names |= kernel_names(lower.name)
    if (device / "partition").exists():
        # A partition's requests are made, and fail, on its disk: the block layer's error
        # lines name the disk. (So do those of the disk's other partitions' requests: a
        # run on a disk that fails elsewhere is failed too, the lines saying where.)
        names |= kernel_names(device.resolve().parent.name)
    return names


def _is_error_of(disk: str, names: set[str]) -> bool:
    # "vda1" is a partition of "vda"; "loop1" is not "loop10"'s partition: a partition's
    # name adds digits after a letter, or "p" and digits after a digit (nvme0n1p1).
    for name in names:
        if disk == name:
            return True
        rest = disk[len(name):] if disk.startswith(name) else ""
        if rest and ((name[-1].isalpha() and rest.isdigit())
                     or (name[-1].isdigit() and rest[0] == "p" and rest[1:].isdigit())):
            return True
    return False


@datarecord
class DiskErrorWatch:
    """Opened once; ``take(names)`` returns the error lines logged since the last call
    (or since opening) that name one of ``names``. ``unavailable`` says why it cannot
    read the log (then ``take`` returns nothing, and the caller records that)."""

    path: str = KMSG
    unavailable: str | None = None
    _fd: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)  # only what is logged from now on
        except OSError as exc:
            self.unavailable = f"cannot read the kernel log ({self.path}): {exc.strerror}"
            self._fd = None

    def take(self, names: set[str]) -> list[str]:
        if self._fd is None:
            return []
        found: list[str] = []
        while True:
            try:
                record = os.read(self._fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # older records were overwritten: read on
                    continue
                if exc.errno == errno.EAGAIN:
                    break
                raise
            if not record:
                break
            text = record.decode("utf-8", "replace")
            message = text.split(";", 1)[1].split("\n", 1)[0] if ";" in text else text.strip()
            match = _IO_ERROR.search(message)
            if match and _is_error_of(match.group(1), names):
                found.append(message.strip())
        return found

    def skip_to_now(self) -> None:
        """Forgets what was logged until now: for when a device has just become the job's.
        A loop device's name is given to the next one attached as soon as it is free, so a
        line logged before then names another device (seen: another test's own error line
        for its loop2 failing a study whose image was attached as loop2 just after)."""
        if self._fd is not None:
            os.lseek(self._fd, 0, os.SEEK_END)

    def refuse(self, names: set[str], when: str, consequence: str,
               error: type[FslabError] = FslabError) -> None:
        """Raise ``error`` saying what was logged on ``names`` since the last take, if
        anything was: for what must not go on from a disk that refused I/O."""
        lines = self.take(names)
        if lines:
            raise error(describe_errors(lines, when, consequence))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DiskErrorWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


RUN_NOT_KEPT = ("this run is not stored as ok; see the kernel log (a guest's console.log), "
                "then re-run it with --retry-failed")
IMAGE_NOT_KEPT = "the aged image is not kept (its runs fail; --retry-failed ages it again)"


def describe_errors(lines: list[str], when: str, consequence: str = RUN_NOT_KEPT) -> str:
    """One sentence for a failed run or job: how many, the first, what it means."""
    more = f" and {len(lines) - 1} more" if len(lines) > 1 else ""
    return (f"the kernel logged {counted(len(lines), 'block I/O error')} on the device {when} "
            f"(\"{lines[0]}\"{more}): a disk that refused I/O measures nothing about the file "
            f"system, so {consequence}")
