"""The guest's device kinds, run by fslab's own modules inside one booted guest: md RAID5
and RAID0 over 8 virtio disks (facts for the md device and every member; stopped and
erased afterwards), and scsi_debug, dm-delay and null_blk (delay felt, rotational as asked,
released afterwards). A file system is made and written on each. And the host's md path,
for real where a kernel has md (the guest's): arrays over image members fslab makes on
loop devices and over loop devices the test makes standing in for the user's disks, built
as asked and leaving nothing behind."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from fslab.backends.guest.launcher import Guest
from fslab.devices.sections import EmulatedSection, RaidSection

from .conftest import run_python

pytestmark = pytest.mark.guest

# One script, one Python process in the guest (its start and imports are seconds under TCG).
# The sections come as a job carries them: made by the pydantic models on the host, read in
# the guest as plain data (fslab.devices.SectionData), so the guest imports no pydantic.
SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from pathlib import Path
    from fslab.devices import Grant, SectionData
    from fslab.devices.guest_disks import take
    from fslab.devices.raid import provision as raid, preflight as raid_preflight
    from fslab.devices.emulated import provision as emulated
    from fslab.resources import _current

    SECTIONS = json.loads(sys.argv[1])

    def section(kind, name, **changed):
        return SectionData(kind, {**SECTIONS[name], **changed})

    def sh(*argv):
        return subprocess.run(argv, capture_output=True, text=True)

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
        events = ("block_rq_issue", "block_rq_complete", "block_bio_queue")

        def counters():  # the members' counters, read at idle moments (trace.capture)
            return {f"{h.path}.{k}": v for h in handles for k, v in h.read_stat().items()}

        with TraceCapture([md.dev_t, *(h.dev_t for h in handles)], method="raw", events=events,
                          counters=counters) as cap:
            subprocess.run(["dd", "if=/dev/zero", f"of={md.path}", "bs=1M", "count=8", "oflag=direct"],
                           check=True, capture_output=True)
        c = cap.trace.columns
        writes = (c["op"] == OP_WRITE)
        return {
            "method": cap.trace.meta["capture_method"], "complete": cap.trace.meta["complete"],
            "md_bio_writes": int(((c["dev"] == md.dev_t) & (c["event"] == EV_QUEUE) & writes).sum()),
            "member_issue_writes": int(sum(((c["dev"] == h.dev_t) & (c["event"] == EV_ISSUE) & writes).sum()
                                           for h in handles)),
            "member_stat_writes": sum(cap.counters_after[f"{h.path}.write_ios"]
                                      - cap.counters_before[f"{h.path}.write_ios"] for h in handles),
        }

    def md_of(path):  # what md itself says of the array
        md = Path(f"/sys/block/{Path(path).name}/md")
        return {"level": (md / "level").read_text().strip(), "raid_disks": int((md / "raid_disks").read_text()),
                "chunk_size": int((md / "chunk_size").read_text())}

    def loops():  # loop device -> backing file
        listing = sh("losetup", "--list", "--json", "--output", "NAME,BACK-FILE").stdout
        return {d["name"]: d["back-file"] for d in json.loads(listing or '{"loopdevices": []}')["loopdevices"]}

    def left(members):
        return {"md": sorted(p.name for p in Path("/sys/block").glob("md*")),
                "superblocks": [m for m in members if sh("mdadm", "--examine", m).returncode == 0],
                "listed": [r.kind for r in _current().entries.values()]}

    # The guest's own device kinds: md over its virtio disks, then the emulated devices.
    out = {}
    for level in (5, 0):
        with raid(section("raid", f"raid{level}"), Path("/tmp"), f"r{level}") as h:
            out[f"raid{level}"] = {"facts": h.facts, "read_s": use(h.path),
                                   "trace": traced_write(h, take(8))}
        out[f"raid{level}"]["md_after"] = sorted(p.name for p in Path("/sys/block").glob("md*"))
    lower = take(1, first=8)[0]
    for model in ("scsi_debug", "dm-delay", "null_blk"):
        with emulated(section("emulated", model), Path("/tmp"), "t", lower=lower) as h:
            out[model] = {"facts": h.facts, "path": h.path, "read_s": use(h.path)}
        out[model]["exists_after"] = os.path.exists(h.path)

    # The host's md path, for real in a kernel that has md. A kernel with md: the real
    # probe finds it and auto plans an array on the host.
    from fslab.backends import choose_backend
    from fslab.devices import DEVICES
    from fslab.filesystems import FILESYSTEMS
    placed = {level: choose_backend(FILESYSTEMS.get("ext4"), DEVICES.get("raid"),
                                    section("raid", f"raid{level}", vdisks=None), "auto")
              for level in (0, 5)}
    host = {"placed": placed}

    # Images on ext4, as on a host (the guest's /tmp is a small tmpfs)
    scratch = Path("/mnt/scratch")
    scratch.mkdir(parents=True, exist_ok=True)
    sh("mkfs.ext4", "-F", "-q", take(1, first=9)[0])
    subprocess.run(["mount", take(1, first=9)[0], str(scratch)], check=True)
    work = scratch / "work"
    with raid(section("raid", "images"), work, "img") as h:
        members = [m.path for m in h.members]
        host["images"] = {"md": md_of(h.path), "members": members,
                          "backing": [loops().get(m) for m in members],
                          "dio": [Path(f"/sys/block/{Path(m).name}/loop/dio").read_text().strip() for m in members],
                          "listed": [r.kind for r in _current().entries.values()]}
    host["images"]["after"] = {**left([]), "loops": [m for m in members if m in loops()],
                               "files": sorted(os.listdir(work))}

    disks = scratch / "disks"
    disks.mkdir()
    named = []
    try:
        for i in range(3):
            image = disks / f"disk{i}.img"
            image.write_bytes(b"")
            os.truncate(image, 48 << 20)
            named.append(sh("losetup", "--find", "--show", str(image)).stdout.strip())
        on_named = section("raid", "named", members=named)
        identity = raid_preflight(on_named, Grant(frozenset(named)))
        with raid(on_named, scratch / "named", "named", Grant(frozenset(named), identity)) as h:
            host["named"] = {"md": md_of(h.path), "members": [m.path for m in h.members],
                             "host_disks": [d["path"] for d in h.facts["host_disks"]],
                             "listed": [r.kind for r in _current().entries.values()]}
        host["named"]["after"] = {**left(named), "attached": [m for m in named if m in loops()],
                                  "signatures": [sh("wipefs", "--no-act", "--noheadings", m).stdout.strip()
                                                 for m in named]}
        # A job killed with SIGKILL while its array is built: `fslab cleanup` releases it all.
        # A fork of this process, which has fslab imported already (a new interpreter would
        # import it again: seconds under TCG).
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(read_end)
            try:
                with raid(section("raid", "killed"), scratch / "killed", "killed") as h:
                    os.write(write_end, (h.path + "\\n").encode())
                    time.sleep(600)
            finally:
                os._exit(1)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            md = pipe.readline().strip()
        held = {"md": md_of(md), "loops": sorted(l for l, b in loops().items() if "/killed/" in b)}
        os.kill(child, 9)
        os.waitpid(child, 0)
        from fslab.cleanup import cleanup
        done = cleanup()
        host["killed"] = {"md": md, "held": held, "cleanup": done, "after": {
            "md": sorted(p.name for p in Path("/sys/block").glob("md*")),
            "loops": [l for l, b in loops().items() if "/killed/" in b],
            "files": sorted(os.listdir(scratch / "killed"))}}
    finally:
        for loop in named:
            sh("losetup", "-d", loop)
        sh("umount", str(scratch))
    print(json.dumps({"guest": out, "host_path": host}, default=str))
""")


