"""The host's side of a guest's disk errors: QEMU's BLOCK_IO_ERROR events.

When the host refuses a guest's disk request (the image file's write fails), the guest
sees only "I/O error, dev vda"; QEMU knows why (ENOSPC, EIO, ...) and says so on its
monitor (QMP) as a BLOCK_IO_ERROR event with the host's error text. ``QmpEvents`` listens
on the guest's QMP socket in a thread and keeps those events, so a failed run can name
the host's reason. Protocol: QEMU's docs/interop/qmp-spec (a greeting, then
``qmp_capabilities``, then one JSON object per line).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

CONNECT_TIMEOUT_S = 30.0


def describe_event(event: dict[str, Any]) -> str:
    """'disk0 write: No space left on device (QEMU reported it to the guest)'."""
    data = event.get("data", {})
    device = data.get("device") or data.get("node-name") or "a disk"
    operation = data.get("operation", "I/O")
    reason = data.get("reason", "no reason given")
    action = data.get("action", "?")
    return f"{device} {operation}: {reason} (QEMU's action: {action})"


class QmpEvents:
    """Connects to ``socket_path`` (QEMU made it with ``-qmp unix:PATH,server=on,wait=off``)
    and collects BLOCK_IO_ERROR events until ``stop``. Never raises: a monitor that cannot
    be reached leaves ``unavailable`` saying why."""

    def __init__(self, socket_path: Path):
        self.socket_path = socket_path
        self.errors: list[str] = []
        self.unavailable: str | None = None
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="qmp-events", daemon=True)

    def start(self) -> QmpEvents:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def _connect(self) -> socket.socket | None:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not self._stop.is_set():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(self.socket_path))
                return sock
            except OSError as exc:
                sock.close()
                if time.monotonic() > deadline:
                    self.unavailable = f"QEMU's monitor {self.socket_path}: {exc.strerror}"
                    return None
                time.sleep(0.05)
        return None

    def _listen(self) -> None:
        sock = self._connect()
        if sock is None:
            return
        self._sock = sock
        try:
            reader = sock.makefile("rb")
            reader.readline()  # the greeting
            sock.sendall(b'{"execute": "qmp_capabilities"}\n')
            for line in reader:
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if message.get("event") == "BLOCK_IO_ERROR":
                        self.errors.append(describe_event(message))
        except OSError as exc:
            if not self._stop.is_set():
                self.unavailable = f"QEMU's monitor {self.socket_path}: {exc.strerror}"
        finally:
            sock.close()
