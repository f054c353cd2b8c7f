import pytest

from fslab.units import format_bytes, parse_duration_s, parse_size


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
