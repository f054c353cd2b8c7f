"""Bonnie++ CSV parsing, options and notes, on lines captured from real bonnie++ 2.00a runs
here (tests/data/bonnie/README.md says how each was made). Pure: no devices."""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.metrics import kind_of
from fslab.workloads import WORKLOADS, ParamError
from fslab.workloads.bonnie import (
    CSV_FIELDS,
    PHASE_BY_KEY,
    PHASES,
    bonnie_argv,
    parse_csv_line,
    parse_csv_output,
    parse_latency_ns,
    skipped_note,
    too_fast_note,
)

DATA = Path(__file__).parents[1] / "data" / "bonnie"
MIB = 1 << 20


def line(name: str) -> str:
    return (DATA / name).read_text().strip()


def test_fixtures_are_format_1_98_with_50_fields() -> None:
    files = sorted(DATA.glob("*.csv"))
    assert len(files) >= 6
    for f in files:
        fields = f.read_text().strip().split(",")
        assert fields[0] == "1.98" and fields[1] == "2.00a" and len(fields) == CSV_FIELDS, f.name


def test_every_phase_measured_and_units_normalised() -> None:
    # -s 2048 -r 1024 in a 1 GiB cgroup, -n 0: every IO phase timed, create tests off.
    p = parse_csv_line(line("ext4-2g-cgroup.csv"))
    m = p.metrics
    assert m["putc_bytes_per_s"] == 1042 * 1024  # CSV holds KiB/s
    assert m["block_write_bytes_per_s"] == 617363 * 1024
    assert m["rewrite_bytes_per_s"] == 480046 * 1024
    assert m["getc_bytes_per_s"] == 1845 * 1024
    assert m["block_read_bytes_per_s"] == 411830 * 1024
    assert m["seeks_per_s"] == 2742
    assert m["putc_cpu_pct"] == 67 and m["seeks_cpu_pct"] == 23
    assert m["putc_max_latency_ns"] == 22_735_000  # 22735us
    assert m["rewrite_max_latency_ns"] == 120_000_000  # 120ms
    assert p.too_fast == []
    assert p.skipped == [k for k in PHASE_BY_KEY if PHASE_BY_KEY[k].group == "files"]
    assert p.info["file_size"] == "2G" and p.info["seeks"] == "8192" and p.info["seekers"] == "5"


def test_plus_signs_are_no_number_but_latency_is_kept() -> None:
    # 512 MiB on a GB/s device without a cgroup: most phases under half a second.
    p = parse_csv_line(line("ext4-512m-too-fast.csv"))
    assert p.too_fast == ["rewrite", "block_read", "seeks", "seq_create", "seq_stat", "seq_delete",
                          "random_create", "random_stat", "random_delete"]
    for key in p.too_fast:
        phase = PHASE_BY_KEY[key]
        assert phase.rate_metric not in p.metrics  # never a zero, never averaged
        assert phase.cpu_metric not in p.metrics  # its CPU field is +++ too
        assert p.metrics[phase.latency_metric] > 0  # timed per operation, still there
    assert p.metrics["random_stat_max_latency_ns"] == 9_000  # 9us
    assert p.metrics["block_write_bytes_per_s"] == 400360 * 1024


def test_empty_fields_are_skipped_phases() -> None:
    # -s 0: only the create tests ran.
    p = parse_csv_line(line("ext4-files-only.csv"))
    assert p.skipped == ["putc", "block_write", "rewrite", "getc", "block_read", "seeks"]
    assert p.metrics["random_stat_per_s"] == 212676
    assert p.metrics["random_delete_max_latency_ns"] == 351_000_000  # 351ms
    assert not any(k.startswith(("putc", "block", "rewrite", "getc", "seeks")) for k in p.metrics)


def test_latency_in_seconds() -> None:
    # -f (no per-char tests); the file system was frozen for 105 s during the block write.
    p = parse_csv_line(line("ext4-frozen-seconds.csv"))
    assert p.metrics["block_write_max_latency_ns"] == 105 * 10**9
    assert p.skipped[:1] == ["putc"] and "getc" in p.skipped
    assert "putc_max_latency_ns" not in p.metrics


def test_latency_in_milliseconds_and_auto_sized_run() -> None:
    p = parse_csv_line(line("tmp-strace-ms.csv"))  # under strace: slow per-char tests
    assert p.metrics["putc_max_latency_ns"] == 1_238_000_000
    p = parse_csv_line(line("ext4-auto-quick.csv"))
    assert p.metrics["random_delete_max_latency_ns"] == 151_000_000
    assert p.info["files_k"] == "204"


