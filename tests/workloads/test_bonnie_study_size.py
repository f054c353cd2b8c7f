"""Bonnie++ ``size = "auto"`` is fixed once per study, from the memory limit or the smallest
device, so every file system is measured at the same size (a probe per run sized each by
its own speed: 2.4-5.8 GiB within one study)."""

import tomllib

import pytest

from fslab.backends import choose_backend
from fslab.errors import SpecError
from fslab.plan import make_plan
from fslab.study import parse_spec

GIB = 1 << 30


def study(device: str = 'size = "10GiB"', memory: str = "", own_device: str = "") -> str:
    return f"""
[study]
name = "t"
repetitions = 3
[device]
kind = "image"
{device}
[filesystems.ext4]
[filesystems.xfs]
[filesystems.btrfs]
{own_device}
[[workloads]]
kind = "bonnie"
name = "bonnie"
size = "auto"
{memory}
"""


def plan_of(text: str, **kw):
    return make_plan(parse_spec(tomllib.loads(text), "t.toml"), backends=choose_backend, source="t.toml", **kw)


def sizes(plan) -> set[tuple[int, object]]:
    return {(c.params["size"], c.params["ram"]) for c in plan.cells}


def test_one_size_for_every_file_system_half_the_device():
    plan = plan_of(study())
    assert sizes(plan) == {(5 * GIB, 5 * GIB // 2)}
    assert {c.params["size_rule"] for c in plan.cells} == {
        "half the smallest device (10 GiB), fixed for the study; -r and the memory limit half of it"}


def test_the_smallest_device_decides_for_all():
    own = '[filesystems.btrfs.device]\nkind = "image"\nsize = "3GiB"'
    plan = plan_of(study(own_device=own).replace("[filesystems.btrfs]\n", "", 1))
    assert sizes(plan) == {(1536 << 20, 768 << 20)}


def test_twice_the_memory_limit_when_one_is_set():
    plan = plan_of(study(memory='memory = "1GiB"'))
    assert {c.params["size"] for c in plan.cells} == {2 * GIB}
    assert {c.params["ram"] for c in plan.cells} == {"auto"}  # the run's -r is the limit itself
    assert {c.memory_bytes for c in plan.cells} == {GIB}


def test_a_limit_whose_file_does_not_fit_names_the_field_and_fix():
    with pytest.raises(SpecError) as err:
        plan_of(study(device='size = "4GiB"', memory='memory = "2GiB"'))
    text = str(err.value)
    assert "workloads[0].size" in text and "t.toml" in text
    assert "raise the device's size or lower the memory limit" in text


def test_quick_keeps_one_size_and_the_ratio():
    plan = plan_of(study(), quick=True)
    assert sizes(plan) == {(GIB, GIB // 2)}


def test_an_explicit_size_is_left_alone():
    plan = plan_of(study().replace('size = "auto"', 'size = "2GiB"'))
    assert sizes(plan) == {(2 * GIB, "auto")}
    assert all("size_rule" not in c.params for c in plan.cells)


def test_size_rule_is_not_an_input():
    with pytest.raises(SpecError, match="size_rule"):
        plan_of(study().replace('size = "auto"', 'size = "auto"\nsize_rule = "mine"'))
