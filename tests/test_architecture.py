"""The layering the design promises, checked on the source: no import circle among fslab's
modules (imports inside functions included), no import from a lower floor to a higher one
(the floors are read from docs/architecture.md, so the page and the check cannot drift),
and the job's data modules importable without pulling in the plug-ins, backends or runner."""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fslab"
FLOORS_DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: -(level - 1)]
    return ".".join(base + ([name] if name else []))


def _under_type_checking(tree: ast.AST) -> set[int]:
    """Line numbers of imports inside ``if TYPE_CHECKING:`` (annotations only, never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        lines.add(inner.lineno)
    return lines


def import_graph() -> dict[str, set[str]]:
    """module -> the fslab modules it imports anywhere (module level or in a function)."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text())
        skip = _under_type_checking(tree)
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno in skip:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.startswith("fslab"))
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, is_package, node.level, node.module)
                if base.startswith("fslab"):
                    targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                                   for a in node.names)
        graph[module] = {k for t in targets if (k := known(t)) and k != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def _discovering_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package whose ``__init__`` discovers its plug-ins (pkgutil, or a Registry given the
    package's name, which loads them on demand) imports them by name at run time, which the
    source does not show; each plug-in importing its package back is that pattern, not a
    circle. Drop plug-in -> own package edges for such packages."""
    modules = _modules()
    out = {m: set(targets) for m, targets in graph.items()}
    for package, (path, is_package) in modules.items():
        text = path.read_text()
        if is_package and ("pkgutil.iter_modules" in text or re.search(r"Registry\([^)]*__name__\)", text)):
            for module in out:
                if module.rpartition(".")[0] == package:
                    out[module].discard(package)
    return out


def test_no_import_circle_among_fslab_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the whole package was read
    assert circles(_discovering_packages(graph)) == []


def test_the_circle_check_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_plan_imports_no_backend_and_the_job_model_no_plug_in() -> None:
    graph = import_graph()
    assert not any(t.startswith("fslab.backends") for t in graph["fslab.plan"])
    # the job model reads only the words it shares with the store (stdlib only): Params, a
    # case's label; not the store's shapes themselves (fslab.stored), which a job never uses;
    # its classes are fslab.datarecords'
    assert graph["fslab.jobdata.model"] <= {"fslab.jobdata.terms", "fslab.datarecords"}
    assert graph["fslab.jobdata.record"] <= {"fslab.errors", "fslab.metrics", "fslab.jobdata.model",
                                             "fslab.datarecords"}


def test_reading_records_loads_no_plug_in_backend_or_runner() -> None:
    """The store and reports read records: that must not load what runs jobs."""
    code = ("import sys, fslab.jobdata.record, fslab.job.folder, fslab.jobdata.model, fslab.store; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('fslab'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "fslab.jobdata.record" in loaded
    heavy = [m for m in loaded if m.startswith(("fslab.runner", "fslab.executors", "fslab.backends",
                                                "fslab.workloads", "fslab.devices", "fslab.plan",
                                                "fslab.job.execute"))]
    assert heavy == []


# -- floors ---------------------------------------------------------------------------

_FLOOR_LINE = re.compile(r"^(\d+)\. \*\*([\w-]+)\*\*:(.*)$")


def read_floors(text: str) -> list[tuple[str, list[str]]]:
    """(floor name, module names) lowest first, from the numbered lines of the floors page:
    ``1. **base**: `fslab.errors` `fslab.units` ...``."""
    floors = []
    for line in text.splitlines():
        m = _FLOOR_LINE.match(line)
        if m:
            assert int(m.group(1)) == len(floors) + 1, f"{FLOORS_DOC}: floor {m.group(2)} is numbered out of order"
            floors.append((m.group(2), re.findall(r"`([\w.*]+)`", m.group(3))))
    return floors


def floor_of(module: str, floors: list[tuple[str, list[str]]]) -> int | None:
    """Index of the floor whose most specific name covers ``module``: the name itself, a
    package covering what is under it, a ``*`` pattern; the root ``fslab`` only itself."""
    best: tuple[int, int] | None = None  # (specificity, floor)
    for index, (_, names) in enumerate(floors):
        for name in names:
            covers = module == name or ("*" in name and fnmatch.fnmatchcase(module, name)) or (
                name != "fslab" and module.startswith(name + "."))
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), index)
    return None if best is None else best[1]


def upward_imports(graph: dict[str, set[str]], floors: list[tuple[str, list[str]]]) -> list[str]:
    """Every import from a lower floor to a higher one, each saying the pair and the fix."""
    found = []
    for module in sorted(graph):
        low = floor_of(module, floors)
        for target in sorted(graph[module]):
            high = floor_of(target, floors)
            if low is not None and high is not None and high > low:
                found.append(f"{module} (floor {floors[low][0]}) imports {target} (floor {floors[high][0]}): "
                             f"move what it needs from {target} down to floor {floors[low][0]} or below, "
                             f"or move {module} up, and keep {FLOORS_DOC.name} saying so")
    return found


def test_every_module_stands_on_one_floor_of_the_page() -> None:
    floors = read_floors(FLOORS_DOC.read_text())
    assert len(floors) >= 5, f"{FLOORS_DOC}: no floors read (lines like '1. **base**: `fslab.errors` ...')"
    modules = import_graph()
    homeless = sorted(m for m in modules if floor_of(m, floors) is None)
    assert homeless == [], f"put these modules on a floor in {FLOORS_DOC}: {homeless}"
    stale = [name for _, names in floors for name in names
             if not any(m == name or m.startswith(name + ".") or fnmatch.fnmatchcase(m, name) for m in modules)]
    assert stale == [], f"{FLOORS_DOC} names modules that do not exist: {stale}"


def test_no_lower_floor_imports_a_higher_one() -> None:
    floors = read_floors(FLOORS_DOC.read_text())
    assert upward_imports(import_graph(), floors) == []


def test_the_floor_check_finds_an_upward_import() -> None:
    floors = [("base", ["fslab", "fslab.errors"]), ("data", ["fslab.jobdata"]),
              ("running", ["fslab.job", "fslab.cli*"])]
    graph = {"fslab.jobdata.model": {"fslab.errors"}, "fslab.job.execute": {"fslab.jobdata.model"},
             "fslab.jobdata.record": {"fslab.job.tracing"}, "fslab.cli_x": {"fslab.job"},
             "fslab.errors": {"fslab.cli_x"}}
    found = upward_imports(graph, floors)
    assert [f.split(":")[0] for f in found] == [
        "fslab.errors (floor base) imports fslab.cli_x (floor running)",
        "fslab.jobdata.record (floor data) imports fslab.job.tracing (floor running)"]
    assert "move what it needs from fslab.job.tracing down to floor data" in found[1]
    assert floor_of("fslab.jobdata", floors) == 1 and floor_of("fslab.jobdataextra", floors) is None
