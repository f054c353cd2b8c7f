"""The kernel axis: the 6.12 series boots too and brings the in-kernel ntfs3 driver that
6.1's guest lacks (where ntfs runs through ntfs-3g). (That 6.12 boots and has ntfs3 is
what the ntfs3 study checks on the way: no boot of its own for it.)"""

from __future__ import annotations

import pytest

from fslab.backends.guest.build import build
from fslab.errors import FslabError

pytestmark = pytest.mark.guest


KERNEL_AXIS = """
[study]
name = "ext4 on two guest kernels"
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

[[workloads]]
kind = "null"
name = "files"
ops = 20
"""


def test_one_study_compares_two_guest_kernels(guest_build: object, tmp_path) -> None:
    """A kernel per file-system entry: each job boots its own kernel, provenance records the
    one that booted, and the table tells the two ext4 columns apart by kernel."""
    from fslab.report.tables import build_table
    from fslab.runner import run_study
    from fslab.store import Store

    try:
        build("6.12")
    except FslabError as exc:
        pytest.skip(f"the 6.12 kernel package cannot be had here: {exc}")
    study = tmp_path / "kernels.toml"
    study.write_text(KERNEL_AXIS)
    results = tmp_path / "results"
    outcome = run_study(str(study), results_dir=results)
    assert outcome.runs_failed == 0, outcome
    with Store(results) as store:
        runs = store.runs(store.study().id)
    by_fs = {r["cell"]["filesystem"]: r for r in runs}
    assert sorted(by_fs) == ["ext4-61", "ext4-612"]
    old, new = by_fs["ext4-61"], by_fs["ext4-612"]
    assert old["cell"]["kernel"] == "6.1" and new["cell"]["kernel"] == "6.12"
    assert old["provenance"]["guest"]["kernel_release"].startswith("6.1.")
    assert new["provenance"]["guest"]["kernel_release"].startswith("6.12.")
    # the job entry itself ran on that kernel (its own provenance, taken in the guest)
    assert old["provenance"]["host"]["kernel"] == old["provenance"]["guest"]["kernel_release"]
    assert new["provenance"]["host"]["kernel"] == new["provenance"]["guest"]["kernel_release"]
    assert {r["provenance"]["guest"]["kernel_requested"] for r in runs} == {"6.1", "6.12"}
    assert old["provenance"]["filesystem"]["mounted_as"] == new["provenance"]["filesystem"]["mounted_as"] == "ext4"
    assert old["metrics"]["ops_count"]["value"] == new["metrics"]["ops_count"]["value"] == 20
    table = build_table(runs, None, [r["cell"] for r in runs])
    assert table.filesystems == ["ext4-61 (guest 6.1)", "ext4-612 (guest 6.12)"]


NTFS3 = """
[study]
name = "ntfs3 on 6.12"
repetitions = 1
guest_memory = "512MiB"

[device]
size = "256MiB"

[filesystems.ntfs3]
kernel = "6.12"

[[workloads]]
kind = "fio"
name = "randwrite"
rw = "randwrite"
bs = "4k"
size = "4m"
"""


def test_ntfs3_runs_a_fio_job_on_6_12(guest_build: object, tmp_path) -> None:
    """NTFS through the in-kernel ntfs3 driver (registry name ntfs3), which only the 6.12
    guest has; ntfs (ntfs-3g, FUSE) stays the 6.1 way."""
    from fslab.runner import run_study
    from fslab.store import Store

    try:
        build("6.12")
    except FslabError as exc:
        pytest.skip(f"the 6.12 kernel package cannot be had here: {exc}")
    study = tmp_path / "ntfs3.toml"
    study.write_text(NTFS3)
    results = tmp_path / "results"
    assert run_study(str(study), results_dir=results).runs_failed == 0
    with Store(results) as store:
        (run,) = store.runs(store.study().id)
    assert run["provenance"]["filesystem"]["mounted_as"] == "ntfs3"
    assert run["provenance"]["guest"]["kernel_release"].startswith("6.12.")
    m = {k: v["value"] for k, v in run["metrics"].items()}
    assert m["iops"] > 0 and m["write_io_bytes"] == 4 << 20
