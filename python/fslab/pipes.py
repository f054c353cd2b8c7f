"""Output that outlives its reader: `fslab run ... | head` closes the pipe after a few lines,
and Python then raises BrokenPipeError in whatever prints next — a progress line between
two runs, which stopped the study. The CLI's stdout and stderr are wrapped so that a closed
reader costs the output only: the study goes on and stores every run, and a closed stdout
is said once on stderr (while stderr is still read)."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO


class PipeSafe:
    """A text stream whose writes after its reader went away are dropped (the file
    descriptor is pointed at /dev/null, so nothing fails at exit either)."""

    def __init__(self, stream: TextIO, name: str, on_close: Any = None):
        self._stream = stream
        self._name = name
        self._on_close = on_close
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                return self._stream.write(text)
            except (BrokenPipeError, OSError) as exc:
                if not isinstance(exc, BrokenPipeError) and exc.errno != errno.EPIPE:
                    raise
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except (BrokenPipeError, OSError) as exc:
                if not isinstance(exc, BrokenPipeError) and exc.errno != errno.EPIPE:
                    raise
                self._closed()

    def _closed(self) -> None:
        self.closed_by_reader = True
        try:  # the buffered rest would fail again at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if self._on_close is not None:
            self._on_close(self._name)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self._stream, name)


def install() -> None:
    """Wrap sys.stdout and sys.stderr (once)."""
    if isinstance(sys.stdout, PipeSafe):
        return

    def said(name: str) -> None:
        if name == "stdout":
            sys.stderr.write("note: stdout was closed (its reader ended, e.g. `| head`): fslab goes on and "
                             "stores every run; `fslab report -r DIR` shows the results\n")
            sys.stderr.flush()

    sys.stderr = PipeSafe(sys.stderr, "stderr")
    sys.stdout = PipeSafe(sys.stdout, "stdout", on_close=said)
