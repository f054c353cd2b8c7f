"""The reference pages' generated parts, written from the code they describe: the study
file's fields (the schema, ``spec.py``, and each device kind's section), the workloads
with their metrics, the device kinds, file systems, device models, report sections and
commands. Each part sits between marker lines in a page under ``docs/``::

    <!-- generated: NAME (python -m fslab.docs) -->
    ...
    <!-- end generated: NAME -->

``python -m fslab.docs`` rewrites every part in place; ``python -m fslab.docs --check``
lists the stale ones and exits 1 (tests/test_docs.py runs the same check, so a field,
workload, model or command added or removed without regenerating fails the tests).
Everything between the markers is the generator's; the prose around them is by hand.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .datarecords import fields as record_fields

REGENERATE = "python -m fslab.docs"
_START = "<!-- generated: {name} ({cmd}) -->"
_END = "<!-- end generated: {name} -->"


def _cell(text: object) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    """A field's type as a reader of the study file sees it (TOML words, not Python's)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " | ".join(names)
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type_name(args[1])}" if len(args) == 2 else "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    words = {str: "string", int: "integer", float: "number", bool: "boolean", Any: "any value"}
    return words.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models a field's type holds (directly, in a list, a table or a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _nested_models(arg)


def _path_suffix(annotation: Any) -> str:
    """How a nested table's keys are written below its field: ``[]`` for a list of
    tables, ``.NAME`` for a table of tables."""
    origin = typing.get_origin(annotation)
    if origin is list:
        return "[]"
    if origin is dict:
        return ".NAME"
    for arg in typing.get_args(annotation):
        if _path_suffix(arg):
            return _path_suffix(arg)
    return ""


def _default(info: Any) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "its fields' defaults"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def field_rows(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, str, str, str]]:
    """(path, type, default, description) of every field of ``model`` and the tables it
    holds, depth first, in declaration order."""
    for name, info in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, _type_name(info.annotation), _default(info), info.description or ""
        for nested in _nested_models(info.annotation):
            yield from field_rows(nested, path + _path_suffix(info.annotation))


def _field_table(rows: Iterator[tuple[str, str, str, str]]) -> str:
    lines = ["| field | type | default | what it is |", "|---|---|---|---|"]
    lines += [f"| `{path}` | {_cell(kind)} | {_cell(default)} | {_cell(text)} |"
              for path, kind, default, text in rows]
    return "\n".join(lines)


def study_fields() -> str:
    """Every field of the study file's schema (``spec.StudySpec``)."""
    from .spec import StudySpec

    note = ("`device.*`, `filesystems.NAME.device.*` and `workloads[].*` also take the fields of "
            "their kind's plug-in: the device kinds' fields are listed in "
            "[devices-and-models.md](devices-and-models.md#every-device-kind), a workload's parameters in "
            "[workloads.md](workloads.md) (any fio option, for `fio`).")
    return _field_table(field_rows(StudySpec, "")) + "\n\n" + note


def device_kinds() -> str:
    """Every device kind with its capabilities and its own ``[device]`` fields."""
    from .devices import DEVICES

    parts = []
    for name, kind in DEVICES.items():
        flags = [label for label, on in (("needs root", kind.needs_root), ("traceable", kind.traceable),
                                         ("image file", kind.image_file), ("needs a guest", kind.needs_guest),
                                         ("or the host where its kernel can", kind.host_probe is not None))
                 if on]
        tools = ", ".join(f"`{t}` ({pkg})" for t, pkg in sorted(kind.tools.items())) or "none"
        text = _cell(kind.description).replace("``", "`")  # docstring markup to Markdown
        parts.append(f"### `kind = \"{name}\"`\n\n{text or '(no description)'}\n\n"
                     f"Capabilities: {', '.join(flags) or 'none'}. Tools: {tools}.\n\n"
                     + _field_table(field_rows(kind.section, "device")))
    return "\n\n".join(parts)


def filesystems() -> str:
    """Every file system type a ``[filesystems.NAME]`` entry may name."""
    from .filesystems import FILESYSTEMS

    lines = ["| type | mkfs | default mkfs arguments | runs | tools |", "|---|---|---|---|---|"]
    for name, fs in FILESYSTEMS.items():
        where = "guest (or the host, where its kernel has it)" if fs.needs_guest else "host or guest"
        if fs.guest_kernels:
            where += f"; guest kernels {', '.join(fs.guest_kernels)}"
        tools = ", ".join(f"`{t}` ({pkg})" for t, pkg in sorted(fs.tools.items())) or "—"
        mkfs = f"`{fs.mkfs_tool}`" if fs.mkfs_tool else "none"
        lines.append(f"| `{name}` | {mkfs} | {_cell(' '.join(fs.default_mkfs)) or '—'} | {where} | {tools} |")
    return "\n".join(lines)