@pytest.mark.parametrize("text,ns", [("9us", 9_000), ("120ms", 120_000_000), ("105s", 105 * 10**9),
                                     ("750ns", 750), ("1.5ms", 1_500_000)])
def test_parse_latency(text: str, ns: int) -> None:
    assert parse_latency_ns(text) == ns


@pytest.mark.parametrize("bad", ["", "12", "3 min", "+++++", "us"])
def test_parse_latency_rejects(bad: str) -> None:
    with pytest.raises(FslabError):
        parse_latency_ns(bad)


def test_wrong_format_and_length_rejected() -> None:
    good = line("ext4-2g-cgroup.csv")
    with pytest.raises(FslabError, match="format"):
        parse_csv_line("1.97" + good[4:])
    with pytest.raises(FslabError, match="fields"):
        parse_csv_line(good + ",extra")
    with pytest.raises(FslabError, match="no CSV"):
        parse_csv_output("Can't create file 000003fff45\n")
    with pytest.raises(FslabError, match="not a number"):
        parse_csv_line(good.replace(",617363,", ",61x363,"))


def test_every_metric_name_has_a_declared_unit() -> None:
    units = {}
    for phase in PHASES:
        for name in (phase.rate_metric, phase.cpu_metric, phase.latency_metric):
            units[name] = kind_of(name).unit
    assert units["block_write_bytes_per_s"] == "B/s"
    assert units["seeks_per_s"] == "ops/s" and units["seq_create_per_s"] == "ops/s"
    assert units["putc_cpu_pct"] == "%"
    assert units["putc_max_latency_ns"] == "ns" and not kind_of("putc_max_latency_ns").higher_is_better


def test_notes_suggest_a_bigger_setting() -> None:
    choice = {"size_bytes": 768 * MIB, "char_size_bytes": 2 * MIB, "files": "204:0:0:1", "seeks": 8192}
    assert too_fast_note(PHASE_BY_KEY["block_read"], {}, choice) == \
        "too fast to measure (+++++): try size >= 3 GiB"
    assert "char_size >= 8 MiB" in too_fast_note(PHASE_BY_KEY["getc"], {}, choice)
    assert "seeks >= 32768" in too_fast_note(PHASE_BY_KEY["seeks"], {}, choice)
    assert "files = '816:0:0:1'" in too_fast_note(PHASE_BY_KEY["random_stat"], {}, choice)
    assert skipped_note(PHASE_BY_KEY["putc"]).startswith("not run")


# ---------------------------------------------------------------------------- options

bonnie = WORKLOADS.get("bonnie")


def test_defaults_are_auto() -> None:
    p = bonnie.validate({})
    assert p == {"size": "auto", "ram": "auto", "seeks": "auto", "direct": 0, "fsync": 0,
                 "char_size": "auto", "files": "auto", "phase_s": 2.0}
    q = bonnie.quick(p)
    assert q["phase_s"] == 1.0 and q["size"] == "auto"


def test_explicit_options() -> None:
    p = bonnie.validate({"size": "2GiB", "ram": "1GiB", "chunk_size": "64k", "char_size": "4MiB",
                         "files": "16:4096:0:8", "fsync": 1, "concurrency": 2, "seed": 7,
                         "seeks": 16384, "seekers": 3})
    assert p["size"] == 2 << 30 and p["ram"] == 1 << 30 and p["chunk_size"] == 65536
    assert p["files"] == "16:4096:0:8"
    choice = {"size_bytes": p["size"], "ram_bytes": p["ram"], "char_size_bytes": p["char_size"],
              "files": p["files"], "seeks": p["seeks"]}
    argv = bonnie_argv(p, choice, Path("/mnt/x"))
    # No -q: the progress messages are what tells when each test ran (bonnie_phases).
    assert argv[:3] == ["bonnie++", "-u", "root"] and "-q" not in argv
    joined = " ".join(argv)
    for part in ("-s 2048:65536:16384:3", "-r 1024", "-n 16:4096:0:8", "-f4", "-b", "-c 2",
                 "-z 7", "-d /mnt/x"):
        assert part in joined
    q = bonnie.quick(p)
    assert q["size"] == 1 << 30 and q["ram"] == 512 * MIB and q["char_size"] == 2 * MIB


def test_direct_turns_per_char_off() -> None:
    p = bonnie.validate({"direct": 1, "size": "1GiB"})
    assert p["char_size"] == 0
    argv = bonnie_argv(p, {"size_bytes": 1 << 30, "ram_bytes": 512 * MIB, "char_size_bytes": 0,
                           "files": "0", "seeks": 8192}, Path("/m"))
    assert "-D" in argv and "-f" in argv and "-s" in argv and argv[argv.index("-s") + 1] == "1024"
    with pytest.raises(ParamError) as exc:
        bonnie.validate({"direct": 1, "char_size": "4MiB"})
    assert exc.value.key == "char_size"


