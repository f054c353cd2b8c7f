"""Reports, built only from stored results (never from live objects). Layers, each
importing only those below it:

- data: the report as plain dataclasses (``Report``, ``SummaryRow``, ``TableSection``,
  ``ModelSection``, ``ChartData``, ...), what every renderer draws;
- units, labels, provenance_facts, hosts, traced_runs: shared texts and facts of stored runs;
- tables (the comparison table's statistics), sections/ (plug-ins, one module each,
  returning TableSections and ModelSections), model (``build_report``), compare, run_view,
  trace_section (trace plots): builders from the store's records (fslab.stored);
- terminal (rich), html, markdown, svg, charts, trace_plots: renderers; outputs loads a
  stored study's report and writes the files.

No report module imports the runner, an executor, a backend, a workload or a device."""
