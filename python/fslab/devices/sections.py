"""The ``[device]`` sections of the device kinds: what each kind's fields are and how a
study file's values are checked (pydantic models, read by fslab.study and fslab.plan on
the host). Each device module (fslab.devices.image, ...) names its section here and
keeps its code apart from it, so a job process, whose sections were checked when the
study was planned, runs without loading pydantic (a guest under TCG pays seconds for it):
it reads a job's section as plain data (fslab.devices.SectionData)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..toml_section import TomlBool, TomlSection
from ..units import parse_size

MiB = 1 << 20
GiB = 1 << 30


# fslab.devices.image
class ImageSection(TomlSection):
    """``[device]`` with ``kind = "image"``."""

    size: int = Field(default=4 << 30, description="bytes of the sparse image")
    image_dir: str | None = Field(default=None, description="where image files go")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @model_validator(mode="after")
    def _check(self) -> ImageSection:
        if self.size < 64 << 20:
            raise ValueError("an image device needs at least 64MiB (and each file system its own floor: "
                             "btrfs 109 MiB, xfs 300 MiB; fslab plan checks them)")
        return self


# fslab.devices.block
class BlockSection(TomlSection):
    """``[device]`` with ``kind = "block"``: a real device the user hands over."""

    path: str = Field(description="the device node, e.g. /dev/sdb")
    force: TomlBool = Field(default=False, description="allow a device that carries a signature")


# A USB 2.0 flash drive like seed 003's (an LG UJ1, 2 GB): dm-delay with a fixed delay per
# request, reads 1 ms, writes (and the flushes fsync sends) 13 ms. Where the figures come
# from: cheap USB 2.0 drives sustain 6-8 MB/s of large writes (f3write on a Verbatim Store
# 'n' Go: 7.73 MB/s; zero-fill of an old Sony 8 GB stick: 5.9-6.1 MB/s, both published
# user measurements) but many small files write at about 0.3 MB/s even on a drive that
# writes large files at 46 MB/s (a USB 3.0 review quoted in Wikipedia's "USB flash drive"
# article): ~75 writes of 4 KiB per second, 13 ms each; a
# 4 KiB read costs about 1 ms (USB 2.0 bulk transfer plus a flash page read). What it is:
# the per-request latency of small reads and writes, which decides seed 003's 4 KiB
# operations. What it is not: a throughput limit for large transfers (a 1 MiB write costs
# 13 ms here, ~150 ms on the drive), nor the drive's garbage collection or wear levelling.
PROFILES: dict[str, dict[str, Any]] = {
    "usb-flash": {"model": "dm-delay", "delay_ms": 1.0, "write_delay_ms": 13.0, "rotational": False},
}


# fslab.devices.emulated
class EmulatedSection(TomlSection):
    """``[device]`` with ``kind = "emulated"``."""

    profile: Literal["usb-flash"] | None = Field(default=None, description="a named device class "
                                                  "filling model, delays and rotational (devices/emulated.py)")
    model: Literal["scsi_debug", "dm-delay", "null_blk"] = Field(description="which emulation")
    size: int = Field(default=1 << 30, description="bytes (scsi_debug: MiB steps; null_blk: "
                      "GiB steps; dm-delay: the lower disk's size)")
    delay_ms: float = Field(default=0.0, ge=0, le=1000, description="added to every request")
    write_delay_ms: float | None = Field(default=None, ge=0, le=1000, description="dm-delay only: "
                                         "writes and flushes get this delay instead (None: delay_ms)")
    rotational: TomlBool = Field(default=True, description="what the queue reports to the "
                             "file system and the I/O scheduler")

    @model_validator(mode="before")
    @classmethod
    def _profile(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("profile") in PROFILES:
            return {**PROFILES[data["profile"]], **data}
        return data

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @model_validator(mode="after")
    def _check(self) -> EmulatedSection:
        if self.model == "null_blk" and self.size % GiB:
            raise ValueError("null_blk sizes come in whole GiB")
        if self.model == "scsi_debug" and self.size % MiB:
            raise ValueError("scsi_debug sizes come in whole MiB")
        if self.write_delay_ms is not None and self.model != "dm-delay":
            raise ValueError("write_delay_ms needs model = \"dm-delay\" (the others delay every request alike)")
        return self


# fslab.devices.raid
class RaidSection(TomlSection):
    """``[device]`` with ``kind = "raid"``."""

    level: Literal[0, 5] = Field(description="md RAID level: 0 (striping) or 5 (striping + parity)")
    disks: int = Field(default=8, ge=2, le=32, description="member devices")
    chunk: int = Field(default=512 << 10, description="chunk (stripe unit) per member, bytes")
    member_size: int = Field(default=1 << 30, description="bytes of each member's image")
    resync: Literal["assume-clean", "wait"] = Field(
        default="assume-clean", description="RAID5: skip the initial resync (fresh zeroed "
        "members) or run it and wait")
    members: list[str] = Field(default_factory=list, description="the user's disks to build the array "
                               "on (each checked and confirmed as kind = \"block\"); empty: images")
    force: TomlBool = Field(default=False, description="allow members that carry a signature")
    vdisks: int | None = Field(default=None, ge=0, description="inside a guest (written by the guest "
                               "backend, not by users): the members are its virtio disks from this index on")

    @field_validator("chunk", "member_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @model_validator(mode="before")
    @classmethod
    def _disks_from_members(cls, data: Any) -> Any:
        """Named members say how many disks there are."""
        if isinstance(data, dict) and data.get("members") and "disks" not in data:
            return {**data, "disks": len(data["members"])}
        return data

    @model_validator(mode="after")
    def _check(self) -> RaidSection:
        if self.members and self.vdisks is not None:
            raise ValueError("vdisks is written by the guest backend for its own disks: name members instead")
        if self.members:
            if len(set(self.members)) != len(self.members):
                raise ValueError("members: a disk is named twice")
            if self.disks != len(self.members):
                raise ValueError(f"disks = {self.disks} but {len(self.members)} members are named: drop disks")
        if self.chunk < 4096 or self.chunk & (self.chunk - 1):
            raise ValueError("chunk must be a power of two of at least 4KiB (md's rule)")
        if self.level == 5 and self.disks < 3:
            raise ValueError("RAID5 needs at least 3 disks")
        if not self.members and self.member_size < 16 * self.chunk:
            raise ValueError("member_size must hold at least 16 chunks")
        return self


# fslab.devices.vdisk
class VdiskSection(TomlSection):
    """``[device]`` with ``kind = "vdisk"`` (written by the guest backend, not by users)."""

    index: int = Field(default=0, ge=0, description="which of the guest's virtio disks")


# fslab.devices.fake
class FakeSection(TomlSection):
    """``[device]`` with ``kind = "fake"``."""

    directory: str | None = Field(default=None, description="where the fake device's directory "
                                  "goes (default: /dev/shm when writable, else the work dir)")
