"""What the guest backend needs on the host: its tools (declared, so preflight and
`fslab doctor` list them with their fix) and the kernel package in the cache."""

from __future__ import annotations

from ...check import Check
from ...commands import declare_tools
from . import paths

# tool -> Debian package
TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",  # boots the guest
    "busybox": "busybox-static",               # the guest's init (must be the static build)
    "depmod": "kmod",                          # module dependencies; modprobe in the guest
    "dpkg-deb": "dpkg",                        # unpacks the kernel package
    "apt-get": "apt",                          # downloads it
    "mdadm": "mdadm",                          # md RAID0/5 in the guest
    "dmsetup": "dmsetup",                      # dm-delay in the guest
}


def declare() -> None:
    declare_tools(TOOLS, "the guest backend")


def kernel_check() -> Check:
    """Whether a 6.1 kernel package is already in the cache (else `fslab guest build`)."""
    debs = sorted(paths.debs_dir().glob("linux-image-6.1.*-amd64_*.deb"))
    return Check("guest kernel 6.1", bool(debs),
                 debs[-1].name if debs else f"not in {paths.debs_dir()}",
                 "fslab guest build (fetches linux-image-amd64's kernel with apt-get "
                 "download; nothing is installed)", "the guest backend: the kernel it boots")
