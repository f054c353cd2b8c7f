"""`make setup` installs every Debian package the plug-ins' tools come from.

How a tool's package is known: each plug-in declares its executables with their Debian
package where it registers (``Workload.tools``, ``FsType.tools``, ``DeviceKind.tools``,
and the guest backend's and aging's own ``declare_tools`` calls), all collected in
``fslab.commands.TOOLS``. The Makefile's APT_PACKAGES must hold each of those packages,
except the ones every Debian system has (Essential or required priority)."""

from __future__ import annotations

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"
# On every Debian system: Essential (coreutils, mount, dpkg) or priority required (apt).
ON_EVERY_DEBIAN = {"coreutils", "mount", "dpkg", "apt"}


def apt_packages(makefile_text: str) -> set[str]:
    """The words of APT_PACKAGES (backslash continuations joined)."""
    joined = makefile_text.replace("\\\n", " ")
    m = re.search(r"^APT_PACKAGES\s*:?=(.*)$", joined, re.MULTILINE)
    assert m, f"{MAKEFILE}: no APT_PACKAGES line"
    return set(m.group(1).split())


def missing_packages(tools: dict[str, str], packages: set[str]) -> list[str]:
    """'tool (package)' for each declared tool whose package `make setup` would not install."""
    return sorted(f"{tool} ({package})" for tool, package in tools.items()
                  if package not in packages and package not in ON_EVERY_DEBIAN)


def _declared_tools() -> dict[str, str]:
    import fslab.aged_images
    import fslab.backends.guest.requirements
    import fslab.devices
    import fslab.filesystems
    import fslab.fragmentation
    import fslab.workloads  # noqa: F401  (each registers its plug-ins and their tools)
    from fslab.commands import TOOLS
    from fslab.devices import DEVICES
    from fslab.filesystems import FILESYSTEMS
    from fslab.workloads import WORKLOADS

    # Listing a registry loads each of its plug-ins, and so their tools. The plug-ins' own
    # declarations are all in TOOLS (a tool of two packages is refused there).
    for registry in (WORKLOADS, FILESYSTEMS, DEVICES):
        for name in registry.names():
            for tool, package in registry.get(name).tools.items():
                assert TOOLS[tool].package == package
    return {tool.name: tool.package for tool in TOOLS.values()}


def test_make_setup_installs_the_package_of_every_declared_tool() -> None:
    tools = _declared_tools()
    assert {"fio", "bonnie++", "mkfs.xfs", "mkfs.f2fs", "qemu-system-x86_64"} <= set(tools)
    packages = apt_packages(MAKEFILE.read_text())
    assert missing_packages(tools, packages) == [], f"add these packages to APT_PACKAGES in {MAKEFILE}"


def test_the_package_check_finds_a_missing_package() -> None:
    text = "APT_PACKAGES := fio bonnie++ \\\n\txfsprogs\nOTHER := x\n"
    assert apt_packages(text) == {"fio", "bonnie++", "xfsprogs"}
    tools = {"fio": "fio", "mkfs.xfs": "xfsprogs", "mkfs.jfs": "jfsutils", "sync": "coreutils"}
    assert missing_packages(tools, apt_packages(text)) == ["mkfs.jfs (jfsutils)"]
