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


def test_two_hosts_of_one_study_compare_like_any_other_axis(tmp_path, monkeypatch) -> None:
    """`fslab compare HOST1 HOST2 -r DIR`: each side is the runs one machine ran; the host
    is the variable under test, the kernel that differs with it a warning."""
    from types import SimpleNamespace

    import fslab.report.compare as cmp

    cell = {"id": "c1", "filesystem": "ext4", "fs_type": "ext4", "workload": "w", "workload_kind": "fio",
            "backend": "host", "params": {}, "axes": {}, "primary_metric": "iops"}
    runs = []
    for host, kernel, values in (("a", "6.1.0", [100, 101, 102]), ("b", "6.12.0", [150, 152, 151])):
        for v in values:
            run = _run(host, kernel)
            run["cell"] = cell
            run["metrics"] = {"iops": {"value": v, "unit": "IOPS", "note": None, "higher_is_better": True}}
            runs.append(run)
    (tmp_path / "fslab.sqlite").write_bytes(b"")
    row = SimpleNamespace(id=1, name="s", quick=False, spec_text="", facts={})
    monkeypatch.setattr(cmp, "_load", lambda results, study: (row, runs, [cell]))
    a, b = cmp.resolve_sides("a", "b", tmp_path, None)
    assert (a.host, b.host, len(a.runs), len(b.runs)) == ("a", "b", 3, 3)
    c = cmp.compare(a, b)
    assert c.mode == "hosts"
    assert c.rows[0].significant and c.rows[0].verdict == "B better"
    assert [d.fact for d in c.warnings] == ["ext4: kernel"]
    try:
        cmp.resolve_sides("a", "nosuch", tmp_path, None)
    except cmp.FslabError as exc:
        assert "the hosts that ran it: a, b" in str(exc)
    else:
        raise AssertionError("an unknown side must be an error")


def test_html_markdown_and_json_carry_the_several_hosts_warning() -> None:
    from fslab.report.html import render_html
    from fslab.report.markdown import render_markdown
    from fslab.report.model import build_report
    from fslab.store import StudyRow

    cell = {"id": "c1", "filesystem": "ext4", "fs_type": "ext4", "workload": "w", "workload_kind": "fio",
            "backend": "host", "params": {}, "axes": {}, "primary_metric": "iops"}
    runs = []
    for i, (host, kernel) in enumerate((("a", "6.1.0"), ("b", "6.12.0"))):
        run = {**_run(host, kernel), "cell": cell, "run_id": i + 1, "repetition": i, "sequence": i,
               "error": None, "started_at": 0.0, "finished_at": 1.0, "artifact_dir": None,
               "metrics": {"iops": {"value": 100.0 + i, "unit": "IOPS", "note": None, "higher_is_better": True}}}
        runs.append(run)
    study = StudyRow(1, "s", "s.toml", "h", False, "in-order", 1, "run", 2, 2, [], {}, "complete", 0.0, 1.0, "", {})
    report = build_report(study, runs, [cell])
    assert report.host_warnings[0].startswith("runs from 2 hosts (a, b) that differ")
    assert "kernel: a = 6.1.0; b = 6.12.0" in report.host_warnings
    assert "runs from 2 hosts (a, b) that differ" in render_html(report)
    assert "> - kernel: a = 6.1.0; b = 6.12.0" in render_markdown(report)
    assert report.to_json()["host_warnings"] == report.host_warnings
