"""Named emulated-device profiles: the usb-flash profile fills a dm-delay device with
separate read and write delays; fields beside it override; a write delay on a model that
cannot have one is refused with the field named. (Felt in a guest: tests/guest.)"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fslab.devices.sections import EmulatedSection


def test_usb_flash_profile_fills_the_device() -> None:
    s = EmulatedSection.model_validate({"profile": "usb-flash", "size": "2GiB"})
    assert (s.model, s.delay_ms, s.write_delay_ms, s.rotational) == ("dm-delay", 1.0, 13.0, False)
    assert s.size == 2 << 30
    s = EmulatedSection.model_validate({"profile": "usb-flash", "write_delay_ms": 20})
    assert s.write_delay_ms == 20 and s.delay_ms == 1.0


def test_bad_profile_or_write_delay_is_refused() -> None:
    with pytest.raises(ValidationError, match="profile"):
        EmulatedSection.model_validate({"profile": "floppy"})
    with pytest.raises(ValidationError, match="write_delay_ms needs model"):
        EmulatedSection.model_validate({"model": "null_blk", "size": "1GiB", "write_delay_ms": 3})
