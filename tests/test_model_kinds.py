"""A device model is one Rust file, one row in the core's kind table and one preset file:
Python learns each kind's name, mechanisms and their words from the core and finds
presets through the catalog, so no Python list repeats the models.

Shown with the core's test model (kind ``test-fixed``: one request at a time, a fixed
service time plus a time per byte; compiled in, not offered to users) and a preset for it
dropped into a temporary presets directory: ``fslab models``, ``fslab simulate`` and a
run's predictions take it with no Python edit."""

from __future__ import annotations

import json
from importlib.abc import Traversable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from fslab import _core, cli_models, cli_simulate, model_catalog
from fslab.errors import SimulationError
from fslab.mechanisms import cause_of, mechanisms_of, whole_of
from fslab.predictions import metric_name, predict_run
from fslab.simulate import simulate_synthetic
from fslab.trace.formats import load_trace, write_parquet

TRACE = Path(__file__).parent / "data" / "traces" / "btrfs-dd-osync.tracefs.txt"
PRESET = """\
[model]
kind = "test-fixed"
description = "test model: 50 us per request plus 1 ns per byte"

[params]
capacity = "1GiB"
service_us = 50
ns_per_byte = 1
"""


def _app() -> typer.Typer:
    app = typer.Typer()
    cli_models.register(app)
    cli_simulate.register(app)
    return app


@pytest.fixture
def presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A presets directory searched after the package's, holding one new preset."""
    extra = tmp_path / "models"
    extra.mkdir()
    (extra / "fixed-50us.toml").write_text(PRESET)
    shipped = model_catalog.preset_dirs()

    def dirs() -> list[Traversable]:
        return [*shipped, extra]

    monkeypatch.setattr(model_catalog, "preset_dirs", dirs)
    return extra


def test_the_core_names_each_kind_and_its_mechanisms() -> None:
    kinds = {k["kind"]: k for k in _core.model_kinds()}
    assert {name for name, k in kinds.items() if k["offered"]} == {"hdd", "ssd", "raid"}
    assert not kinds["test-fixed"]["offered"]
    assert mechanisms_of("hdd") == ["command", "seek", "rotation", "transfer", "cache"]
    assert cause_of("parity_rmw_read") == cause_of("parity_rmw_write") == "parity read-modify-write"
    assert whole_of("hdd").startswith("the drive's work time")
    # A mechanism name means one thing in every kind that has it (host_link: SSD and RAID).
    causes: dict[str, set[str]] = {}
    for k in kinds.values():
        assert k["mechanisms"] and k["whole"], k["kind"]
        for name, cause in k["mechanisms"]:
            causes.setdefault(name, set()).add(cause)
    assert all(len(c) == 1 for c in causes.values()), causes


def test_a_new_preset_runs_everywhere_without_a_python_edit(presets: Path, tmp_path: Path) -> None:
    listed = CliRunner().invoke(_app(), ["models"], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    assert "fixed-50us" in listed.output and "test-fixed" in listed.output
    shown = CliRunner().invoke(_app(), ["models", "fixed-50us"], terminal_width=200)
    assert shown.exit_code == 0 and "service_us" in shown.output, shown.output

    # simulate: 100 requests of 4 KiB one at a time, each 50 us + 4096 ns.
    r = simulate_synthetic("rw=randwrite,bs=4k,count=100", "fixed-50us", qd=4)
    assert r["elapsed_ns"] == 100 * (50_000 + 4096)
    assert r["time_by_mechanism_ns"] == {"service": 100 * 50_000, "bytes": 100 * 4096}
    assert r["latency_ns"]["p50"] == r["latency_ns"]["max"] >= 50_000 + 4096  # ns, as the core gives them
    out = CliRunner().invoke(_app(), ["simulate", "--synthetic", "rw=randwrite,bs=4k,count=100", "--model",
                                      "fixed-50us"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "fixed per-request service time" in out.output  # the core's words for its mechanism
    assert "latency p50 (us)" in out.output and "54.1" in out.output  # 54,096 ns printed in us
    as_json = CliRunner().invoke(_app(), ["simulate", "--synthetic", "rw=read,bs=4k,count=10", "--model",
                                          "fixed-50us", "--json"])
    assert json.loads(as_json.output)["latency_ns"]["mean"] == 54_096

    # A RAID of the new preset is built on the fly like any other's.
    raid = simulate_synthetic("rw=read,bs=4k,count=50", "raid0-2x-fixed-50us")
    assert raid["requests"] == 50 and raid["time_by_mechanism_ns"]["data_read"] > 0

    # A run's predictions: its trace replayed on the new model, named from the provenance.
    trace_path = tmp_path / "trace.parquet"
    write_parquet(load_trace(TRACE), trace_path)
    metrics, prov = predict_run(trace_path, ["fixed-50us"], 1)
    by_name = {m.name: m for m in metrics}
    assert list(prov["models"]) == ["fixed-50us"]
    count = by_name[metric_name("fixed-50us", "device_requests_count")].value
    assert count == prov["requests"] > 0
    service = by_name[metric_name("fixed-50us", "time_service_share")]
    assert "the test model's busy time" in (service.note or "")
    assert prov["models"]["fixed-50us"]["time_by_mechanism_ns"]["service"] == count * 50_000


def test_the_test_kind_is_not_offered() -> None:
    with pytest.raises(SimulationError) as err:
        simulate_synthetic("rw=read,bs=4k,count=1", "hdd-7200", {"kind": "tape"})
    assert "hdd, ssd, raid" in str(err.value) and "test-fixed" not in str(err.value)
