"""Results stored by older fslab versions read under today's names, in the store's one
compatibility layer (fslab.store_compat): a schema-1 store whose predictions were stored
before the device's figures were named ``device_*`` reports and exports like a new one."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
from pathlib import Path

from fslab.export import EXPORTERS
from fslab.report.predicted import mechanism_shares, models_of
from fslab.report.sections.trace_tables import prediction_table
from fslab.store import Store

FIXTURE = Path(__file__).parent / "data" / "results-v1" / "fslab.sqlite"
MODEL = "hdd-7200"


def _old_store(tmp_path: Path) -> Path:
    """The schema-1 fixture with predictions as two fslab versions stored them: run 1
    before device_* names (``pred_<model>_iops`` is the device's requests/s), run 3 after
    (``pred_<model>_iops`` is the workload's own rate)."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / "fslab.sqlite")
    db = sqlite3.connect(results / "fslab.sqlite")
    mechanisms = {"seek": 600, "rotation": 200, "transfer": 200}
    rows = {1: {"iops": 180.0, "requests_count": 900.0, "latency_mean_ns": 5e6, "time_seek_share": 0.6,
                "time_rotation_share": 0.2, "time_transfer_share": 0.2},
            3: {"iops": 240.0, "device_requests_per_s": 120.0, "device_requests_count": 600.0,
                "device_latency_mean_ns": 7e6, "time_seek_share": 0.5, "time_rotation_share": 0.3,
                "time_transfer_share": 0.2}}
    for run_id, metrics in rows.items():
        (prov,) = db.execute("SELECT provenance_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        provenance = json.loads(prov)
        provenance["predictions"] = {"mode": "closed-loop", "qd": 1, "qd_workload": 1,
                                     "models": {MODEL: {"elapsed_ns": 10**9, "time_by_mechanism_ns": mechanisms}}}
        db.execute("UPDATE runs SET provenance_json = ? WHERE id = ?", (json.dumps(provenance), run_id))
        for suffix, value in metrics.items():
            db.execute("INSERT INTO metrics (run_id, name, value, unit, note) VALUES (?, ?, ?, ?, ?)",
                       (run_id, f"pred_{MODEL}_{suffix}", value, "x", "predicted, not measured"))
    db.commit()
    db.close()
    return results


def test_old_prediction_names_read_as_todays(tmp_path: Path) -> None:
    with Store(_old_store(tmp_path), read_only=False) as store:
        study = store.study()
        runs = {r["run_id"]: r for r in store.runs(study.id)}
    old, new = runs[1]["metrics"], runs[3]["metrics"]
    assert f"pred_{MODEL}_iops" not in old  # the device's figure under its old name...
    assert old[f"pred_{MODEL}_device_requests_per_s"]["value"] == 180.0  # ...reads as what it was
    assert old[f"pred_{MODEL}_device_requests_count"]["value"] == 900.0
    assert old[f"pred_{MODEL}_device_latency_mean_ns"]["value"] == 5e6
    assert new[f"pred_{MODEL}_iops"]["value"] == 240.0  # the workload's own, as stored
    assert new[f"pred_{MODEL}_device_requests_per_s"]["value"] == 120.0
    # The models and mechanisms come from the provenance, for old and new runs alike.
    assert models_of(runs[1]) == models_of(runs[3]) == [MODEL]
    assert mechanism_shares(runs[1], MODEL) == {"seek": 0.6, "rotation": 0.2, "transfer": 0.2}
    # An export has one column per meaning: the old run's device figure under today's name.
    header = next(csv.reader(io.StringIO(EXPORTERS.get("csv")(study, list(runs.values())))))
    predicted = sorted(h for h in header if h.startswith("pred_"))
    assert f"pred_{MODEL}_device_requests_per_s [x]" in predicted
    assert f"pred_{MODEL}_requests_count [x]" not in predicted
    # The report's prediction table averages both runs' device requests/s (180 and 120).
    ext4 = [runs[1], runs[3]]
    table = prediction_table("w", {"ext4": ext4})
    assert table is not None
    (row,) = table.rows
    assert row[1] == MODEL and row[5].startswith("150"), row
