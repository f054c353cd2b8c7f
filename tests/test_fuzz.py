"""Fuzzing (hypothesis) of everything that reads a user's file: the study loader, job files
(fslab's JSON jobs and fio job files), the trace importers and simulate's request lists.
Whatever the input, the answer is a value or an FslabError naming the file (and the field
or line where there is one), never another exception. Derandomized and bounded, so CI
runs the same examples every time in a few seconds; each crash found is also kept below
as an ordinary test."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fslab.backends import choose_backend
from fslab.errors import FslabError, SpecError
from fslab.job.entry import load_job, write_job
from fslab.plan import make_plan
from fslab.simulate import read_requests
from fslab.study import load_spec, parse_spec, preset_names
from fslab.trace.formats import (
    load_trace,
    parse_blk_tracer_text,
    parse_blkparse_text,
    parse_tracefs_text,
    write_parquet,
)
from fslab.workloads.fio import read_job_files

TRACES = Path(__file__).parent / "data" / "traces"
FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def clean(action: Callable[[], Any], *names: str) -> Any:
    """Run ``action``; an FslabError must name every one of ``names``. Any other exception
    propagates and fails the example."""
    try:
        return action()
    except FslabError as exc:
        for name in names:
            assert name in str(exc), f"error does not name {name!r}: {exc}"
        return exc


# ------------------------------------------------------------------ value strategies

KEYS = ["study", "device", "filesystems", "workloads", "name", "kind", "size", "bs", "rw",
        "axes", "zip", "memory", "timeout", "repetitions", "order", "seed", "backend", "fresh",
        "trace", "simulate", "mkfs", "mount", "type", "image_dir", "job_file", "layout",
        "ext4", "xfs", "btrfs", "fio", "bonnie", "mobibench", "filesize", "runtime", "iodepth",
        "drop_caches", "description", "exec_prerun", "direct", "numjobs", "sync", "file_size"]
SIZES = ["4k", "1G", "0", "-1", "4q", "1e9", "18446744073709551616", "1.5M", "", " 2 GiB", "auto",
         "1" + "0" * 400, "inf", "x\nexec_prerun=id", "30s", "nan"]
SCALARS = (st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(SIZES + KEYS))


def toml_values(leaves: st.SearchStrategy[Any] = SCALARS) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(KEYS) | st.text(max_size=6)
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(keys, inner, max_size=4), max_leaves=12)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out += _paths(value, (*prefix, index))
    return out


@st.composite
def mutated(draw: st.DrawFn, original: Any, values: st.SearchStrategy[Any]) -> Any:
    """``original`` with one to four random edits: a value replaced, a key or item
    removed, a key added, a value wrapped in a list or turned into text."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(data)))
        if not path:
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        action = draw(st.sampled_from(["replace", "remove", "add", "wrap", "text"]))
        if action == "replace":
            parent[key] = draw(values)
        elif action == "remove":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = draw(values)
        elif action == "wrap":
            parent[key] = [parent[key]]
        elif action == "text":
            parent[key] = str(parent[key])
    return data


def preset_data() -> list[tuple[str, dict[str, Any]]]:
    folder = resources.files("fslab") / "presets"
    return [(name, tomllib.loads((folder / f"{name}.toml").read_text())) for name in preset_names()]


# ------------------------------------------------------------------ the study loader


@FUZZ
@given(data=st.dictionaries(st.sampled_from(KEYS), toml_values(), max_size=5))
def test_study_loader_on_generated_dicts(data):
    result = clean(lambda: parse_spec(data, "fuzz.toml"), "fuzz.toml")
    assert not isinstance(result, FslabError) or isinstance(result, SpecError)


@settings(FUZZ, max_examples=30)  # each new fio parameter set costs a `fio --parse-only`
@given(st.data())
def test_study_loader_on_mutated_presets(data):
    name, original = data.draw(st.sampled_from(preset_data()))
    study = data.draw(mutated(original, toml_values()))
    result = clean(lambda: parse_spec(study, f"{name}.toml"), f"{name}.toml")
    assert not isinstance(result, FslabError) or isinstance(result, SpecError)


# ------------------------------------------------------------------ job files


@pytest.fixture(scope="module")
def job_json() -> dict[str, Any]:
    spec, source, _ = load_spec("quickstart")
    return make_plan(spec, backends=choose_backend, seed=1, source=source).jobs[0].to_json()


JSON_LEAVES = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
               | st.text(max_size=10) | st.sampled_from(["fslab-job/1", "host", "fio", "ext4", "image"]))


@FUZZ
@given(st.data())
def test_load_job_on_mutated_jobs(tmp_path, job_json, data):
    job = data.draw(mutated(job_json, toml_values(JSON_LEAVES)))
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    clean(lambda: load_job(path), str(path))


