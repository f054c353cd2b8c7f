"""fio: a job built from study parameters (or the user's own job file), run for real with
JSON output, parsed into per-direction IOPS, bandwidth and latency metrics.

fio failing, hanging past its timeout or printing something that is not JSON raises
WorkloadFailed; the runner stores that run as failed with fio's stderr beside it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..commands import run_command, tool_version
from ..errors import CommandFailed, SpecError, WorkloadFailed
from ..metrics import MetricKind
from ..units import FIO_KB_BASES, given_text, parse_duration_s, parse_size
from . import (
    ParamError,
    RunContext,
    Workload,
    WorkloadCapabilities,
    WorkloadResult,
    direct_io_caveats,
    fio_steady,
    quick_size,
    register_workload,
    tools_may_be_asked,
    tools_not_asked,
)
from .fio_clients import client_metrics, hosts_file, parse_clients
from .fio_paths import path_problem, section_problem

RW_CHOICES = ("read", "write", "rw", "readwrite", "randread", "randwrite", "randrw",
              "trim", "randtrim", "trimwrite")
SIZE_OPTIONS = ("bs", "size", "offset", "io_size")
INT_OPTIONS = ("nrfiles", "numjobs", "iodepth", "rwmixread", "rwmixwrite", "fsync",
               "fdatasync", "openfiles", "iodepth_batch_submit", "loops")
BOOL_OPTIONS = ("direct", "time_based", "end_fsync", "fsync_on_close", "invalidate",
                "buffered", "randrepeat", "sync", "create_on_open")
DURATION_OPTIONS = ("runtime", "ramp_time")
# fslab's own keys, not passed to fio.
OWN_KEYS = ("job_file", "layout", "clients", "steady_state")
# Named file layouts (seed 002): the same 256 MiB as a few large files or many small ones.
LAYOUTS: dict[str, dict[str, int]] = {
    "few-large": {"nrfiles": 2, "size": 256 << 20},
    "many-small": {"nrfiles": 200, "size": 256 << 20},
}
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
QUICK_RUNTIME_S = 1
QUICK_RAMP_S = 1


def _size_or_range(key: str, value: Any, kb_base: int) -> str:
    """filesize may be a range ('1k-64k'); both ends must be sizes."""
    parts = str(value).split("-") if isinstance(value, str) else [value]
    try:
        sizes = [parse_size(p, kb_base=kb_base) for p in parts]
    except ValueError as exc:
        raise ParamError(key, str(exc)) from None
    return "-".join(str(s) for s in sizes)


METRICS: dict[str, MetricKind] = {
    "iops": MetricKind("IOPS", True, "I/O operations per second"),
    "bw_bytes_per_s": MetricKind("B/s", True, "bandwidth"),
    "lat_mean_ns": MetricKind("ns", False, "mean total latency"),
    "clat_mean_ns": MetricKind("ns", False, "mean completion latency"),
    "clat_p50_ns": MetricKind("ns", False, "median completion latency"),
    "clat_p99_ns": MetricKind("ns", False, "99th percentile completion latency"),
    "clat_p99_9_ns": MetricKind("ns", False, "99.9th percentile completion latency"),
    "io_bytes": MetricKind("B", True, "bytes transferred"),
    "runtime_ms": MetricKind("ms", False, "time the workload ran"),
    "sync_lat_mean_ns": MetricKind("ns", False, "mean fsync latency"),
    "sync_lat_p99_ns": MetricKind("ns", False, "99th percentile fsync latency"),
    "cpu_user_pct": MetricKind("%", False, "user CPU"),
    "cpu_sys_pct": MetricKind("%", False, "system CPU"),
    "clients_count": MetricKind("hosts", True, "fio servers that reported (clients = [...])"),
    **fio_steady.STEADY_METRICS,
}


class FioWorkload(Workload):
    name = "fio"
    capabilities = WorkloadCapabilities(traceable=True)
    tools = {"fio": "fio"}
    metrics = METRICS
    example: dict[str, Any] = {"rw": "randread", "bs": "4k", "size": "64M"}
    chart_axis = "rw"

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "clients" in params:  # fio servers driven as one job (fio_clients)
            out["clients"] = parse_clients(params["clients"])
            params = {k: v for k, v in params.items() if k != "clients"}
        steady = params.get("steady_state")  # a table: parsed once the rest is (fio_steady)
        params = {k: v for k, v in params.items() if k != "steady_state"}
        kb_base = _kb_base(params.get("kb_base", 1024))
        for key, value in params.items():
            problem = _outside_mount(key, str(value)) or _bad_include(key)
            if problem:
                raise ParamError(key, problem)
            if not _OPTION_NAME.match(key):
                raise ParamError(key, "is not a fio option name (lower case letters, digits, _)")
            if isinstance(value, (list, dict)):
                raise ParamError(key, "takes one value; to vary it, put it under [workloads.axes]")
            if isinstance(value, str) and not value.isprintable():
                # A line break would start a new job-file line: an option nobody checked.
                raise ParamError(key, f"must be one line of printable text (given: {given_text(value)})")
            out[key] = self._normalise(key, value, kb_base)
        if "layout" in out:
            if out["layout"] not in LAYOUTS:
                raise ParamError("layout", f"{out['layout']!r} is not a named layout; "
                                 f"known: {', '.join(LAYOUTS)} (or set nrfiles and size)")
            clash = sorted(set(LAYOUTS[out["layout"]]) & set(params))
            if clash:
                raise ParamError("layout", f"a layout sets {clash} itself; remove them")
            out = {**out, **LAYOUTS[out["layout"]]}
        if steady is not None:
            out["steady_state"] = fio_steady.parse(steady, out)
        if "job_file" in out:
            clash = sorted(set(out) - {"job_file"})
            if clash:
                raise ParamError("job_file", f"a job file is run as-is; remove {clash} or put them in the file")
            return out
        if "rw" not in out:
            out["rw"] = "read"
        _check_direct_alignment(out, params)
        if "size" not in out and "filesize" not in out and "io_size" not in out:
            raise ParamError("size", "fio needs size (how much data per job), e.g. size = '1G'")
        if tools_may_be_asked():
            _parse_only(_option_items(out))
        return out

    def _normalise(self, key: str, value: Any, kb_base: int) -> Any:
        try:
            if key == "rw" and value not in RW_CHOICES:
                raise ParamError(key, f"{given_text(value)} is not an fio pattern; allowed: {', '.join(RW_CHOICES)}")
            if key in SIZE_OPTIONS:
                return parse_size(value, kb_base=kb_base)
            if key == "filesize":
                return _size_or_range(key, value, kb_base)
            if key in INT_OPTIONS:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ParamError(key, f"must be a whole number >= 0 (given: {given_text(value)})")
                if key in ("rwmixread", "rwmixwrite") and value > 100:
                    raise ParamError(key, f"is a percentage, 0 to 100 (given: {value})")
                if key in ("numjobs", "iodepth", "nrfiles") and value == 0:
                    raise ParamError(key, "must be at least 1")
                return value
            if key in BOOL_OPTIONS:
                if value in (0, 1, True, False):
                    return int(value)
                raise ParamError(key, f"must be 0 or 1 (given: {given_text(value)})")
            if key in DURATION_OPTIONS:
                seconds = parse_duration_s(value)
                if seconds != int(seconds):
                    raise ParamError(key, "fio takes whole seconds here")
                return int(seconds)
        except ValueError as exc:
            if isinstance(exc, ParamError):
                raise
            raise ParamError(key, str(exc)) from None
        if isinstance(value, bool):  # any other fio switch: fio reads 1 and 0, not Python's True
            return int(value)
        return value

    def runs_program(self, key: str, value: Any) -> str | None:
        """Why this option makes fio run a program (as root), or None."""
        return runs_program(key, str(value))

    def prevalidate(self, param_sets: list[dict[str, Any]]) -> None:
        """One ``fio --parse-only`` for every option set of a study (each a job section of
        one file) instead of one each: a start of fio costs 0.1-0.2 s of CPU (its clock
        calibration), and seed-002's plan has 50 sets. The sets fio accepts together are
        not asked again alone; if it rejects any, each is asked alone, as before, and the
        error names its own workload. A set with an option that runs a program is left out:
        fio may load an ioengine's library while it parses (an engine option it does not
        know itself), and such a set is refused first unless the study allows it."""
        if shutil.which("fio") is None or not tools_may_be_asked():
            return
        items = []
        with tools_not_asked():
            for params in param_sets:
                if any(runs_program(key, str(value)) for key, value in params.items()):
                    continue
                try:
                    out = self.validate(params)
                except (ParamError, SpecError):
                    continue  # validate reports it, naming the field
                if "job_file" not in out and not any(runs_program(k, v) for k, v in _option_items(out)):
                    items.append(_option_items(out))
        _parse_only_many(tuple(dict.fromkeys(i for i in items if i not in _ACCEPTED)))

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        out = dict(params)
        for key in ("size", "io_size"):
            if key in out:
                out[key] = quick_size(out[key])
        if "runtime" in out:
            out["runtime"] = min(out["runtime"], QUICK_RUNTIME_S)
            if "steady_state" in out:  # room for the ramp and the window, or it is never reached
                out["runtime"] = fio_steady.quick(out["steady_state"], out["runtime"])
        if "ramp_time" in out:
            out["ramp_time"] = min(out["ramp_time"], QUICK_RAMP_S)
        return out

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        order = ["bw_bytes_per_s", "iops"] if int(params.get("bs", 4096)) >= 64 << 10 else ["iops", "bw_bytes_per_s"]
        if "steady_state" in params:  # the figure of the steady window comes first
            order.insert(0, fio_steady.METRICS[params["steady_state"]["metric"]])
        return order

    def tool_versions(self) -> dict[str, str | None]:
        return {"fio": tool_version(["fio", "--version"])}

    def default_timeout_s(self, params: dict[str, Any]) -> float:
        if "runtime" in params:
            return 3 * (params["runtime"] + params.get("ramp_time", 0)) + 300
        return 3600.0

    def work_rates(self, params: dict[str, Any], metrics: dict[str, float]) -> list[str]:
        # fio counts no I/O of its ramp_time, which the trace holds: no single window then.
        return [] if params.get("ramp_time") else headline_rates(metrics)

    def queue_depth(self, params: dict[str, Any]) -> int:
        # iodepth outstanding in each of numjobs processes (a job file's own are not seen).
        return max(1, int(params.get("iodepth", 1) or 1)) * max(1, int(params.get("numjobs", 1) or 1))

    def caveats(self, params: dict[str, Any], filesystem: Mapping[str, Any]) -> list[str]:
        return direct_io_caveats(params.get("direct") in (1, True), filesystem)

    def declared_runtime_s(self, params: dict[str, Any]) -> float | None:
        return _stated_runtime_s(params) if params.get("time_based") else None

    def runtime_cap_s(self, params: dict[str, Any]) -> float | None:
        # fio's runtime without time_based: the job stops there or when its size is done.
        return None if params.get("time_based") else _stated_runtime_s(params)

    def inputs(self, params: dict[str, Any], study_dir: Path, allow_exec: bool) -> dict[str, str]:
        """A job file and every file it includes, read and checked now (read_job_files):
        they travel in the job, and an edited file is another cell."""
        if "job_file" not in params:
            return {}
        given = str(params["job_file"])
        if given.startswith(("/", "~")) or ".." in Path(given).parts:
            raise ParamError("job_file", f"{given!r} is outside the study file's folder: copy the job file "
                             "beside the study file (or below it) and name it relatively, e.g. 'job.fio' "
                             "(its text is stored with the results)")
        source = study_dir / given
        if source.exists() and not source.resolve().is_relative_to(study_dir.resolve()):
            raise ParamError("job_file", f"{given!r} leads outside the study file's folder (a link to "
                             f"{source.resolve()}): copy the job file itself beside the study file")
        if not source.is_file():
            raise ParamError("job_file", f"{params['job_file']!r} not found (looked at {source})")
        try:
            return read_job_files(source, allow_exec=allow_exec)
        except SpecError as exc:
            raise ParamError("job_file", str(exc)) from None

    def _job(self, params: dict[str, Any], ctx: RunContext) -> tuple[Path, list[str]]:
        """The job file in the artifact directory, and extra command-line options."""
        if "job_file" not in params:
            job_path = ctx.artifact_dir / JOB_FILE_INPUT
            if not ctx.allow_exec:  # a job JSON may come from anywhere: check again here
                for key, value in params.items():
                    why = runs_program(key, str(value))
                    if why:
                        raise SpecError(f"{why}; {ALLOW_EXEC_FIX}", field=key)
            job_path.write_text(job_file_text(params, ctx.workdir))
            return job_path, []
        if JOB_FILE_INPUT not in ctx.inputs:
            raise WorkloadFailed(f"the job carries no text of job_file {params['job_file']!r} "
                                 "(a job planned by an older fslab? plan it again)")
        job_path = write_job_files(ctx.inputs, ctx.artifact_dir, allow_exec=ctx.allow_exec)
        return job_path, [f"--directory={fio_directory(ctx.workdir)}"]

    def data_bytes(self, params: dict[str, Any], inputs: dict[str, str] | None = None) -> int | None:
        """Bytes of files the job lays out (size x numjobs); for a job file, what its jobs'
        sizes say (job_file_data_bytes), when the file's text is at hand."""
        if "job_file" in params:
            return job_file_data_bytes(inputs) if inputs else None
        if "size" not in params:
            return None
        # With clients, every server lays out its own files on the shared storage.
        return int(params["size"]) * int(params.get("numjobs", 1)) * len(params.get("clients", [None]))

    def preflight(self, params: dict[str, Any], inputs: dict[str, str]) -> list[str]:
        """A job file fio rejects (--parse-only), found before the first mkfs."""
        if JOB_FILE_INPUT not in inputs or shutil.which("fio") is None:
            return []
        import tempfile

        with tempfile.TemporaryDirectory(prefix="fslab-jobfile-") as tmp:
            path = write_job_files(inputs, Path(tmp), allow_exec=True)
            done = run_command(["fio", "--parse-only", str(path)], timeout=60, check=False)
        if done.returncode == 0:
            return []
        reason = (done.stderr or done.stdout).strip().replace(tmp, "").splitlines()
        return [f"job_file {params['job_file']}: fio rejects it: {' '.join(reason[:3])}"]

    def layout_key(self, params: dict[str, Any]) -> str | None:
        """Every option except those that only say how the files are read or written
        (RUN_ONLY_OPTIONS): the files' names, sizes and how they were written. A job file
        or remote clients lay out what fslab cannot see: never shared."""
        if "job_file" in params or "clients" in params:
            return None
        shaping = {k: v for k, v in params.items() if not _run_only(k)}
        return json.dumps(shaping, sort_keys=True, default=str)

    def prepare(self, params: dict[str, Any], ctx: RunContext) -> bool:
        """Lay the files out (fio --create_only) before the device counters and any trace
        start, so they count the measured I/O only. fio then reuses the files."""
        job_path, extra = self._job(params, ctx)
        timeout = ctx.timeout_s or self.default_timeout_s(params)
        if "clients" in params:  # each server lays out its own files
            hosts = hosts_file(params["clients"], ctx.artifact_dir / "clients.list")
            run_command(["fio", "--create_only=1", f"--client={hosts}", *extra, str(job_path)],
                        timeout=timeout, cwd=str(ctx.artifact_dir))
            return True
        try:
            run_command(["fio", "--create_only=1", "--output-format=json",
                         f"--output={ctx.artifact_dir / 'fio-layout.json'}", *extra, str(job_path)],
                        timeout=timeout, cwd=str(ctx.artifact_dir))
        except CommandFailed as exc:
            (ctx.artifact_dir / "fio-layout.stderr").write_text(exc.stderr)
            raise
        return True

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        job_path, extra = self._job(params, ctx)
        output = ctx.artifact_dir / "fio.json"
        if "clients" in params:
            return self._run_clients(params, ctx, job_path, extra, output)
        argv = ["fio", "--output-format=json", f"--output={output}", *extra, str(job_path)]
        timeout = ctx.timeout_s or self.default_timeout_s(params)
        try:
            # In the artifact directory: files fio writes by relative name (an exec option's
            # JOB.prerun.txt, a write_iolog) are kept with the run, not left where fslab ran.
            done = run_command(argv, timeout=timeout, preexec=ctx.memory.enter if ctx.memory else None,
                               cwd=str(ctx.artifact_dir))
        except CommandFailed as exc:
            (ctx.artifact_dir / "fio.stderr").write_text(exc.stderr)
            raise
        (ctx.artifact_dir / "fio.stderr").write_text(done.stderr)
        text = output.read_text() if output.exists() else ""
        report = parse_json_output(text, done.stderr)
        metrics, runtime_s, notes = metrics_from_report(report)
        runtime_s += params.get("ramp_time", 0)
        if "steady_state" in params:
            steady, steady_notes = fio_steady.metrics(params["steady_state"], report)
            metrics.update(steady)
            notes.update(steady_notes)
        return WorkloadResult(metrics, runtime_s, info={"fio_version": report.get("fio version")},
                              notes=notes)

    def _run_clients(self, params: dict[str, Any], ctx: RunContext, job_path: Path, extra: list[str],
                     output: Path) -> WorkloadResult:
        """The job on every server in ``clients`` at once (fio_clients); fio prints the
        client-mode JSON on stdout."""
        hosts = hosts_file(params["clients"], ctx.artifact_dir / "clients.list")
        timeout = ctx.timeout_s or self.default_timeout_s(params)
        try:
            done = run_command(["fio", "--output-format=json", f"--client={hosts}", *extra, str(job_path)],
                               timeout=timeout, cwd=str(ctx.artifact_dir))
        except CommandFailed as exc:
            (ctx.artifact_dir / "fio.stderr").write_text(exc.stderr)
            raise
        output.write_text(done.stdout)
        (ctx.artifact_dir / "fio.stderr").write_text(done.stderr)
        report = parse_json_output(done.stdout, done.stderr)
        metrics, runtime_s = client_metrics(report, params["clients"], done.stderr)
        return WorkloadResult(metrics, runtime_s + params.get("ramp_time", 0),
                              info={"fio_version": report.get("fio version"), "clients": params["clients"]})


