"""Built-in priors: what `fslab plan` and `fslab run` assume of the parts of a study's time
that nothing in the results directory has timed yet (a job's setup, a run's overhead
beyond its stated runtime, a guest's boot) and of its run-to-run noise. Each is a figure
measured on fslab's development machine (a 2-core VM on a RAM-backed disk, shared with
other work), with the range seen; the comment beside it says where it comes from. The
guest's (TCG) priors span two such machines, since emulation's cost follows the host's
speed: typical, the slower one's median; range, from the faster one's quicker quarter of
runs to the slower one's slower quarter. Once a study of the same kind has run in the
results directory, its own times replace these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prior:
    """A duration in seconds: the typical value and the range seen (quartiles, or the
    extremes where there were only a few)."""

    mean: float
    low: float
    high: float

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.mean, self.low, self.high)

    def range_text(self) -> str:
        """'1.2–3 s': the range, as the estimate's text says it."""
        return f"{self.low:g}–{self.high:g} s"


# A host job's setup — the gap from the previous run's end to the job's first run: the
# previous job's teardown, the sparse image and loop device, mkfs, mount.
# ext4, xfs: median and quartiles of 39 jobs of a 40-run auto study (1 GiB image,
#   fio randwrite 4 KiB fsync, 3 s runs): ext4 1.7 s (0.9–2.5), xfs 1.5 s (1.1–2.1); on a
#   2 GiB image 3.3–4.8 s (4 jobs), so the high end is raised to cover it.
# btrfs: 4 jobs of two small host studies, 2.2–7.0 s.
# Any other file system: the span of the three.
HOST_SETUP = {
    "ext4": Prior(1.7, 0.9, 4.8),
    "xfs": Prior(1.5, 1.1, 4.8),
    "btrfs": Prior(4.5, 2.2, 7.0),
}
HOST_SETUP_OTHER = Prior(2.5, 0.9, 7.0)
# A guest job's setup is dominated by its boot and the job entry's imports: 10–40 s under
# TCG on the development machine after the boot and import cuts (bench/bench_guest.py: boot
# 4.9 s and import 11.8 s median at load 4–10, plus mkfs and the guest's shutdown); KVM
# boots in a few seconds, so this is the slow case. Then init's mounts through generated
# tables and a shorter kernel command line took a median 1.5 s off a boot (8 boots of each
# code alternated, QEMU start to the agent's ready, load 4–5 on 2 cores), 0.31 s of it
# from rodata=off, since left out: 25 s became 23.8. On the development machine of
# 2026-12-02 (2 vCPUs of a faster host; bench_guest: boot 1.9-2.1 s, the job entry's import
# 1.6-1.8 s): the first guest job of seed-002 --quick, from the study's start to its first
# run, 6.9, 6.8 and 5.6 s in three studies (host load 1-4). On the slower machine of
# 2026-12-03 (an Intel Xeon VM; a boot 3.7 s in bench_guest), the same: 14.5 s (its boot
# 5.1 s of it; one study, load under 1).
GUEST_SETUP = Prior(14.5, 5.6, 14.5)
# A guest job that runs in the guest of the guest job before it (fslab.backends.guest.session:
# no boot, no import): its mkfs, mount, unmount and the host's handing over, measured as
# the job's wall time less its run's (TCG, ext4 on a 256 MiB disk, 1 s fio; 4 jobs at host
# load 6-8 on 2 cores): 3.4, 3.5, 4.0 and 5.5 s. On the machine of 2026-12-02, the gap
# between one job's last run and the next job's first in three seed-002 --quick studies:
# median 1.5 s, quartiles 1.35-2.2 s (19 jobs; 1.0-3.9 s). On the slower machine of
# 2026-12-03, one such study: median 3.8 s, quartiles 2.9-4.8 s (7 jobs).
GUEST_SETUP_IN_BOOT = Prior(3.8, 1.35, 4.8)
# A host run's wall time beyond its stated runtime (laying out fio's file, dropping caches,
# fio's start and end): 1.9 s median for a 64 MiB file (40 runs), 3.0 s for 256 MiB (6
# runs), 1.2 s for seed-002 --quick (300 runs of 1 s took 669 s with their setups, docs/presets.md).
HOST_RUN_OVERHEAD = Prior(2.0, 1.2, 3.0)
# A guest run's (TCG) wall time beyond its stated runtime (layout, settling, dropping
# caches, fio's start and end): seed-002 --quick's 50 cases x 2 repetitions on ext4 in the
# guest (2 jobs, 1 s runs, host load 7-8 on 2 cores): median 7.4 s a run, quartiles
# 5.8-10.0 s (100 runs in 996 s). Before a run started fio twice instead of three times,
# kept fio's pages cached across the drop of caches and synced without starting sync(1),
# all four file systems of seed-002 --quick took about 90 min (≈ 11.7 s a run);
# bench/bench_guest.py's in-job part, before and after side by side, measured 0.42-0.44
# of the old overhead. On the machine of 2026-12-02, three seed-002 --quick studies (all
# four file systems in the guest, host load 1-4; two took 988 and 836 s, every run ok, the
# third's ok runs counted too): the runs that laid
# out their pass's files, median 2.6 s, quartiles 1.8-3.3 s (69 runs). On the slower
# machine of 2026-12-03, one such study (1,440 s, every run ok): median 6.9 s, quartiles
# 5.4-9.6 s (24 runs).
GUEST_RUN_OVERHEAD = Prior(6.9, 1.8, 9.6)
# A run on files an earlier run of its pass laid out (reuse_layout): no layout and no
# settling, only dropping caches and fio's start and end. Guest (TCG): seed-002 --quick,
# all four file systems, 376 of 400 runs reused (host load about 4 on 2 cores): median
# 2.3 s, quartiles 1.8-3.0 s (the 24 that laid out: median 10.3 s); the whole study took
# 1998 s. Host: seed-002 --quick's cases on ext4 on the host, 94 of 100 runs reused:
# median 0.51 s, quartiles 0.41-0.60 s. Guest, on the machine of 2026-12-02 (the three
# studies above): median 0.96 s, quartiles 0.86-1.14 s (1,081 runs); on the slower
# machine of 2026-12-03 (the study above): median 2.0 s, quartiles 1.8-2.3 s (376 runs).
GUEST_RUN_OVERHEAD_REUSED = Prior(2.0, 0.86, 2.3)
HOST_RUN_OVERHEAD_REUSED = Prior(0.5, 0.4, 0.6)

