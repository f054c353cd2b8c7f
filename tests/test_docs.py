"""The README and the reference under docs/ cannot drift from the code: the generated parts
(fields, workloads, devices, file systems, models, report sections, commands) match what
``python -m fslab.docs`` gives now, every relative link resolves, and the README stays a
five-minute read that names the two commands."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fslab import docs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_generated_parts_match_the_code() -> None:
    stale = docs.stale()
    assert not stale, (f"the reference differs from the code in {', '.join(stale)}; run "
                       f"`{docs.REGENERATE}` and commit docs/")


def test_a_change_the_generator_would_make_is_caught(tmp_path: Path) -> None:
    # The check must fail both ways: a name the code has but the page lacks, and a name
    # the page has that the code no longer does.
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    page = copy / "workloads.md"
    original = page.read_text()
    page.write_text(original.replace('### `kind = "postmark"`', '### `kind = "postmark-old"`'))
    assert docs.stale(copy) == ["docs/workloads.md: workloads"]
    page.write_text(original.replace("| `iops` | IOPS |", "| `iops_gone` | IOPS |"))
    assert docs.stale(copy) == ["docs/workloads.md: workloads"]
    page.write_text(original)
    assert docs.stale(copy) == []


def test_a_page_without_its_markers_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    (copy / "commands.md").write_text("# Commands\n")
    with pytest.raises(ValueError, match="commands.md has no region for 'commands'"):
        docs.stale(copy)


def test_every_name_in_the_code_is_in_the_reference() -> None:
    # Independent of the generator's own walk: the registries and the parser, read here.
    import typer

    from fslab.cli import app
    from fslab.devices import DEVICES
    from fslab.model_catalog import model_files
    from fslab.spec import StudySpec
    from fslab.workloads import WORKLOADS

    text = "\n".join(p.read_text() for p in DOCS.glob("*.md"))
    missing = [f"workload {n}" for n in WORKLOADS.names() if f'`kind = "{n}"`' not in text]
    missing += [f"device kind {n}" for n in DEVICES.names() if f'`kind = "{n}"`' not in text]
    missing += [f"model {n}" for n in model_files() if f"`{n}`" not in text]
    missing += [f"field {n}" for n in StudySpec.model_fields if f"`{n}" not in text]

    def commands(command: object, path: str) -> list[str]:
        subs = getattr(command, "commands", None)
        if subs is None:
            return [path]
        return [c for name, sub in subs.items() for c in commands(sub, f"{path} {name}")]

    missing += [f"command {c}" for c in commands(typer.main.get_command(app), "fslab")
                if f"### `{c}" not in text]
    assert not missing, f"not in docs/: {missing}; run `{docs.REGENERATE}`"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def test_relative_links_resolve() -> None:
    broken = []
    for page in pages():
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL: not checked offline
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no heading #{anchor})")
    assert not broken, "broken links: " + "; ".join(broken)


def test_the_link_check_finds_a_broken_anchor() -> None:
    assert _anchor("What a study's predictions say") == "what-a-studys-predictions-say"
    assert _anchor('`kind = "block"`') == "kind--block"
    assert "reading-the-table" in _anchors(DOCS / "statistics.md")
    assert "no-such-heading" not in _anchors(DOCS / "statistics.md")


def test_readme_is_short_and_names_the_two_commands() -> None:
    text = README.read_text()
    lines = len(text.splitlines())
    assert lines < README_MAX_LINES, f"README.md has {lines} lines; move reference material to docs/"
    assert "make demo" in text and "make test" in text


def test_readme_lists_every_preset() -> None:
    from importlib import resources

    shipped = {p.name[:-5] for p in resources.files("fslab.presets").iterdir() if p.name.endswith(".toml")}
    table = set(re.findall(r"^\| `([\w-]+)` \|", README.read_text(), re.MULTILINE))
    assert table == shipped, f"README presets table: missing {shipped - table}, extra {table - shipped}"


def test_readme_study_is_the_example_file_and_loads() -> None:
    from fslab.study import load_spec

    example = DOCS / "examples" / "first-study.toml"
    assert example.read_text() in README.read_text(), "README.md must quote docs/examples/first-study.toml whole"
    spec, _, _ = load_spec(str(example))
    assert sorted(spec.filesystems) == ["ext4", "xfs"]
    assert spec.study.repetitions == "auto"


def test_every_make_target_the_docs_name_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.MULTILINE))
    named = {t for page in pages() for t in re.findall(r"`make ([\w-]+)", page.read_text())}
    assert named and named <= targets, f"the docs name make targets the Makefile lacks: {named - targets}"
