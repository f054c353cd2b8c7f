"""The fio matrix (seed 002): expansion, a real quick sub-matrix on ext4 and xfs, charts
read back bar by bar, and per-case contrasts with intervals."""

import math
import tomllib
from collections import Counter

import pytest

from fslab.analysis.contrasts import contrasts, parse_contrast, ratio_ci
from fslab.backends import choose_backend
from fslab.errors import SpecError
from fslab.plan import make_plan
from fslab.report.charts import bars_in_svg, write_charts
from fslab.runner import run_study
from fslab.store import Store
from fslab.study import load_spec, parse_spec


def test_seed_002_expands_to_50_cells_per_filesystem():
    spec, _, _ = load_spec("seed-002")
    plan = make_plan(spec, backends=choose_backend)
    # All four where jfs runs (one backend, so jfs is compared with the others), or every
    # one of them skipped with the reason where no guest can be started.
    per_fs = Counter(c.filesystem for c in plan.cells if c.backend == "guest")
    assert per_fs == {"ext3": 50, "ext4": 50, "xfs": 50, "jfs": 50} or (
        {s.filesystem for s in plan.skipped} == {"ext3", "ext4", "xfs", "jfs"}
        and all("guest" in s.reason for s in plan.skipped))
    # One file system per pass, its cases in sequence on it (as the paper): a job per pass.
    assert plan.fresh == "repetition" and len(plan.jobs) == 4 * spec.study.repetitions
    single = [c for c in plan.cells if c.workload == "single-job" and c.filesystem == "ext4"]
    assert {c.params["rw"] for c in single} == {"read", "write", "rw", "randread", "randwrite", "randrw"}
    many = [c for c in single if c.axes["layout"] == "many-small"]
    assert all(c.params["nrfiles"] == 200 and c.params["size"] == 256 << 20 for c in many)
    four = [c for c in plan.cells if c.workload == "four-jobs" and c.filesystem == "ext4"]
    assert sorted(c.params["ioengine"] for c in four) == ["libaio", "sync"]
    assert all(c.params["numjobs"] == 4 and c.params["direct"] == 1 for c in four)


def test_invalid_axis_is_rejected_clearly():
    text = """
[study]
name = "t"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "w"
bs = "4k"
[workloads.axes]
layout = ["few-large", "lots-of-tiny"]
"""
    with pytest.raises(SpecError) as info:
        parse_spec(tomllib.loads(text), "m.toml")
    message = str(info.value)
    assert "workloads[0].axes.layout[1]" in message and "few-large" in message


def test_ratio_ci_known_values():
    # means 20 and 10, s² = 8/3 and 2/3, n = 4 each: both relative variance terms are
    # 1/600, so se = sqrt(1/300) = 0.05774 and df = 6 exactly; t(0.975, 6) = 2.446912:
    # the interval is 2·exp(±0.14128) = [1.73651, 2.30348].
    r = ratio_ci([18, 20, 22, 20], [9, 10, 11, 10])
    assert r.low == pytest.approx(1.73651, abs=1e-4) and r.high == pytest.approx(2.30348, abs=1e-4)
    assert r.ratio == pytest.approx(2.0)
    s2x = sum((v - 20) ** 2 for v in [18, 20, 22, 20]) / 3
    s2y = sum((v - 10) ** 2 for v in [9, 10, 11, 10]) / 3
    se = math.sqrt(s2x / (4 * 400) + s2y / (4 * 100))
    assert s2x == pytest.approx(8 / 3) and s2y == pytest.approx(2 / 3)
    a, b = s2x / 1600, s2y / 400
    df = (a + b) ** 2 / (a * a / 3 + b * b / 3)
    from scipy import stats

    t = stats.t.ppf(0.975, df)
    assert r.low == pytest.approx(2 * math.exp(-t * se))
    assert r.high == pytest.approx(2 * math.exp(t * se))
    assert r.low < 2 < r.high and r.high / 2 == pytest.approx(2 / r.low)  # symmetric in log


def test_parse_contrast():
    assert parse_contrast("layout=many-small/few-large") == ("layout", "many-small", "few-large")
    with pytest.raises(ValueError):
        parse_contrast("direct")


SUB_MATRIX = """
[study]
name = "sub-matrix"
repetitions = 2
[device]
size = "1GiB"
image_dir = "{images}"
[filesystems.xfs]
[[workloads]]
kind = "fio"
name = "single-job"
bs = "4k"
layout = "many-small"
direct = 1
runtime = 1
time_based = 1
[workloads.axes]
rw = ["randread", "randwrite"]
ioengine = ["libaio", "io_uring"]
"""


def test_quick_sub_matrix_with_charts_and_contrasts(device_support, tmp_path):
    study = tmp_path / "sub.toml"
    study.write_text(SUB_MATRIX.format(images=tmp_path / "images"))
    results = tmp_path / "results"
    outcome = run_study(str(study), results_dir=results, quick=True)
    assert outcome.runs_done == 8 and outcome.runs_failed == 0
    with Store(results) as store:
        runs, cells = store.runs(outcome.study_id), store.cells(outcome.study_id)
    for run in runs:
        assert run["metrics"]["iops"]["value"] > 0
        assert run["cell"]["params"]["nrfiles"] == 200
    written = write_charts(runs, cells, tmp_path / "charts", by="rw")
    svgs = sorted(p for p in written if p.suffix == ".svg")
    assert [p.stem for p in svgs] == ["single-job_rw=randread", "single-job_rw=randwrite"]
    assert all(p.with_suffix(".png").stat().st_size > 1000 for p in svgs)
    for svg in svgs:
        bars = bars_in_svg(svg.read_text())
        assert sorted(bars) == sorted(("xfs", f"ioengine={e}") for e in ("libaio", "io_uring"))
    # The table shows every case's axis values (brackets are not taken for markup).
    from rich.console import Console

    from fslab.report.tables import build_table
    from fslab.report.terminal import render_table

    console = Console(record=True, width=250)
    console.print(render_table(build_table(runs, None, cells), "t"))
    text = console.export_text()
    for rw in ("randread", "randwrite"):
        for engine in ("libaio", "io_uring"):
            assert f"single-job [rw={rw} ioengine={engine}]" in text
    rows = contrasts(runs, cells, "ioengine", "io_uring", "libaio")
    assert len(rows) == 2  # 2 patterns on the one file system
    for row in rows:
        assert row.result.ratio > 0 and row.result.n_numerator == 2
        assert row.result.low is not None and row.result.low <= row.result.ratio <= row.result.high
