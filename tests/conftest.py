"""Shared fixtures. Tests that touch devices make their own sparse image, loop device and
mount point under their own temp dir and release them through context managers, even
when they fail; they never touch a device they did not create."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# The suite is CPU-bound on 2 cores (docs/performance.md): OpenBLAS's threads, idle in the
# small arrays of the tests and of the fslab processes they start, spin waiting for work;
# and the workers' objects mostly live as long as their test file, so the cyclic collector
# runs less often (its young generation every 20,000 allocations, not 700). Together: the
# host tier's CPU 493 s -> 441 s, its wall 300 s -> 273 s (a 2-core machine, one run each).
# Set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
gc.set_threshold(20_000, 20, 20)

import pytest  # noqa: E402

from fslab.devices import DeviceHandle  # noqa: E402
from fslab.devices.image import provision  # noqa: E402
from fslab.devices.sections import ImageSection  # noqa: E402
from fslab.filesystems import FILESYSTEMS, mkfs, mounted  # noqa: E402

# The host tier's longest files, longest first (each file's tests summed, a `make
# test-fast` on a 2-core machine, 2026-12-02). pytest-xdist's `--dist loadfile` hands out
# files as workers free up, by default those with the most tests first, which started a
# 190 s file of few tests two minutes in and set the tier's end; with
# `--no-loadscope-reorder` (Makefile, tests/run_tiers.py) it keeps the collection order,
# which the hook below makes longest first, so they end while short files fill the others.
LONGEST_FILES = (
    "tests/test_runner.py", "tests/test_dask_executor.py", "tests/test_auto.py",
    "tests/report/test_report_outputs.py", "tests/test_aging_study.py", "tests/report/test_compare_definitions.py",
    "tests/report/test_report_model.py", "tests/test_jobs.py", "tests/test_dask_tls.py",
    "tests/report/test_alloc_report.py", "tests/report/test_report_trace_plots.py", "tests/test_aging.py",
    "tests/test_cli.py", "tests/test_quick.py", "tests/test_dask_no_worker.py", "tests/test_matrix.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the longest files first, the rest in their order (a stable sort): only the
    order in which workers take files changes, never a file's own order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def _device_support_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not Path("/dev/loop-control").exists():
        return "needs loop devices"
    if shutil.which("losetup") is None:
        return "needs losetup"
    return None


@pytest.fixture
def device_support() -> None:
    reason = _device_support_missing()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def loop_device(device_support: None, tmp_path: Path) -> Callable[..., contextlib.AbstractContextManager[DeviceHandle]]:
    """``with loop_device(size="1GiB") as dev:`` a fresh loop device on a sparse image."""

    def make(size: str = "1GiB") -> contextlib.AbstractContextManager[DeviceHandle]:
        section = ImageSection(size=size)
        return provision(section, tmp_path / "images", os.urandom(4).hex())

    return make


@pytest.fixture
def mounted_fs(loop_device: Callable[..., contextlib.AbstractContextManager[DeviceHandle]],
               tmp_path: Path) -> Callable[..., contextlib.AbstractContextManager[tuple[DeviceHandle, Path]]]:
    """``with mounted_fs("ext4") as (dev, mountpoint):`` a made and mounted file system."""

    @contextlib.contextmanager
    def make(fs_type: str, size: str = "1GiB", mkfs_args: tuple[str, ...] = (),
             options: tuple[str, ...] = ()) -> Iterator[tuple[DeviceHandle, Path]]:
        fstype = FILESYSTEMS.get(fs_type)
        with loop_device(size) as dev:
            mkfs(fstype, dev, list(mkfs_args))
            mnt = tmp_path / f"mnt-{os.urandom(3).hex()}"
            with mounted(fstype, dev, list(options), mnt):
                yield dev, mnt

    return make


@pytest.fixture(scope="session")
def traced_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """The short traced study of tests/traced_study.py, made once for every module that
    only reads it: (results dir, runs, cells). Tests write their outputs elsewhere (one
    that alters the study works on a copy)."""
    from traced_study import run_traced_study, traced_study_support

    reason = traced_study_support()
    if reason:
        pytest.skip(reason)
    return run_traced_study(tmp_path_factory.mktemp("traced-study"))


def fslab_leftovers() -> list[str]:
    """Loop devices and mounts fslab made that still exist (must be none after a test)."""
    from fslab.devices.image import fslab_loop_devices

    loops = [f"{loop} ({image})" for loop, image in fslab_loop_devices()]
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if "/mnt-" in line.split()[1]]
    return loops + mounts
