"""A run during which the kernel logged block I/O errors on its disk is failed, not stored
as ok (a file system can go on after a refused write; its numbers would then measure a
broken disk). The kernel log is the real one: lines are written to /dev/kmsg, as the
block layer writes them, naming a made-up disk or the run's own loop device."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from fio_studies import write_fio_study
from fslab.kernel_log import DiskErrorWatch, kernel_names
from fslab.runner import run_study
from fslab.store import Store

pytestmark = pytest.mark.skipif(not os.access("/dev/kmsg", os.W_OK), reason="needs root's /dev/kmsg")


def log(line: str) -> None:
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(line + "\n")


def test_only_new_errors_of_the_named_disks_and_their_partitions_are_taken() -> None:
    disk = f"fslabt{uuid.uuid4().hex[:6]}x"  # ends in a letter: partitions add digits
    log(f"I/O error, dev {disk}, sector 1 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2")
    with DiskErrorWatch() as watch:
        assert watch.unavailable is None
        assert watch.take({disk}) == []  # logged before the watch opened
        log(f"I/O error, dev {disk}, sector 233474 op 0x1:(WRITE) flags 0x4000 phys_seg 254 prio class 2")
        log(f"Buffer I/O error on dev {disk}1, logical block 7, lost async page write")
        log(f"critical space allocation error, dev {disk}, sector 8 op 0x1:(WRITE)")
        log(f"I/O error, dev {disk}z, sector 9 op 0x1:(WRITE)")  # another disk
        log(f"{disk}: a line that is not an error")
        taken = watch.take({disk})
        assert [line.split(",")[0] for line in taken] == [
            "I/O error", f"Buffer I/O error on dev {disk}1", "critical space allocation error"]
        assert watch.take({disk}) == []  # each line is taken once


def test_loop_names_are_not_partitions_of_each_other() -> None:
    # Made-up names shaped like loop1/loop10 and nvme0n1p2: a line naming a real loopN would
    # fail the run of whichever test of another worker has that device now.
    fake = f"fslabt{uuid.uuid4().hex[:6]}"
    with DiskErrorWatch() as watch:
        log(f"I/O error, dev {fake}loop10, sector 1 op 0x1:(WRITE)")
        log(f"I/O error, dev {fake}nvme0n1p2, sector 1 op 0x1:(WRITE)")
        assert watch.take({f"{fake}loop1"}) == []
        assert len(watch.take({f"{fake}nvme0n1"})) == 0  # loop10 was read and dropped with the first take
        log(f"I/O error, dev {fake}nvme0n1p2, sector 1 op 0x1:(WRITE)")
        assert len(watch.take({f"{fake}nvme0n1"})) == 1


def test_what_was_logged_before_a_device_became_the_jobs_is_skipped() -> None:
    disk = f"fslabt{uuid.uuid4().hex[:6]}x"
    with DiskErrorWatch() as watch:
        log(f"critical space allocation error, dev {disk}, sector 4096 op 0x1:(WRITE)")  # its last holder's
        watch.skip_to_now()
        assert watch.take({disk}) == []
        log(f"I/O error, dev {disk}, sector 8 op 0x1:(WRITE)")
        assert [line.split(",")[0] for line in watch.take({disk})] == ["I/O error"]


def test_a_mapping_names_the_disks_below_it(tmp_path: Path) -> None:
    # A loop device has no slaves: its own name only. (dm and md slaves are followed the
    # same way; the guest tests run a dm-delay device over vda.)
    assert kernel_names("loop0") == {"loop0"}


def test_a_log_that_cannot_be_read_is_said() -> None:
    watch = DiskErrorWatch(path="/nonexistent/kmsg")
    assert watch.unavailable is not None and "/nonexistent/kmsg" in watch.unavailable
    assert watch.take({"vda"}) == []


WORKLOAD = 'rw = "write"\nbs = "64k"\nsize = "4M"\nexec_postrun = "sh {script}"'


# Once (a marker file): log an I/O error naming the loop device behind this study's image.
INJECT = """set -e
[ -e {marker} ] && exit 0
touch {marker}
dev=$(losetup --list --noheadings --output NAME,BACK-FILE | grep -F '{images}/' | head -n 1 | cut -d' ' -f1)
echo "I/O error, dev $(basename "$dev"), sector 2048 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2" > /dev/kmsg
"""


def test_the_run_that_saw_the_error_fails_and_the_next_is_ok(device_support, tmp_path: Path) -> None:
    images = tmp_path / "images"
    script = tmp_path / "inject.sh"
    script.write_text(INJECT.format(marker=tmp_path / "injected", images=images))
    study = write_fio_study(tmp_path, WORKLOAD.format(script=script), name="disk errors", repetitions=2)
    results = tmp_path / "results"
    run_study(str(study), results_dir=results, allow_exec=True)
    assert (tmp_path / "injected").exists()
    store = Store(results, read_only=True)
    runs = sorted(store.runs(store.study().id), key=lambda r: r["sequence"])
    store.close()
    assert [r["status"] for r in runs] == ["failed", "ok"], [(r["status"], r["error"]) for r in runs]
    error = runs[0]["error"] or ""
    assert "the kernel logged 1 block I/O error on the device during the run" in error
    assert "I/O error, dev loop" in error and "sector 2048" in error and "--retry-failed" in error
    assert [line.split(",")[0] for line in runs[0]["provenance"]["kernel_io_errors"]] == ["I/O error"]
    assert "kernel_io_errors" not in runs[1]["provenance"]
    assert runs[1]["provenance"]["kernel_log"] == "checked for block I/O errors"


def test_an_image_aged_on_a_disk_that_logged_errors_is_refused(device_support, tmp_path: Path, monkeypatch) -> None:
    import subprocess

    from fslab import aged_images
    from fslab.aging_option import AgingOption
    from fslab.errors import FslabError

    real_age = aged_images.age

    def age_then_log_an_error(mountpoint: Path, option: AgingOption):  # the aging is real
        report = real_age(mountpoint, option)
        source = subprocess.run(["findmnt", "-no", "SOURCE", str(mountpoint)], capture_output=True,
                                text=True, check=True).stdout.strip()
        log(f"Buffer I/O error on dev {Path(source).name}, logical block 9, lost async page write")
        return report

    monkeypatch.setattr(aged_images, "age", age_then_log_an_error)
    image = tmp_path / "aged.img"
    with pytest.raises(FslabError) as err:
        aged_images.make_aged_filesystem(image, 256 << 20, "ext4", [], [], AgingOption(fill=0.2, seed=1), tmp_path)
    assert "while it was aged" in str(err.value) and "the aged image is not kept" in str(err.value)
    assert "Buffer I/O error on dev loop" in str(err.value)
