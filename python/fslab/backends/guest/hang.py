"""A guest kernel that hangs, told from its console: a job's deadline (minutes to hours)
is too long to wait for a guest that will never finish.

The kernel's soft-lockup watchdog says when a CPU has run kernel code without scheduling
for 20 s or more, and repeats it with the time so far. Under TCG on a busy host a vCPU
that gets no host CPU for a while can look stuck for tens of seconds and then recover,
so only a lockup that has lasted HUNG_S counts.
"""

from __future__ import annotations

import re

HUNG_S = 300
_SOFT_LOCKUP = re.compile(r"soft lockup - CPU#(\d+) stuck for (\d+)s! \[([^\]]*)\]")


def kernel_hang(console: str) -> str | None:
    """Why the guest's kernel is hung, from its console text, or None."""
    for match in _SOFT_LOCKUP.finditer(console):
        if int(match.group(2)) >= HUNG_S:
            return (f"the guest's kernel hung: CPU {match.group(1)} stuck for {match.group(2)} s in "
                    f"{match.group(3)} (soft lockup)")
    return None