def _kb_base(value: Any) -> int:
    if value not in FIO_KB_BASES or isinstance(value, bool):
        raise ParamError("kb_base", f"fio takes 1024 (its default) or 1000 (given: {given_text(value)})")
    return int(value)


SECTOR_BYTES = 512  # the smallest logical block a device has: O_DIRECT I/O must be a multiple


def _check_direct_alignment(out: dict[str, Any], given: dict[str, Any]) -> None:
    """Under direct=1 every I/O must be a multiple of the device's logical block size:
    refuse a block size or offset that cannot be, before anything is made (fio would fail
    each run with EINVAL), saying what fio reads the value as."""
    if not out.get("direct"):
        return
    for key in ("bs", "offset"):
        value = out.get(key)
        if isinstance(value, int) and value % SECTOR_BYTES:
            base = out.get("kb_base", 1024)
            hint = (" (with fio's default kb_base=1024, 'KiB' means 1000 bytes: write '4k', or set "
                    "kb_base = 1000)") if "i" in str(given.get(key, "")).lower() else ""
            raise ParamError(key, f"{given.get(key)!r} is {value} bytes as fio reads it (kb_base={base}), not a "
                             f"multiple of the {SECTOR_BYTES}-byte sector that direct=1 needs{hint}")


def _outside_mount(key: str, value: str) -> str | None:
    """Why an option would make fio touch files outside the file system under test and the
    run's folder (or a raw device), or None: fio_paths holds the table."""
    return path_problem(key, value)


