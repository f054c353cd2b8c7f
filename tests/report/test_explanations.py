"""Why one file system beats another: the I/O facts that differ most behind every
significant difference, from stored runs (block-trace metrics, else device counters, and
the workload's predictions), or a plain statement that they do not explain it."""

from __future__ import annotations

from typing import Any

from fslab.report.sections.explanations import explanations, nothing_to_explain
from fslab.stored import StoredCell, StoredMetric, StoredRun


def cell(fs: str) -> StoredCell:
    return StoredCell(id=fs, filesystem=fs, fs_type="ext4", mkfs=[], mount=[], workload="w", workload_kind="fio",
                      params={}, axes={}, backend="host", memory_bytes=None, timeout_s=None, primary_metric="iops")


MODEL = "raid5-8x-sata-mlc-ssd"
RAID5_MECHANISMS = ("parity_rmw_read", "parity_rmw_write", "full_stripe_write", "data_read")


def predicted_on(*mechanisms: str) -> dict[str, Any]:
    """A run's provenance once its trace was replayed on MODEL: which models, and the
    mechanisms its replay timed (the report reads both from here)."""
    return {"predictions": {"models": {MODEL: {"time_by_mechanism_ns": dict.fromkeys(mechanisms, 1)}}}}


RAID5 = predicted_on(*RAID5_MECHANISMS)


def run(fs: str, iops: float, provenance: dict[str, Any] | None = None, **facts: float) -> StoredRun:
    metrics = {name: StoredMetric(value=v, unit="x", note=None, higher_is_better=True)
               for name, v in {"iops": iops, **facts}.items()}
    fields: dict[str, Any] = dict(run_id=0, cell=cell(fs), repetition=0, sequence=0, status="ok", error=None,
                                  started_at=0.0, finished_at=0.0, provenance=provenance or {}, metrics=metrics)
    return StoredRun(**fields)  # type: ignore[typeddict-item]


def test_a_significant_difference_is_explained_by_the_facts_that_differ_most() -> None:
    ext4 = {"trace_write_requests_count": 32000.0, "trace_write_size_median_bytes": 4096.0,
            "trace_write_sequential_fraction": 0.01, "trace_flush_requests_count": 10.0,
            "pred_raid5-8x-sata-mlc-ssd_iops": 5000.0, "pred_raid5-8x-sata-mlc-ssd_device_requests_count": 1.0}
    f2fs = {"trace_write_requests_count": 150.0, "trace_write_size_median_bytes": 1 << 20,
            "trace_write_sequential_fraction": 0.95, "trace_flush_requests_count": 10.5,
            "pred_raid5-8x-sata-mlc-ssd_iops": 70000.0, "pred_raid5-8x-sata-mlc-ssd_device_requests_count": 1.0}
    runs = [run("ext4", v, predicted_on(), **ext4) for v in (1000.0, 1100.0, 900.0)]
    runs += [run("f2fs", v, predicted_on(), **f2fs) for v in (9000.0, 9500.0, 10000.0)]
    [line] = explanations(runs, [cell("ext4"), cell("f2fs")])
    # the facts, most different first (a 256x size, 213x the requests, 94 share points);
    # flushes alike (10 vs 10.5) are not named
    assert line.startswith("w — iops of ext4 -89.5% against f2fs: ext4: median write size 4.00 KiB vs "
                           "1.00 MiB; 213x more write requests (32,000 vs 150); sequential writes 1% vs 95% (from the "
                           "block traces, mean over runs)")
    assert "flushes" not in line
    assert "predicted on raid5-8x-sata-mlc-ssd: 5,000 vs 70,000 iops (0.0714x)" in line


def test_a_difference_the_io_does_not_carry_is_said_so() -> None:
    same = {"trace_write_requests_count": 1000.0, "trace_write_size_median_bytes": 4096.0}
    runs = [run("ext4", v, **same) for v in (1000.0, 1010.0, 990.0)]
    runs += [run("xfs", v, **same) for v in (1500.0, 1490.0, 1510.0)]
    [line] = explanations(runs, [cell("ext4"), cell("xfs")])
    assert "the block traces do not explain it" in line and "host-side time" in line


