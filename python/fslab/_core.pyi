# Types of fslab's Rust core, the compiled module ``fslab._core`` (crates/fslab-core/src:
# bindings.rs, trace/py.rs, alloc/py.rs). Keep each signature beside its #[pyfunction].
# Results are dicts built in Rust; their keys are documented there. Every time crosses in
# nanoseconds (``elapsed_ns``, ``latency_ns``, ``time_by_mechanism_ns``, ...); only the
# code that prints converts to another unit.

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# A device model's parameters: name -> number or text (params_from_dict).
ModelParams = dict[str, float | int | str]
# A synthetic request stream's settings (synthetic_from_dict).
SyntheticSpec = dict[str, float | int | str]
# A column the core reads in place (buffer protocol, C-contiguous), e.g. a trace column.
Column = npt.NDArray[Any]

def core_version() -> str: ...

# --- device models (bindings.rs) --------------------------------------------------------

def simulate(params: ModelParams, time_ns: Sequence[int] | npt.NDArray[np.uint64], op: bytes,
             sector: Sequence[int] | npt.NDArray[np.uint64], nbytes: Sequence[int] | npt.NDArray[np.uint64],
             fua: bytes | None = None, qd: int = 1, open_loop: bool = False,
             per_io: bool = False) -> dict[str, Any]: ...
def simulate_synthetic(params: ModelParams, synthetic: SyntheticSpec, qd: int = 1,
                       open_loop: bool = False, per_io: bool = False) -> dict[str, Any]: ...
def synthetic_requests(synthetic: SyntheticSpec) -> tuple[list[int], list[int], list[int], list[int]]: ...
def reference_loop(synthetic: SyntheticSpec) -> tuple[int, int]: ...
def ssd_floor_loop(params: ModelParams, synthetic: SyntheticSpec, copies_per_write: float,
                   serialized: bool) -> tuple[int, int]: ...
def model_capacity(params: ModelParams) -> int: ...
# One dict per model kind: kind, offered, whole, mechanisms [(name, cause in words)].
def model_kinds() -> list[dict[str, Any]]: ...

# --- block-layer traces (trace/py.rs) ---------------------------------------------------

class RawTraceCapture:
    """Readers of every CPU's trace_pipe_raw, decoding block_rq_* events as they arrive."""

    def __init__(self, paths: list[str], header_page: str, formats: list[tuple[str, int]],
                 page_size: int = 4096, nap_ms: int = 1000, hold_bytes: int = 64 << 20,
                 read_during_run: bool = True, devices: list[list[int]] | None = None) -> None: ...
    def finish(self) -> dict[str, Any]: ...

def trace_parse_raw_pages(data: bytes, header_page: str, formats: list[tuple[str, int]],
                          page_size: int = 4096) -> dict[str, Any]: ...
def tsc_mono_pair() -> tuple[int, int] | None: ...
def trace_decode_rwbs(rwbs: str) -> tuple[int, int]: ...
def trace_match_requests(time_ns: Column, event: Column, dev: Column, sector: Column, nr_sector: Column,
                         op: Column, flags: Column) -> tuple[bytes, bytes]: ...
def trace_summarize(time_ns: Column, event: Column, dev: Column, sector: Column, nr_sector: Column, op: Column,
                    flags: Column, comm: Column, pcts: list[float]) -> dict[str, Any]: ...

# --- timed file-system operations (alloc/py.rs) -----------------------------------------

def alloc_prepare(dir: str, ops: list[str], count: int, block: int = 4096, sync: str = "fsync", seed: int = 0,
                  delete_max_blocks: int = 16) -> None: ...
def alloc_run(dir: str, op: str, count: int, block: int = 4096, sync: str = "fsync", seed: int = 0,
              delete_max_blocks: int = 16) -> list[int]: ...