ALLOW_EXEC_FIX = ("fio would run it as root: remove it, or pass --allow-exec to `fslab run` "
                  "if you trust what it runs")
# fio engines that run or load code: `exec` runs `program`; `external:PATH` and a name
# with a slash load a shared object (fio dlopen()s an engine it does not know).
_EXEC_ENGINES = ("exec",)


def runs_program(key: str, value: str) -> str | None:
    """Why a fio option makes fio execute a program or load code, or None. fio's own
    documentation lists these: exec_prerun / exec_postrun (run through system(3)), the
    ``exec`` engine and its ``program``/``arguments``, external engines (dlopen)."""
    key = key.strip().lower()
    value = value.strip()
    if key in ("exec_prerun", "exec_postrun") or key.startswith(("exec_prerun", "exec_postrun")):
        return f"{key} runs a command through the shell"
    if key in ("program", "arguments", "grace_time", "std_redirect"):
        return f"{key} belongs to fio's exec engine, which runs a program"
    if key == "ioengine":
        engine = value.lower()
        if engine in _EXEC_ENGINES:
            return "ioengine=exec runs a program"
        if engine.startswith("external") or "/" in engine:
            return f"ioengine={value} loads code from a shared object"
    return None


def _bad_include(key: str) -> str | None:
    if key.strip().lower() == "include":
        return "is a job-file directive; use job_file to run a job file"
    return None


