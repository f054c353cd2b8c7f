"""A study's [paper] table: bad figures are refused naming the field and the file, the
table changes no cell id, and every shipped preset's figures name cells and metrics its
plan has (planned with --quick: no root needed)."""

from __future__ import annotations

import math
import tomllib

import pytest

from fslab.backends import choose_backend
from fslab.errors import SpecError
from fslab.paper import Side as PaperSide
from fslab.plan import make_plan
from fslab.study import load_spec, parse_spec, preset_names

STUDY = """
[study]
name = "t"
trace = true
simulate = ["hdd-7200"]
[filesystems.ext4]
[filesystems.xfs]
[[workloads]]
kind = "fio"
name = "w"
bs = "4k"
size = "16M"
runtime = 1
[workloads.axes]
rw = ["randwrite", "read"]
"""

GOOD = """
[paper]
deviations = ["a loop device"]
[[paper.figures]]
claim = "ext4 over xfs"
source = "Table 2, p. 5"
workload = "w"
metric = "write_iops"
filesystem = "ext4"
versus = "xfs"
case = { rw = "randwrite" }
ratio = 2
model = "hdd-7200"
"""


def _spec(text: str):
    return parse_spec(tomllib.loads(text), "paper.toml")


def _error(figure_edit: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        _spec(STUDY + GOOD + figure_edit)
    return info.value


def test_a_good_figure_loads_and_changes_no_cell_id() -> None:
    spec = _spec(STUDY + GOOD)
    assert spec.paper is not None and spec.paper.figures[0].ratio == 2
    with_paper = make_plan(spec, backends=choose_backend, seed=1)
    without = make_plan(_spec(STUDY), backends=choose_backend, seed=1)
    assert [c.id for c in with_paper.cells] == [c.id for c in without.cells]


@pytest.mark.parametrize(("edit", "field", "says"), [
    ('filesystem = "btrfs"\n', "paper.figures[1].filesystem", "no file-system entry named 'btrfs'"),
    ('versus = "jfs"\n', "paper.figures[1].versus", "no file-system entry named 'jfs'"),
    ('workload = "nope"\n', "paper.figures[1].workload", "no workload named 'nope'"),
    ('metric = "putc_bytes_per_s_x"\n', "paper.figures[1].metric", "not a metric of a fio workload"),
    ('case = { rw = "write" }\n', "paper.figures[1].case.rw", "'write' is not a value of axis 'rw'"),
    ('case = { bs = "4k" }\n', "paper.figures[1].case.bs", "'bs' is not an axis of workload 'w'"),
    ("case = {}\n", "paper.figures[1].case", "leaves axes rw of workload 'w' open"),
    ('model = "sata-mlc-ssd"\n', "paper.figures[1].model", "not replayed on 'sata-mlc-ssd'"),
])
def test_a_figure_naming_what_the_study_lacks_is_refused(edit: str, field: str, says: str) -> None:
    second = GOOD.split("[[paper.figures]]")[1]
    keys = {line.split(" = ")[0] for line in edit.splitlines()}
    kept = "".join(line + "\n" for line in second.strip().splitlines() if line.split(" = ")[0] not in keys)
    error = _error("[[paper.figures]]\n" + kept + edit)
    assert error.field == field and error.source == "paper.toml"
    assert says in str(error)


@pytest.mark.parametrize(("edit", "says"), [
    ("value = 3\n", "either value (with unit) or ratio"),
    ('unit = "MB/s"\n', "a ratio has no unit"),
    ('relation = "roughly"\n', "relation"),
    ('colour = "red"\n', "colour"),
])
def test_a_malformed_figure_is_refused_naming_its_field(edit: str, says: str) -> None:
    error = _error("[[paper.figures]]" + GOOD.split("[[paper.figures]]")[1] + edit)
    assert "paper.figures[1]" in str(error) and says in str(error) and "paper.toml" in str(error)


def test_a_ratio_is_a_number_not_a_boolean() -> None:
    # pydantic's lax mode would read ratio = true as a ratio of 1.
    error = _error("[[paper.figures]]" + GOOD.split("[[paper.figures]]")[1].replace("ratio = 2", "ratio = true"))
    assert "paper.figures[1].ratio: must be a number, not a TOML boolean (given: true)" in str(error)


def _edited(edit: str) -> str:
    """GOOD's figure with the keys of ``edit`` replaced by it (an empty value drops a key)."""
    second = GOOD.split("[[paper.figures]]")[1]
    keys = {line.split(" = ")[0] for line in edit.splitlines()}
    kept = "".join(line + "\n" for line in second.strip().splitlines() if line.split(" = ")[0] not in keys)
    return "[[paper.figures]]\n" + kept + "".join(line + "\n" for line in edit.splitlines()
                                                   if not line.endswith(" = "))


@pytest.mark.parametrize(("edit", "field", "says"), [
    ('versus = "ext4"\n', "paper.figures[1]", "the two sides are the same"),
    ('across = ["rw"]\nratio = 1\nrelation = "more than"\n', "paper.figures[1]",
     "across names axes the case fixes (rw)"),
    ('filesystem = ["ext4", "xfs"]\nversus = \n', "paper.figures[1]", "the two sides are the same"),
    ('versus = ["xfs", "jfs"]\nratio = 1\nrelation = "more than"\n', "paper.figures[1].versus[1]",
     "no file-system entry named 'jfs'"),
    ('versus = \nversus_case = { rw = "write" }\n', "paper.figures[1].versus_case.rw",
     "'write' is not a value of axis 'rw'"),
    ('versus = \nversus_metric = "read_bw_bytes_per_s"\n', "paper.figures[1].versus_metric", "mixes units"),
    ('versus = \nversus_metric = "read_nope"\n', "paper.figures[1].versus_metric", "not a metric of a fio workload"),
    ('versus_workload = "other"\n', "paper.figures[1].versus_workload", "no workload named 'other'"),
    ('across = ["bs"]\ncase = {}\nratio = 1\nrelation = "less than"\n', "paper.figures[1].across[0]",
     "'bs' is not an axis of workload 'w'"),
    ('baseline_workload = "nope"\n', "paper.figures[1].baseline_workload", "no workload named 'nope'"),
])
def test_a_malformed_ratio_of_any_two_sides_is_refused(edit: str, field: str, says: str) -> None:
    error = _error(_edited(edit))
    assert error.source == "paper.toml" and (error.field or "") in (field, "")
    assert field in str(error) and says in str(error)


@pytest.mark.parametrize("edit", [
    'versus = \nversus_case = { rw = "read" }\n',  # a ratio of two cases of one entry
    'versus = \nversus_metric = "read_iops"\n',  # of two metrics
    'versus = ["xfs"]\nacross = ["rw"]\ncase = {}\nratio = 1\nrelation = "more than"\n',  # consistently
    'filesystem = ["ext4", "xfs"]\nversus = ["xfs", "ext4"]\nratio = 1\nrelation = "less than"\n',
    'filesystem = ["ext4", "xfs"]\nversus = \nversus_case = { rw = "read" }\nratio = 40\n',  # each its own
])
def test_ratios_between_cases_metrics_and_groups_load(edit: str) -> None:
    spec = _spec(STUDY + GOOD + _edited(edit))
    figure = spec.paper.figures[1]
    axes = {w.name: w.axes for w in spec.workloads}
    pairs = figure.pairs(axes)
    assert pairs and all(num != den for num, den in pairs)
    if "across" in edit:
        assert {dict(num.case)["rw"] for num, _ in pairs} == {"randwrite", "read"}
    if "filesystem = [" in edit:  # ext4/xfs and xfs/ext4 (x/x dropped), or ext4/ext4 and xfs/xfs
        assert len(pairs) == 2
        if "versus_case" in edit:
            assert all(num.filesystem == den.filesystem for num, den in pairs)


def test_a_value_in_a_unit_the_metric_is_not_stored_in_is_refused() -> None:
    edit = ("[[paper.figures]]\nclaim = 'x'\nsource = 'Fig. 1'\nworkload = 'w'\nmetric = 'write_iops'\n"
            "filesystem = 'ext4'\ncase = { rw = 'read' }\nvalue = 5\nunit = 'MB/s'\n")
    error = _error(edit)
    assert error.field == "paper.figures[1].unit" and "IOPS" in str(error) and "KIOPS" in str(error)


SEEDS = [name for name in preset_names() if name.startswith("seed-")]


@pytest.mark.parametrize("preset", SEEDS)
def test_every_seed_preset_names_only_cells_and_metrics_its_plan_has(preset: str) -> None:
    spec, source, _ = load_spec(preset)
    assert spec.paper is not None and spec.paper.figures and spec.paper.deviations, preset
    # Every entry planned where the preset asks (this machine's backends do not matter here).
    def anywhere(fs: object, device: object, section: object, requested: str) -> tuple[str, None]:
        return ("guest" if requested == "guest" else "host", None)

    plan = make_plan(spec, backends=anywhere, quick=True, source=source)
    assert not plan.skipped
    axes = {w.name: w.axes for w in spec.workloads}
    models: dict[str, set[str]] = {}  # entry -> the models its figures are predicted on
    for i, figure in enumerate(spec.paper.figures):
        pairs = figure.pairs(axes) if figure.ratio is not None else []
        sides = [s for pair in pairs for s in pair] + [figure.baseline(s) for pair in pairs for s in pair]
        if figure.value is not None:
            sides.append(PaperSide(figure.workload, figure.denominator, tuple(figure.case.items()), figure.metric))
        assert sides, (preset, i)
        for side in filter(None, sides):
            cells = [c for c in plan.cells if c.workload == side.workload and c.filesystem == side.filesystem
                     and all(str(c.axes.get(k)) == str(v) for k, v in side.case)]
            assert len(cells) == 1, (preset, i, side)
        assert figure.source and figure.claim
        if figure.model is not None and figure.versus_model is None:
            for fs in figure.numerators + figure.denominators:
                models.setdefault(fs, set()).add(figure.model)
    # Value rows and ratio rows of one device stand on one model.
    assert all(len(found) == 1 for found in models.values()), (preset, models)
    # What the report reads back from the stored study file is what was validated.
    from fslab.report.sections.paper_beside import paper_section

    assert paper_section(load_spec(preset)[2]) == spec.paper


def test_a_preset_study_stored_without_its_table_gets_the_shipped_one() -> None:
    """A study run from a preset before the preset had [paper]: the report shows the
    preset's figures as shipped now, says so, and finds none of their cells stored."""
    from fslab.report.sections.base import StudyData
    from fslab.report.sections.paper_beside import build, shipped_paper_section
    from fslab.stored import StudyRow

    spec, _, _ = load_spec("seed-004")
    assert shipped_paper_section("preset seed-004") == spec.paper
    assert shipped_paper_section("/tmp/study.toml") is None
    row = StudyRow(id=1, name="old", source="preset seed-004", spec_hash="x", quick=True, order="shuffled", seed=1,
                   fresh="run", repetitions=2, planned_runs=0, skipped=[], host={}, status="complete",
                   created_at=0.0, finished_at=None, spec_text="[study]\nname = 'old'\n", facts={})
    [section] = build(StudyData([], [], "seed-004", None, row))
    assert "shipped preset's" in section.intro
    assert len(section.data["figures"]) == len(spec.paper.figures)
    assert {f["shape"] for f in section.data["figures"]} == {"cannot tell (no stored cell)"}
    assert [t.title for t in section.tables] == ["The paper's figures beside fslab's"]


def _run(cell: dict, iops: float, predicted: float) -> dict:
    return {"cell": cell, "status": "ok", "provenance": {"predictions": {"models": {"hdd-7200": {}}}}, "metrics": {
        "write_iops": {"value": iops, "unit": "IOPS", "note": None, "higher_is_better": True},
        "pred_hdd-7200_write_iops": {"value": predicted, "unit": "IOPS", "note": None, "higher_is_better": True}}}


def test_no_device_share_without_a_significant_measured_difference() -> None:
    """Two runs a side (no test): the ratio is shown, but no share of an untested (maybe
    noisy) difference is computed, and the row says why; the reversed figure of the same
    pair is not said twice."""
    from fslab.report.sections.paper_beside import figure_rows

    cells = [{"id": fs, "filesystem": fs, "workload": "w", "axes": {"rw": "randwrite"}, "backend": "host"}
             for fs in ("ext4", "xfs")]
    runs = [_run(cells[0], v, p) for v, p in ((1000, 300), (1100, 310))]
    runs += [_run(cells[1], v, p) for v, p in ((250, 200), (260, 210))]
    spec = _spec(STUDY + GOOD + "[[paper.figures]]" + GOOD.split("[[paper.figures]]")[1].replace(
        'filesystem = "ext4"\nversus = "xfs"', 'filesystem = "xfs"\nversus = "ext4"'))
    first, second = figure_rows(spec.paper, runs, cells)
    measured, predicted = 1050 / 255, 305 / 205
    assert first.measured_ratio == pytest.approx(measured) and first.predicted_ratio == pytest.approx(predicted)
    assert first.shape == "cannot tell (fewer than 3 runs on a side)"
    assert first.device_share is None
    assert "no device's share computed: no verdict on the measured difference" in first.accounts
    assert second.accounts == "" and second.device_share is None


def test_no_device_share_of_a_not_significant_or_tcg_bound_difference() -> None:
    """Noise (no significant difference) and runs in a guest under TCG get no share; a
    significant host difference does, naming md only where the study has md."""
    from fslab.report.sections.paper_beside import figure_rows

    def study(a: list[float], b: list[float], accel: str | None) -> list:
        cells = [{"id": fs, "filesystem": fs, "workload": "w", "axes": {"rw": "randwrite"}, "backend": "host"}
                 for fs in ("ext4", "xfs")]
        runs = [_run(cells[0], v, v / 4) for v in a] + [_run(cells[1], v, v / 2) for v in b]
        for r in runs:
            r["provenance"] = {"guest": {"accelerator": accel}} if accel else {}
            r["provenance"]["predictions"] = {"models": {"hdd-7200": {}}}  # replayed on it, as the run records
        return figure_rows(_spec(STUDY + GOOD).paper, runs, cells)

    [noise] = study([1000, 1100, 900], [1010, 1090, 905], None)
    assert noise.device_share is None and "no significant measured difference" in noise.accounts
    [tcg] = study([1000, 1010, 990], [500, 505, 495], "tcg")
    assert tcg.device_share is None and "TCG" in tcg.accounts
    [host] = study([1000, 1010, 990], [500, 505, 495], None)
    assert host.device_share is not None and "md" not in host.accounts


def test_a_model_pointing_the_other_way_is_said() -> None:
    from fslab.report.sections.paper_beside import accounts_text

    share, text = accounts_text("a over b", 3.0, 0.5, "m")
    assert share == pytest.approx(math.log(0.5) / math.log(3.0)) and share < 0
    assert "points the other way" in text
    share, text = accounts_text("a over b", 2.0, 8.0, "m")
    assert share == pytest.approx(3.0) and "predicts more than this host shows" in text


@pytest.mark.parametrize(("ratio", "relation", "found", "holds", "says"), [
    (5, "about", 3.0, True, "within 2x"),
    (5, "about", 9.0, True, "within 2x"),
    (5, "about", 1.5, False, "3.33x smaller a ratio than the paper's"),
    (5, "about", 15.5, False, "3.10x larger a ratio than the paper's"),
    (0.2, "about", 0.05, False, "4.00x smaller a ratio"),
    (50, "more than", 30.0, True, "within 2x of it or above"),
    (50, "more than", 8.7, False, "5.75x short of it"),
    (0.5, "less than", 0.9, True, "within 2x of it or below"),
    (0.5, "less than", 2.0, False, "4.00x above it"),
    (1, "more than", 7.0, None, ""),
])
def test_a_ratio_holds_within_2x_of_the_papers_and_says_how_far_off(ratio: float, relation: str, found: float,
                                                                    holds: bool | None, says: str) -> None:
    from fslab.paper import PaperFigure
    from fslab.report.sections.paper_beside import _shape
    from fslab.report.sections.paper_judge import size_judgement

    figure = PaperFigure(claim="c", source="s", workload="w", metric="m", filesystem="a", versus="b",
                         ratio=ratio, relation=relation)
    ok, text = size_judgement(figure, found)
    assert ok is holds and says in text
    shape, size_holds = _shape(figure, found, 0.001)
    if holds is False and (found > 1) == (ratio >= 1 if relation != "less than" else ratio > 1):
        assert shape.startswith("does not hold by size") and says in shape
    elif holds:
        assert shape.startswith("holds") and size_holds is True


def _claim_over_ext3(claim_and_filesystem: str) -> str:
    """The study with ext3 added and one figure: its claim and filesystem lines as given,
    higher write IOPS than ext3 across rw."""
    return STUDY.replace("[filesystems.xfs]", "[filesystems.xfs]\n[filesystems.ext3]") + f"""
[[paper.figures]]
{claim_and_filesystem}
source = "conclusion"
workload = "w"
metric = "write_iops"
versus = "ext3"
across = ["rw"]
ratio = 1
relation = "more than"
"""


def test_a_group_claim_is_judged_pair_by_pair() -> None:
    """'ext4 and xfs better than ext3, consistently': two entries over one, across rw; a
    pair the other way is named and the row says in how many pairs it holds."""
    from fslab.report.sections.paper_beside import figure_rows

    spec = _spec(_claim_over_ext3('claim = "ext4 and xfs better than ext3"\nfilesystem = ["ext4", "xfs"]'))
    cells = [{"id": f"{fs}-{rw}", "filesystem": fs, "workload": "w", "axes": {"rw": rw}, "backend": "host"}
             for fs in ("ext4", "xfs", "ext3") for rw in ("randwrite", "read")]
    level = {"ext4": 200.0, "xfs": 190.0, "ext3": 100.0}
    runs = []
    for c in cells:
        base = 300.0 if c["id"] == "ext3-read" else level[c["filesystem"]]  # ext3 wins reads
        runs += [_run(c, base * k, base) for k in (0.99, 1.0, 1.01)]
    [row] = figure_rows(spec.paper, runs, cells)
    assert row.pairs_compared == 4 and row.pairs_holding == 2
    assert row.shape.startswith("does not hold: holds in 2 of 4 decided pairs; not in") and "ext3" in row.shape
    assert row.paper == "higher (> 1x) in each of 4 pairs"


def test_a_claim_on_one_pair_is_stated_in_the_singular() -> None:
    """One file system over another in one cell: the row says "1 pair" and the one ratio,
    not "all 1 decided pair" nor "ratios 2x to 2x"."""
    from fslab.report.sections.paper_beside import figure_rows

    spec = _spec(_claim_over_ext3('claim = "ext4 better than ext3"\nfilesystem = "ext4"'))
    cells = [{"id": f"{fs}-randwrite", "filesystem": fs, "workload": "w", "axes": {"rw": "randwrite"},
              "backend": "host"} for fs in ("ext4", "ext3")]
    level = {"ext4": 200.0, "ext3": 100.0}
    runs = [_run(c, level[c["filesystem"]] * k, level[c["filesystem"]]) for c in cells for k in (0.99, 1.0, 1.01)]
    [row] = figure_rows(spec.paper, runs, cells)
    assert row.pairs_compared == 1 and row.pairs_holding == 1
    assert row.shape == "holds in the 1 decided pair", row.shape
    assert row.paper.endswith("in each of 1 pair") and "pairs" not in row.paper
    assert row.measured.startswith("1 pair, ratio ") and " to " not in row.measured, row.measured


def test_a_quick_run_states_the_sizes_it_ran() -> None:
    """A --quick study's section says the sizes its cells actually ran, from the stored
    cells (not the full sizes the preset's deviations speak of)."""
    from fslab.report.sections.base import StudyData
    from fslab.report.sections.paper_beside import build
    from fslab.stored import StudyRow

    spec, _, text = load_spec("seed-004")
    def anywhere(fs: object, device: object, section: object, requested: str) -> tuple[str, None]:
        return ("guest" if requested == "guest" else "host", None)

    plan = make_plan(spec, backends=anywhere, quick=True)
    cells = [{**c.to_json(), "id": c.id} for c in plan.cells]
    quick = {k: cells[0]["params"][k] for k in ("file_size", "io_size")}
    assert quick["file_size"] < 2 << 30  # scaled down from the preset's 2 GiB
    row = StudyRow(id=1, name="q", source="preset seed-004", spec_hash="x", quick=True, order="shuffled", seed=1,
                   fresh="run", repetitions=2, planned_runs=0, skipped=[], host={}, status="complete",
                   created_at=0.0, finished_at=None, spec_text=text, facts={})
    [section] = build(StudyData([], cells, "seed-004", None, row))
    said = [s for s in section.statements if "a --quick run, sizes as run" in s]
    assert len(said) == 1
    mib = quick["file_size"] / (1 << 20)
    assert f"file_size={mib:.4g} MiB" in said[0] and "memory limit" in said[0]


def test_a_size_the_whole_interval_misses_is_refused_without_significance() -> None:
    """'About 10x' against a ratio not significantly different from 1 whose interval stays
    below 5x: does not hold (by size); an interval reaching the paper's size: cannot tell."""
    from fslab.paper import PaperFigure
    from fslab.report.sections.paper_beside import _shape

    figure = PaperFigure(claim="c", source="s", workload="w", metric="m", filesystem="a", versus="b", ratio=10)
    shape, ok = _shape(figure, 1.02, 0.6, 0.9, 1.15)
    assert ok is False and shape.startswith("does not hold by size (no significant difference")
    assert "0.102x the paper's" in shape
    shape, ok = _shape(figure, 1.5, 0.2, 0.4, 6.0)
    assert ok is None and shape.startswith("cannot tell")
    more = PaperFigure(claim="c", source="s", workload="w", metric="m", filesystem="a", versus="b", ratio=50,
                       relation="more than")
    assert _shape(more, 1.1, 0.3, 0.8, 20.0)[1] is False  # all of it below 25x
    assert _shape(more, 1.1, 0.3, 0.8, 30.0)[1] is None


def test_a_predicted_direction_whose_interval_reaches_across_1_is_not_settled() -> None:
    """A predicted 1.004x (95% CI 0.989-1.02x) is within 2x of a paper's 1.375x and on its
    side of 1, but its interval includes 1: the verdict says the direction is not settled;
    an interval clear of 1 says no such thing."""
    from fslab.paper import PaperFigure
    from fslab.report.sections.paper_judge import unmeasured_verdict

    figure = PaperFigure(claim="c", source="s", workload="w", metric="m", filesystem="a", versus="b", ratio=1.375)
    unsettled = unmeasured_verdict(figure, 1.004, 0.989, 1.02)
    assert unsettled.startswith("the paper's way") and "interval includes 1" in unsettled
    settled = unmeasured_verdict(figure, 1.30, 1.28, 1.33)
    assert settled.startswith("the paper's way") and "interval" not in settled
    assert "interval" not in unmeasured_verdict(figure, 1.004)  # no interval given, nothing claimed