@FUZZ
@given(cut=st.integers(0, 2000), junk=st.binary(max_size=8))
def test_load_job_on_cut_and_garbled_files(tmp_path, job_json, cut, junk):
    path = tmp_path / "job.json"
    text = json.dumps(job_json).encode()
    path.write_bytes(text[:cut] + junk)
    clean(lambda: load_job(path), str(path))


def test_a_written_job_loads_back(tmp_path, job_json):
    spec, source, _ = load_spec("quickstart")
    job = make_plan(spec, backends=choose_backend, seed=1, source=source).jobs[0]
    write_job(job, tmp_path / "j.json")
    assert load_job(tmp_path / "j.json") == job


FIO_LINES = ["[global]", "[job1]", "rw=randread", "bs=4k", "size=1M", "directory=/tmp",
             "filename=../x", "exec_prerun=id", "ioengine=exec", "include other.fio", "include",
             "include /nonexistent", "; comment", "# comment", "", "=", "key=", "=value",
             "filename=a:/dev/sda", "ioengine = external:/x.so", "include ../../etc/passwd"]


@FUZZ
@given(lines=st.lists(st.sampled_from(FIO_LINES) | st.text(max_size=30), max_size=12),
       allow=st.booleans())
def test_fio_job_files(tmp_path, lines, allow):
    path = tmp_path / "job.fio"
    (tmp_path / "other.fio").write_text("[other]\nrw=read\n")
    path.write_text("\n".join(lines))
    result = clean(lambda: read_job_files(path, allow_exec=allow), str(tmp_path))
    if isinstance(result, FslabError):
        assert isinstance(result, SpecError) and (result.field or "").startswith(("line ", "")), result


@FUZZ
@given(raw=st.binary(max_size=200))
def test_fio_job_files_of_any_bytes(tmp_path, raw):
    path = tmp_path / "job.fio"
    path.write_bytes(raw)
    clean(lambda: read_job_files(path, allow_exec=False), str(path))


# ------------------------------------------------------------------ trace importers

TRACE_FILES = ["blkparse.txt", "blk-tracer.txt", "btrfs-dd-osync.tracefs.txt"]
PARSERS = {"blkparse.txt": parse_blkparse_text, "blk-tracer.txt": parse_blk_tracer_text,
           "btrfs-dd-osync.tracefs.txt": parse_tracefs_text}
INSERTS = st.sampled_from(["99999999999999999999999", "-1", " ", "+", "[", "]", ":", ".", ",",
                           "4294967296", "FN", "0", "\x00", "é", "1.5", "4096 + 8"])


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """Lines of captured text with a few edits that keep most of each line's shape: a
    number made huge or negative, a character replaced, a field dropped, a line cut."""
    lines = list(lines)
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        action = draw(st.sampled_from(["insert", "replace", "cut", "drop-field", "dup"]))
        at = draw(st.integers(0, max(len(line), 1)))
        if action == "insert":
            line = line[:at] + draw(INSERTS) + line[at:]
        elif action == "replace" and line:
            at = min(at, len(line) - 1)
            line = line[:at] + draw(st.characters(codec="utf-8") | INSERTS) + line[at + 1:]
        elif action == "cut":
            line = line[:at]
        elif action == "drop-field":
            fields = line.split(" ")
            if len(fields) > 1:
                del fields[draw(st.integers(0, len(fields) - 1))]
            line = " ".join(fields)
        else:
            lines.insert(i, line)
        lines[i] = line
    return lines


def _trace_lines(name: str) -> list[str]:
    text = (TRACES / name).read_text().splitlines()
    return [line for line in text if line.strip()][:60]  # the first events suffice


@FUZZ
@given(st.data())
def test_trace_text_parsers_on_mutated_captures(data):
    name = data.draw(st.sampled_from(TRACE_FILES))
    lines = data.draw(mutated_lines(_trace_lines(name)))
    clean(lambda: PARSERS[name](lines, {"source": name}), name)


@FUZZ
@given(st.data())
def test_load_trace_on_mutated_files(tmp_path, data):
    name = data.draw(st.sampled_from(TRACE_FILES))
    lines = data.draw(mutated_lines(_trace_lines(name)))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    clean(lambda: load_trace(path), str(path))


@FUZZ
@given(cut=st.integers(0, 5000), flip=st.integers(0, 5000), byte=st.integers(0, 255))
def test_load_trace_on_damaged_parquet(tmp_path, cut, flip, byte):
    path = tmp_path / "t.parquet"
    if not (tmp_path / "good.parquet").exists():
        write_parquet(load_trace(TRACES / "blkparse.txt"), tmp_path / "good.parquet")
    raw = bytearray((tmp_path / "good.parquet").read_bytes())
    if flip < len(raw):
        raw[flip] = byte
    path.write_bytes(bytes(raw[: max(cut, 4)]))
    clean(lambda: load_trace(path), str(path))