_INCLUDE_DEPTH = 8
JOB_FILE_INPUT = "job.fio"  # the job file's name among a cell's inputs (and in a run's artifacts)


def _line_problem(key: str, value: str, allow_exec: bool) -> str | None:
    """Why one ``key=value`` line of a job file may not run, or None."""
    problem = _outside_mount(key, value)
    if problem:
        return f"{key}: {problem}"
    why = None if allow_exec else runs_program(key, value)
    return f"{why}; {ALLOW_EXEC_FIX}" if why else None


def _include_target(stripped: str) -> str | None:
    if stripped.lower().startswith("include") and stripped[7:8].isspace():
        return stripped[8:].strip()
    return None


def read_job_files(source: Path, *, allow_exec: bool) -> dict[str, str]:
    """A user's job file and every file it includes (``include NAME``, relative to the
    including file, as fio resolves it), read and checked line by line: no option that
    leads outside the file system under test, none that runs a program unless
    ``allow_exec``, no include outside the job file's folder. Returns the cell's inputs:
    the job file as ``job.fio`` (first), each included file as ``include<N>-<its name>``,
    and every include line naming those.
    Raises SpecError naming the file and line."""
    files: dict[str, str] = {}

    def read(path: Path, depth: int) -> str:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"cannot read the job file: {exc}", source=str(path)) from None
        out = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            where = f"line {number}"
            name = _include_target(stripped)
            if name is not None:
                target = path.parent / name
                if Path(name).is_absolute() or not target.resolve().is_relative_to(source.parent.resolve()):
                    raise SpecError(f"include: {name!r} is outside the job file's folder; keep included "
                                    "files beside the job file (or below it) and name them relatively",
                                    source=str(path), field=where)
                if depth >= _INCLUDE_DEPTH:
                    raise SpecError("includes nest too deeply (a loop?)", source=str(path), field=where)
                if not target.is_file():
                    raise SpecError(f"include: {name!r} not found (looked at {target})",
                                    source=str(path), field=where)
                out.append(f"include {read(target, depth + 1)}")
                continue
            out.append(line)
            if not stripped or stripped[0] in ";#[":
                problem = section_problem(stripped) if stripped.startswith("[") else None
                if problem:
                    raise SpecError(problem, source=str(path), field=where)
                continue
            key, _, value = stripped.partition("=")
            problem = _line_problem(key.strip(), value.strip(), allow_exec)
            if problem:
                raise SpecError(problem, source=str(path), field=where)
        name = JOB_FILE_INPUT if depth == 0 else f"include{len(files) + 1}-{path.name}"
        files[name] = "\n".join(out) + "\n"
        return name

    read(source, 0)
    return {JOB_FILE_INPUT: files.pop(JOB_FILE_INPUT), **files}


