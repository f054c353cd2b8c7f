"""Every field of the study schema has a range and an error naming it: a seed the store
cannot keep, labels that are paths or empty, names of several lines, memory and time limits
that cannot be; refused when the study is read, so a run leaves nothing behind."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fslab.errors import SpecError
from fslab.runner import run_study
from fslab.study import parse_spec

BASE = """
[study]
name = "ranges"
{study}
[filesystems.{label}]
type = "null"
[[workloads]]
kind = "null"
name = "{workload}"
{workload_extra}
"""


def spec_error(study: str = "", label: str = "plain", workload: str = "w", workload_extra: str = "") -> SpecError:
    text = BASE.format(study=study, label=label, workload=workload, workload_extra=workload_extra)
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "study.toml")
    return err.value


@pytest.mark.parametrize("study,field", [
    ("seed = 18446744073709551615", "study.seed"), ("seed = -1", "study.seed"),
    ('guest_memory = "1MiB"', "study.guest_memory"), ('guest_memory = "64TiB"', "study.guest_memory"),
    ('name = "two\\nlines"', "study.name"), ('name = "   "', "study.name"),
])
def test_study_fields_out_of_range(study: str, field: str) -> None:
    err = _renamed(study) if study.startswith("name") else spec_error(study=study)
    assert f"{field}:" in str(err) and "study.toml" in str(err)


@pytest.mark.parametrize("field,value", [
    ("trace", '"yes"'), ("drop_caches", "0"), ("reuse_layout", '"true"'), ("trace", '"false"'),
])
def test_switches_are_toml_booleans_only(field: str, value: str) -> None:
    # pydantic alone would read "yes" and 0 as booleans, and "false" in quotes as false.
    err = str(spec_error(study=f"{field} = {value}"))
    assert f"study.{field}: must be true or false" in err and "study.toml" in err


@pytest.mark.parametrize("device,field", [
    ('kind = "block"\npath = "/dev/sdz"\nforce = "yes"', "device.force"),
    ('kind = "emulated"\nmodel = "dm-delay"\nrotational = 0', "device.rotational"),
])
def test_device_switches_are_toml_booleans_only(device: str, field: str) -> None:
    text = BASE.format(study="", label="plain", workload="w", workload_extra="").replace(
        "[filesystems.plain]", f"[device]\n{device}\n[filesystems.plain]")
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "study.toml")
    assert f"{field}: must be true or false" in str(err.value)


def test_switches_take_true_and_false() -> None:
    text = BASE.format(study="trace = true\ndrop_caches = false", label="plain", workload="w", workload_extra="")
    spec = parse_spec(tomllib.loads(text), "study.toml")
    assert spec.study.trace is True and spec.study.drop_caches is False


@pytest.mark.parametrize("study,field", [
    ("seed = true", "study.seed"), ('repetitions = "auto"\nprecision = true', "study.precision"),
    ('repetitions = "auto"\nmax_repetitions = true', "study.max_repetitions"),
    ('aging = { fill = 0.5, pattern = "random-holes", seed = true }', "study.aging.seed"),
])
def test_numbers_are_not_booleans(study: str, field: str) -> None:
    # pydantic's lax mode would read true as 1 and false as 0.
    err = str(spec_error(study=study))
    assert f"{field}: must be a number, not " in err and "study.toml" in err


@pytest.mark.parametrize("device,field", [
    ('kind = "raid"\nlevel = false\ndisks = 2', "device.level"),
    ('kind = "raid"\nlevel = 5\ndisks = true', "device.disks"),
    ('kind = "emulated"\nmodel = "dm-delay"\ndelay_ms = true', "device.delay_ms"),
])
def test_device_numbers_are_not_booleans(device: str, field: str) -> None:
    text = BASE.format(study="", label="plain", workload="w", workload_extra="").replace(
        "[filesystems.plain]", f"[device]\n{device}\n[filesystems.plain]")
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "study.toml")
    assert f"{field}: must be a number, not " in str(err.value)


@pytest.mark.parametrize("extra,message", [
    ("memory = true", "workloads[0].memory: a size must be a number of bytes"),
    ("timeout = false", "workloads[0].timeout: a duration is a number of seconds or a string like '30s' or "
     "'2m', not true or false"),
])
def test_workload_limits_are_not_booleans(extra: str, message: str) -> None:
    assert message in str(spec_error(workload_extra=extra))


def test_numbers_still_take_numbers() -> None:
    # An int where a float is declared stays accepted; so do the switches' true and false.
    text = BASE.format(study="seed = 0\nrepetitions = 2\ntrace = false", label="plain", workload="w",
                       workload_extra="timeout = 30")
    spec = parse_spec(tomllib.loads(text), "study.toml")
    assert spec.study.seed == 0 and spec.study.repetitions == 2 and spec.workloads[0].timeout == 30.0


def _renamed(line: str) -> SpecError:
    """The study file with its name replaced by ``line``."""
    text = BASE.replace('name = "ranges"', line).format(study="", label="plain", workload="w", workload_extra="")
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "study.toml")
    return err.value


@pytest.mark.parametrize("label", ['".."', '""', '"a/b"', '"-x"', '"ext4 noatime"'])
def test_labels_that_are_paths_or_empty_are_refused(label: str) -> None:
    err = spec_error(label=label)
    assert "is not a plain name" in str(err) and "filesystems" in str(err)


@pytest.mark.parametrize("workload,extra,field", [
    ("..", "", "workloads[0].name"), ("a/b", "", "workloads[0].name"), ("x\\ty", "", "workloads[0].name"),
    ("w", 'memory = "1k"', "workloads[0].memory"), ("w", "timeout = 0", "workloads[0].timeout"),
    ("w", 'timeout = "30d"', "workloads[0].timeout"),
])
def test_workload_fields_out_of_range(workload: str, extra: str, field: str) -> None:
    assert f"{field}:" in str(spec_error(workload=workload, workload_extra=extra))


def test_a_seed_the_store_cannot_keep_leaves_nothing(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(BASE.format(study="seed = 18446744073709551615\ndrop_caches = false", label="plain",
                                 workload="w", workload_extra="").replace(
        "[filesystems.plain]", f'[device]\nkind = "fake"\ndirectory = "{tmp_path / "fake"}"\n[filesystems.plain]'))
    with pytest.raises(SpecError, match="study.seed"):
        run_study(str(study), results_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()
    study.write_text(study.read_text().replace("18446744073709551615", str((1 << 63) - 1)))
    done = run_study(str(study), results_dir=tmp_path / "r")  # the largest seed it keeps
    assert done.runs_done == 3 and done.runs_failed == 0


def test_a_workload_parameter_quotes_a_boolean_as_toml_spells_it() -> None:
    text = ('[study]\nname = "b"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\nname = "w"\n'
            'rw = "read"\nsize = "16M"\niodepth = true\n')
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "study.toml")
    assert "workloads[0].iodepth: must be a whole number >= 0 (given: true)" in str(err.value)


def test_a_bad_aging_table_is_one_error_not_also_the_none_branch() -> None:
    err = str(spec_error(workload_extra='aging = { fill = 2, pattern = "random-holes", seed = 1 }'))
    assert "workloads[0].aging.fill: Input should be less than 1" in err and "literal" not in err


@pytest.mark.parametrize("study,workload_extra,says", [
    ("", 'aging = "nonee"', 'workloads[0].aging: write "none" or a table, e.g. aging = { fill = 0.5'),
    ("", "aging = 3", 'workloads[0].aging: write "none" or a table'),
    ('aging = "none"', "", "study.aging: write a table, e.g. aging = { fill = 0.5, pattern = \"random-holes\" } "
                          "(leave it out for no aging)"),
])
def test_an_aging_that_is_no_table_is_one_error_naming_both_forms(study: str, workload_extra: str,
                                                                  says: str) -> None:
    lines = str(spec_error(study=study, workload_extra=workload_extra)).splitlines()
    assert len(lines) == 2 and says in lines[1], lines  # the heading and one line
    assert "AgingOption" not in lines[1] and "literal" not in lines[1]


def test_an_aging_tables_own_check_is_one_error_not_also_the_none_branch() -> None:
    lines = str(spec_error(workload_extra='aging = { fill = 0.5, pattern = "random-holes", rounds = 3 }')).splitlines()
    assert len(lines) == 2 and "workloads[0].aging: rounds applies to pattern = 'churn' only" in lines[1], lines
