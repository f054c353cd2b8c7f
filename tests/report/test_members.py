"""The disks under a run's device (an array's named members): the facts they differ in,
and the warning every report output carries."""

from fslab.report.members import member_differences, warning_lines


def _disk(path: str, model: str = "WDC WD40", rotational: str = "1", write_cache: str = "write back") -> dict:
    return {"path": path, "disk": path[5:], "serial": path, "model": model, "firmware": "01.01A01",
            "rotational": rotational, "write_cache": write_cache, "scheduler": "[mq-deadline] none",
            "size_bytes": 4 << 40}


def _run(disks: list[dict], status: str = "ok") -> dict:
    return {"status": status, "provenance": {"device": {"kind": "raid", "host_disks": disks}}}


def test_members_that_differ_are_named_with_each_value() -> None:
    disks = [_disk("/dev/sdb"), _disk("/dev/sdc"), _disk("/dev/sdd", model="ST4000", rotational="0",
                                                            write_cache="write through")]
    diffs = dict(member_differences(disks))
    assert set(diffs) == {"model", "rotational", "write_cache"}  # serial and path always differ: not compared
    assert diffs["model"] == {"/dev/sdb": "WDC WD40", "/dev/sdc": "WDC WD40", "/dev/sdd": "ST4000"}
    lines = warning_lines([_run(disks, "failed"), _run(disks)])
    assert lines[0].startswith("the 3 disks under the device differ")
    assert "  write_cache: /dev/sdb = write back; /dev/sdc = write back; /dev/sdd = write through" in lines


def test_alike_members_one_disk_or_none() -> None:
    assert warning_lines([_run([_disk("/dev/sdb"), _disk("/dev/sdc")])]) == []
    assert warning_lines([_run([_disk("/dev/sdb")])]) == []
    assert warning_lines([{"status": "ok", "provenance": {"device": {"kind": "image"}}}]) == []
    # only measured runs count
    assert warning_lines([_run([_disk("/dev/sdb"), _disk("/dev/sdc", model="x")], "failed")]) == []
