"""What the text-printing workloads (fs_mark, dbench, sysbench fileio, postmark) share:
running the tool in the run's memory cgroup with its time limit, keeping everything it
printed beside the run, and failing a run with the tool's own last lines when it
crashes, hangs or prints something fslab cannot read — never with a traceback, and
never with a zero stored as if it had been measured."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from ..commands import Completed, run_command
from ..errors import CommandFailed, WorkloadFailed
from ..units import given_text
from . import ParamError, RunContext

TAIL_LINES = 8


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last non-empty lines of a tool's output, as one indented block."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    return "\n  ".join(kept)


def unreadable(tool: str, what: str, output: str) -> WorkloadFailed:
    """The error of a run whose output lacks ``what``: the tool's last lines say why."""
    last = tail(output)
    return WorkloadFailed(f"{tool} printed no {what}; its last lines:\n  {last}" if last
                          else f"{tool} printed no {what} (its output is empty)")


def run_tool(argv: list[str], ctx: RunContext, name: str, timeout_s: float, *,
             cwd: Path | None = None, limited: bool = True, input_text: str | None = None) -> Completed:
    """Run a tool, in ``ctx.memory``'s cgroup when ``limited``; its stdout and stderr are
    kept as ``NAME.out`` / ``NAME.err`` in the artifact directory, also when it fails.
    A failure keeps the last lines of both streams (dbench and postmark print their
    errors on stdout); the executor still reads the exit code, timeout and OOM kills."""
    preexec = ctx.memory.enter if (limited and ctx.memory) else None
    try:
        done = run_command(argv, timeout=timeout_s, preexec=preexec,
                           cwd=str(cwd or ctx.artifact_dir), input_text=input_text)
    except CommandFailed as exc:
        _keep(ctx, name, exc.stdout, exc.stderr)
        raise CommandFailed(exc.argv, exc.returncode, _last_lines(exc.stdout, exc.stderr),
                            timed_out=exc.timed_out, timeout_s=exc.timeout_s,
                            stdout=exc.stdout) from None
    _keep(ctx, name, done.stdout, done.stderr)
    return done


def _keep(ctx: RunContext, name: str, stdout: str, stderr: str) -> None:
    (ctx.artifact_dir / f"{name}.out").write_text(stdout)
    if stderr:
        (ctx.artifact_dir / f"{name}.err").write_text(stderr)


def _last_lines(stdout: str, stderr: str) -> str:
    """stderr's first lines (tools put the reason before a usage text) and last ones, then
    stdout's last lines: CommandFailed shows the head and tail of this."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    kept = lines if len(lines) <= 2 * TAIL_LINES else [*lines[:3], "...", *lines[-TAIL_LINES:]]
    # a blank line between them ends a usage text in stderr (CommandFailed leaves it out)
    return "\n\n".join(part for part in ("\n".join(kept), tail(stdout)) if part)


def measured(tool: str, name: str, value: float, output: str) -> float:
    """A rate or time the tool printed, which must be a positive finite number: a zero
    or a NaN is a tool that did not do the work, and is never stored as a result."""
    if not math.isfinite(value) or value <= 0:
        raise WorkloadFailed(f"{tool} reported {name} = {value:g}: nothing was measured; its last lines:\n  "
                             f"{tail(output)}")
    return value


def package_version(package: str) -> str | None:
    """The installed Debian package's version ('3.3-2'), for tools with no version option."""
    if shutil.which("dpkg-query") is None:
        return None
    done = run_command(["dpkg-query", "-W", "-f", "${Version}", package], timeout=20, check=False)
    return f"{package} {done.stdout.strip()}" if done.returncode == 0 and done.stdout.strip() else None


def whole(key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """A whole-number parameter in [minimum, maximum]; ParamError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or \
            (maximum is not None and value > maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise ParamError(key, f"must be a whole number {bound} (given: {given_text(value)})")
    return value


def check_known(kind: str, params: dict[str, Any], known: dict[str, str]) -> None:
    """Refuse unknown parameters (naming the known ones) and lists outside the axes."""
    for key, value in params.items():
        if key not in known:
            raise ParamError(key, f"is not a {kind} parameter; known: {', '.join(known)}")
        if isinstance(value, (list, dict)):
            raise ParamError(key, "takes one value; to vary it, put it under [workloads.axes]")
