"""Keeping a workload's own executable warm across a drop of the page cache.

A run starts with cold caches (fslab.pagecache.drop_caches), and so did the tool: its
binary and shared libraries were dropped with everything else and read again at its next
start. The tool measures its I/O after it has started, so this costs wall time, not a
figure; but in a QEMU guest those files come over virtio-9p and every page is an emulated
round trip: fio (64 libraries, 80 MB on Debian) took 6-10 s to start after a drop there,
under TCG, twice a run (layout, then the run).

``ToolPages`` maps the tool's files in this process and touches the pages of them that are
in the page cache (what the tool's last start read): the kernel drops no page a process
maps, so those stay and nothing else does. Only pages already cached are held: what the
tool's last start read, with the kernel's readahead (about 50 MB of fio's 80 MB in a guest
under seed-002 --quick), which were cached while the tool ran before as well; held pages
stay reclaimable under memory pressure. A run with a memory limit holds nothing
(fslab.job.execute): its tool's pages are charged to its cgroup, as before.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import shutil
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PAGE = mmap.PAGESIZE
_PROT_READ = 0x1
_MAP_SHARED = 0x01
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MADV_POPULATE_READ = 22


# Where the dynamic loader looks after a library's own RUNPATH (Debian's ld.so.conf).
LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                "/lib", "/usr/lib", "/usr/local/lib")


# Files found before, keyed by the executable's identity (path, inode, size, mtime): the
# search stats hundreds of paths, seconds over a guest's 9p root, and every job of a guest
# (fslab.job.serve's children) asks for the same tools.
_FILES: dict[tuple[str, int, int, int], list[Path]] = {}


def tool_files(executable: str) -> list[Path]:
    """The executable found on PATH, its loader and the shared libraries it needs (the ELF
    files' DT_NEEDED, found through their RUNPATH and the system's library folders); []
    when it is not installed. Read from the files, not with ldd: ldd starts the loader,
    which loads every library, what this is here to spare. Found once per executable as
    it is on disk."""
    path = shutil.which(executable)
    if path is None:
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = (os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _FILES:
        _FILES[key] = _find_files(path)
    return list(_FILES[key])


def files_known() -> list[dict[str, Any]]:
    """Every executable's files found in this process, with the executable as found on disk
    (real path, size, mtime): for another process that sees the same files (a guest on this
    host's root) to take instead of searching again."""
    return [{"path": path, "size": size, "mtime_ns": mtime, "files": [str(f) for f in files]}
            for (path, _inode, size, mtime), files in _FILES.items()]


def take_files(known: Iterable[Mapping[str, Any]]) -> None:
    """Take the files another process found (``files_known``) for executables this process
    finds the same (real path, size and mtime: inode numbers differ across 9p)."""
    for entry in known:
        try:
            st = os.stat(entry["path"])
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns) == (entry["size"], entry["mtime_ns"]):
            _FILES.setdefault((entry["path"], st.st_ino, st.st_size, st.st_mtime_ns),
                              [Path(f) for f in entry["files"]])


def _find_files(path: str) -> list[Path]:
    files: list[Path] = []
    todo = [Path(os.path.realpath(path))]
    while todo:
        current = todo.pop()
        if current in files:
            continue
        files.append(current)
        try:
            interp, needed, runpath = _elf_dynamic(current)
        except (OSError, ValueError, struct.error):
            continue  # not an ELF file (a script) or unreadable: itself only
        if interp:
            todo.append(Path(os.path.realpath(interp)))
        dirs = [d.replace("$ORIGIN", str(current.parent)) for d in runpath] + list(LIBRARY_DIRS)
        for name in needed:
            found = next((Path(d) / name for d in dirs if (Path(d) / name).is_file()), None)
            if found is not None:
                todo.append(Path(os.path.realpath(found)))
    return files


def _elf_dynamic(path: Path) -> tuple[str | None, list[str], list[str]]:
    """(PT_INTERP, DT_NEEDED names, DT_RUNPATH/DT_RPATH folders) of a 64-bit little-endian
    ELF file; ValueError for anything else."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        # Mapped, not read: only the pages of the headers and strings are fetched (80 MB of
        # fio's libraries would otherwise come over 9p in a guest).
        return _dynamic_of(path, data)


def _dynamic_of(path: Path, data: mmap.mmap) -> tuple[str | None, list[str], list[str]]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, interp, dynamic = [], None, None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:  # PT_LOAD: to turn the string table's address into an offset
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 3:  # PT_INTERP
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
        elif p_type == 2:  # PT_DYNAMIC
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return interp, [], []
    entries = [struct.unpack_from("<qQ", data, dynamic[0] + 16 * i) for i in range(dynamic[1] // 16)]
    strtab = next((value for tag, value in entries if tag == 5), None)  # DT_STRTAB (an address)
    if strtab is None:
        return interp, [], []
    base = next(off + strtab - vaddr for vaddr, off, size in loads if vaddr <= strtab < vaddr + size)

    def string(offset: int) -> str:
        start = base + offset
        return data[start:data.find(b"\0", start)].decode()

    needed = [string(value) for tag, value in entries if tag == 1]  # DT_NEEDED
    runpath = [d for tag, value in entries if tag in (15, 29) for d in string(value).split(":") if d]
    return interp, needed, runpath


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
        cached = vec.raw
        i = 0
        while i < self.pages:  # each run of cached pages not yet touched, in one call
            if not (cached[i] & 1) or self.touched[i]:
                i += 1
                continue
            j = i
            while j < self.pages and cached[j] & 1 and not self.touched[j]:
                j += 1
            self._populate(i, j)
            self.touched[i:j] = b"\1" * (j - i)
            i = j
        return sum(self.touched) * PAGE

    def _populate(self, first: int, end: int) -> None:
        """Map pages [first, end) into this process: MADV_POPULATE_READ (Linux 5.14) where
        the kernel has it, else a read of a byte of each (a read fault maps it)."""
        addr, length = self.addr + first * PAGE, (end - first) * PAGE
        if _libc.madvise(addr, length, _MADV_POPULATE_READ) == 0:
            return
        for page in range(first, end):
            ctypes.string_at(self.addr + page * PAGE, 1)

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
