"""`fslab cleanup` releases what dead fslab processes left, and leaves live studies alone."""

import os
import subprocess

from fslab.cleanup import cleanup
from fslab.devices.image import attach, fslab_loop_devices


def test_live_study_is_left_alone_and_dead_one_released(device_support, tmp_path):
    owner = subprocess.Popen(["sleep", "300"])
    image = tmp_path / f"fslab-{owner.pid}-abcd1234.img"
    image.write_bytes(b"")
    os.truncate(image, 64 << 20)
    loop = attach(image)
    try:
        lines = cleanup(under=tmp_path)
        assert any("still running" in line and loop in line for line in lines)
        assert (loop, str(image)) in fslab_loop_devices()
        owner.kill()
        owner.wait()
        lines = cleanup(under=tmp_path)
        assert f"detach {loop} ({image})" in lines
        assert loop not in {l for l, _ in fslab_loop_devices()}
        assert not image.exists()
    finally:
        owner.kill()
        if loop in {l for l, _ in fslab_loop_devices()}:
            subprocess.run(["losetup", "-d", loop])
