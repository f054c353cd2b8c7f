"""The lpj= a TCG boot gets: the TSC rate an earlier guest on this host reported, over the
kernel's CONFIG_HZ; nothing where either is missing or the host has rebooted since."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.backends.guest import launcher
from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.kernel import config_hz

RELEASE = "6.1.0-99-amd64"


def _build(folder: Path, config: str | None) -> GuestBuild:
    boot = folder / "boot"
    boot.mkdir(parents=True)
    (boot / f"vmlinuz-{RELEASE}").write_bytes(b"kernel")
    if config is not None:
        (boot / f"config-{RELEASE}").write_text(config)
    return GuestBuild("k", "6.1", "p", "v", RELEASE, boot / f"vmlinuz-{RELEASE}", folder / "m",
                      folder / "i", 0, (), 0.0)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FSLAB_GUEST_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache"


def test_config_hz_reads_the_kernels_config(tmp_path: Path) -> None:
    b = _build(tmp_path, "CONFIG_HZ_250=y\nCONFIG_HZ=250\n# CONFIG_HZ_1000 is not set\n")
    assert config_hz(b.vmlinuz, RELEASE) == 250
    assert config_hz(tmp_path / "elsewhere" / "vmlinuz", RELEASE) is None


def test_a_reported_tsc_rate_becomes_lpj_of_later_boots(tmp_path: Path, cache: Path) -> None:
    b = _build(tmp_path / "k", "CONFIG_HZ=250\n")
    assert launcher.tcg_lpj(b) == ""  # no guest has booted here yet
    reported = tmp_path / "tsc_mhz"
    reported.write_text("2097.987\n")  # what the agent writes: the guest's cpu MHz
    launcher._remember_tsc(reported)
    assert launcher.tcg_lpj(b) == " lpj=8391948"  # the kernel's own lpj for 2097.987 MHz at HZ=250
    assert launcher.tcg_lpj(_build(tmp_path / "k1000", "CONFIG_HZ=1000\n")) == " lpj=2097987"
    assert launcher.tcg_lpj(_build(tmp_path / "noconfig", None)) == ""


def test_a_rate_from_before_the_hosts_boot_or_nonsense_is_not_used(tmp_path: Path, cache: Path) -> None:
    b = _build(tmp_path / "k", "CONFIG_HZ=250\n")
    (cache / launcher.TSC_FILE).write_text("00000000-another-boot 2097.987\n")
    assert launcher.tcg_lpj(b) == ""
    for text in ("", "garbage", "3.0", "1e9"):
        reported = tmp_path / "tsc_mhz"
        reported.write_text(text)
        launcher._remember_tsc(reported)
        assert launcher.tcg_lpj(b) == ""
