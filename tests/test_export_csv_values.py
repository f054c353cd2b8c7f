"""The CSV export writes a flag and a list as the study file and JSON do (``true``,
``[4096, 8192]``), never as Python's ``True`` or ``['a', 'b']``."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

from fslab.export import EXPORTERS
from fslab.runner import run_study
from fslab.store import DB_NAME, Store

STUDY = """
[study]
name = "csv"
repetitions = 1
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "w"
value = 1.0
"""


def test_csv_cells_are_written_as_json_values(tmp_path: Path) -> None:
    study = tmp_path / "csv.toml"
    study.write_text(STUDY.format(fake=tmp_path / "fake"))
    results = tmp_path / "r"
    outcome = run_study(str(study), results_dir=results)
    db = sqlite3.connect(results / DB_NAME)
    with db:  # the parameters a fio cell stores: a switch, a list, a table
        extra = json.dumps({"direct": True, "end_fsync": False, "bssplit": [4096, 8192], "opts": {"a": "b c"}})
        db.execute("UPDATE cells SET cell_json = json_set(cell_json, '$.params', json_patch("
                   "json_extract(cell_json, '$.params'), ?)) WHERE study_id = ?", (extra, outcome.study_id))
    db.close()
    with Store(results, read_only=True) as store:
        row = store.study(outcome.study_id)
        (line,) = list(csv.DictReader(io.StringIO(EXPORTERS.get("csv")(row, store.runs(row.id)))))
    assert (line["param.direct"], line["param.end_fsync"], line["quick"]) == ("true", "false", "false")
    assert json.loads(line["param.bssplit"]) == [4096, 8192]
    assert json.loads(line["param.opts"]) == {"a": "b c"}
    assert line["param.value"] == "1.0"