def write_job_files(inputs: dict[str, str], directory: Path, *, allow_exec: bool) -> Path:
    """Write a cell's job-file inputs into ``directory``, each line checked again (a job
    JSON may come from anywhere) and each include line naming the written file by its
    absolute path; returns the job file's path. Raises SpecError naming the line."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in inputs.items():
        out = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            target = _include_target(stripped)
            if target is not None:
                if target not in inputs:
                    raise SpecError(f"include: {target!r} is not among the job's files", source=name,
                                    field=f"line {number}")
                out.append(f"include {(directory / target).resolve()}")
                continue
            out.append(line)
            if stripped.startswith("["):
                problem = section_problem(stripped)
                if problem:
                    raise SpecError(problem, source=name, field=f"line {number}")
            elif stripped and stripped[0] not in ";#":
                key, _, value = stripped.partition("=")
                problem = _line_problem(key.strip(), value.strip(), allow_exec)
                if problem:
                    raise SpecError(problem, source=name, field=f"line {number}")
        (directory / name).write_text("\n".join(out) + "\n")
    return directory / JOB_FILE_INPUT


def job_file_data_bytes(inputs: dict[str, str]) -> int | None:
    """Bytes a job file's jobs lay out: for each job section, ``size`` (else ``filesize``
    x ``nrfiles``) x ``numjobs``, ``[global]`` options applying to the jobs after it, as
    fio reads them; jobs naming the same ``filename`` share it (counted once, the largest).
    None when no job states a size this can read (a percentage, a variable)."""
    lines = _expanded_lines(inputs, JOB_FILE_INPUT, 0)
    defaults: dict[str, str] = {}
    jobs: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in lines:
        if line.startswith("[") and line.endswith("]"):
            current = defaults if line[1:-1].strip() == "global" else dict(defaults)
            if current is not defaults:
                jobs.append(current)
            continue
        if current is None or not line or line[0] in ";#":
            continue
        key, _, value = line.partition("=")
        current[key.strip()] = value.strip()

    def size_of(job: dict[str, str]) -> int | None:
        try:  # sizes as fio reads them, with the job's kb_base
            kb_base = int(job.get("kb_base", 1024))
            if "size" in job:
                return parse_size(job["size"], kb_base=kb_base)
            if "filesize" in job:
                return parse_size(job["filesize"].split("-")[-1], kb_base=kb_base) * int(job.get("nrfiles", 1))
        except ValueError:
            return None
        return None

    per_file: dict[str, int] = {}
    total, known = 0, False
    for job in jobs:
        size = size_of(job)
        if size is None:
            continue
        known = True
        try:
            copies = int(job.get("numjobs", 1))
        except ValueError:
            copies = 1
        if "filename" in job:
            per_file[job["filename"]] = max(per_file.get(job["filename"], 0), size)
        else:
            total += size * copies
    return total + sum(per_file.values()) if known else None


def _expanded_lines(inputs: dict[str, str], name: str, depth: int) -> list[str]:
    out: list[str] = []
    for line in inputs.get(name, "").splitlines():
        stripped = line.strip()
        target = _include_target(stripped)
        if target is not None and depth < _INCLUDE_DEPTH:
            out += _expanded_lines(inputs, target, depth + 1)
        else:
            out.append(stripped)
    return out


# Options that change how a job reads and writes its files, not which files it lays out
# (their names, sizes, count, the block size they are written in): runs that differ only
# in these can share one layout (``reuse_layout``). Anything else, unknown options
# included, makes a layout of its own.
RUN_ONLY_OPTIONS = frozenset({
    "rw", "readwrite", "ioengine", "direct", "buffered", "iodepth", "iodepth_batch_submit",
    "iodepth_batch", "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low",
    "runtime", "time_based", "ramp_time", "startdelay", "rwmixread", "rwmixwrite", "fsync",
    "fdatasync", "sync", "end_fsync", "fsync_on_close", "invalidate", "norandommap",
    "randrepeat", "random_distribution", "randseed", "percentage_random", "random_generator",
    "loops", "number_ios", "io_size", "io_limit", "thinktime", "thinktime_blocks",
    "thinktime_spin", "rate", "rate_iops", "rate_min", "rate_iops_min", "rate_process",
    "steady_state", "group_reporting", "description", "name", "stonewall", "nice", "prio",
    "prioclass", "cpus_allowed", "cpumask", "hipri", "fixedbufs", "registerfiles",
    "sqthread_poll", "log_avg_msec", "write_bw_log", "write_lat_log", "write_iops_log",
    "write_hist_log", "log_hist_msec", "percentile_list", "lat_percentiles", "clat_percentiles",
    "exec_prerun", "exec_postrun", "continue_on_error", "openfiles", "file_service_type",
})


def _run_only(option: str) -> bool:
    return option.lower() in RUN_ONLY_OPTIONS


def _fio_options(params: dict[str, Any]) -> dict[str, Any]:
    """The options fio is given: the parameters without fslab's own keys, with a steady
    state's options (fio_steady) added."""
    out = {k: v for k, v in params.items() if k not in OWN_KEYS}
    if "steady_state" in params:
        out.update(fio_steady.fio_options(params["steady_state"]))
    return out


