"""The report is built from stored results only: no report module imports what runs a
study (the runner, an executor, a backend, a workload, a device, planning), neither at
import time nor lazily inside a function, so reading results never loads them."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import fslab.report

FORBIDDEN = ("fslab.runner", "fslab.executor", "fslab.executors", "fslab.backends", "fslab.workloads",
             "fslab.devices", "fslab.filesystems", "fslab.jobs", "fslab.job.execute", "fslab.job.entry",
             "fslab.plan")
REPORT = Path(fslab.report.__file__).parent


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def _report_modules() -> list[str]:
    return ["fslab.report"] + [m.name for m in pkgutil.walk_packages([str(REPORT)], "fslab.report.")]


def test_importing_any_report_module_loads_nothing_that_runs_a_study() -> None:
    modules = _report_modules()
    assert {"fslab.report.data", "fslab.report.sections.bonnie_table", "fslab.report.terminal"} <= set(modules)
    # A fresh interpreter imports every report module in turn and says which module
    # brought in each forbidden one.
    script = (
        "import importlib, json, sys\n"
        f"forbidden = {FORBIDDEN!r}\n"
        "seen, blame = set(sys.modules), {}\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    new = set(sys.modules) - seen\n"
        "    seen |= new\n"
        "    bad = sorted(m for m in new if any(m == f or m.startswith(f + '.') for f in forbidden))\n"
        "    if bad:\n"
        "        blame[name] = bad\n"
        "print(json.dumps(blame))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def _imported(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, lazy ones inside functions included."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out += [(node.lineno, target)] + [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def test_no_report_module_imports_them_lazily_either(tmp_path: Path) -> None:
    # the check sees a lazy relative import of the runner, where one would be
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def status():\n    from ..runner import shown_status\n    return shown_status\n")
    assert [name for _, name in _imported(lazy, "fslab.report.lazy") if _forbidden(name)] == [
        "fslab.runner", "fslab.runner.shown_status"]
    found = []
    for path in sorted(REPORT.rglob("*.py")):
        parts = path.relative_to(REPORT.parent.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found += [f"{path.relative_to(REPORT)}:{line}: {name}" for line, name in _imported(path, module)
                  if _forbidden(name)]
    assert found == []
