"""Whether this kernel can build an md array of a RAID level: md itself (``md_mod``) and
the level's personality (``raid0``; ``raid456`` for RAID5), each either present (md
lists its loaded personalities in /proc/mdstat, which exists once md is loaded) or there
to load (``modprobe --dry-run``; a built-in module passes too). The ``raid`` device kind
asks it to build arrays on the host where it can, in a guest otherwise. Registers no
device kind."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from ..commands import module_loadable, run_command
from . import HostProbe

# RAID level -> (personality as /proc/mdstat names it, the module that provides it)
PERSONALITIES = {0: ("raid0", "raid0"), 5: ("raid5", "raid456")}
MDSTAT = Path("/proc/mdstat")


def loaded_personalities(mdstat: str) -> set[str]:
    """The personalities /proc/mdstat lists (``Personalities : [raid0] [raid5] ...``)."""
    line = next((l for l in mdstat.splitlines() if l.startswith("Personalities")), "")
    return set(re.findall(r"\[(\w+)\]", line))


def md_support(level: int, mdstat: str | None, loadable: Callable[[str], bool]) -> HostProbe:
    """What a kernel offers a RAID ``level`` array, from the text of its /proc/mdstat
    (None: not there, md is not loaded) and ``loadable(module)`` (modprobe would load it)."""
    personality, module = PERSONALITIES[level]
    if mdstat is None:
        if not loadable("md_mod"):
            return HostProbe(False, "this host kernel has no md (no /proc/mdstat, no md_mod module to load)")
        core = "md_mod to load"
    else:
        core = "md loaded"
    if personality in loaded_personalities(mdstat or ""):
        return HostProbe(True, f"this host kernel has md ({core}, {personality} personality loaded)")
    if loadable(module):
        return HostProbe(True, f"this host kernel has md ({core}, {module} module to load)")
    return HostProbe(False, f"this host kernel has md but no RAID{level} "
                            f"(no {personality} personality, no {module} module to load)")


@functools.cache
def host_md(level: int) -> HostProbe:
    """What this host's kernel offers a RAID ``level`` array (probed once per process)."""
    try:
        mdstat: str | None = MDSTAT.read_text()
    except OSError:
        mdstat = None
    return md_support(level, mdstat, module_loadable)


def load_md(level: int) -> None:
    """Load md and the level's personality ahead of mdadm: a kernel built without the
    legacy block-device autoload would not load md_mod on mdadm's first open of /dev/mdN.
    A failure is left to mdadm to report (the module may be built in)."""
    run_command(["modprobe", "-a", "md_mod", PERSONALITIES[level][1]], timeout=60, check=False)
