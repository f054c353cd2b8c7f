"""The Dask worker that ran a run is a fact of the run: in `report --run`, the provenance
table, compare's warnings and every export (it was only in the stored JSON)."""

from fslab.export import PROVENANCE_COLUMNS, run_provenance
from fslab.report.provenance_facts import run_facts


def _run(worker: dict | None) -> dict:
    prov = {"host": {"hostname": "b2"}, "backend": "host"}
    if worker is not None:
        prov["worker"] = worker
    return {"provenance": prov, "cell": {"backend": "host", "fs_type": "ext4"}}


def test_worker_is_named_with_its_address() -> None:
    run = _run({"address": "tls://10.0.0.2:40123", "name": "bench-2", "hostname": "b2"})
    assert run_facts(run, quick=False)["worker"] == "bench-2 (tls://10.0.0.2:40123)"  # type: ignore[arg-type]
    assert "worker" in PROVENANCE_COLUMNS
    assert run_provenance(run, quick=False)["worker"] == "bench-2 (tls://10.0.0.2:40123)"  # type: ignore[arg-type]


def test_a_local_run_has_no_worker() -> None:
    assert run_facts(_run(None), quick=False)["worker"] == "—"  # type: ignore[arg-type]
    assert run_provenance(_run(None), quick=False)["worker"] == ""  # type: ignore[arg-type]
    unnamed = _run({"address": "tcp://10.0.0.3:1", "name": "tcp://10.0.0.3:1"})
    assert run_facts(unnamed, quick=False)["worker"] == "tcp://10.0.0.3:1"  # type: ignore[arg-type]
