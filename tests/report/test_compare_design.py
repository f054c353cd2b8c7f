"""One study, one test: `fslab compare` of two file systems of a `repetitions = "auto"`
study gives the verdict and p of the group-sequential test that decided the study's stops
(the report's), not a fixed-sample Welch test on the same runs; where that design cannot
apply (two studies, another metric) it says so and why."""

from __future__ import annotations

from pathlib import Path

from test_rank_groups import store_study

from fslab.analysis.stats import welch_t
from fslab.report.compare import compare, method_note, resolve_sides, table_rows
from fslab.report.outputs import load_report
from fslab.stopping_rule import StoppingRule

TWO = "[filesystems.ext4]\n[filesystems.xfs]\n"
# Overlapping samples: Welch's fixed-sample p (0.43) is far from the sequential test's.
VALUES = {"ext4": [100.0, 131.0, 88.0, 118.0, 95.0], "xfs": [112.0, 140.0, 101.0, 126.0, 99.0]}
RULE = StoppingRule(min_n=3, max_n=5)


def test_two_file_systems_of_an_auto_study_get_the_study_s_test(tmp_path: Path) -> None:
    results = store_study(tmp_path, TWO, VALUES, auto=RULE)
    [row] = load_report(results, None).rows
    [versus] = [e.versus_best for e in row.estimates if e.versus_best is not None]
    assert versus.method.startswith("welch-t, group-sequential")
    c = compare(*resolve_sides("ext4", "xfs", results, None))
    [r] = c.rows
    welch = welch_t(VALUES["xfs"], VALUES["ext4"]).p_value
    assert r.p_adjusted == versus.p_adjusted and r.significant == versus.significant
    assert abs(r.p_adjusted - welch) > 0.1  # before: compare printed Welch's fixed-sample p
    assert "group-sequential" in r.method and "group-sequential" in table_rows(c)[0][5]
    assert "1 comparison uses the study's own test" in method_note(c) and "Holm-corrected" not in method_note(c)


def test_an_auto_study_against_another_study_says_why_its_design_does_not_apply(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = store_study(tmp_path / "a", TWO, VALUES, auto=RULE), store_study(tmp_path / "b", TWO, VALUES)
    c = compare(*resolve_sides(str(a), str(b), tmp_path, None))
    assert all("group-sequential" not in r.method for r in c.rows)
    note = method_note(c)
    assert "repeated until answered" in note and "never two studies" in note and "approximate" in note
    assert "2 comparisons use a fixed-sample test" in note


def test_a_fixed_repetition_study_has_no_design_note(tmp_path: Path) -> None:
    results = store_study(tmp_path, TWO, VALUES)
    c = compare(*resolve_sides("ext4", "xfs", results, None))
    assert c.design == "" and c.rows[0].method == "welch-t, holm"
    assert c.rows[0].p_value == welch_t(VALUES["xfs"], VALUES["ext4"]).p_value


def test_the_summary_of_an_auto_study_names_its_test(tmp_path: Path) -> None:
    """The HTML and Markdown summaries said 'p: Welch's t-test, Holm-corrected' above a
    table whose p values are the group-sequential test's."""
    from fslab.report.html import render_html
    from fslab.report.markdown import render_markdown

    auto = load_report(store_study(tmp_path, TWO, VALUES, auto=RULE), None)
    html = render_html(auto)
    summary = html[html.index('id="summary"'):html.index('id="results"')]
    markdown = render_markdown(auto)
    md_summary = markdown[markdown.index("## Summary"):markdown.index("## Results")]
    for text in (summary, md_summary):
        assert "group-sequential" in text and "Holm-corrected" not in text
    (tmp_path / "fixed").mkdir()
    fixed = render_html(load_report(store_study(tmp_path / "fixed", TWO, VALUES), None))
    assert "Holm-corrected" in fixed[fixed.index('id="summary"'):fixed.index('id="results"')]
