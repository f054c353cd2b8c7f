"""The QEMU guest backend: a stock Debian kernel booted in QEMU with the host's root
shared read-only, running commands (the job entry) through a 9p control folder.

Modules: ``kernel`` (fetch and unpack the kernel package), ``build`` (the initramfs and
its cache), ``kvm`` (whether KVM really works here), ``launcher`` (boot, run, tear down),
``reaper`` (state files; ``cleanup_guests`` for a SIGKILLed owner), ``requirements``
(tools and doctor check).
"""

from .requirements import declare

declare()

from . import backend  # noqa: E402,F401  (registers the guest backend)