def fio_directory(path: Path) -> str:
    """A directory as fio's ``directory`` option takes it: ':' separates several, so a ':'
    in the path is escaped (fio's own escape, ``\\:``)."""
    return str(path).replace(":", "\\:")


def job_file_text(params: dict[str, Any], directory: Path) -> str:
    lines = ["[global]", f"directory={fio_directory(directory)}", "group_reporting=1", "", "[job]"]
    for key, value in _fio_options(params).items():
        if not (_OPTION_NAME.match(key) and str(value).isprintable()):
            raise SpecError(f"{value!r} is not one line of printable text (a line break "
                            "would add a job-file line)", field=key)
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


OptionItems = tuple[tuple[str, str], ...]
# Option sets fio accepted in one job file with others (FioWorkload.prevalidate).
_ACCEPTED: set[OptionItems] = set()


def _option_items(params: dict[str, Any]) -> OptionItems:
    return tuple(sorted((k, str(v)) for k, v in _fio_options(params).items()))


def _parse_only_many(sets: tuple[OptionItems, ...]) -> None:
    """fio --parse-only of a job file with a section for each set; every set is accepted
    if fio accepts the file. Nothing is raised: a rejected file leaves each set to
    ``_parse_only``."""
    if len(sets) < 2:
        return
    import tempfile

    try:
        sections = [job_file_text(dict(items), Path("/tmp")).replace("\n[job]\n", f"\n[job{i}]\n", 1)
                    for i, items in enumerate(sets)]
    except SpecError:
        return
    # job_file_text's [global] section once, then each set's own section.
    text = sections[0] + "".join(section[section.index("\n[job") + 1:] for section in sections[1:])
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".fio") as job:
            job.write(text)
            job.flush()
            done = run_command(["fio", "--parse-only", job.name], timeout=60, check=False)
    except (CommandFailed, OSError):
        return  # each set asked alone names its own workload
    if done.returncode == 0:
        _ACCEPTED.update(sets)


