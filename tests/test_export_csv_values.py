"""The CSV export writes a flag and a list as the study file and JSON do (``true``,
``[4096, 8192]``), never as Python's ``True`` or ``['a', 'b']``, and each cell's axis values
(``axis.NAME``) as the study file wrote them."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

from fslab.export import EXPORTERS
from fslab.runner import run_study
from fslab.store import DB_NAME, Store
from null_studies import null_workload, write_null_study


def test_csv_cells_are_written_as_json_values(tmp_path: Path) -> None:
    study = write_null_study(tmp_path, null_workload(axes="fail = [false]\nvalue = [1.0, 2.0]"), repetitions=1)
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
        lines = list(csv.DictReader(io.StringIO(EXPORTERS.get("csv")(row, store.runs(row.id)))))
    line = next(x for x in lines if x["param.value"] == "1.0")
    assert (line["param.direct"], line["param.end_fsync"], line["quick"]) == ("true", "false", "false")
    assert json.loads(line["param.bssplit"]) == [4096, 8192]
    assert json.loads(line["param.opts"]) == {"a": "b c"}
    # the axes as the study file wrote them, beside the parameters as the tool read them
    assert sorted((x["axis.fail"], x["axis.value"]) for x in lines) == [("false", "1.0"), ("false", "2.0")]
    header = list(lines[0])
    assert header.index("param.value") < header.index("axis.fail") < header.index("axis.value") \
        < header.index("prov.kernel")
