import pytest

from fslab.units import counted, format_bytes, parse_duration_s, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4k", 4096), ("4K", 4096), ("4KiB", 4096), ("1M", 1 << 20), ("2GiB", 2 << 30),
    ("512MiB", 512 << 20), ("1G", 1 << 30), ("4KB", 4000), ("1MB", 10**6), (4096, 4096),
    ("1.5k", 1536), ("100", 100),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["4x", "", "k", "-1", "1.3", True])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


def test_parse_duration():
    assert parse_duration_s("30s") == 30
    assert parse_duration_s("2m") == 120
    assert parse_duration_s("500ms") == 0.5
    assert parse_duration_s(7) == 7
    with pytest.raises(ValueError):
        parse_duration_s("soon")


def test_format_bytes():
    assert format_bytes(4096) == "4 KiB"
    assert format_bytes(1536) == "1.5 KiB"


# fio 3.33, measured: `fio --name=t --size=S --bs=8 --rw=write` writes these many bytes.
FIO_READS = {  # value: (kb_base=1024, kb_base=1000)
    "8k": (8192, 8000), "8K": (8192, 8000), "8KB": (8192, 8000), "8kB": (8192, 8000),
    "8KiB": (8000, 8192), "8kib": (8000, 8192), "8ki": (8192, 8000), "1m": (1 << 20, 10**6),
    "1MB": (1 << 20, 10**6), "1MiB": (10**6, 1 << 20), "4096b": (4096, 4096), "4096B": (4096, 4096),
}


@pytest.mark.parametrize("value", sorted(FIO_READS))
def test_a_fio_size_means_what_fio_reads(value):
    compat, si = FIO_READS[value]
    assert parse_size(value, kb_base=1024) == compat
    assert parse_size(value, kb_base=1000) == si


def test_fslab_own_sizes_keep_their_convention():
    assert parse_size("4KiB") == 4096 and parse_size("4KB") == 4000 and parse_size("4k") == 4096


def test_a_study_bs_means_what_fio_means_and_direct_io_refuses_a_misaligned_one():
    from fslab.workloads import WORKLOADS, ParamError

    fio = WORKLOADS.get("fio")
    assert fio.validate({"rw": "randwrite", "bs": "4KB", "size": "64M"})["bs"] == 4096
    assert fio.validate({"rw": "randwrite", "bs": "4KiB", "size": "64M"})["bs"] == 4000
    assert fio.validate({"rw": "randwrite", "bs": "4KiB", "size": "64M", "kb_base": 1000})["bs"] == 4096
    with pytest.raises(ParamError) as err:
        fio.validate({"rw": "randwrite", "bs": "4KiB", "size": "64M", "direct": 1})
    assert err.value.key == "bs" and "4000 bytes as fio reads it" in str(err.value)
    assert "512-byte sector" in str(err.value) and "kb_base = 1000" in str(err.value)
    with pytest.raises(ParamError, match="1024 .*or 1000"):
        fio.validate({"rw": "read", "size": "64M", "kb_base": 512})


def test_a_misaligned_direct_study_is_refused_before_anything_is_made(tmp_path):
    from fslab.errors import SpecError
    from fslab.study import load_spec

    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "x"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\nname = "w"\n'
                     'rw = "randread"\nsize = "64M"\ndirect = 1\n[workloads.axes]\nbs = ["4k", "4KiB"]\n')
    with pytest.raises(SpecError) as err:
        load_spec(str(study))
    assert err.value.field == "workloads[0].axes.bs[1]"


def test_a_count_takes_its_noun_in_the_right_number() -> None:
    assert [counted(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert counted(1, "study", "studies") == "1 study" and counted(3, "study", "studies") == "3 studies"


def test_value_text_writes_what_a_study_file_writes():
    from fslab.units import given_text, value_text

    assert [value_text(v) for v in (True, False, 4096, "randread", ["a", True], 0.5)] == [
        "true", "false", "4096", "randread", "[a, true]", "0.5"]
    assert value_text({"metric": "iops", "rounds": 5, "on": False}) == "{metric = iops, rounds = 5, on = false}"
    from fslab.units import assignments_text

    assert assignments_text({"rw": "read", "direct": True}.items()) == "rw=read, direct=true"
    assert assignments_text([("a", [1, False])], " ") == "a=[1, false]"
    assert [given_text(v) for v in (True, "x", 3)] == ["true", "'x'", "3"]
