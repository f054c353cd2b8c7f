"""The null workload: no tool, no real I/O measurement. It writes and reads back ``ops``
small files in its directory and reports a value the study chooses (``noise`` adds a
normal spread of that relative sd, seeded by the parameters and the repetition), so fslab's
orchestration (plan, job, records, store, report, resume) can be tested without root and
without fio — as fio's null engine tests fio. It can also fail (``fail = true``) or take
its time (``sleep``) on purpose, for tests of failures, timeouts and signals;
``fail_while_exists = PATH`` fails while that file exists (a failure that can be fixed,
for tests of --retry-failed)."""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

from ..errors import WorkloadFailed
from ..metrics import MetricKind
from ..units import given_text
from . import ParamError, RunContext, Workload, WorkloadCapabilities, WorkloadResult, register_workload

DEFAULTS: dict[str, Any] = {"ops": 10, "value": 1.0, "sleep": 0.0, "fail": False, "fail_while_exists": ""}
OPTIONAL = ("noise",)  # kept out of the parameters unless given: cells without it keep their ids


class NullWorkload(Workload):
    name = "null"
    capabilities = WorkloadCapabilities(traceable=False, needs_block_device=False)
    tools: dict[str, str] = {}
    metrics = {
        "ops_count": MetricKind("ops", True, "operations the null workload completed"),
        "null_value": MetricKind("1", True, "the value the study asked the null workload to report"),
    }
    example: dict[str, Any] = {}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(DEFAULTS) - set(OPTIONAL))
        if unknown:
            raise ParamError(unknown[0], f"is not a null-workload parameter; known: "
                             f"{', '.join([*DEFAULTS, *OPTIONAL])}")
        out = {**DEFAULTS, **params}
        if isinstance(out["ops"], bool) or not isinstance(out["ops"], int) or out["ops"] < 0:
            raise ParamError("ops", f"must be a whole number >= 0 (given: {given_text(out['ops'])})")
        for key in [k for k in ("value", "sleep", *OPTIONAL) if k in out]:
            if isinstance(out[key], bool) or not isinstance(out[key], (int, float)):
                raise ParamError(key, f"must be a number (given: {given_text(out[key])})")
        if out["sleep"] < 0:
            raise ParamError("sleep", "must be >= 0 seconds")
        if out.get("noise", 0) < 0:
            raise ParamError("noise", "is a relative standard deviation: must be >= 0")
        if not isinstance(out["fail"], bool):
            raise ParamError("fail", "must be true or false")
        if not isinstance(out["fail_while_exists"], str):
            raise ParamError("fail_while_exists", "must be a path (a string)")
        return out

    def quick(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, "sleep": min(params["sleep"], 0.1)}

    def primary_metrics(self, params: dict[str, Any]) -> list[str]:
        return ["null_value", "ops_count"]

    def tool_versions(self) -> dict[str, str | None]:
        return {}

    def declared_runtime_s(self, params: dict[str, Any]) -> float | None:
        return float(params["sleep"])

    def run(self, params: dict[str, Any], ctx: RunContext) -> WorkloadResult:
        started = time.monotonic()
        deadline = started + (ctx.timeout_s if ctx.timeout_s is not None else float("inf"))
        while time.monotonic() < started + params["sleep"]:
            if time.monotonic() > deadline:
                raise WorkloadFailed(f"the null workload hit its timeout of {ctx.timeout_s} s")
            time.sleep(min(0.05, params["sleep"]))
        if params["fail"]:
            raise WorkloadFailed("the null workload failed, as its parameters asked (fail = true)")
        if params["fail_while_exists"] and Path(params["fail_while_exists"]).exists():
            raise WorkloadFailed(f"the null workload failed: {params['fail_while_exists']} exists "
                                 "(fail_while_exists)")
        for i in range(params["ops"]):
            path = ctx.workdir / f"op-{i}"
            path.write_bytes(b"fslab")
            if path.read_bytes() != b"fslab":
                raise WorkloadFailed(f"read back something else than was written to {path}")
        (ctx.artifact_dir / "null.txt").write_text(f"ops={params['ops']} value={params['value']}\n")
        value = float(params["value"])
        if params.get("noise"):
            # Seeded by the parameters and the repetition (the run directory ends in -r<N>),
            # not by the cell: the same parameters on two file systems draw the same values,
            # so tests of what fslab does with them do not depend on chance. Not by
            # fail_while_exists: a path (a test's temporary folder) would make the draws,
            # and a test's verdicts, differ from one run of the suite to the next.
            repetition = ctx.workdir.name.rpartition("-r")[2]
            drawn_by = {k: v for k, v in params.items() if k != "fail_while_exists"}
            seed = json.dumps(drawn_by, sort_keys=True) + repetition
            value *= 1 + random.Random(hashlib.sha256(seed.encode()).hexdigest()).gauss(0.0, float(params["noise"]))
        return WorkloadResult({"ops_count": float(params["ops"]), "null_value": value},
                              time.monotonic() - started)


register_workload(NullWorkload())