@cache
def _parse_only(items: OptionItems) -> None:
    """Let fio itself reject unknown options and bad values, before anything runs."""
    if shutil.which("fio") is None or items in _ACCEPTED:
        return  # no fio: `fslab doctor` reports it; the run itself will fail with the fix.
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".fio") as job:
        job.write(job_file_text(dict(items), Path("/tmp")))
        job.flush()
        done = run_command(["fio", "--parse-only", job.name], timeout=30, check=False)
    if done.returncode == 0:
        return
    lines = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
    bad = next((re.match(r"Bad option <([a-z0-9_]+)", line) for line in lines
                if line.startswith("Bad option")), None)
    key = bad.group(1) if bad else _option_in(" ".join(lines), [k for k, _ in items])
    message = " ".join(line for line in lines if not line.startswith("fio: job"))
    raise ParamError(key or "kind", f"fio rejects it: {message or 'fio --parse-only failed'}")


def _option_in(message: str, keys: list[str]) -> str | None:
    for key in keys:
        if re.search(rf"\b{re.escape(key)}\b", message):
            return key
    return None


def parse_json_output(text: str, stderr: str = "") -> dict[str, Any]:
    """fio's JSON report; fio may print warnings before it, which are skipped."""
    start = text.find("{")
    if start < 0:
        raise WorkloadFailed(
            "fio printed no JSON report" + (f"; its stderr says: {stderr.strip()[-500:]}" if stderr.strip() else "")
        )
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise WorkloadFailed(f"fio's output is not valid JSON ({exc}); raw output kept in fio.json") from None


def _percentile(clat: dict[str, Any], point: str) -> float | None:
    table = clat.get("percentile") or {}
    for key, value in table.items():
        if abs(float(key) - float(point)) < 1e-9:
            return float(value)
    return None


def _direction_metrics(prefix: str, d: dict[str, Any]) -> dict[str, float]:
    out = {
        f"{prefix}_iops": float(d["iops"]),
        f"{prefix}_bw_bytes_per_s": float(d["bw_bytes"]),
        f"{prefix}_io_bytes": float(d["io_bytes"]),
        f"{prefix}_runtime_ms": float(d["runtime"]),
    }
    # Latencies only where fio reported them (never an invented zero).
    for name, key in (("lat_mean_ns", "lat_ns"), ("clat_mean_ns", "clat_ns")):
        if "mean" in d.get(key, {}):
            out[f"{prefix}_{name}"] = float(d[key]["mean"])
    for label, point in (("p50", "50"), ("p99", "99"), ("p99_9", "99.9")):
        value = _percentile(d.get("clat_ns", {}), point)
        if value is not None:
            out[f"{prefix}_clat_{label}_ns"] = value
    return out


def _slug(name: Any) -> str:
    return re.sub(r"[^a-z0-9_]", "_", str(name).lower())


def _group_throughput(prefix: str, jobs: list[dict[str, Any]]) -> dict[str, float]:
    """IOPS and bandwidth of jobs that ran at the same time (one fio group), as fio's own
    group line ("Run status group N") defines them: the group's bytes (and I/Os) over its
    longest runtime, per direction; the total is the sum over directions. Summing the
    jobs' own rates overstates a group whose jobs end at different times (two jobs of 2 s
    and 1 s: 12.3 MiB/s summed, 10.0 MiB/s in fio's group line). ``prefix``: "" for the
    headline, "group<N>_" for one group of several."""
    out: dict[str, float] = {}
    total_iops = total_bw = 0.0
    for direction in ("read", "write", "trim"):
        sections = [job[direction] for job in jobs if job.get(direction, {}).get("total_ios", 0) > 0]
        longest_s = max((float(d.get("runtime", 0)) for d in sections), default=0.0) / 1000.0
        if not sections or longest_s <= 0:
            continue
        io_bytes = sum(float(d["io_bytes"]) for d in sections)
        out[f"{prefix}{direction}_iops"] = sum(float(d["total_ios"]) for d in sections) / longest_s
        out[f"{prefix}{direction}_bw_bytes_per_s"] = io_bytes / longest_s
        out[f"{prefix}{direction}_io_bytes"] = io_bytes
        total_iops += out[f"{prefix}{direction}_iops"]
        total_bw += out[f"{prefix}{direction}_bw_bytes_per_s"]
    out[f"{prefix}iops"] = total_iops
    out[f"{prefix}bw_bytes_per_s"] = total_bw
    return out


