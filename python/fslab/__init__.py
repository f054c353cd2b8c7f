"""fslab: file-system performance studies on Linux.

Glossary (each word means one thing everywhere in fslab):

study       one study file (TOML): file systems x devices x workloads x parameter axes.
cell        one combination of file system, device, workload and parameter values.
run         one execution of one cell (one repetition of it), on a fresh or shared FS.
repetition  the index (0-based) of a run among the runs of its cell.
pass        all cells executed once, in order, for one repetition (``fresh = "repetition"``
            runs a whole pass on one file system, as the seed papers did).
metric      one named number a run produced, with its unit and its better direction.
record      the self-contained result of one run (parameters, metrics, provenance,
            artifacts): the only thing the store accepts, so runs can come from anywhere.
backend     where a run executes: ``host`` (this kernel) or ``guest`` (QEMU).
"""

__version__ = "0.1.0"
