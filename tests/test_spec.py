"""Study files: valid ones load; invalid ones fail with the file, the field, what was
given and what is allowed."""

import tomllib

import pytest

from fslab.errors import SpecError
from fslab.study import load_spec, parse_spec, preset_names

BASE = """
[study]
name = "t"
[device]
size = "1GiB"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "w"
rw = "randread"
bs = "4k"
size = "64M"
"""


def spec_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(tomllib.loads(text), "study.toml")
    return info.value


def test_valid_study_loads():
    spec = parse_spec(tomllib.loads(BASE), "study.toml")
    from fslab.devices import DEVICES

    assert DEVICES.get(spec.device.kind).parse(spec.device).size == 1 << 30
    assert spec.workloads[0].params["bs"] == "4k"
    assert spec.study.repetitions == 3


def test_bad_size_names_field_value_and_forms():
    err = spec_error(BASE.replace('bs = "4k"', 'bs = "4x"'))
    text = str(err)
    assert "study.toml" in text and "workloads[0].bs" in text and "4x" in text
    assert "4k" in text  # says what is allowed


def test_unknown_study_field():
    err = spec_error(BASE.replace('name = "t"', 'name = "t"\nrepetitons = 3'))
    assert "study.repetitons" in str(err) and "not a known field" in str(err)


def test_bad_enum_lists_allowed_values():
    err = spec_error(BASE.replace('name = "t"', 'name = "t"\norder = "random"'))
    assert "study.order" in str(err) and "shuffled" in str(err) and "random" in str(err)


def test_unknown_filesystem():
    err = spec_error(BASE.replace("[filesystems.ext4]", "[filesystems.ext5]"))
    assert "filesystems.ext5" in str(err) and "ext4" in str(err)


def test_fio_rejects_unknown_option():
    err = spec_error(BASE.replace('size = "64M"', 'size = "64M"\niodeptth = 4'))
    assert "workloads[0].iodeptth" in str(err)


def test_bad_axis_value_points_at_axis_entry():
    text = BASE + '[workloads.axes]\nrw = ["read", "randwirte"]\n'
    err = spec_error(text)
    assert "workloads[0].axes.rw[1]" in str(err) and "randwirte" in str(err)


def test_zip_needs_equal_lengths():
    text = BASE + '[workloads.axes]\nrw = ["read", "write"]\nbs = ["4k"]\n'
    text = text.replace('name = "w"', 'name = "w"\nzip = [["rw", "bs"]]')
    assert "equally many" in str(spec_error(text))


def test_missing_size():
    err = spec_error(BASE.replace('size = "64M"\n', ""))
    assert "workloads[0].size" in str(err)


def test_device_fields_belong_to_the_device_kind():
    """Each device kind owns its fields: a typo, a field of another kind, a bad size and an
    unknown kind each name the field."""
    err = spec_error(BASE.replace('size = "1GiB"', 'sise = "1GiB"'))
    assert "device.sise" in str(err) and "not a known field" in str(err)
    err = spec_error(BASE.replace('size = "1GiB"', 'size = "1GiB"\npath = "/dev/sdb"'))
    assert "device.path" in str(err)
    err = spec_error(BASE.replace('size = "1GiB"', 'size = "12 parsecs"'))
    assert "device.size" in str(err) and "12 parsecs" in str(err)
    err = spec_error(BASE.replace('size = "1GiB"', 'kind = "tape"'))
    assert "device.kind" in str(err) and "image" in str(err) and "block" in str(err)


def test_block_device_needs_path():
    err = spec_error(BASE.replace('size = "1GiB"', 'kind = "block"'))
    assert "device" in str(err) and "path" in str(err)


def test_host_backend_rejects_guest_only_fs():
    text = BASE.replace('name = "t"', 'name = "t"\nbackend = "host"') + "[filesystems.jfs]\n"
    err = spec_error(text)
    assert "jfs" in str(err) and "study.backend" in str(err)


