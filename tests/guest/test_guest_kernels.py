"""The kernel axis: the 6.12 series boots too and brings the in-kernel ntfs3 driver that
6.1's guest lacks (where ntfs runs through ntfs-3g). One study holds both: ext4 on each
kernel, and ntfs3 on 6.12 in the boot that ext4's 6.12 job leaves running (two boots, one
per kernel)."""

from __future__ import annotations

from typing import Any

import pytest

from fslab.backends.guest.build import build
from fslab.errors import FslabError

pytestmark = pytest.mark.guest


KERNEL_AXIS = """
[study]
name = "ext4 on two guest kernels, ntfs3 on 6.12"
repetitions = 1
order = "in-order"
guest_memory = "512MiB"

[device]
size = "256MiB"

[filesystems.ext4-61]
type = "ext4"
kernel = "6.1"

[filesystems.ext4-612]
type = "ext4"
kernel = "6.12"

[filesystems.ntfs3]
kernel = "6.12"

[[workloads]]
kind = "fio"
name = "randwrite"
rw = "randwrite"
bs = "4k"
size = "4m"
"""


@pytest.fixture(scope="module")
def kernel_axis(guest_build: object, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The study's stored runs."""
    from fslab.runner import run_study
    from fslab.store import Store

    try:
        build("6.12")
    except FslabError as exc:
        pytest.skip(f"the 6.12 kernel package cannot be had here: {exc}")
    tmp_path = tmp_path_factory.mktemp("kernels")
    study = tmp_path / "kernels.toml"
    study.write_text(KERNEL_AXIS)
    results = tmp_path / "results"
    outcome = run_study(str(study), results_dir=results)
    with Store(results) as store:
        runs: list[dict[str, Any]] = store.runs(store.study().id)
    assert outcome.runs_failed == 0, [r["error"] for r in runs]
    return runs


def _metrics(run: dict[str, Any]) -> dict[str, float]:
    return {k: v["value"] for k, v in run["metrics"].items()}


def test_one_study_compares_two_guest_kernels(kernel_axis: list[dict[str, Any]]) -> None:
    """A kernel per file-system entry: each job boots its own kernel, provenance records the
    one that booted, and the table tells the two ext4 columns apart by kernel."""
    from fslab.report.tables import build_table

    runs = kernel_axis
    by_fs = {r["cell"]["filesystem"]: r for r in runs}
    assert sorted(by_fs) == ["ext4-61", "ext4-612", "ntfs3"]
    old, new = by_fs["ext4-61"], by_fs["ext4-612"]
    assert old["cell"]["kernel"] == "6.1" and new["cell"]["kernel"] == "6.12"
    assert old["provenance"]["guest"]["kernel_release"].startswith("6.1.")
    assert new["provenance"]["guest"]["kernel_release"].startswith("6.12.")
    # the job entry itself ran on that kernel (its own provenance, taken in the guest)
    assert old["provenance"]["host"]["kernel"] == old["provenance"]["guest"]["kernel_release"]
    assert new["provenance"]["host"]["kernel"] == new["provenance"]["guest"]["kernel_release"]
    assert {r["provenance"]["guest"]["kernel_requested"] for r in runs} == {"6.1", "6.12"}
    assert old["provenance"]["filesystem"]["mounted_as"] == new["provenance"]["filesystem"]["mounted_as"] == "ext4"
    assert _metrics(old)["write_io_bytes"] == _metrics(new)["write_io_bytes"] == 4 << 20
    # One boot per kernel: the 6.12 guest that ran ext4 ran ntfs3 next.
    assert old["provenance"]["guest"]["jobs_before_in_boot"] == new["provenance"]["guest"]["jobs_before_in_boot"] == 0
    assert by_fs["ntfs3"]["provenance"]["guest"]["jobs_before_in_boot"] == 1
    ext4_runs = [r for r in runs if r["cell"]["filesystem"] != "ntfs3"]
    table = build_table(ext4_runs, None, [r["cell"] for r in ext4_runs])
    assert table.filesystems == ["ext4-61 (guest 6.1)", "ext4-612 (guest 6.12)"]


def test_ntfs3_runs_a_fio_job_on_6_12(kernel_axis: list[dict[str, Any]]) -> None:
    """NTFS through the in-kernel ntfs3 driver (registry name ntfs3), which only the 6.12
    guest has; ntfs (ntfs-3g, FUSE) stays the 6.1 way."""
    (run,) = [r for r in kernel_axis if r["cell"]["filesystem"] == "ntfs3"]
    assert run["provenance"]["filesystem"]["mounted_as"] == "ntfs3"
    assert run["provenance"]["guest"]["kernel_release"].startswith("6.12.")
    m = _metrics(run)
    assert m["iops"] > 0 and m["write_io_bytes"] == 4 << 20

