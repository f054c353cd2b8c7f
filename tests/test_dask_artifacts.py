"""A worker's artifacts come back as a tar.gz that the driver unpacks into the job folder:
files and folders inside it are written as they were; anything else refuses the whole
archive before a byte of it lands (on every Python 3.11, with or without tarfile's filters)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.executors.dask import unpack_artifacts


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _entry(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def test_a_workers_runs_folder_comes_back_as_it_was(tmp_path: Path) -> None:
    packed = tmp_path / "worker" / "runs"
    (packed / "0001" / "trace").mkdir(parents=True)
    (packed / "0001" / "fio.json").write_text('{"jobs": []}')
    (packed / "0001" / "trace" / "events.bin").write_bytes(bytes(range(256)) * 40)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(packed, arcname="runs")  # as the worker packs them
    dest = tmp_path / "driver"
    dest.mkdir()
    unpack_artifacts(buffer.getvalue(), dest)
    got = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert got == {"runs/0001/fio.json": b'{"jobs": []}',
                   "runs/0001/trace/events.bin": bytes(range(256)) * 40}


@pytest.mark.parametrize("hostile", [
    _file("../escaped.txt", b"outside"),
    _file("/tmp/fslab-absolute-escape.txt", b"absolute"),
    _file("runs/../../escaped.txt", b"outside"),
    _entry("runs/link", tarfile.SYMTYPE, "/etc/passwd"),
    _entry("runs/hard", tarfile.LNKTYPE, "runs/0001/fio.json"),
    _entry("runs/fifo", tarfile.FIFOTYPE),
    _entry("runs/dev", tarfile.CHRTYPE),
], ids=["dotdot", "absolute", "dotdot-inside", "symlink", "hardlink", "fifo", "device"])
def test_an_archive_with_anything_but_files_and_folders_inside_is_refused_whole(
        tmp_path: Path, hostile: tuple[tarfile.TarInfo, bytes | None]) -> None:
    dest = tmp_path / "job" / "folder"
    dest.mkdir(parents=True)
    data = _tar([_entry("runs", tarfile.DIRTYPE), _file("runs/0001/fio.json", b"{}"), hostile])
    with pytest.raises(FslabError, match=r"only files and folders inside its job folder are unpacked") as err:
        unpack_artifacts(data, dest)
    assert repr(hostile[0].name) in str(err.value)
    assert list(dest.iterdir()) == []  # the good members before it were not written either
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["folder", "job"]
    assert not Path("/tmp/fslab-absolute-escape.txt").exists()
