"""Runs from several hosts: the machine facts in which they differ, and the warning."""

from fslab.report.hosts import host_differences, warning_lines


def _run(host: str, kernel: str, fio: str = "fio-3.33") -> dict:
    return {"status": "ok", "cell": {"backend": "host", "fs_type": "ext4"},
            "provenance": {"host": {"hostname": host, "kernel": kernel, "cpu_model": "x", "cpu_count": 2},
                           "tools": {"fio": fio}}}


def test_hosts_that_differ_are_named_with_each_value() -> None:
    runs = [_run("a", "6.1.0"), _run("a", "6.1.0"), _run("b", "6.12.0", "fio-3.36")]
    diffs = dict(host_differences(runs))
    assert diffs == {"kernel": {"a": "6.1.0", "b": "6.12.0"}, "fio version": {"a": "fio-3.33", "b": "fio-3.36"}}
    lines = warning_lines(runs)
    assert lines[0].startswith("runs from 2 hosts (a, b) that differ")
    assert "  kernel: a = 6.1.0; b = 6.12.0" in lines


def test_one_host_or_alike_hosts() -> None:
    assert warning_lines([_run("a", "6.1.0")]) == []
    assert host_differences([_run("a", "6.1.0"), _run("b", "6.1.0")]) == []
    assert "alike" in warning_lines([_run("a", "6.1.0"), _run("b", "6.1.0")])[0]
    # failed runs (a lost worker) do not count as a host that measured
    failed = {**_run("c", "5.10"), "status": "failed"}
    assert host_differences([_run("a", "6.1.0"), _run("b", "6.1.0"), failed]) == []


def test_a_guest_run_belongs_to_the_machine_its_guest_ran_on() -> None:
    """A guest on one machine is a backend (labelled as such), not a second host: its own
    kernel must not raise the several-hosts warning; two machines with guests still do."""
    guest = _run("fslab-guest", "6.1.0-56-amd64")
    guest["provenance"]["guest"] = {"vm_host": "a", "kernel_release": "6.1.0-56-amd64"}
    assert warning_lines([_run("a", "6.18.0"), guest]) == []
    other = _run("fslab-guest", "6.1.0-56-amd64")
    other["provenance"]["guest"] = {"vm_host": "b"}
    assert warning_lines([_run("a", "6.18.0"), guest, other])[0].startswith("runs from 2 hosts (a, b)")