def workloads() -> str:
    """Every workload kind: its tools, capabilities, an example and its metrics."""
    from .workloads import WORKLOADS, WorkloadCapabilities

    parts = []
    for name, workload in WORKLOADS.items():
        caps = [f.name for f in record_fields(WorkloadCapabilities)
                if getattr(workload.capabilities, f.name)]
        tools = ", ".join(f"`{t}` ({pkg})" for t, pkg in sorted(workload.tools.items())) or "none"
        example = ", ".join(f"{k} = {_toml(v)}" for k, v in workload.example.items()) or "(none)"
        lines = [f"### `kind = \"{name}\"`", "",
                 f"Tools: {tools}. Capabilities: {', '.join(caps) or 'none'}.", "",
                 f"Smallest example: `{_cell(example)}`", "",
                 "| metric (suffix) | unit | better | what it is |", "|---|---|---|---|"]
        for suffix, kind in sorted(workload.metrics.items()):
            better = ("higher" if kind.higher_is_better else "lower") if kind.ranked else "not ranked"
            lines.append(f"| `{suffix}` | {_cell(kind.unit)} | {better} | {_cell(kind.description)} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def device_models() -> str:
    """Every shipped device model file, named devices first, and the built-on-the-fly RAID names."""
    from .model_catalog import RAID_PATTERN, catalog

    lines = ["| model | kind | what it is | sources | published figures |", "|---|---|---|---|---|"]
    for entry in catalog():
        cited = f"{len(entry.sources)} cited" if entry.named else "generic class"
        lines.append(f"| `{entry.name}` | {entry.kind} | {_cell(entry.description)} | {cited} "
                     f"| {len(entry.published)} |")
    lines.append(f"| `{RAID_PATTERN[0]}` | raid | {_cell(RAID_PATTERN[1])} | — | 0 |")
    return "\n".join(lines)


def report_sections() -> str:
    """Every registered report section beyond the comparison table."""
    from .report.sections import SECTIONS

    lines = ["| section | built for | module |", "|---|---|---|"]
    for name, section in SECTIONS.items():
        kind = f"studies with `{section.workload_kind}` cells" if section.workload_kind else "every study"
        module = getattr(section.build, "__module__", "").rsplit(".", 1)[-1]
        lines.append(f"| `{name}` | {kind} | `report/sections/{module}.py` |")
    return "\n".join(lines)


def commands() -> str:
    """Every `fslab` command with its arguments and options, from the CLI parser."""
    import typer

    from .cli import app

    parts = []
    for path, command in _walk(typer.main.get_command(app), "fslab"):
        if hasattr(command, "commands"):  # a group: its commands follow
            continue
        params = list(command.params)
        args = " ".join(p.name.upper() if p.required else f"[{p.name.upper()}]"
                        for p in params if p.param_type_name == "argument")
        hidden = " (internal)" if command.hidden else ""
        lines = [f"### `{path}{' ' + args if args else ''}`{hidden}", "", _cell(_first_paragraph(command.help))]
        if params:
            lines += ["", "| argument or option | what it is |", "|---|---|"]
            for param in params:
                if param.param_type_name == "argument":
                    names = f"`{param.name.upper()}`"
                else:
                    names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
                lines.append(f"| {names} | {_cell(getattr(param, 'help', None) or '')} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The command and, for a group, every command below it, by name."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, f"{path} {name}")


def _first_paragraph(text: str | None) -> str:
    return (text or "").strip().split("\n\n")[0]


# Each generated part: its name, the page it lives in (under docs/) and its builder.
PARTS: dict[str, tuple[str, Callable[[], str]]] = {
    "study-fields": ("study-file.md", study_fields),
    "device-kinds": ("devices-and-models.md", device_kinds),
    "filesystems": ("devices-and-models.md", filesystems),
    "device-models": ("devices-and-models.md", device_models),
    "workloads": ("workloads.md", workloads),
    "report-sections": ("results-and-reports.md", report_sections),
    "commands": ("commands.md", commands),
}


def docs_dir() -> Path:
    """The repository's docs/ folder (this file is python/fslab/docs.py)."""
    return Path(__file__).resolve().parents[2] / "docs"


def _region(name: str) -> re.Pattern[str]:
    start = re.escape(_START.format(name=name, cmd=REGENERATE))
    end = re.escape(_END.format(name=name))
    return re.compile(f"({start})\n(?:.*?\n)?({end})", re.DOTALL)


def render(text: str, name: str, body: str, page: str) -> str:
    """``text`` with part ``name``'s region replaced by ``body``; raises ValueError when
    the page has no such region (the markers are written by hand once)."""
    pattern = _region(name)
    if not pattern.search(text):
        raise ValueError(f"docs/{page} has no region for {name!r}: add the lines "
                         f"{_START.format(name=name, cmd=REGENERATE)!r} and {_END.format(name=name)!r}")
    return pattern.sub(lambda m: f"{m.group(1)}\n{body}\n{m.group(2)}", text, count=1)


def stale(root: Path | None = None) -> list[str]:
    """The parts whose page differs from what the code gives now (empty: all current)."""
    root = root or docs_dir()
    out = []
    for name, (page, build) in PARTS.items():
        text = (root / page).read_text()
        if render(text, name, build(), page) != text:
            out.append(f"docs/{page}: {name}")
    return out


def write(root: Path | None = None) -> list[str]:
    """Rewrite every part in place; returns the parts that changed."""
    root = root or docs_dir()
    changed = []
    for name, (page, build) in PARTS.items():
        path = root / page
        text = path.read_text()
        new = render(text, name, build(), page)
        if new != text:
            path.write_text(new)
            changed.append(f"docs/{page}: {name}")
    return changed


def main(argv: list[str]) -> int:
    if not docs_dir().is_dir():
        print(f"no docs/ folder at {docs_dir()}: run this from a source checkout of fslab (pip install -e .)",
              file=sys.stderr)
        return 2
    if argv[:1] == ["--check"]:
        old = stale()
        for part in old:
            print(f"stale: {part}")
        if old:
            print(f"regenerate with: {REGENERATE}")
        return 1 if old else 0
    for part in write():
        print(f"rewrote {part}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
