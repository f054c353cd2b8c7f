"""One generic registry for every plug-in family: file systems, workloads, devices,
device models and exporters. Adding an entry touches one module; the runner asks an
entry's capabilities and never switches on its name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from .errors import FslabError

T = TypeVar("T")


class UnknownEntry(FslabError, KeyError):
    """A name no entry of the family has (a KeyError too, for callers that expect one)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Registry(Generic[T]):
    """Named entries of one family. ``kind`` names the family in error messages."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            raise UnknownEntry(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(sorted(self._entries.items()))