def _sections() -> dict[str, dict]:
    """Every section the script uses, with every field, as a planned job carries them."""
    sections: dict[str, dict] = {
        "raid5": RaidSection(level=5, disks=8, chunk="512KiB", member_size="64MiB", vdisks=0).model_dump(),
        "raid0": RaidSection(level=0, disks=8, chunk="512KiB", member_size="64MiB", vdisks=0).model_dump(),
        "images": RaidSection(level=5, disks=4, chunk="64KiB", member_size="32MiB").model_dump(),
        "named": RaidSection(level=0, members=["/dev/loop0", "/dev/loop1", "/dev/loop2"],
                             chunk="128KiB").model_dump(),
        "killed": RaidSection(level=0, disks=2, member_size="32MiB").model_dump(),
    }
    for model, size in (("scsi_debug", "64MiB"), ("dm-delay", "64MiB"), ("null_blk", "1GiB")):
        sections[model] = EmulatedSection(model=model, size=size, delay_ms=5, rotational=True).model_dump()
    return sections


# The shared guest's disks 0-7 are the array members, disk 8 dm-delay's lower disk and
# disk 9 the scratch disk for the host path's images (tests/guest/conftest.py).
@pytest.fixture(scope="module")
def both(shared_guest: Guest) -> dict:
    out = run_python(shared_guest, SCRIPT, timeout_s=1200, args=[json.dumps(_sections())])
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def results(both: dict) -> dict:
    return both["guest"]


