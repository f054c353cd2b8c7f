"""The guest's device kinds, run by fslab's own modules inside a booted guest: md RAID5 and
RAID0 over 8 virtio disks (facts for the md device and every member; stopped and erased
afterwards), and scsi_debug, dm-delay and null_blk (delay felt, rotational as asked,
released afterwards). A file system is made and written on each."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import GiB, Guest, GuestConfig

from .conftest import MiB, sparse_image

pytestmark = pytest.mark.guest

SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from pathlib import Path
    from fslab.devices.guest_disks import take
    from fslab.devices.raid import RaidSection, provision as raid
    from fslab.devices.emulated import EmulatedSection, provision as emulated

    def use(path):
        # mkfs, mount, write 4 MiB with O_DIRECT and time 16 direct 4 KiB reads
        subprocess.run(["mkfs.ext4", "-F", "-q", path], check=True)
        os.makedirs("/mnt/d", exist_ok=True)
        subprocess.run(["mount", path, "/mnt/d"], check=True)
        subprocess.run(["dd", "if=/dev/zero", "of=/mnt/d/f", "bs=1M", "count=4", "oflag=direct"],
                       check=True, capture_output=True)
        subprocess.run(["umount", "/mnt/d"], check=True)
        started = time.monotonic()
        subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4k", "count=16", "iflag=direct"],
                       check=True, capture_output=True)
        return time.monotonic() - started

    def traced_write(md, members):
        # md is bio-based: it issues no requests of its own, so it is traced at
        # block_bio_queue while its members are traced at request issue/complete.
        from fslab.devices import handle_for
        from fslab.trace.capture import TraceCapture
        from fslab.trace.formats import EV_ISSUE, EV_QUEUE, OP_WRITE
        handles = [handle_for(m) for m in members]
        after = {}
        events = ("block_rq_issue", "block_rq_complete", "block_bio_queue")
        with TraceCapture([md.dev_t, *(h.dev_t for h in handles)], method="raw", events=events,
                          on_stop=lambda: after.update({h.path: h.read_stat() for h in handles})) as cap:
            before = {h.path: h.read_stat() for h in handles}
            subprocess.run(["dd", "if=/dev/zero", f"of={md.path}", "bs=1M", "count=8", "oflag=direct"],
                           check=True, capture_output=True)
        c = cap.trace.columns
        writes = (c["op"] == OP_WRITE)
        return {
            "method": cap.trace.meta["capture_method"], "complete": cap.trace.meta["complete"],
            "md_bio_writes": int(((c["dev"] == md.dev_t) & (c["event"] == EV_QUEUE) & writes).sum()),
            "member_issue_writes": int(sum(((c["dev"] == h.dev_t) & (c["event"] == EV_ISSUE) & writes).sum()
                                           for h in handles)),
            "member_stat_writes": sum(after[h.path]["write_ios"] - before[h.path]["write_ios"]
                                      for h in handles),
        }

    out = {}
    for level in (5, 0):
        section = RaidSection(level=level, disks=8, chunk="512KiB", member_size="64MiB")
        with raid(section, Path("/tmp"), f"r{level}", members=take(8)) as h:
            out[f"raid{level}"] = {"facts": h.facts, "read_s": use(h.path),
                                   "trace": traced_write(h, take(8))}
        out[f"raid{level}"]["md_after"] = sorted(p.name for p in Path("/sys/block").glob("md*"))
    lower = take(1, first=8)[0]
    for model, size in (("scsi_debug", "64MiB"), ("dm-delay", "64MiB"), ("null_blk", "1GiB")):
        section = EmulatedSection(model=model, size=size, delay_ms=5, rotational=True)
        with emulated(section, Path("/tmp"), "t", lower=lower) as h:
            out[model] = {"facts": h.facts, "path": h.path, "read_s": use(h.path)}
        out[model]["exists_after"] = os.path.exists(h.path)
    print(json.dumps(out, default=str))
""")


@pytest.fixture(scope="module")
def results(guest_build: GuestBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("guest-devices")
    disks = tuple(sparse_image(folder / f"m{i}.img", 64 * MiB) for i in range(9))
    import sys

    with Guest(GuestConfig(memory_bytes=1 * GiB, disks=disks), guest_build) as guest:
        out = guest.check_output([sys.executable, "-c", SCRIPT], timeout_s=900)
    yield json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize(("level", "data_disks"), [(5, 7), (0, 8)])
def test_raid_device_facts_and_release(results: dict, level: int, data_disks: int) -> None:
    r = results[f"raid{level}"]
    facts = r["facts"]
    assert (facts["level"], facts["raid_disks"], facts["data_disks"]) == (level, 8, data_disks)
    assert facts["chunk_bytes"] == 512 * 1024
    assert facts["md"]["optimal_io_size"] == 512 * 1024 * data_disks
    assert len(facts["members"]) == 8
    assert all(m["serial"].startswith("fslab-disk") for m in facts["members"])
    assert facts["mdadm_uuid"]
    assert r["md_after"] == []  # stopped


@pytest.mark.parametrize("level", [5, 0])
def test_md_and_members_traced_with_the_hosts_reader(results: dict, level: int) -> None:
    t = results[f"raid{level}"]["trace"]
    assert t["method"] == "raw" and t["complete"] is True
    assert t["md_bio_writes"] > 0  # the 8 MiB written to md, as bios
    # Every write request the members' counters saw is in the trace, and no other.
    assert t["member_issue_writes"] == t["member_stat_writes"] > 0


@pytest.mark.parametrize("model", ["scsi_debug", "dm-delay", "null_blk"])
def test_emulated_device_is_slow_rotational_and_released(results: dict, model: str) -> None:
    r = results[model]
    assert r["facts"]["rotational"] == "1"
    assert r["facts"]["model"] == model and r["facts"]["delay_ms"] == 5
    # 16 direct reads, each delayed 5 ms (merging cannot join them: dd waits for each).
    assert r["read_s"] >= 16 * 0.005
    assert r["exists_after"] is False
