"""A study with aging, end to end on real ext4: the aged image is made once and every
repetition starts from a copy of it, the verified aged state is stored per run, and
free-space fragmentation is recorded before and after the workload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fslab.backends import choose_backend
from fslab.errors import SpecError
from fslab.plan import make_plan
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import load_spec, parse_spec

STUDY = """
[study]
name = "aging test"
repetitions = 2
order = "in-order"
fresh = "{fresh}"

[device]
size = "256MiB"
image_dir = "{images}"

[filesystems.ext4]

[[workloads]]
kind = "alloc"
name = "alloc-empty"
count = 50

[[workloads]]
kind = "alloc"
name = "alloc-aged"
count = 50
aging = {{ fill = 0.5, seed = 4, file_sizes = "lognormal:32KiB:1.2" }}
"""


def _leftovers(tmp_path: Path) -> list[str]:
    found = [l for l in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in l]
    losetup = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    found += [l for l in losetup.splitlines() if str(tmp_path) in l]
    # the cached aged image is kept beside the results on purpose (resumes reuse it)
    found += [str(p) for p in tmp_path.rglob("*.img") if p.parent.name != "aged-images"]
    return found


@pytest.mark.parametrize("fresh", ["run", "repetition"])
def test_aged_study_reuses_one_aged_image(device_support: None, tmp_path: Path, fresh: str) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(fresh=fresh, images=tmp_path / "images"))
    results = tmp_path / "results"
    outcome = run_study(str(study), results_dir=results)
    assert outcome.runs_done == 4 and outcome.runs_failed == 0
    assert _leftovers(tmp_path) == []
    assert len(list((results / ".work" / "aged-images").glob("aged-*.img"))) == 1
    with Store(results) as store:
        runs = store.runs(store.study().id)
    aged = sorted((r for r in runs if r["cell"]["workload"] == "alloc-aged"), key=lambda r: r["repetition"])
    empty = [r for r in runs if r["cell"]["workload"] == "alloc-empty"]
    assert [r["provenance"]["aged_image_cache_hit"] for r in aged] == [False, True]
    digests = {r["provenance"]["aging"]["file_set_sha256"] for r in aged}
    assert len(digests) == 1
    for run in aged:
        m = {k: v["value"] for k, v in run["metrics"].items()}
        # fill_by = "data" (the default): half the device's bytes as file data; what statfs
        # counts as used (metadata too) is stored beside it
        assert abs(m["aging_data_fraction"] - 0.5) <= 0.02 and m["aging_data_bytes"] == m["aging_data_fraction"] * (
            256 << 20)
        assert m["aging_utilisation_fraction"] > m["aging_data_fraction"]
        assert run["metrics"]["aging_utilisation_fraction"]["unit"] == "fraction"
        assert run["provenance"]["aging"]["fill_by"] == "data"
        assert m["aging_files_count"] > 100
        # the aged file system's free space is cut up; the empty one's is not
        assert m["free_space_before_free_extents_count"] > 20
        assert run["provenance"]["free_space_before"]["method"] == "e2freefrag"
        assert m["seq_write_samples_count"] == 50
    for run in empty:
        m = {k: v["value"] for k, v in run["metrics"].items()}
        assert "aging_utilisation_fraction" not in m and "aging" not in run["provenance"]
        assert m["free_space_before_free_extents_count"] < 20
        assert m["rand_write_lat_mean_ns"] > 0
    # The report's "What was run" says what the fill measured and both figures reached.
    markdown = tmp_path / "report.md"
    done = subprocess.run([sys.executable, "-m", "fslab", "report", "-r", str(results), "--markdown", str(markdown)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = markdown.read_text()
    assert 'to 50% of the device\'s bytes as file data (fill_by = "data"' in text
    assert "alloc-aged: the aged state its runs started from" in text
    state = next(line for line in text.splitlines() if line.startswith("| ext4 | 2 |"))
    assert "128 MiB" in state and "50.0%" in state, state  # file data, its share, then statfs's count


def test_aging_option_errors_name_the_field(tmp_path: Path) -> None:
    data = {
        "study": {"name": "x", "aging": {"fill": 0.5, "pattern": "churn", "rounds": 0}},
        "filesystems": {"ext4": {}},
        "workloads": [{"kind": "alloc", "name": "a"}],
    }
    with pytest.raises(SpecError, match=r"study\.aging\.rounds"):
        parse_spec(data, "s.toml")
    data["study"]["aging"] = {"fill": 0.5}
    data["workloads"].append({"kind": "alloc", "name": "b", "aging": "none"})
    data["workloads"].append({"kind": "alloc", "name": "c", "aging": {"fill": 0.3, "seed": 9}})
    plan = make_plan(parse_spec(data, "s.toml"), backends=choose_backend, seed=1)
    by_name = {c.workload: c.aging for c in plan.cells}
    assert by_name["a"]["fill"] == 0.5 and by_name["b"] is None and by_name["c"]["seed"] == 9
    data["workloads"][1]["aging"] = "some"
    with pytest.raises(SpecError, match=r"workloads\[1\]\.aging"):
        parse_spec(data, "s.toml")


def test_seed_003_preset_plans_and_says_what_it_skips() -> None:
    spec, _, _ = load_spec("seed-003")
    plan = make_plan(spec, backends=choose_backend, seed=1)
    skipped = {s.filesystem: s.reason for s in plan.skipped}
    in_guest = {c.filesystem for c in plan.cells if c.backend == "guest"}
    # All five in a guest (where FAT32 runs: one backend, so they are compared) where one can
    # be started, else every one skipped, saying why
    everyone = {"fat32", "ntfs", "ext2", "ext3", "ext4"}
    assert (in_guest == everyone and not skipped) or (
        set(skipped) == everyone and all("guest" in r for r in skipped.values()))
    assert not [c for c in plan.cells if c.backend == "host"]
    assert {c.workload: c.aging is not None for c in plan.cells} == {"alloc-empty": False, "alloc-aged-50": True}


def test_block_device_is_aged_in_place_and_unreachable_target_fails_the_run(loop_device, tmp_path: Path) -> None:
    with loop_device("256MiB") as dev:
        study = tmp_path / "study.toml"
        text = STUDY.format(fresh="run", images=tmp_path / "images")
        text = text.replace(f'size = "256MiB"\nimage_dir = "{tmp_path / "images"}"',
                            f'kind = "block"\npath = "{dev.path}"\nforce = true')
        text = text.replace("repetitions = 2", "repetitions = 1")
        text += ('\n[[workloads]]\nkind = "alloc"\nname = "alloc-too-full"\ncount = 10\n'
                 'aging = { fill = 0.99, file_sizes = "fixed:1MiB" }\n')
        study.write_text(text)
        results = tmp_path / "results"
        outcome = run_study(str(study), results_dir=results, allowed_devices=frozenset({dev.path}))
        assert outcome.runs_done == 3 and outcome.runs_failed == 1
        assert not (results / ".work" / "aged-images").exists()  # nothing to reuse on a block device
        with Store(results) as store:
            runs = {r["cell"]["workload"]: r for r in store.runs(store.study().id)}
        aged = runs["alloc-aged"]
        assert aged["provenance"]["device"]["kind"] == "block"
        assert abs(aged["metrics"]["aging_data_fraction"]["value"] - 0.5) <= 0.02  # of the disk's bytes
        failed = runs["alloc-too-full"]
        assert failed["status"] == "failed" and "offers files only" in failed["error"]
    assert _leftovers(tmp_path) == []


def test_seed_003_usb_preset_runs_all_five_in_the_guest_on_the_flash_profile() -> None:
    spec, _, _ = load_spec("seed-003-usb")
    plan = make_plan(spec, backends=choose_backend, seed=1)
    assert {c.backend for c in plan.cells} == {"guest"} or {s.filesystem for s in plan.skipped} == {
        "fat32", "ntfs", "ext2", "ext3", "ext4"}
    device = plan.jobs[0].settings.device
    assert device["kind"] == "emulated" and device["profile"] == "usb-flash"
    assert device["model"] == "dm-delay" and device["write_delay_ms"] == 13.0


def test_quick_caps_an_aged_studys_image_and_keeps_the_fill() -> None:
    spec, _, _ = load_spec("seed-003")
    full = make_plan(spec, backends=choose_backend, seed=1)
    quick = make_plan(spec, backends=choose_backend, seed=1, quick=True)
    assert full.jobs[0].settings.device["size"] == 2 << 30
    assert quick.jobs[0].settings.device["size"] == 256 << 20
    assert {c.aging["fill"] for c in quick.cells if c.aging} == {0.5}
    # a study without aging keeps its image size in quick mode
    spec, _, _ = load_spec("quickstart")
    quick_size = make_plan(spec, backends=choose_backend, seed=1, quick=True).jobs[0].settings.device["size"]
    assert quick_size == make_plan(spec, backends=choose_backend, seed=1).jobs[0].settings.device["size"] > 256 << 20
