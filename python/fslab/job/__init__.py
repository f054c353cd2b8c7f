"""The job: the unit that travels. One file-system instance and the runs made on it, as
plain data that runs alike in this process, in `fslab job run`, in a QEMU guest or on a
Dask worker, and leaves one self-contained record per run.

- ``model``: cells, runs, the settings a study's jobs share, the job (JSON, ``fslab-job/2``),
  with every input file a workload reads inside it (a fio job file and its includes);
- ``record``: what a run leaves (``RunRecord``, one versioned JSON line, ``fslab-record/1``);
- ``folder``: the job folder's layout (records, error, artifacts), in one place, and the
  failed records of runs a job did not finish;
- ``entry``: ``fslab job run`` (and ``fslab job age``), the one entry every backend calls;
- ``execute``: executing one job's runs (device, mkfs, mount, workload, release);
- ``tracing``: a run's block-layer trace and its metrics.

Nothing here imports another part of fslab at import time except ``model``, ``record`` and
``folder`` (plain data), so readers of records (the store, reports) stay light.
"""
