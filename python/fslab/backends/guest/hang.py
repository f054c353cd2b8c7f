"""A guest kernel that hangs or panics, told from its console: a job's deadline (minutes to
hours) is too long to wait for a guest that will never finish.

The kernel's soft-lockup watchdog says when a CPU has run kernel code without scheduling
for 20 s or more, and repeats it with the time so far. Under TCG on a busy host a vCPU
that gets no host CPU for a while can look stuck for tens of seconds and then recover,
so only a lockup that has lasted HUNG_S counts.

Before the guest is ready the bar is lower (STALLED_BOOT_S): a boot takes 2-10 s here, and
a TCG boot on a loaded host was seen to stall for good in early boot (CPU 1 stuck in the
kernel's init task from ~3 s on, 164 s and counting at the boot deadline), once in a few
hundred boots. Nothing of a run has happened then, so the launcher boots again.
"""

from __future__ import annotations

import re

HUNG_S = 300
STALLED_BOOT_S = 45
_SOFT_LOCKUP = re.compile(r"soft lockup - CPU#(\d+) stuck for (\d+)s! \[([^\]]*)\]")


def kernel_hang(console: str, at_least_s: int = HUNG_S) -> str | None:
    """Why the guest's kernel is hung, from its console text, or None: a soft lockup of
    ``at_least_s`` seconds or more."""
    for match in _SOFT_LOCKUP.finditer(console):
        if int(match.group(2)) >= at_least_s:
            return (f"the guest's kernel hung: CPU {match.group(1)} stuck for {match.group(2)} s in "
                    f"{match.group(3)} (soft lockup)")
    return None


def kernel_panic(console: str) -> str | None:
    """The kernel's panic line on its console text, or None."""
    for line in console.replace("\r", "").splitlines():
        if "Kernel panic - not syncing" in line:
            return line[line.index("Kernel panic"):].strip()
    return None
