"""The backends' names as a study file writes them, and the order ``auto`` tries them in.
Apart from fslab.spec (pydantic) so that choosing a backend loads no schema: a guest
that plans under TCG pays for every module it imports."""

from __future__ import annotations

from typing import Literal

Backend = Literal["auto", "host", "guest"]
# study.backend may also be "shared": auto, but one backend for every entry (the first of
# host, guest that runs them all), so the file systems of a comparison share a kernel.
StudyBackend = Literal["auto", "host", "guest", "shared"]
BACKEND_PREFERENCE: tuple[Backend, ...] = ("host", "guest")  # what auto tries, in order
