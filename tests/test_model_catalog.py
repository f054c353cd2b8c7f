"""The named device models cite a source for every parameter and published figure; `fslab
models` lists every shipped model file and shows each parameter's source; the validation
benchmark predicts every published corner and judges it by the 15% target."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fslab.errors import SpecError
from fslab.model_catalog import Corner, ModelEntry, catalog, citation_problems, load_model, model_files
from fslab.simulate import model_capacity, model_params
from fslab.units import parse_size

ROOT = Path(__file__).resolve().parents[1]
FSLAB = [sys.executable, "-m", "fslab.cli"]
# The seeds' devices, by the names other parts of fslab (presets, [paper]) use.
SEED_DEVICES = {"adata-sp900-128": "ssd", "toshiba-dt01aca050": "hdd", "transcend-ssd370s-128": "ssd",
                "lg-uj1-2gb": "ssd", "samsung-840pro-256": "ssd", "perc-h710p-raid0-8x-840pro": "raid",
                "perc-h710p-raid5-8x-840pro": "raid"}


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FSLAB, *args], capture_output=True, text=True, timeout=300,
                          env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})


def test_the_seeds_devices_are_shipped_as_named_models() -> None:
    for name, kind in SEED_DEVICES.items():
        entry = load_model(name)
        assert entry.named and entry.kind == kind, name
    generic = {e.name for e in catalog() if not e.named}
    assert {"sata-mlc-ssd", "hdd-7200"} <= generic  # the classes stay for users


@pytest.mark.parametrize("name", sorted(e.name for e in catalog() if e.named))
def test_every_parameter_and_published_figure_cites_a_source(name: str) -> None:
    entry = load_model(name)
    assert citation_problems(entry) == []
    for c in entry.published:
        assert entry.sources[c.source].strip()
        if c.span is not None:  # the corner's workload fits the model
            assert parse_size(c.span) <= model_capacity(model_params(name))


def test_a_missing_citation_is_found() -> None:
    entry = load_model("samsung-840pro-256")
    params = {**entry.params, "t_prog_us": 900, "new_knob": 1}
    sources = {k: v for k, v in entry.param_sources.items() if k != "channels"}
    sources["t_prog_us"] = "typical:"  # says nothing
    broken = ModelEntry(entry.name, entry.kind, entry.description, params, sources, entry.sources,
                        (*entry.published, Corner("x", "read", 1.0, "MB/s", "nowhere")))
    problems = "\n".join(citation_problems(broken))
    assert "channels: no entry in [param_sources]" in problems
    assert "new_knob: no entry" in problems
    assert "t_prog_us: 'typical:' does not say how or why" in problems
    assert "published x: source 'nowhere' is not in [sources]" in problems


def test_a_malformed_published_row_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fslab import model_catalog

    with pytest.raises(SpecError, match=r"published\[0\]\.rw"):
        model_catalog._corner("m", 0, {"corner": "c", "rw": "sideways", "value": 1, "unit": "MB/s", "source": "s"})
    with pytest.raises(SpecError, match=r"published\[0\]: unknown keys \['speed'\]"):
        model_catalog._corner("m", 0, {"corner": "c", "rw": "read", "value": 1, "unit": "MB/s", "source": "s",
                                       "speed": 3})


def test_models_lists_every_shipped_file_and_the_raid_pattern() -> None:
    done = fslab("models")
    assert done.returncode == 0, done.stderr
    listed = set(re.findall(r"^│ (\S+)", done.stdout, flags=re.M))
    assert set(model_files()) <= listed
    assert "raidN-Mx-PRESET" in listed
    assert "generic class model" in done.stdout  # the classes say they cite no device


def test_models_name_shows_each_parameter_with_its_source() -> None:
    done = fslab("models", "samsung-840pro-256")
    assert done.returncode == 0, done.stderr
    rows = {m.group(1): m.group(3) for m in re.finditer(r"^│ (\S+)\s+│\s+(\S+) │ (.*?)\s*│$", done.stdout, re.M)}
    entry = load_model("samsung-840pro-256")
    for param in entry.params:
        assert rows.get(param), f"{param} not shown with a source"
    assert rows["channel_mb_per_s"].startswith("Benchmark Reviews")  # a key resolves to its citation
    assert rows["cmd_read_us"].startswith("derived:")
    assert "100000 IOPS" in done.stdout and "(a parameter is derived from it)" in done.stdout


def test_models_unknown_name_exits_2_naming_the_known_ones() -> None:
    done = fslab("models", "ssd-9000")
    assert done.returncode == 2
    assert "ssd-9000" in done.stderr and "samsung-840pro-256" in done.stderr


def test_validation_bench_judges_every_published_corner() -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "model_validation", "--published"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for entry in catalog():
        for c in entry.published:
            row = next((ln for ln in lines if ln.startswith(entry.name + " ") and f" {c.corner} " in ln), None)
            assert row is not None, (entry.name, c.corner)
            error = float(re.search(r"\s([+-]\d+\.\d)\s", row).group(1))  # type: ignore[union-attr]
            verdict = "PASS" if abs(error) <= 15 else "FAIL"
            assert f" {verdict}" in row, row
            assert (" (derived)" in row) == c.derived