def test_invalid_toml_names_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[study\nname=")
    with pytest.raises(SpecError, match="broken.toml.*not valid TOML"):
        load_spec(str(path))


def test_unknown_preset_lists_presets():
    with pytest.raises(SpecError, match="quickstart"):
        load_spec("no-such-study")


@pytest.mark.parametrize("name", preset_names())
def test_presets_are_valid(name):
    spec, source, _ = load_spec(name)
    assert source == f"preset {name}" and spec.workloads


def test_presets_name_the_paper_they_reproduce():
    """Report sections that belong to a paper key on ``[study] paper``, never on the
    preset's name: seed-003-usb carries seed 003's labels and claims."""
    papers = {name: load_spec(name)[0].study.paper for name in preset_names()}
    assert papers == {"quickstart": None, "metadata": None, "seed-000": "seed-000", "seed-001": "seed-001",
                      "seed-002": "seed-002", "seed-003": "seed-003", "seed-003-usb": "seed-003",
                      "seed-004": "seed-004"}
    assert parse_spec(tomllib.loads(BASE), "study.toml").study.paper is None
    mine = parse_spec(tomllib.loads(BASE.replace("[study]", '[study]\npaper = "seed-003"')), "study.toml")
    assert mine.study.paper == "seed-003"  # a study file of one's own may reproduce a paper too
    assert "study.paper" in str(spec_error(BASE.replace("[study]", '[study]\npaper = "seed 003; drop"')))


@pytest.mark.parametrize("option,value", [
    ("mkfs", '["/dev/sdz"]'),
    ("mkfs", '["-l", "logdev=/dev/sdz"]'),
    ("mount", '["noatime", "logdev=/dev/sdz"]'),
    ("mount", '["device=/dev/loop7"]'),
])
def test_filesystem_arguments_naming_other_devices_are_refused(option, value):
    text = BASE.replace("[filesystems.ext4]", f"[filesystems.ext4]\n{option} = {value}")
    err = spec_error(text)
    assert f"filesystems.ext4.{option}[" in str(err) and "/dev/" in str(err)


@pytest.mark.parametrize("option,value", [
    ("mkfs", '["/etc/passwd"]'),  # mkfs.btrfs formats every file it is given
    ("mkfs", '["-d", "/root"]'),
    ("mount", '["journal_path=/srv/journal"]'),
    ("mount", '["noatime", "logdev=../../img"]'),
])
def test_filesystem_arguments_naming_any_path_are_refused(option, value):
    text = BASE.replace("[filesystems.ext4]", f"[filesystems.ext4]\n{option} = {value}")
    err = spec_error(text)
    assert f"filesystems.ext4.{option}[" in str(err) and "names the path" in str(err)


@pytest.mark.parametrize("line", ['filename = "/dev/sdz"', 'directory = "/tmp"',
                                  'filename = "../../etc/x"'])
def test_fio_may_not_leave_the_filesystem_under_test(line):
    err = spec_error(BASE.replace('size = "64M"', f'size = "64M"\n{line}'))
    assert "workloads[0]." + line.split()[0] in str(err)


def test_the_schema_imports_no_plug_in():
    """The study schema sits below every plug-in: importing it loads no workload, device
    kind, file system or backend (a plug-in may import the schema, never the reverse)."""
    import subprocess
    import sys

    code = ("import sys, fslab.spec; "
            "print(sorted(m for m in sys.modules if m.startswith('fslab')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for plugin in ("fslab.workloads", "fslab.devices", "fslab.filesystems", "fslab.backends"):
        assert plugin not in loaded, loaded


def test_reports_need_no_workload_plug_in():
    """Reports read what the store kept (units, directions, primary metrics)."""
    import subprocess
    import sys

    code = ("import sys, fslab.report.tables, fslab.report.charts, fslab.analysis.contrasts, fslab.store; "
            "print(sorted(m for m in sys.modules if m.startswith('fslab')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "fslab.workloads" not in loaded, loaded


def test_an_invalid_field_says_what_the_field_means() -> None:
    """pydantic's rule alone ("Input should be less than 1") does not say that precision
    is a fraction: the field's own description follows it, also inside tables."""
    import tomllib

    from fslab.errors import SpecError
    from fslab.study import parse_spec

    text = ('[study]\nname = "x"\nrepetitions = "auto"\nprecision = 5\n[filesystems.ext4]\nmkfs = "-F"\n'
            '[[workloads]]\nkind = "fio"\nname = "w"\nrw = "read"\nsize = "16M"\n')
    with pytest.raises(SpecError) as err:
        parse_spec(tomllib.loads(text), "t.toml")
    lines = str(err.value).splitlines()
    assert any(line.strip().startswith("study.precision: Input should be less than 1 (given: 5)")
               and "as a fraction of its mean (0.05: ±5%)" in line for line in lines), lines
    assert any(line.strip().startswith("filesystems.ext4.mkfs:") and "[the field: extra mkfs arguments]" in line
               for line in lines), lines