def _job_metrics(prefix: str, job: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for direction in ("read", "write", "trim"):
        if job.get(direction, {}).get("total_ios", 0) > 0:
            out.update(_direction_metrics(f"{prefix}{direction}", job[direction]))
    sync = job.get("sync", {})
    if sync.get("total_ios", 0) > 0:
        out[f"{prefix}sync_lat_mean_ns"] = float(sync["lat_ns"]["mean"])
        p99 = _percentile(sync["lat_ns"], "99")
        if p99 is not None:
            out[f"{prefix}sync_lat_p99_ns"] = p99
    return out


# The headline rates of one group: what a device model's time predicts (Workload.work_rates).
HEADLINE_RATES = tuple(f"{d}{m}" for d in ("", "read_", "write_", "trim_") for m in ("iops", "bw_bytes_per_s"))


def headline_rates(metrics: dict[str, float]) -> list[str]:
    """The headline rates a run has: none when several fio groups ran one after another."""
    return [name for name in HEADLINE_RATES if name in metrics]


def metrics_from_report(report: dict[str, Any]) -> tuple[dict[str, float], float, dict[str, str]]:
    """Metrics, fio's own runtime in seconds, and notes for headline metrics that have no
    number (metric -> why).

    fio runs the jobs of one group (``groupid``) at the same time and groups one after
    another (``stonewall``), so throughput is a group's (its bytes over its longest
    runtime, as fio's group line) and never summed across groups:
    - every job entry: ``job<i>_<name>_<direction>_<metric>``, i its index in fio's
      ``jobs`` list (0-based, as in fio.json), so ``numjobs`` copies of one name all stay;
    - every group, when there are several: ``group<g>_...`` (g is fio's groupid);
    - the headline (``iops``, ``bw_bytes_per_s``, ``read_iops``, ...) is the one group's
      when there is one. With several groups no single figure means anything
      (29,421 "IOPS" for four phases of ~7,000 that never overlapped): the headline is
      left empty with a note naming the per-group metrics.
    Latency percentiles cannot be summed; the headline has them only when fio reported
    one entry (one job, or one group with group_reporting)."""
    jobs = report.get("jobs") or []
    if not jobs:
        raise WorkloadFailed("fio's report has no jobs")
    for job in jobs:
        if job.get("error"):
            raise WorkloadFailed(f"fio job {job.get('jobname')!r} failed with error {job['error']}")
    groups: dict[int, list[dict[str, Any]]] = {}
    for job in jobs:
        groups.setdefault(int(job.get("groupid", 0)), []).append(job)
    metrics: dict[str, float] = {}
    notes: dict[str, str] = {}
    if len(jobs) == 1:
        metrics.update(_job_metrics("", jobs[0]))
        metrics["cpu_user_pct"] = float(jobs[0].get("usr_cpu", 0.0))
        metrics["cpu_sys_pct"] = float(jobs[0].get("sys_cpu", 0.0))
    else:
        for index, job in enumerate(jobs):
            metrics.update(_job_metrics(f"job{index}_{_slug(job.get('jobname'))}_", job))
    if len(groups) == 1:
        metrics.update(_group_throughput("", jobs))
    else:
        for groupid, members in groups.items():
            metrics.update(_group_throughput(f"group{groupid}_", members))
        names = ", ".join(f"group{g}_iops" for g in groups)
        for headline in ("iops", "bw_bytes_per_s"):
            notes[headline] = (f"no single figure: {len(groups)} fio groups ran one after another "
                               f"(stonewall); see {names}")
    runtime_ms = _runtime_ms(groups)
    return metrics, runtime_ms / 1000.0, notes


def _runtime_ms(groups: dict[int, list[dict[str, Any]]]) -> float:
    """Groups run one after another, jobs within a group side by side."""
    return sum(max(float(job.get("job_runtime", 0)) for job in members) for members in groups.values())


register_workload(FioWorkload())


def _stated_runtime_s(params: dict[str, Any]) -> float | None:
    """runtime plus ramp_time (s), or None without a runtime (runtime = 0 is no limit to fio)."""
    runtime = params.get("runtime")
    if isinstance(runtime, (int, float)) and not isinstance(runtime, bool) and runtime > 0:
        return float(runtime) + float(params.get("ramp_time") or 0)
    return None
