"""The job: the unit that travels. One file-system instance and the runs made on it, as
plain data that runs alike in this process, in `fslab job run`, in a QEMU guest or on a
Dask worker, and leaves one self-contained record per run.

- ``folder``: the job folder's layout (records, error, artifacts), in one place, and the
  failed records of runs a job did not finish;
- ``entry``: ``fslab job run`` (and ``fslab job age``), the one entry every backend calls;
- ``execute``: executing one job's runs (device, mkfs, mount, workload, release);
- ``tracing``: a run's block-layer trace and its metrics.

The job's data itself (``Job``, ``Cell``, ``Run``, ``RunRecord``) is ``fslab.jobdata``, a low
floor every other part may read. Nothing here imports another part of fslab at import time
except ``folder`` and the job data, so readers of records (the store, reports) stay light.
"""