@pytest.mark.parametrize("params,key", [
    ({"size": "1GiB", "ram": "1GiB"}, "size"),  # Bonnie++ wants size >= 2 x ram
    ({"size": "1000k"}, "size"),  # not whole MiB
    ({"chunk_size": "3k"}, "chunk_size"),
    ({"chunk_size": "2MiB"}, "chunk_size"),
    ({"files": "1:0:4096"}, "files"),  # min above max
    ({"files": "1:x"}, "files"),
    ({"files": "1:0:0:0"}, "files"),
    ({"concurrency": 0}, "concurrency"),
    ({"fsync": 2}, "fsync"),
    ({"phase_s": 0.2}, "phase_s"),
    ({"bs": "4k"}, "bs"),
    ({"size": ["1G", "2G"]}, "size"),
])
def test_invalid_options_name_their_key(params: dict, key: str) -> None:
    with pytest.raises(ParamError) as exc:
        bonnie.validate(params)
    assert exc.value.key == key


def test_header_fields_direct_concurrency_and_file_spec() -> None:
    p = parse_csv_line(line("tmp-direct-concurrency2.csv"))
    assert p.info["concurrency"] == "2" and p.info["seed"] == "5" and p.info["file_size"] == "64M"
    assert p.info["files_k"] == "1" and p.info["file_max_size"] == "4096" and p.info["file_dirs"] == "4"
    assert p.skipped == ["putc", "getc"]  # -f: no per-char tests under -D
    assert p.metrics["block_write_bytes_per_s"] == 25868 * 1024
    assert p.too_fast == ["block_read", "seeks", "seq_stat", "random_stat"]
    assert p.metrics["seq_create_per_s"] == 801


# ---------------------------------------------------------------------------- auto sizing

PROBE = {"write_bytes_per_s": 600e6, "read_bytes_per_s": 1.2e9, "random_8k_reads_per_s": 5000.0,
         "char_write_bytes_per_s": 700e3, "char_read_bytes_per_s": 1.5e6,
         "create_per_s": 40e3, "stat_per_s": 150e3, "delete_per_s": 30e3}


def auto_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, params: dict, memory=None) -> dict:
    from fslab.workloads import RunContext
    from fslab.workloads import bonnie as mod

    monkeypatch.setattr(mod, "probe_device", lambda mountpoint: dict(PROBE))
    ctx = RunContext(workdir=tmp_path, device=None, artifact_dir=tmp_path, timeout_s=None,  # type: ignore[arg-type]
                     memory=memory)
    return mod._choose_sizes(bonnie.validate(params), ctx)


def test_auto_sizes_time_every_phase(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    c = auto_choice(monkeypatch, tmp_path, {"phase_s": 2})
    # 1.2 GB/s x 2 s, rounded up to 64 MiB; the cache (cgroup and -r) is half of it.
    assert c["size_bytes"] == 2304 * MIB and c["ram_bytes"] == c["size_bytes"] // 2
    assert c["char_size_bytes"] == 3 * MIB  # 1.5 MB/s x 2 s, whole MiB
    assert c["seeks"] == 80896  # 8 x 5000/s x 2 s = 80000, rounded up to 1024s
    assert c["auto"] == ["size", "ram", "char_size", "files", "seeks"]
    # Timing stat (150k/s) would need 440k files: over budget, so create/delete set the count.
    assert c["files"] == str(-(-int(1.5 * 40e3 * 2) // 1024))
    assert any("stat phases may show +++++" in w for w in c["warnings"])


def test_auto_respects_the_executor_memory_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fslab.cgroups import MemoryLimit

    given = MemoryLimit(tmp_path, 1, 2 << 30)
    c = auto_choice(monkeypatch, tmp_path, {"phase_s": 1}, memory=given)
    assert c["ram_bytes"] == 2 << 30 and c["size_bytes"] == 4 << 30  # twice the cache
    with pytest.raises(FslabError, match="differs"):
        auto_choice(monkeypatch, tmp_path, {"ram": "1GiB", "size": "4GiB"}, memory=given)


def test_explicit_sizes_skip_the_probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    c = auto_choice(monkeypatch, tmp_path, {"size": "1GiB", "char_size": 0, "files": 0, "seeks": 8192})
    assert c["probe"] is None and c["ram_bytes"] == 512 * MIB and c["files"] == "0"
