"""The error types of fslab. Library code raises these; only the CLI turns them into exits.

Every error has a ``scope``: what it fails when it happens while a job executes.
``run``: that run is stored as failed and the job goes on; ``job``: every run of the job
not yet done fails with it (the file system could not be made or mounted); ``study``:
the study stops (what is stored stays) because every later run would fail alike.
The executor reads the scope; it never guesses from a type name or a command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

Scope = Literal["run", "job", "study"]
SCOPES: tuple[Scope, ...] = ("run", "job", "study")


class FslabError(Exception):
    """Base of every error fslab reports to a user. The message says what to do."""

    scope: ClassVar[Scope] = "study"


class WorkloadFailed(FslabError):
    """A workload failed, timed out or printed something it could not parse: one run."""

    scope: ClassVar[Scope] = "run"


class JobFailed(FslabError):
    """The file-system instance of a job could not be made or mounted: its runs fail."""

    scope: ClassVar[Scope] = "job"


class SpecError(FslabError):
    """A study file (or a command-line value) is invalid."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"{where}: {message}" if where else message)


class MissingCapability(FslabError):
    """A tool, kernel feature or backend that a study needs is not present here."""

    def __init__(self, what: str, *, fix: str | None = None):
        self.what = what
        self.fix = fix
        super().__init__(f"{what}" + (f" (fix: {fix})" if fix else ""))


class CommandFailed(FslabError):
    """An external command exited non-zero or timed out. Keeps argv, exit code and stderr.
    Its scope is the run's; the executor widens it to the job when mkfs or mount fails."""

    scope: ClassVar[Scope] = "run"

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int | None,
        stderr: str,
        *,
        timed_out: bool = False,
        timeout_s: float | None = None,
        stdout: str = "",
    ):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout  # kept apart: tools that report errors on stdout (dbench, postmark)
        self.timed_out = timed_out
        self.timeout_s = timeout_s
        if timed_out:
            how = "timed out" + (f" after {timeout_s:g} s" if timeout_s is not None else "")
        elif returncode is not None and returncode < 0:
            how = f"was killed by signal {-returncode}"
        else:
            how = f"exited with status {returncode}"
        detail = _stderr_excerpt(stderr)
        super().__init__(f"`{' '.join(self.argv)}` {how}{detail}")


def _stderr_excerpt(stderr: str, head: int = 3, tail: int = 5) -> str:
    """The first and last lines of a tool's stderr, without a usage text printed after the
    reason (``without_usage``)."""
    lines = [line for line in without_usage(stderr.strip().splitlines()) if line.strip()]
    if len(lines) > head + tail:
        lines = [*lines[:head], f"... ({len(lines) - head - tail} more lines)", *lines[-tail:]]
    return ("\n  " + "\n  ".join(lines)) if lines else ""


def without_usage(lines: list[str]) -> list[str]:
    """A tool's lines with a usage text after its reason left out (mkfs.xfs: "Filesystem
    must be larger than 300MB." then 27 lines of options): from a line starting "usage:"
    to the next blank line or the end, keeping any line of it that says "error" (argparse
    and click print theirs after the usage). A usage line first is the reason itself."""
    out: list[str] = []
    cut = 0  # lines left out of the current usage block
    for line in [*lines, ""]:  # the blank line closes a usage text that runs to the end
        if cut and not line.strip():
            out.append(f"(then its usage text, {cut} line{'s' * (cut != 1)})")
            cut = 0
        if cut or (out and line.lstrip().lower().startswith("usage:")):
            if "error" in line.lower():
                out.append(line)
            else:
                cut += 1
            continue
        out.append(line)
    return out[:-1]  # less the blank line added


class ExecutorLost(FslabError):
    """The executor lost what dispatches the study's jobs (a Dask scheduler that died):
    the study stops; what is stored stays and --resume continues it."""


class ResultsUnwritable(FslabError):
    """The results directory cannot take more (its disk is full, or it became read-only):
    every run stored so far is kept, every device released; the study can be resumed."""


STUDY_LEVEL_ERRNOS = frozenset({28, 122, 30})  # ENOSPC, EDQUOT, EROFS: every later run fails alike


class DeviceRefused(FslabError):
    """fslab will not touch a device: it is mounted, in use, the root device or holds data."""


class SimulationError(FslabError):
    """A device model or replay rejected its input."""
