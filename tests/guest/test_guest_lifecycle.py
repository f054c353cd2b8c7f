"""A guest's life: exit status back, a hung command killed at its deadline, and no QEMU
left behind when the fslab process that started it is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fslab.backends.guest.build import GuestBuild
from fslab.backends.guest.launcher import GuestConfig, run_in_guest
from fslab.backends.guest.reaper import STATE_NAME, GuestState, alive, cleanup_guests

pytestmark = pytest.mark.guest


def _qemu_pids_under(folder: Path) -> list[int]:
    """QEMU processes whose command line mentions ``folder`` (ours, not other users')."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmdline and str(folder) in cmdline:
            found.append(int(proc.name))
    return found


def test_a_command_sees_what_init_set_up_and_its_status_and_output_come_back(guest_build: GuestBuild,
                                                                           tmp_path: Path) -> None:
    """One boot, one command: what init sets up (its mounts come from generated tables),
    each place a job writes or reads, checked from inside; the kernel skipped its crypto
    self-tests (a second and more of every TCG boot: launcher.KERNEL_ARGS); and the
    command's exit status, stdout and stderr come back apart."""
    share = tmp_path / "share"
    share.mkdir()
    (share / "from-host").write_text("hello\n")
    console = tmp_path / "console.log"
    script = ("set -e; echo x > /etc/fslab-probe; echo y > /var/fslab-probe; stat -c %a /tmp; "
              "test -c /dev/loop-control; test -s /lib/modules/$(uname -r)/modules.dep; "
              f"cat {share}/from-host; echo z > {share}/from-guest; "
              "cat /sys/fs/cgroup/cgroup.subtree_control; cat /proc/sys/kernel/hostname; "
              "mount | grep -c ' type overlay '; cat /sys/module/cryptomgr/parameters/notests; "
              "echo err >&2; exit 42")
    result = run_in_guest(GuestConfig(run_root=tmp_path, shares={"probe": share}, console_path=console),
                          ["sh", "-c", script], 120, guest_build)
    assert (result.exit_status, result.timed_out) == (42, False), result.stderr + result.console_tail
    # /etc, /var, /root and /tmp; and /usr/lib where the host has no /lib/modules to put a tmpfs on
    overlays = 4 if Path("/lib/modules").is_dir() else 5
    assert result.stdout.split() == ["1777", "hello", "memory", "fslab-guest", str(overlays), "Y"]
    assert result.stderr == "err\n"
    assert (share / "from-guest").read_text() == "z\n"
    assert not (Path("/etc") / "fslab-probe").exists()  # the host's root stays as it was
    assert result.kernel_release == guest_build.release
    assert "fslab-guest: ready" in console.read_text()
    assert _qemu_pids_under(tmp_path) == []
    assert list(tmp_path.glob(f"*/{STATE_NAME}")) == []


def test_a_hung_guest_is_killed_at_its_deadline(guest_build: GuestBuild, tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_in_guest(GuestConfig(run_root=tmp_path), ["sleep", "600"], 3, guest_build)
    assert result.timed_out and result.exit_status is None
    assert "fslab-guest: ready" in result.console_tail
    assert time.monotonic() - started < 120
    assert _qemu_pids_under(tmp_path) == []
    assert not any(tmp_path.iterdir())  # run folder, control share and state file gone


_OWNER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from fslab.backends.guest.launcher import Guest, GuestConfig
    config = GuestConfig(run_root=Path(sys.argv[1]), die_with_parent=sys.argv[2] == "1",
                         memory_bytes=512 << 20, cpus=1)
    with Guest(config) as g:
        print("BOOTED", flush=True)
        time.sleep(600)
""")


def _start_owner(tmp_path: Path, die_with_parent: bool) -> tuple[subprocess.Popen[str], GuestState]:
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(tmp_path),
                              "1" if die_with_parent else "0"],
                             stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip() == "BOOTED", line
    (state_file,) = tmp_path.glob(f"*/{STATE_NAME}")
    state = GuestState.read(state_file)
    assert alive(state.qemu_pid, state.qemu_start_ticks)
    return owner, state


def _wait_gone(state: GuestState, limit_s: float = 10) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not alive(state.qemu_pid, state.qemu_start_ticks):
            return True
        time.sleep(0.1)
    return False


def test_cleanup_kills_the_qemu_of_a_sigkilled_owner(guest_build: GuestBuild, tmp_path: Path) -> None:
    owner, state = _start_owner(tmp_path, die_with_parent=False)
    try:
        # While its owner lives, cleanup leaves the guest alone.
        assert any(line.startswith("leave guest") for line in cleanup_guests(under=tmp_path))
        assert alive(state.qemu_pid, state.qemu_start_ticks)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        time.sleep(0.5)
        assert alive(state.qemu_pid, state.qemu_start_ticks)  # orphaned, still running
        done = cleanup_guests(under=tmp_path)
        assert f"kill QEMU pid {state.qemu_pid} (guest {state.folder})" in done
        assert _wait_gone(state)
        assert not Path(state.folder).exists()
    finally:
        if alive(state.qemu_pid, state.qemu_start_ticks):
            os.kill(state.qemu_pid, signal.SIGKILL)


def test_qemu_dies_with_a_sigkilled_owner(guest_build: GuestBuild, tmp_path: Path) -> None:
    owner, state = _start_owner(tmp_path, die_with_parent=True)
    try:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert _wait_gone(state)
        # Only the folder is left; cleanup removes it without killing anything.
        done = cleanup_guests(under=tmp_path)
        assert done == [f"remove guest folder {state.folder}"]
        assert not Path(state.folder).exists()
    finally:
        if alive(state.qemu_pid, state.qemu_start_ticks):
            os.kill(state.qemu_pid, signal.SIGKILL)


def test_sigterm_during_boot_leaves_nothing(guest_build: GuestBuild, tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from fslab.signals import install_handlers
        from fslab.backends.guest.launcher import Guest, GuestConfig
        install_handlers()
        print("STARTING", flush=True)
        with Guest(GuestConfig(run_root=Path(sys.argv[1]), memory_bytes=512 << 20, cpus=1)):
            pass
    """)
    owner = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    assert owner.stdout.readline().strip() == "STARTING"
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(f"*/{STATE_NAME}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _qemu_pids_under(tmp_path), "QEMU did not start"
    owner.send_signal(signal.SIGTERM)
    owner.wait(timeout=60)
    assert owner.returncode != 0
    assert _qemu_pids_under(tmp_path) == []
    assert not any(tmp_path.iterdir())


FAILING_QEMU = """#!/bin/sh
# The first start plays a kernel that panics in early boot (its line, then QEMU's exit under
# -no-reboot), the second one that stalls (the watchdog's line, then nothing); later starts
# are the real QEMU.
n=$(cat "$FSLAB_TEST_STARTS" 2>/dev/null || echo 0)
echo $((n + 1)) > "$FSLAB_TEST_STARTS"
[ "$n" -ge 2 ] && exec {qemu} "$@"
while [ $# -gt 0 ]; do [ "$1" = -serial ] && console="${{2#file:}}"; shift; done
if [ "$n" = 0 ]; then
  echo "[    4.414433] Kernel panic - not syncing: Fatal exception in interrupt" >> "$console"
  exit 0
fi
echo $$ > "$FSLAB_TEST_STARTS.pid"
echo "[   48.456699] watchdog: BUG: soft lockup - CPU#1 stuck for 45s! [swapper/0:1]" >> "$console"
exec sleep 600
"""


def test_a_boot_the_kernel_panics_or_stalls_in_is_abandoned_and_made_again(
        guest_build: GuestBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that panics or reports itself stuck before ready costs another boot, not the
    job (nor, stalled, the boot deadline): the stalled QEMU is killed within seconds and the
    next boot serves."""
    import shutil

    from fslab.backends.guest import launcher

    qemu = shutil.which("qemu-system-x86_64")
    assert qemu is not None
    # The KVM verdict is the real QEMU's (kept per QEMU binary: not probed for the stand-in)
    verdict = launcher.kvm_verdict(guest_build)
    monkeypatch.setattr(launcher, "kvm_verdict", lambda *_args, **_kw: verdict)
    monkeypatch.setattr(launcher, "BOOT_ATTEMPTS", 3)  # both kinds in one test (2 in use)
    fake = tmp_path / "bin" / "qemu-system-x86_64"
    fake.parent.mkdir()
    fake.write_text(FAILING_QEMU.format(qemu=qemu))
    fake.chmod(0o755)
    starts = tmp_path / "starts"
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("FSLAB_TEST_STARTS", str(starts))
    started = time.monotonic()
    with launcher.Guest(GuestConfig(run_root=tmp_path), guest_build) as guest:
        assert guest.run(["true"], 60).exit_status == 0
    assert time.monotonic() - started < 120  # the boot deadline is 180 s
    assert starts.read_text().strip() == "3"
    assert not Path(f"/proc/{(tmp_path / 'starts.pid').read_text().strip()}").exists()  # the stalled one is gone
    panicked, stalled = guest.abandoned_boots
    assert panicked == ("the guest exited during boot (QEMU status 0): "
                        "Kernel panic - not syncing: Fatal exception in interrupt")
    assert stalled.startswith("the guest's kernel hung: CPU 1 stuck for 45 s in swapper/0:1 (soft lockup), "
                              "during boot: abandoned after")
    assert 0 < guest.boot_s < 60  # the boot that served, not both
