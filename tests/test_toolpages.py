"""A workload's executable stays cached across a drop of the page cache while held, and
nothing else does."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fslab.pagecache import drop_caches
from fslab.toolpages import ToolPages, tool_files

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping caches needs root")


def _resident_bytes(path):
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


def test_held_tool_survives_a_drop_and_an_unheld_one_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    tools = {}
    for name in ("held-tool", "other-tool"):
        tools[name] = tmp_path / name
        shutil.copy2("/usr/bin/env", tools[name])
        subprocess.run([name, "--version"], check=True, capture_output=True)  # its pages are cached now
    assert tool_files("held-tool")[0] == tools["held-tool"]
    assert any("libc.so" in p.name for p in tool_files("held-tool"))  # its libraries come too
    with ToolPages() as kept:
        held = kept.hold(["held-tool"])
        drop_caches()
        assert held >= tools["held-tool"].stat().st_size // 2
        assert _resident_bytes(tools["held-tool"]) > 0
        assert _resident_bytes(tools["other-tool"]) == 0
    drop_caches()  # released: dropped like the rest
    assert _resident_bytes(tools["held-tool"]) == 0


def test_a_missing_tool_holds_nothing():
    with ToolPages() as kept:
        assert tool_files("no-such-tool-here") == []
        assert kept.hold(["no-such-tool-here"]) == 0


@pytest.mark.parametrize("tool", ["fio", "mkfs.ext4"])
def test_tool_files_are_what_the_loader_loads(tool):
    """Read from the ELF headers, the same files ldd (the loader itself) lists."""
    found = tool_files(tool)
    if not found:
        pytest.skip(f"{tool} is not installed")
    listed = subprocess.run(["ldd", shutil.which(tool)], capture_output=True, text=True, check=True).stdout
    loaded = {os.path.realpath(word) for word in listed.split() if word.startswith("/")}
    assert {str(p) for p in found[1:]} == loaded
    assert found[0] == Path(os.path.realpath(shutil.which(tool)))


def test_files_another_process_found_are_taken_only_for_the_same_executable(tmp_path, monkeypatch):
    """A guest's server takes the host's list of an executable's files where it finds the
    executable the same (size and mtime), and searches itself otherwise."""
    from fslab import toolpages

    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    tool = tmp_path / "some-tool"
    shutil.copy2("/usr/bin/env", tool)
    monkeypatch.setattr(toolpages, "_FILES", {})
    found = tool_files("some-tool")
    (known,) = toolpages.files_known()
    assert known["path"] == str(tool) and known["files"] == [str(p) for p in found]
    monkeypatch.setattr(toolpages, "_FILES", {})
    toolpages.take_files([{**known, "files": [str(tool), "/as/the/host/found/it.so"]}])
    assert tool_files("some-tool") == [tool, Path("/as/the/host/found/it.so")]
    monkeypatch.setattr(toolpages, "_FILES", {})
    os.utime(tool, ns=(5, 5))  # another file now: searched here
    toolpages.take_files([{**known, "files": [str(tool), "/as/the/host/found/it.so"]}])
    assert tool_files("some-tool") == found
