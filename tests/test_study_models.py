"""A study's own device models (``[models.NAME]``: a shipped model with some parameters
changed, e.g. the RAID controller's write-back cache seed 004's array had, or an HDD with
its write cache off), checked when the study loads and used like a shipped model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fslab.errors import SpecError
from fslab.study import parse_spec
from test_predictions import SYNTHETIC_STUDY


def _spec(models: dict[str, Any], simulate: list[str]) -> dict[str, Any]:
    return {"study": {"name": "s", "trace": True, "simulate": simulate}, "models": models,
            "filesystems": {"ext4": {}},
            "workloads": [{"kind": "fio", "name": "w", "rw": "randwrite", "bs": "4k", "size": "16M"}]}


@pytest.mark.parametrize(("models", "simulate", "message"), [
    ({"m": {"base": "ssd-9000"}}, ["m"], r"models\.m: unknown base model 'ssd-9000'; known: .*hdd-7200"),
    ({"m": {"base": "hdd-7200", "spin_rpm": 9}}, ["m"], r"models\.m: .*unknown model parameter `spin_rpm`"),
    ({"m": {"base": "raid5-8x-sata-mlc-ssd", "cache_bytes": "lots"}}, ["m"], r"models\.m: .*cache_bytes"),
    ({"hdd-7200": {"base": "sata-mlc-ssd"}}, [], r"models\.hdd-7200: .*shipped model's name"),
    ({}, ["mine"], r"study\.simulate\[0\]: unknown device model 'mine'.*\[models\.NAME\]"),
    ({"m": {}}, ["m"], r"base"),
    ({"my_raid": {"base": "hdd-7200"}}, ["my_raid"], r"models\.my_raid: .*no '_'"),
    # a boolean is a switch's 1 or 0, never a time or a size (it read as 1 ms, 1 byte)
    ({"m": {"base": "hdd-7200", "seek_average_ms": True}}, ["m"], r"seek_average_ms: is a time: .*not true"),
    ({"m": {"base": "hdd-7200", "cache_bytes": False}}, ["m"], r"cache_bytes: is a size: .*not false"),
    ({"m": {"base": "hdd-7200", "ncq_depth": True}}, ["m"], r"ncq_depth: takes a number, not true: true and false "
     r"are only for the switches \(write_cache\); `fslab models NAME` lists a model's parameters"),
    ({"m": {"base": "raid5-8x-sata-mlc-ssd", "members": True}}, ["m"], r"members: takes a number, not true"),
    ({"m": {"base": "sata-mlc-ssd", "precondition": False}}, ["m"],
     r'precondition: takes a name in quotes, not false: "none", "sequential" or "random"'),
])
def test_bad_study_models_name_the_field(models: dict[str, Any], simulate: list[str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(_spec(models, simulate), "t.toml")


def test_a_switch_takes_true_and_false() -> None:
    from fslab.simulate import _normalise

    spec = parse_spec(_spec({"m": {"base": "hdd-7200", "write_cache": False}}, ["m"]), "t.toml")
    assert _normalise("write_cache", spec.models["m"].overrides["write_cache"]) == ("write_cache", 0)


def test_the_switches_are_the_cores_zero_or_one_parameters() -> None:
    """Python's list of switches is the core's: every parameter the models read as a whole
    number in [0, 1], found in their source."""
    import re

    from fslab.simulate import SWITCHES, TEXTS

    models = Path(__file__).resolve().parents[1] / "crates" / "fslab-core" / "src" / "models"
    found = {m.group(1) for path in models.glob("*.rs")
             for m in re.finditer(r'\.int\(\s*"(\w+)",\s*\w+,\s*0,\s*1\s*\)', path.read_text())}
    assert found and found == SWITCHES
    named = {m.group(1) for path in models.glob("*.rs")
             for m in re.finditer(r'\.text\(\s*"(\w+)"', path.read_text())}
    assert named and named | {"kind", "member"} == set(TEXTS)  # kind and member: read before the model's reader


def test_set_on_the_command_line_takes_a_switch_as_the_study_file_writes_it() -> None:
    from fslab.simulate import model_params, parse_set

    assert parse_set(["write_cache=false", "ncq_depth=16"]) == {"write_cache": False, "ncq_depth": 16}
    assert model_params("hdd-7200", parse_set(["write_cache=false"]))["write_cache"] == 0
    with pytest.raises(SpecError, match=r"ncq_depth: takes a number, not true"):
        model_params("hdd-7200", parse_set(["ncq_depth=true"]))


def test_a_study_model_reaches_every_job() -> None:
    from fslab.backends import choose_backend
    from fslab.plan import make_plan

    spec = parse_spec(_spec({"raid5-wb": {"base": "raid5-8x-sata-mlc-ssd", "cache_bytes": "1GiB"}},
                            ["raid5-wb"]), "t.toml")
    plan = make_plan(spec, backends=choose_backend)
    assert {job.settings.simulate for job in plan.jobs} == {("raid5-wb",)}
    assert [job.settings.models for job in plan.jobs][0] == {
        "raid5-wb": {"base": "raid5-8x-sata-mlc-ssd", "cache_bytes": "1GiB"}}


# The synthetic-stream study of test_predictions (4 KiB random direct writes at queue
# depth 1), replayed on two shipped models and the study's own variants of them.
MODELS = """simulate = ["raid5-4x-sata-mlc-ssd", "raid5-wb", "hdd-7200", "hdd-nocache"]

[models.raid5-wb]
base = "raid5-4x-sata-mlc-ssd"
description = "the same array behind a controller with a write-back cache"
cache_bytes = "64MiB"

[models.hdd-nocache]
base = "hdd-7200"
write_cache = 0
"""
STUDY = SYNTHETIC_STUDY.replace('simulate = ["sata-mlc-ssd"]\n', MODELS)


@pytest.mark.device
def test_study_models_predict_what_their_settings_mean(device_support, tmp_path: Path) -> None:
    """4 KiB random direct writes: RAID5 read-modify-write costs less behind a write-back
    cache; an HDD whose write cache is off pays a seek and a rotation per write. Every
    prediction says which cache it assumed."""
    from fslab.runner import run_study
    from fslab.store import Store

    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(images=tmp_path / "images"))
    outcome = run_study(str(study), results_dir=tmp_path / "results")
    assert outcome.runs_failed == 0
    with Store(tmp_path / "results") as store:
        [run] = store.runs(outcome.study_id)
    m = run["metrics"]
    plain, cached = m["pred_raid5-4x-sata-mlc-ssd_write_iops"], m["pred_raid5-wb_write_iops"]
    assert cached["value"] > 1.5 * plain["value"], (cached["value"], plain["value"])
    assert "no RAID controller cache" in plain["note"]
    assert "a RAID controller write-back cache of 64 MiB" in cached["note"]
    assert "(raid5-wb = raid5-4x-sata-mlc-ssd, cache_bytes = 64MiB)" in cached["note"]
    hdd, nocache = m["pred_hdd-7200_write_iops"], m["pred_hdd-nocache_write_iops"]
    assert nocache["value"] < 0.5 * hdd["value"], (nocache["value"], hdd["value"])
    assert "write cache off" in nocache["note"] and "write cache on" in hdd["note"]