# ------------------------------------------------------------------ simulate's requests

CSV_GOOD = ["time_ns,op,sector,bytes,fua", "0,W,0,4096,0", "1000,R,8,4096,", "2000,FN,0,0,1",
            "3000,flush,0,0,0", "4000,D,64,65536,0"]


@FUZZ
@given(st.data())
def test_read_requests_on_mutated_csv(tmp_path, data):
    lines = data.draw(mutated_lines(CSV_GOOD))
    path = tmp_path / "reqs.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    clean(lambda: read_requests(path), str(path))


@FUZZ
@given(raw=st.binary(max_size=300))
def test_read_requests_on_any_bytes(tmp_path, raw):
    path = tmp_path / "reqs.csv"
    path.write_bytes(raw)
    clean(lambda: read_requests(path), str(path))


# ------------------------------------------------------------------ what the fuzzer found
# Each crash, as its minimal example: it gave a traceback before it was fixed.

BASE_STUDY: dict[str, Any] = {"study": {"name": "x"}, "filesystems": {"ext4": {}},
                              "workloads": [{"kind": "fio", "name": "w", "size": "1M"}]}


@pytest.mark.parametrize("params,field", [
    ({"runtime": float("inf")}, "workloads[0].runtime"),  # int(inf): OverflowError
    ({"ramp_time": "9" * 400}, "workloads[0].ramp_time"),  # a float that overflows
    ({"size": "1" + "0" * 400}, "workloads[0].size"),
    ({"timeout": float("nan")}, "workloads[0].timeout"),  # accepted, then every run hung on it
    ({"description": "x\nexec_prerun=touch /tmp/x"}, "workloads[0].description"),  # a job-file line
    ({"kind": "mobibench", "runtime": float("inf"), "size": None}, "workloads[0].runtime"),
    ({"kind": "mobibench", "bs": 0, "size": None}, "workloads[0].bs"),
])
def test_study_values_that_crashed(params, field):
    study = copy.deepcopy(BASE_STUDY)
    study["workloads"][0].update(params)
    study["workloads"][0] = {k: v for k, v in study["workloads"][0].items() if v is not None}
    with pytest.raises(SpecError) as err:
        parse_spec(study, "found.toml")
    assert field in str(err.value) and "found.toml" in str(err.value)


def test_a_line_break_never_reaches_a_generated_job_file(tmp_path):
    from fslab.workloads.fio import job_file_text

    with pytest.raises(SpecError) as err:
        job_file_text({"rw": "read", "description": "x\nexec_prerun=id"}, tmp_path)
    assert err.value.field == "description"


@pytest.mark.parametrize("parser,line", [
    (parse_blkparse_text, "  999999999999999999999998,16   1  1  0.000000000  4821  Q  WS 26624 + 8 [dd]"),
    (parse_blkparse_text, "  8,16   1  1  0.000000000  4821  Q  WS 99999999999999999999999 + 8 [dd]"),
    (parse_blk_tracer_text, "  dd-4821 [001] d..1. 99999999999.000001: 8,16 D  WS 26624 + 4294967296 [dd]"),
    (parse_tracefs_text, "  dd-99999999999 [000] ..... 12.5: block_rq_issue: 8,0 WS 4096 () 8 + 8 [dd]"),
])
def test_trace_numbers_out_of_range(parser, line):
    with pytest.raises(FslabError, match=r"cap\.txt: line 2: .*(out of range|not a device number)"):
        parser(["# header", line], {"source": "cap.txt"})


def test_a_cut_parquet_trace(tmp_path):
    write_parquet(load_trace(TRACES / "blkparse.txt"), tmp_path / "good.parquet")
    (tmp_path / "cut.parquet").write_bytes((tmp_path / "good.parquet").read_bytes()[:4])
    with pytest.raises(FslabError, match="cut.parquet: not a readable Parquet trace"):
        load_trace(tmp_path / "cut.parquet")


@pytest.mark.parametrize("text,expected", [
    (b"time_ns,op,sector,bytes\n0,W,0\n", "line 2: has 3 fields where the header has 4"),
    (b"time_ns,op,sector,bytes\n0,op,0,4096\n", "line 2: unknown op 'op'"),
    (b"\x80time_ns,op\n", "not a text (UTF-8) CSV file"),
    (b"time_ns,op,sector,bytes\n0,W,-8,4096\n", "line 2: sector -8 is out of range"),
])
def test_request_lists_that_crashed(tmp_path, text, expected):
    path = tmp_path / "reqs.csv"
    path.write_bytes(text)
    with pytest.raises(SpecError) as err:
        read_requests(path)
    assert str(path) in str(err.value) and expected in str(err.value)
