"""The Markdown report escapes every text that comes from a study, as the HTML report does:
a name that is HTML is shown as its characters, a name that is a Markdown image or link is
no image or link, and a backtick in a source path cannot end its code span. From a real
stored study (the null workload on a directory), through the same model as every renderer."""

import html
import re

from fslab.report.markdown import md_code, md_text, render_markdown
from fslab.report.outputs import load_report
from fslab.runner import run_study

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
# a workload name may hold no "/" (it names folders), so the link has none either
HOSTILE_WORKLOAD = "![p](http:example.invalid)"

STUDY = """
[study]
name = "{name}"
description = "<script>alert(2)</script>"
repetitions = 2
drop_caches = false

[device]
kind = "fake"
directory = "{fake}"

[filesystems.null]

[[workloads]]
kind = "null"
name = "{workload}"
"""


def test_names_from_the_study_never_become_html_or_links(tmp_path):
    study = tmp_path / "s`x.toml"
    study.write_text(STUDY.format(name=HOSTILE_NAME, fake=tmp_path / "fake", workload=HOSTILE_WORKLOAD))
    outcome = run_study(str(study), results_dir=tmp_path / "r")
    md = render_markdown(load_report(tmp_path / "r", outcome.study_id))
    assert "<img" not in md and "<script" not in md
    assert html.escape(HOSTILE_NAME, quote=False) in md  # shown, as its characters
    assert not re.search(r"!\[[^\]]*\]\(http", md)  # no image fetched from elsewhere
    assert "p]\\(http" in md  # the workload's name is still there, as text
    assert md_code(str(study)) in md


def test_md_text_and_md_code():
    assert md_text("a <b> & c") == "a &lt;b&gt; &amp; c"
    assert md_text("[x](javascript:alert(1))") == "[x]\\(javascript:alert(1))"
    assert md_text("iops [IOPS]") == "iops [IOPS]"  # units keep their brackets
    assert md_text("`code` \\ x\ny") == "\\`code\\` \\\\ x y"
    assert md_code("a`b") == "``a`b``" and md_code("plain") == "`plain`"
