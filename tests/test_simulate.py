"""Fast tests of the simulate glue: presets, overrides, readers, synthetic specs, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from fslab import cli_simulate
from fslab.errors import SimulationError, SpecError
from fslab.simulate import (
    Requests,
    model_capacity,
    model_names,
    model_params,
    parse_set,
    parse_synthetic,
    read_requests,
    simulate_requests,
    simulate_synthetic,
)


def test_presets_load_and_convert_units() -> None:
    assert {"hdd-7200", "sata-mlc-ssd", "nvme-tlc-ssd", "raid5-8x-sata-mlc-ssd"} <= set(model_names())
    p = model_params("sata-mlc-ssd", {"over_provisioning": 0.12, "capacity": "4GiB", "t_prog_us": 900})
    assert p["capacity"] == 4 << 30 and p["over_provisioning"] == 0.12
    assert p["t_prog_ns"] == 900_000 and p["page_bytes"] == 8192
    r = model_params("raid0-4x-hdd-7200", {"member.rpm": 5400})
    assert r["kind"] == "raid" and r["level"] == 0 and r["member.kind"] == "hdd" and r["member.rpm"] == 5400
    assert model_capacity(model_params("raid5-8x-sata-mlc-ssd")) == 7 * (4 << 30)


def test_bad_names_and_values() -> None:
    with pytest.raises(SpecError):
        model_params("floppy")
    with pytest.raises(SpecError):
        parse_set(["nonsense"])
    with pytest.raises(SimulationError, match="unknown model parameter"):
        simulate_synthetic("rw=randread,count=10", "sata-mlc-ssd", {"capacity": "1GiB", "typo": 1})
    with pytest.raises(SpecError):
        parse_synthetic("rw=randread,bogus=1", 1 << 30)


def test_parse_synthetic() -> None:
    s = parse_synthetic("rw=randwrite,bs=4k,count=1000,span=1GiB,seed=3,rate=500", 4 << 30)
    assert s == {"rw": "randwrite", "bs": 4096, "count": 1000, "span": 1 << 30, "seed": 3, "rate_iops": 500.0}


@pytest.mark.parametrize("count", ["0", "-5", "1.5", "4k"])
def test_synthetic_count_is_a_positive_number_of_requests(count: str) -> None:
    # count=0 used to print a prediction of 0 IOPS and 0 us latency; 1.5 was "not a whole number of bytes"
    with pytest.raises(SpecError, match="requests") as err:
        parse_synthetic(f"rw=randread,count={count}", 1 << 30)
    assert err.value.field == "--synthetic count" and "bytes" not in str(err.value)


def test_csv_and_parquet_requests(tmp_path: Path) -> None:
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("time_ns,op,sector,bytes\n0,R,0,4096\n1000,W,8,4096\n2000,FWFS,16,4096\n3000,F,0,0\n")
    reqs = read_requests(csv_path)
    assert bytes(reqs.op) == b"RWWF" and list(reqs.fua) == [0, 0, 1, 0]

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq_path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "time": [0, 10, 20, 30], "event": ["block_rq_issue", "block_rq_complete", "block_rq_issue", "block_rq_issue"],
        "dev": [7, 7, 7, 7], "sector": [0, 0, 8, 16], "bytes": [4096, 4096, 4096, 8192],
        "op": ["R", "R", "W", "W"], "flags": ["", "", "S", "FUA"], "pid": [1, 1, 1, 1], "comm": ["a"] * 4,
    }), pq_path)
    reqs = read_requests(pq_path)
    assert bytes(reqs.op) == b"RWW" and reqs.sector == [0, 8, 16] and list(reqs.fua) == [0, 0, 1]
    r = simulate_requests(reqs, "sata-mlc-ssd", {"capacity": "4GiB"}, qd=2)
    assert r["requests"] == 3 and r["prediction"] is True


def test_simulate_requests_tuples_open_loop_and_per_io() -> None:
    rows = [(i * 1_000_000, "R", i * 8, 4096) for i in range(100)]
    r = simulate_requests(rows, "hdd-7200", open_loop=True, per_io=True)
    assert r["mode"] == "open-loop" and len(r["latencies_ns"]) == 100
    assert r["counters"]["cache_hits"] > 0  # read-ahead serves the sequential stream
    with pytest.raises(SimulationError, match="capacity"):
        simulate_requests([(0, "W", 1 << 40, 4096)], "sata-mlc-ssd")


def test_requests_beyond_capacity_and_trim() -> None:
    reqs = Requests()
    for i in range(64):
        reqs.append(0, "W", i * 8, 4096)
    reqs.append(0, "D", 0, 64 * 4096)
    reqs.append(0, "F", 0, 0)
    r = simulate_requests(reqs, "sata-mlc-ssd", {"capacity": "4GiB", "precondition": "none"}, qd=4)
    assert r["counters"]["trimmed_bytes"] == 64 * 4096


def test_cli_json() -> None:
    app = typer.Typer()
    cli_simulate.register(app)

    @app.command()
    def _other() -> None:  # a second command, so typer keeps `simulate` as a subcommand
        pass

    result = CliRunner().invoke(app, ["simulate", "--synthetic", "rw=randread,bs=4k,count=2000", "--model",
                                      "sata-mlc-ssd", "--qd", "8", "--set", "capacity=4GiB", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for key in ("requests", "iops", "mb_per_s", "latency_ns", "write_amplification", "gc_runs", "erases"):
        assert key in out
    assert set(out["latency_ns"]) >= {"mean", "p50", "p99"}
    assert out["prediction"] is True and out["requests"] == 2000


@pytest.mark.parametrize("name", model_names())
@pytest.mark.parametrize("pattern", ["rw=randwrite,bs=4k,count=2000", "rw=read,bs=128k,count=500"])
def test_every_shipped_model_runs_with_its_own_defaults(name: str, pattern: str) -> None:
    """A preset that rejects its own parameters is a broken promise (nvme-tlc-ssd once had
    too few spare blocks per plane for its garbage collector)."""
    result = simulate_synthetic(pattern, name)
    assert result["requests"] == int(pattern.rsplit("=", 1)[1]) and result["iops"] > 0


def test_a_trace_file_is_named_and_its_bad_input_is_said_in_its_own_terms(tmp_path: Path) -> None:
    runner = CliRunner()
    app = typer.Typer()
    cli_simulate.register(app)

    @app.command()
    def _other() -> None:  # a second command, so typer keeps `simulate` as a subcommand
        pass

    good = tmp_path / "mytrace.csv"
    good.write_text("time_ns,op,sector,bytes\n0,R,0,4096\n10,W,8,4096\n")
    out = runner.invoke(app, ["simulate", str(good), "--json", "--set", "capacity=4GiB"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["source"] == str(good)  # was "requests" for every file

    empty = tmp_path / "empty.csv"
    empty.write_text("time_ns,op,sector,bytes\n")  # used to print a table of zeros
    with pytest.raises(SpecError, match="holds no requests") as err:
        runner.invoke(app, ["simulate", str(empty)], catch_exceptions=False)
    assert err.value.source == str(empty)

    with pytest.raises(SpecError, match="is a directory"):  # was "no such file"
        read_requests(tmp_path)

    bad = tmp_path / "bad.csv"
    bad.write_text("time_ns,op,sector,bytes\n0,R,0,4096\n1,R,abc,4096\n")
    with pytest.raises(SpecError, match="sector 'abc' is not a whole number") as err:
        read_requests(bad)
    assert err.value.field == "line 3" and "int()" not in str(err.value)


@pytest.mark.parametrize("rate", ["0", "-5", "inf", "nan"])
def test_a_synthetic_rate_must_be_above_zero(rate: str) -> None:
    spec = f"rw=randread,count=10,rate_iops={rate}"
    if rate == "0":  # written as 0: the core would take it for no rate at all
        with pytest.raises(SpecError, match="above 0") as err:
            parse_synthetic(spec, 1 << 30)
        assert err.value.field == "--synthetic rate_iops"
    else:  # the core's check, which a stream given as a dict meets too
        said = f"(?i)rate_iops={rate} must be a finite number of requests/s, not negative"
        with pytest.raises(SimulationError, match=said):
            simulate_synthetic(spec, "sata-mlc-ssd")


@pytest.mark.parametrize("mix", ["-1", "150", "nan"])
def test_a_synthetic_read_mix_is_a_percentage(mix: str) -> None:
    with pytest.raises(SimulationError, match=f"(?i)rwmixread={mix} must be a percentage of reads, 0 to 100"):
        simulate_synthetic({"rw": "randrw", "count": 10, "span": 1 << 30, "rwmixread": float(mix)}, "sata-mlc-ssd")


def test_a_synthetic_number_that_is_no_number_says_so() -> None:
    with pytest.raises(SpecError, match="'abc' is not a number") as err:
        parse_synthetic("rw=randread,count=10,rate=abc", 1 << 30)
    assert err.value.field == "--synthetic rate"
