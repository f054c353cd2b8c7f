"""The layering the design promises, checked on the source: no import circle among fslab's
modules (imports inside functions included), and the job's data modules importable
without pulling in the plug-ins, backends or runner."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fslab"


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
    """A package whose ``__init__`` discovers its plug-ins (pkgutil) imports them by name at
    run time, which the source does not show; each plug-in importing its package back is
    that pattern, not a circle. Drop plug-in -> own package edges for such packages."""
    modules = _modules()
    out = {m: set(targets) for m, targets in graph.items()}
    for package, (path, is_package) in modules.items():
        if is_package and "pkgutil.iter_modules" in path.read_text():
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
    # the job model reads only the store's plain shapes (stdlib only): Params, a case's label
    assert graph["fslab.job.model"] <= {"fslab.stored"}
    assert graph["fslab.job.record"] <= {"fslab.errors", "fslab.metrics", "fslab.job.model"}


def test_reading_records_loads_no_plug_in_backend_or_runner() -> None:
    """The store and reports read records: that must not load what runs jobs."""
    code = ("import sys, fslab.job.record, fslab.job.folder, fslab.job.model, fslab.store; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('fslab'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "fslab.job.record" in loaded
    heavy = [m for m in loaded if m.startswith(("fslab.runner", "fslab.executors", "fslab.backends",
                                                "fslab.workloads", "fslab.devices", "fslab.plan",
                                                "fslab.job.execute"))]
    assert heavy == []