def test_host_side_time_in_a_guest_under_tcg_says_the_emulated_cpu_inflates_it() -> None:
    same = {"trace_write_requests_count": 1000.0, "trace_write_size_median_bytes": 4096.0}
    runs = [run("ext4", v, **same) for v in (1000.0, 1010.0, 990.0)]
    runs += [run("xfs", v, **same) for v in (1500.0, 1490.0, 1510.0)]
    [line] = explanations(runs, [cell("ext4"), cell("xfs")])
    assert "TCG" not in line
    for r in runs:
        r["provenance"] = {"guest": {"accelerator": "tcg"}}
    [line] = explanations(runs, [cell("ext4"), cell("xfs")])
    assert "host-side time" in line and "a QEMU guest under TCG" in line


def test_no_significant_difference_no_explanation() -> None:
    runs = [run("ext4", v) for v in (1000.0, 1200.0, 800.0)] + [run("xfs", v) for v in (1050.0, 900.0, 1150.0)]
    assert explanations(runs, [cell("ext4"), cell("xfs")]) == []
    # the section still says why it explains nothing
    assert nothing_to_explain(runs, [cell("ext4"), cell("xfs")]) == [
        "No significant difference to explain.", "1 comparison showed no significant difference."]
    runs += [run("btrfs", v) for v in (980.0, 1100.0, 1020.0)]
    assert nothing_to_explain(runs, [cell("ext4"), cell("xfs"), cell("btrfs")])[1] == (
        "2 comparisons showed no significant difference.")


def test_without_a_verdict_the_section_says_more_runs_are_needed() -> None:
    runs = [run("ext4", v) for v in (1000.0, 1100.0)] + [run("f2fs", v) for v in (9000.0, 9500.0)]
    lines = nothing_to_explain(runs, [cell("ext4"), cell("f2fs")])
    assert lines[0] == "No significant difference to explain."
    assert lines[1].startswith("1 of 1 comparison had no verdict (fewer than 3 runs")


def test_a_figure_of_one_phase_is_not_explained_by_the_whole_runs_io() -> None:
    """Bonnie++'s block-write figure is one of its tests: the run's I/O facts hold them all."""
    runs = [run("ext4", v, trace_write_requests_count=100.0) for v in (1000.0, 1010.0, 990.0)]
    runs += [run("xfs", v, trace_write_requests_count=900.0) for v in (1500.0, 1490.0, 1510.0)]
    for r in runs:
        r["provenance"] = {"workload_phases": True}
        r["cell"] = {**r["cell"], "workload_kind": "bonnie"}  # type: ignore[typeddict-item]
    [line] = explanations(runs, [cell("ext4"), cell("xfs")])
    assert "not attributed: a bonnie run's block trace and device counters hold all its phases" in line
    assert "write requests" not in line


def _raid5_shares(rmw_read: float, rmw_write: float, full_stripe: float) -> dict[str, float]:
    model = MODEL
    return {f"pred_{model}_time_parity_rmw_read_share": rmw_read,
            f"pred_{model}_time_parity_rmw_write_share": rmw_write,
            f"pred_{model}_time_full_stripe_write_share": full_stripe,
            f"pred_{model}_time_data_read_share": 1.0 - rmw_read - rmw_write - full_stripe}


def test_the_mechanism_whose_share_differs_most_is_named_with_both_shares() -> None:
    """Read-modify-write reads and writes make one cause; its shares are added per run, then
    averaged over runs; a cause alike on both sides (member data reads) is not named."""
    ext4 = [run("ext4", v, RAID5, **_raid5_shares(0.40, 0.20, 0.30)) for v in (1000.0, 1100.0)]
    ext4 += [run("ext4", 900.0, RAID5, **_raid5_shares(0.43, 0.20, 0.27))]
    f2fs = [run("f2fs", v, RAID5, **_raid5_shares(0.0, 0.0, 0.8)) for v in (9000.0, 9500.0, 10000.0)]
    [line] = explanations(ext4 + f2fs, [cell("ext4"), cell("f2fs")])
    assert line.endswith("on raid5-8x-sata-mlc-ssd ext4 spends 61% of its predicted device time in parity "
                         "read-modify-write, f2fs 0%")


def test_shares_that_differ_little_are_said_to_be_alike() -> None:
    ext4 = [run("ext4", v, RAID5, **_raid5_shares(0.30, 0.30, 0.30)) for v in (1000.0, 1100.0, 900.0)]
    xfs = [run("xfs", v, RAID5, **_raid5_shares(0.33, 0.30, 0.29)) for v in (9000.0, 9500.0, 10000.0)]
    [line] = explanations(ext4 + xfs, [cell("ext4"), cell("xfs")])
    assert line.endswith("on raid5-8x-sata-mlc-ssd ext4 and xfs spend their predicted device time alike (most "
                         "different: parity read-modify-write, 60% vs 63%)")
