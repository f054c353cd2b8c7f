"""Keeping a workload's own executable warm across a drop of the page cache.

A run starts with cold caches (fslab.pagecache.drop_caches), and so did the tool: its
binary and shared libraries were dropped with everything else and read again at its next
start. The tool measures its I/O after it has started, so this costs wall time, not a
figure; but in a QEMU guest those files come over virtio-9p and every page is an emulated
round trip: fio (64 libraries, 80 MB on Debian) took 6-10 s to start after a drop there,
under TCG, twice a run (layout, then the run).

``ToolPages`` maps the tool's files in this process and touches the pages of them that are
in the page cache (what the tool's last start read): the kernel drops no page a process
maps, so those stay and nothing else does. Only pages already cached are held, so the
memory is what the tool itself used, never the whole 80 MB.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import shutil
from pathlib import Path

from .commands import run_command
from .errors import FslabError

PAGE = mmap.PAGESIZE
_PROT_READ = 0x1
_MAP_SHARED = 0x01
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def tool_files(executable: str) -> list[Path]:
    """The executable found on PATH and the shared libraries it loads (``ldd``); [] when
    it is not installed. A static binary is only itself."""
    path = shutil.which(executable)
    if path is None:
        return []
    files = [Path(os.path.realpath(path))]
    try:
        done = run_command(["ldd", path], timeout=60, check=False)
    except FslabError:
        return files
    for line in done.stdout.splitlines():
        # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        target = line.split("=>", 1)[1] if "=>" in line else line
        word = target.strip().split(" ", 1)[0]
        if word.startswith("/"):
            files.append(Path(os.path.realpath(word)))
    return list(dict.fromkeys(files))


class _Mapping:
    """One file mapped read-only; ``touched`` pages are in this process's page tables."""

    def __init__(self, path: Path):
        self.size = path.stat().st_size
        self.pages = (self.size + PAGE - 1) // PAGE
        self.touched = bytearray(self.pages)
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = _libc.mmap(None, self.size, _PROT_READ, _MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
        self.addr: int = addr

    def hold_cached(self) -> int:
        """Touch every page of the file now in the page cache not touched before; returns
        the bytes this mapping holds."""
        vec = ctypes.create_string_buffer(self.pages)
        if _libc.mincore(self.addr, self.size, vec) != 0:
            return sum(self.touched) * PAGE
        for i, state in enumerate(vec.raw):
            if state & 1 and not self.touched[i]:
                ctypes.string_at(self.addr + i * PAGE, 1)  # a read fault maps the cached page
                self.touched[i] = 1
        return sum(self.touched) * PAGE

    def close(self) -> None:
        _libc.munmap(self.addr, self.size)


class ToolPages:
    """The cached pages of some executables and their libraries, kept mapped until closed.
    Use as a context manager; ``hold(tools)`` before each drop of the caches."""

    def __init__(self) -> None:
        self._maps: dict[Path, _Mapping | None] = {}
        self._files: dict[str, list[Path]] = {}

    def hold(self, tools: list[str]) -> int:
        """Map the tools' files (found once) and hold their cached pages; returns the bytes
        held in all. A file that cannot be mapped is left to be dropped."""
        for tool in tools:
            if tool not in self._files:
                self._files[tool] = tool_files(tool)
            for path in self._files[tool]:
                if path not in self._maps:
                    try:
                        self._maps[path] = _Mapping(path) if path.stat().st_size else None
                    except OSError:
                        self._maps[path] = None
        return sum(m.hold_cached() for m in self._maps.values() if m is not None)

    def __enter__(self) -> ToolPages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap everything: the pages may be dropped again."""
        for mapping in self._maps.values():
            if mapping is not None:
                mapping.close()
        self._maps.clear()
