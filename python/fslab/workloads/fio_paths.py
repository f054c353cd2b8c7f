"""Where a fio option may make fio read or write: every option that names a file, a
directory, a device or a job name (which fio turns into file names) is confined or
refused here, at plan time, for options of a study file and lines of a job file alike.

A study file may come from someone else and runs as root, so the rule is positive: each
option fio's HOWTO (3.33) documents as taking a path is listed with what it may name.
- files on the file system under test (``filename``, ``filename_format``, the job name):
  relative to the directory fslab sets, no ``..``;
- files fio writes where it runs, the run's own folder (the logs): relative, no ``..``;
- names fio resolves elsewhere (``cgroup``: under the cgroup hierarchy; ``ioscheduler``:
  a scheduler of the device under test): plain names;
- options fslab cannot confine (an iolog replayed onto the devices it names, a profile's
  own devices, a file read into the buffers): refused, with the reason;
- ioengines that reach other machines or devices rather than files (net, rbd, nfs, ...):
  refused; the local engines are listed.
``${VAR}`` (fio expands the environment in job files) is refused in any of these.
Options that run programs are ``fio.runs_program``'s (refused unless --allow-exec).
"""

from __future__ import annotations

import re

# Files on the file system under test, relative to the directory fslab sets (':' lists).
UNDER_TEST = ("filename", "filename_format", "name", "donorname")
# Files fio writes in its working directory: the run's own artifact folder.
RUN_FOLDER = ("write_iolog", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log")
SET_BY_FSLAB = ("directory", "opendir")
REFUSED: dict[str, str] = {
    "read_iolog": "replays I/O onto the files and devices its log names, which fslab cannot confine",
    "replay_redirect": "replays I/O onto a device of its own choosing",
    "merge_blktrace_file": "merges blktrace logs for read_iolog, which fslab refuses",
    "profile": "runs a built-in workload on devices (device-names) or a directory (dir) of its own",
    "device-names": "names devices for fio's act profile",
    "dir": "names a directory for fio's tiobench profile",
}
# Engines that do I/O to files under the directory (or none at all): what a study measures.
LOCAL_ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2", "io_uring", "libaio", "posixaio",
                 "mmap", "splice", "null", "falloc", "e4defrag", "cpuio", "filecreate", "filestat",
                 "filedelete", "dircreate", "dirstat", "dirdelete")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _leaves(name: str) -> bool:
    """A path that is absolute, climbs out (``..``), starts at home or expands the environment."""
    name = name.strip("\"' ")  # fio keeps quotes as part of the name; be strict anyway
    return name.startswith(("/", "~")) or ".." in name.split("/") or "${" in name


def path_problem(key: str, value: str) -> str | None:
    """Why ``key=value`` could make fio read or write outside the file system under test
    and the run's folder, or None. ``key`` as fio spells it (case matters to fio)."""
    key, value = key.strip(), value.strip()
    if key in SET_BY_FSLAB:
        return "fslab sets the directory to the mounted file system under test; remove it"
    if key in REFUSED:
        return f"{REFUSED[key]}; remove it (fslab does not run it)"
    if key in UNDER_TEST:
        names = value.split(":") if key != "name" else [value]
        if key == "name" and "/" in value:
            return (f"{value!r}: fio makes file and log names from the job name, so it may not hold '/'; "
                    "use a plain name")
        if any(_leaves(n) for n in names):
            return (f"{value!r} leads outside the file system under test; use a name relative to it "
                    "(no leading '/', no '..', no ${...}: fio may not write to devices fslab was not given)")
    if key in RUN_FOLDER and _leaves(value):
        return (f"{value!r} leads outside the run's folder; give a plain relative name (e.g. "
                f"{key.removeprefix('write_')}): fio writes it beside the run's results")
    if key == "cgroup" and (_leaves(value) or not value):
        return f"{value!r} is not a cgroup name below fio's cgroup mount; use a relative name without '..'"
    if key == "ioscheduler" and not _PLAIN_NAME.match(value):
        return f"{value!r} is not an I/O scheduler name (e.g. none, mq-deadline, bfq)"
    if key in ("mem", "iomem") and ":" in value:
        return f"{value!r} backs the buffers with a file fslab cannot confine; use malloc, shm or mmap"
    if key in ("buffer_pattern", "verify_pattern") and value.startswith("'"):
        return f"{value!r} reads the pattern from a file outside the run; give the pattern itself"
    if key == "ioengine":
        engine = value.split(":")[0].lower()
        if engine not in LOCAL_ENGINES and engine != "exec" and not engine.startswith("external") \
                and "/" not in engine:  # those run programs: fio.runs_program names them
            return (f"ioengine={value} does its I/O elsewhere than files on the file system under test; "
                    f"use one of {', '.join(LOCAL_ENGINES)}")
    return None


def section_problem(header: str) -> str | None:
    """Why a job-file section header (``[NAME]``: the job's name, which fio turns into
    file and log names) could lead outside, or None."""
    name = header.strip()[1:-1].strip()
    if "/" in name or "${" in name:
        return (f"job name {name!r}: fio makes file and log names from it, so it may not hold '/' "
                "or ${VAR}; use a plain name")
    return None
