"""The error types of fslab. Library code raises these; only the CLI turns them into exits."""

from __future__ import annotations

from collections.abc import Sequence


class FslabError(Exception):
    """Base of every error fslab reports to a user. The message says what to do."""


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
    """An external command exited non-zero or timed out. Keeps argv, exit code and stderr."""

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int | None,
        stderr: str,
        *,
        timed_out: bool = False,
    ):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.timed_out = timed_out
        how = "timed out" if timed_out else f"exited with status {returncode}"
        tail = stderr.strip().splitlines()[-5:]
        detail = ("\n  " + "\n  ".join(tail)) if tail else ""
        super().__init__(f"`{' '.join(self.argv)}` {how}{detail}")


class DeviceRefused(FslabError):
    """fslab will not touch a device: it is mounted, in use, the root device or holds data."""


class SimulationError(FslabError):
    """A device model or replay rejected its input."""
