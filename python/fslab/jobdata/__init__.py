"""The job's data: what travels and what comes back, as plain data with no plug-in,
backend or runner behind it, so the planner, the device plug-ins, predictions, the store
and reports can all read it from below.

- ``model``: cells, runs, the settings a study's jobs share, what the user allowed for a
  device (``Grant``), the job (JSON, ``fslab-job/2``), with every input file a workload
  reads inside it (a fio job file and its includes);
- ``record``: what a run leaves (``RunRecord``, one versioned JSON line, ``fslab-record/1``).
- ``terms``: the words the job and the results store share (a run's ``ok``, ``Params``,
  a case's label).

Running a job is ``fslab.job``'s business.
"""
