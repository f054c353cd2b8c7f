"""--quick keeps the ratios that decide a study: sizes and the memory limit shrink together."""

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

from fslab.backends import choose_backend
from fslab.plan import build_cells
from fslab.study import load_spec
from fslab.workloads import QUICK_MIN_MEMORY, WORKLOADS, quick_memory, quick_size

FSLAB = [sys.executable, "-m", "fslab.cli"]


def test_quick_size_divides_by_8_down_to_64_mib() -> None:
    assert quick_size(2 << 30) == 256 << 20
    assert quick_size(1 << 30) == 128 << 20
    assert quick_size(256 << 20) == 64 << 20
    assert quick_size(128 << 20) == 64 << 20  # scaled, but not below 64 MiB
    assert quick_size(64 << 20) == 64 << 20 and quick_size(4 << 20) == 4 << 20  # kept


def test_quick_memory_keeps_the_data_to_memory_ratio() -> None:
    assert quick_memory(256 << 20, 2 << 30, 256 << 20) == 32 << 20
    assert quick_memory(None, 2 << 30, 256 << 20) is None
    assert quick_memory(256 << 20, None, 256 << 20) == 256 << 20  # unknown size: unchanged
    assert quick_memory(64 << 20, 8 << 30, 64 << 20) == QUICK_MIN_MEMORY  # floor, never above
    assert quick_memory(3 << 20, 1 << 30, 1 << 20) == 3 << 20  # never raised


def test_quick_plan_of_seed_004_scales_file_and_memory_together() -> None:
    spec, _, _ = load_spec("seed-004")
    [full] = [c for c in build_cells(spec, quick=False, backends=choose_backend)[0] if c.filesystem == "ext4"]
    [quick] = [c for c in build_cells(spec, quick=True, backends=choose_backend)[0] if c.filesystem == "ext4"]
    assert full.params["file_size"] / full.memory_bytes == quick.params["file_size"] / quick.memory_bytes == 8
    assert quick.params["file_size"] == full.params["file_size"] // 8
    assert quick.params["io_size"] == full.params["io_size"] // 8


def test_quick_bonnie_scales_r_with_the_file() -> None:
    bonnie = WORKLOADS.get("bonnie")
    params = bonnie.validate({"size": "4GiB", "ram": "1GiB"})
    quick = bonnie.quick(params)
    assert quick["size"] / quick["ram"] == params["size"] / params["ram"] == 4


def _trace_shape(results: Path) -> list[tuple[float, float]]:
    done = subprocess.run([*FSLAB, "export", "-r", str(results), "--format", "json"],
                          capture_output=True, text=True, timeout=60, check=True)
    shapes = []
    for record in json.loads(done.stdout):
        assert record["status"] == "ok", record["error"]
        m = record["metrics"]
        shapes.append((m["trace_write_size_median_bytes"]["value"], m["trace_write_sequential_fraction"]["value"]))
    return shapes


def test_quick_seed_004_has_the_shape_of_a_full_run(device_support, tmp_path: Path) -> None:
    """The preset's ratios (file : memory = 8 : 1, io : file = 1 : 2), quick and at a
    quarter of the full size (the full 2 GiB run is too long for the suite): ext4's 4 KiB random
    buffered writes must reach the device as 4 KiB random writes in both. Before the memory
    limit scaled, quick gave a median of 524,288 B and 99.6% sequential."""
    # ext4 on the host: the page cache's behaviour under the limit is the kernel's, not QEMU's.
    text = (resources.files("fslab") / "presets" / "seed-004.toml").read_text().replace(
        'backend = "shared"', 'backend = "host"')
    assert 'backend = "host"' in text
    small = (text.replace('file_size = "2GiB"', 'file_size = "512MiB"')
             .replace('io_size = "1GiB"', 'io_size = "256MiB"')
             .replace('memory = "256MiB"', 'memory = "64MiB"').replace("repetitions = 5", "repetitions = 1")
             .split("[filesystems.f2fs]")[0])
    assert "2GiB" not in small and "64MiB" in small
    study = tmp_path / "seed-004-quarter.toml"
    study.write_text(small)
    ext4_only = tmp_path / "seed-004-ext4.toml"  # the preset itself, without the guest's f2fs
    ext4_only.write_text(text.split("[filesystems.f2fs]")[0])  # the guest's entries come after ext4
    for args, out in (([str(ext4_only), "--quick"], "quick"), ([str(study)], "full")):
        done = subprocess.run([*FSLAB, "run", *args, "-r", str(tmp_path / out), "-q"],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    quick, full = _trace_shape(tmp_path / "quick"), _trace_shape(tmp_path / "full")
    print(f"write median size, sequential fraction: quick {quick}, full (quarter size) {full}")
    for median, sequential in quick + full:
        assert median == 4096
        assert sequential < 0.05


def test_quick_caps_an_aging_studys_emulated_device_like_its_image() -> None:
    """seed-003-usb ages a 2 GiB emulated usb-flash device: --quick makes it 256 MiB (the
    fill fraction, which decides the layout, is kept), as it does an image."""
    from fslab.plan import QUICK_AGED_IMAGE_BYTES, make_plan

    spec, source, _ = load_spec("seed-003-usb")
    full = make_plan(spec, backends=choose_backend, source=source)
    quick = make_plan(spec, backends=choose_backend, quick=True, source=source)
    full_sizes = {j.settings.device["kind"]: j.settings.device["size"] for j in full.jobs}
    quick_sizes = {j.settings.device["kind"]: j.settings.device["size"] for j in quick.jobs}
    assert full_sizes == {"emulated": 2 << 30}
    assert quick_sizes == {"emulated": QUICK_AGED_IMAGE_BYTES} and QUICK_AGED_IMAGE_BYTES < 2 << 30
    assert {c.aging["fill"] for c in quick.cells if c.aging} == {c.aging["fill"] for c in full.cells if c.aging}


def test_a_quick_cell_records_what_quick_changed_and_the_report_says_it() -> None:
    """The plan records, per cell, the parameters the workload's quick() changed (with
    their full values); the paper's --quick sentence lists them from there, knowing no
    workload's parameter names. A full-size cell records none and keeps its JSON."""
    from fslab.report.sections.paper_beside import quick_sizes

    spec, _, _ = load_spec("seed-004")
    [full] = [c for c in build_cells(spec, quick=False, backends=choose_backend)[0] if c.filesystem == "ext4"]
    [quick] = [c for c in build_cells(spec, quick=True, backends=choose_backend)[0] if c.filesystem == "ext4"]
    assert full.quick_scaled == {} and "quick_scaled" not in full.to_json()
    assert quick.quick_scaled["file_size"] == full.params["file_size"]
    assert quick.quick_scaled["io_size"] == full.params["io_size"]
    assert all(quick.params.get(k) != v for k, v in quick.quick_scaled.items())
    text = quick_sizes([quick.to_json()])  # type: ignore[list-item]
    mib = quick.params["file_size"] / (1 << 20)
    assert f"file_size={mib:.4g} MiB" in text and "io_size=" in text, text
    assert "file_size" not in quick_sizes([full.to_json()])  # type: ignore[list-item]