# Run-to-run spread before any has been seen on this host: the median coefficient of
# variation over the 12 cells of the quickstart run in docs/first-runs.md (3 runs each; from 2.3%
# for btrfs sequential writes to 24% for xfs buffered random writes).
TYPICAL_CV = 0.083
TYPICAL_CV_SOURCE = "median of the 12 cells of the quickstart run in docs/first-runs.md, 2.3% to 24%"


# The device kinds and workload kinds the priors were measured on; for others (a real disk,
# RAID, a fake device, another tool) nothing is assumed and the estimate says so.
MEASURED_DEVICES = frozenset({"image"})
MEASURED_WORKLOADS = frozenset({"fio"})


# What `fslab plan` assumes of a guest job under KVM, beside its TCG estimate. Not measured:
# fslab's development machines have had no usable KVM. A boot under KVM takes about a
# second to the guest's init and its job entry imports at about the host's speed, so a
# job's setup is taken as 2-6 s, and a run's overhead as a host run's (HOST_RUN_OVERHEAD).
GUEST_SETUP_KVM = Prior(4.0, 2.0, 6.0)

# The setup kind of a guest job that shares the boot of the guest job before it.
GUEST_IN_BOOT = "guest-in-boot"


def setup_prior(backend: str, fs_type: str, device_kind: str | None, kvm: bool = False) -> Prior | None:
    """The built-in prior of a job's setup on ``backend`` for ``fs_type`` on a device of
    ``device_kind``; None where none was measured (a guest's boot dominates any device).
    ``kvm``: a guest job's as assumed under KVM (GUEST_SETUP_KVM; in a shared boot, the
    host's mkfs and mount)."""
    if backend == "guest":
        return GUEST_SETUP_KVM if kvm else GUEST_SETUP
    if backend == GUEST_IN_BOOT:
        return HOST_SETUP.get(fs_type, HOST_SETUP_OTHER) if kvm else GUEST_SETUP_IN_BOOT
    if backend != "host" or device_kind not in MEASURED_DEVICES:
        return None
    return HOST_SETUP.get(fs_type, HOST_SETUP_OTHER)


def run_overhead_prior(backend: str, workload_kind: str, reused_layout: bool = False,
                       kvm: bool = False) -> Prior | None:
    """What a run adds to its stated runtime, or None where nothing is built in;
    ``reused_layout``: the run's files were laid out by an earlier run of its pass;
    ``kvm``: a guest run's as assumed under KVM (a host run's)."""
    if workload_kind not in MEASURED_WORKLOADS:
        return None
    if kvm and backend == "guest":
        backend = "host"
    if reused_layout:
        return {"host": HOST_RUN_OVERHEAD_REUSED, "guest": GUEST_RUN_OVERHEAD_REUSED}.get(backend)
    return {"host": HOST_RUN_OVERHEAD, "guest": GUEST_RUN_OVERHEAD}.get(backend)