@pytest.fixture(scope="module")
def host_path(both: dict) -> dict:
    return both["host_path"]


def test_host_path_array_of_a_killed_job_is_released_by_cleanup(host_path: dict) -> None:
    r = host_path["killed"]
    assert r["held"]["md"] == {"level": "raid0", "raid_disks": 2, "chunk_size": 512 << 10}
    assert len(r["held"]["loops"]) == 2
    name = "fslab-killed"
    assert r["cleanup"][0] == f"stop md array {r['md']} ({name})"  # first: it holds the loops
    assert sorted(line for line in r["cleanup"] if line.startswith("erase")) == [
        f"erase the md superblock of {loop} ({name})" for loop in r["held"]["loops"]]
    assert {line.split()[1] for line in r["cleanup"] if line.startswith("detach")} == set(r["held"]["loops"])
    assert r["after"] == {"md": [], "loops": [], "files": []}


def test_auto_plans_arrays_on_the_host_of_a_kernel_with_md(host_path: dict) -> None:
    placed = host_path["placed"]
    assert placed["0"][0] == placed["5"][0] == "host"
    for level, found in (("0", ("raid0 personality", "raid0 module")), ("5", ("raid5 personality", "raid456 module"))):
        assert placed[level][1].startswith("this host kernel has md (")
        assert any(f in placed[level][1] for f in found), placed[level][1]


def test_host_path_builds_an_array_on_image_members_and_leaves_nothing(host_path: dict) -> None:
    r = host_path["images"]
    assert r["md"] == {"level": "raid5", "raid_disks": 4, "chunk_size": 64 << 10}
    assert [Path(b).name for b in r["backing"]] == [f"fslab-img-m{i}.img" for i in range(4)]
    assert all(m.startswith("/dev/loop") for m in r["members"]) and r["dio"] == ["1"] * 4
    assert r["listed"] == ["image"] * 4 + ["md"]  # in the state file while they exist
    assert r["after"] == {"md": [], "superblocks": [], "listed": [], "loops": [], "files": []}


def test_host_path_builds_an_array_on_named_disks_and_leaves_them_wiped(host_path: dict) -> None:
    r = host_path["named"]
    assert r["md"] == {"level": "raid0", "raid_disks": 3, "chunk_size": 128 << 10}
    assert r["listed"] == ["md"]  # the user's disks are not fslab's to release
    assert r["host_disks"] == r["members"]  # described for the report's members warning
    after = r["after"]
    assert after["md"] == [] and after["superblocks"] == [] and after["listed"] == []
    assert after["attached"] == r["members"]  # still the user's, attached, with no md signature
    assert after["signatures"] == ["", "", ""]


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
