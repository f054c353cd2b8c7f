"""Steady state in SNIA PTS terms for fio workloads: the table is checked naming its
fields, mapped onto fio's own steady-state options, and judged on fio's JSON (captured
from real runs): reached, when, and the window's figures; a run that did not reach it
has no steady figure and says why."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from fslab.errors import SpecError
from fslab.study import parse_spec
from fslab.workloads import fio_steady
from fslab.workloads.fio import FioWorkload, job_file_text

DATA = Path(__file__).parents[1] / "data" / "fio"
SPEC = {"metric": "iops", "rounds": 5, "slope": 0.1, "range": 0.2, "ramp_s": 0}


def study(steady: str, runtime: str = "runtime = 30\ntime_based = 1") -> str:
    return (f'[study]\nname = "s"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\nname = "w"\nrw = "randread"\n'
            f'bs = "4k"\nsize = "64M"\n{runtime}\nsteady_state = {steady}\n')


def test_the_snia_defaults_and_fios_options():
    params = FioWorkload().validate({"rw": "randread", "bs": "4k", "size": "64M", "runtime": 30, "time_based": 1,
                                     "steady_state": {"metric": "iops"}})
    assert params["steady_state"] == SPEC
    options = fio_steady.fio_options(params["steady_state"])
    # SNIA: the fitted line may rise 10% of the average across the window's 4 one-second
    # steps, so fio's per-second slope limit is 2.5% of the mean.
    assert options == {"steadystate": "iops_slope:2.5%", "steadystate_duration": "5", "steadystate_ramp_time": "0"}
    text = job_file_text(params, Path("/mnt"))
    assert "steadystate=iops_slope:2.5%" in text and "steady_state" not in text
    assert FioWorkload().primary_metrics(params)[0] == "steady_iops"
    window = FioWorkload().validate({"rw": "read", "size": "64M", "runtime": 60, "time_based": 1,
                                     "steady_state": {"metric": "bw", "window": "30s", "ramp": "10s"}})
    assert window["steady_state"]["rounds"] == 30 and window["steady_state"]["ramp_s"] == 10
    assert FioWorkload().primary_metrics(window)[0] == "steady_bw_bytes_per_s"


@pytest.mark.parametrize(("steady", "runtime", "field", "says"), [
    ('{ metric = "lat" }', None, "steady_state.metric", "iops or bw"),
    ('{ window = "a while" }', None, "steady_state.window", "give rounds"),
    ('{ window = "1 round" }', None, "steady_state.window", "at least 2 rounds"),
    ('{ slope = 10 }', None, "steady_state.slope", "above 0 and below 1"),
    ('{ rounds = 5 }', None, "steady_state.rounds", "known: metric, window"),
    ('"iops"', None, "steady_state", "is a table"),
    ('{ metric = "iops" }', "runtime = 30", "steady_state", "needs time_based = 1"),
    ('{ window = "20 rounds", ramp = "20s" }', None, "steady_state", "do not fit in runtime = 30"),
])
def test_a_bad_steady_state_is_refused_naming_its_field(steady, runtime, field, says):
    text = study(steady) if runtime is None else study(steady, runtime)
    with pytest.raises(SpecError) as caught:
        parse_spec(tomllib.loads(text), "s.toml")
    assert f"workloads[0].{field}" in str(caught.value) and says in str(caught.value)


def _window(report: dict) -> list[float]:
    return [float(v) for v in report["jobs"][0]["steadystate"]["data"]["iops"]]


def test_a_run_that_reached_steady_state_has_the_windows_figures():
    report = json.loads((DATA / "steady-reached.json").read_text())
    metrics, notes = fio_steady.metrics(SPEC, report)
    window = _window(report)
    assert notes == {}
    assert metrics["steady_state_reached"] == 1.0
    assert metrics["steady_state_at_s"] == report["jobs"][0]["job_runtime"] / 1000
    assert metrics["steady_iops"] == pytest.approx(np.mean(window), rel=1e-3)
    assert metrics["steady_range_fraction"] == pytest.approx((max(window) - min(window)) / np.mean(window))
    slope = np.polyfit(np.arange(len(window)), window, 1)[0]
    assert metrics["steady_slope_fraction"] == pytest.approx(abs(slope) * (len(window) - 1) / np.mean(window))
    assert metrics["steady_range_fraction"] <= 0.2 and metrics["steady_slope_fraction"] <= 0.1


def test_a_run_that_never_reached_it_has_no_steady_figure_and_says_why():
    report = json.loads((DATA / "steady-not-reached.json").read_text())
    metrics, notes = fio_steady.metrics(SPEC, report)
    assert metrics["steady_state_reached"] == 0.0 and "steady_iops" not in metrics
    runtime = report["jobs"][0]["job_runtime"] / 1000
    assert notes["steady_iops"].startswith(f"steady state not reached in {runtime:.0f} s (last window: slope ")


def test_fios_slope_criterion_alone_is_not_snias_steady_state():
    """fio stops on the slope; a window whose data excursion exceeds the range is still not
    steady (SNIA asks both)."""
    report = copy.deepcopy(json.loads((DATA / "steady-reached.json").read_text()))
    report["jobs"][0]["steadystate"]["data"]["iops"] = [1000, 1300, 1000, 1300, 1000]  # flat, 30% apart
    metrics, notes = fio_steady.metrics(SPEC, report)
    assert metrics["steady_state_reached"] == 0.0
    excursion = 300 / np.mean([1000, 1300, 1000, 1300, 1000])
    assert "fio's slope criterion held" in notes["steady_iops"]
    assert f"excursion was {excursion:.0%} > 20%" in notes["steady_iops"]


def test_a_real_run_records_whether_and_when_it_reached_steady_state(device_support, tmp_path):
    from fslab.runner import run_study
    from fslab.store import Store

    path = tmp_path / "steady.toml"
    path.write_text(f"""
[study]
name = "steady"
repetitions = 1
[device]
size = "256MiB"
image_dir = "{tmp_path / 'images'}"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "randread"
rw = "randread"
bs = "4k"
size = "32M"
direct = 1
runtime = 8
time_based = 1
steady_state = {{ metric = "iops", window = "3 rounds", slope = 0.2, range = 0.4 }}
""")
    results = tmp_path / "results"
    outcome = run_study(str(path), results_dir=results)
    with Store(results) as store:
        [run] = store.runs(outcome.study_id)
    assert run["status"] == "ok" and run["cell"]["primary_metric"] == "steady_iops"
    metrics = run["metrics"]
    job = (results / run["artifact_dir"] / "job.fio").read_text()
    assert "steadystate=iops_slope:10%" in job and "steadystate_duration=3" in job
    if metrics["steady_state_reached"]["value"] == 1:
        # fio samples once a second: a window of 3 rounds is full after about 3 s
        assert 2.5 <= metrics["steady_state_at_s"]["value"] <= 8.5 and metrics["steady_iops"]["value"] > 0
        assert metrics["steady_range_fraction"]["value"] <= 0.4
    else:
        assert metrics["steady_iops"]["value"] is None
        assert metrics["steady_iops"]["note"].startswith("steady state not reached")
