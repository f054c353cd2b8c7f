"""Block-layer traces: capture on this machine (tracefs), import from others, store as
Parquet.

Glossary: an *event* is one tracepoint hit (issue, complete, insert, queue); a
*request* is one block-layer I/O, seen as an issue and a complete event; a trace is
*lossy* when the kernel dropped events, and every number derived from it says so.

Public API: ``Trace`` (columns + metadata), ``TraceCapture`` (context manager around a
workload), ``load_trace`` (any supported file), ``write_parquet``.
"""

from __future__ import annotations

from .formats import Trace, load_trace, write_parquet

__all__ = ["Trace", "TraceCapture", "load_trace", "write_parquet"]


def __getattr__(name: str):  # capture needs the native core; import it only when used
    if name == "TraceCapture":
        from .capture import TraceCapture

        return TraceCapture
    raise AttributeError(name)
