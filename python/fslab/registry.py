"""One generic registry for every plug-in family: file systems, workloads, devices,
device models and exporters. Adding an entry touches one module; the runner asks an
entry's capabilities and never switches on its name."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Generic, TypeVar

from .errors import FslabError

T = TypeVar("T")


class UnknownEntry(FslabError, KeyError):
    """A name no entry of the family has (a KeyError too, for callers that expect one)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Registry(Generic[T]):
    """Named entries of one family. ``kind`` names the family in error messages.

    With ``package``, the family's entries are that package's modules, each registering
    (at least) the entry named as the module: ``get(name)`` imports only that module, and
    listing the family (``names``, ``items``, ``in``) imports them all. So a job process
    loads the one workload and device kind it runs, not every plug-in and what they
    import (a guest under TCG pays for each module)."""

    def __init__(self, kind: str, package: str | None = None):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._package = package
        self._all_loaded = package is None

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        if name not in self._entries:
            self._load(name)
        try:
            return self._entries[name]
        except KeyError:
            self._load_all()
            known = ", ".join(sorted(self._entries))
            raise UnknownEntry(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name not in self._entries:
            self._load(name)
        return name in self._entries

    def names(self) -> list[str]:
        self._load_all()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        self._load_all()
        return iter(sorted(self._entries.items()))

    def _load(self, name: str) -> None:
        """Import the package's module named ``name``, if it has one."""
        if self._all_loaded or not name.isidentifier():
            return
        module = f"{self._package}.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the plug-in exists but its own import failed: say so
                raise

    def _load_all(self) -> None:
        if self._all_loaded:
            return
        import pkgutil

        self._all_loaded = True  # first: a plug-in that lists the family while loading
        try:
            for info in pkgutil.iter_modules(sys.modules[str(self._package)].__path__):
                importlib.import_module(f"{self._package}.{info.name}")
        except BaseException:
            self._all_loaded = False
            raise
