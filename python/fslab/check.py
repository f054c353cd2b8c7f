"""One check of what fslab needs on this machine (a tool, a kernel feature, the guest
kernel), as `fslab doctor` lists it: its own module, so the doctor and each plug-in that
contributes checks (the guest backend's requirements) import it without a circle."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    needed_for: str = ""
