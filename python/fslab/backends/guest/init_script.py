"""The two shell scripts the guest runs: ``init`` (in the initramfs) and the agent.

``init`` loads the virtio and 9p modules, mounts the host's root read-only over virtio-9p
(tag ``hostroot``), puts tmpfs or an overlay on every place that must be writable, mounts
the kernel's modules (tag ``modules``) at /lib/modules/<release>, the control folder (tag
``fslabctl``) at /run/fslab/ctl and each extra share at the path its ``shares`` line names,
then switch_roots into the host's root and runs the agent with busybox (copied to
/run/fslab, since /bin/sh of the host is dash and the initramfs is gone by then).

The agent runs numbered commands the host drops into the control folder: ``cmd-N.sh`` is
run by /bin/sh with stdout to ``out-N`` and stderr to ``err-N``; its exit status is
written to ``status-N`` (via a rename, so the host never reads half a number). A file
``shutdown`` makes it sync and reboot, which QEMU (``-no-reboot``) turns into its exit.
"""

from __future__ import annotations

# Places of the host's root the guest must be able to write. /etc gets an overlay so
# that files like /etc/mtab (nilfs2 needs it) and mdadm's config can be written while the
# host's own configuration stays visible; /var and /root likewise.
# /tmp is overlaid, not hidden: a checkout and its venv may live there (CI clones do), and
# the guest must run the very fslab the host runs.
OVERLAID = ("etc", "var", "root", "tmp")
TMPFS = ("run", "mnt", "media", "srv")
ALIVE_FILE = "alive"  # in the control folder: the agent rewrites it every AGENT_BEAT_S
AGENT_BEAT_S = 5

INIT = r"""#!/bin/busybox sh
# busybox's shell runs its applets by name without links to them (FEATURE_SH_STANDALONE,
# as Debian builds it) once /proc/self/exe is there, so no `busybox --install`: 269 links
# fewer to make.
/bin/busybox mkdir -p /proc /dev /overlay
/bin/busybox mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev
# Marks on the console (guest uptime, shell builtins only: a fork costs milliseconds
# under TCG) say where a boot's seconds go; bench/bench_guest.py reads them.
mark() { read -r up rest < /proc/uptime; echo "fslab-guest: $1 at $up s"; }
mode=run
read -r cmdline < /proc/cmdline
for word in $cmdline; do
  case "$word" in fslab.mode=*) mode="${word#fslab.mode=}";; esac
done
mark init
if [ "$mode" = probe ]; then
  echo FSLAB-PROBE-OK
  reboot -f
fi
fail() { echo "FSLAB-INIT-FAILED: $*"; sleep 1; reboot -f; }
# Every external command is a fork under emulation (8-18 ms; an insmod 50-150 ms), so the
# modules go in one modprobe (build.py writes their modules.dep) and the mounts below in a
# few `mount -a` over generated tables rather than a process each.
read -r mods < /modules/boot
[ -z "$mods" ] || modprobe -a $mods || fail "modprobe -a $mods"
# The disk's modules only where QEMU gave the guest a virtio disk (PCI 1af4:1001, or
# 1af4:1042 when modern only): its /dev/vdX are there before the first command, and a
# guest without disks does not load them.
read -r mods < /modules/disk
while read -r _ id _; do
  case "$id" in 1af41001|1af41042)
    [ -z "$mods" ] || modprobe -a $mods || fail "modprobe -a $mods"; break;; esac
done < /proc/bus/pci/devices
R=/newroot
mark "modules loaded"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot $R \
  || fail "mount of the host root over 9p"
mark "host root mounted"
read -r release < /proc/sys/kernel/osrelease
P9=trans=virtio,version=9p2000.L,msize=512000
# /lib/modules/<release> must exist for modprobe. Where the host has /lib/modules, a
# tmpfs goes on it; where it has none (no kernel installed), an overlay on /usr/lib.
lib=
if [ ! -d $R/lib/modules ]; then
  lib=$R/usr/lib; [ -L $R/lib ] || lib=$R/lib
fi
{
  echo "devtmpfs $R/dev devtmpfs defaults 0 0"
  echo "proc $R/proc proc defaults 0 0"
  echo "sysfs $R/sys sysfs defaults 0 0"
  echo "tmpfs /overlay tmpfs mode=0755 0 0"
  for d in @TMPFS@; do
    [ -d $R/$d ] && echo "tmpfs $R/$d tmpfs mode=0755 0 0"
  done
  [ -z "$lib" ] && echo "tmpfs $R/lib/modules tmpfs mode=0755 0 0"
} > /fstab.base
mount -a -T /fstab.base || fail "a mount of /fstab.base (its error above)"
# Optional: tracing, debugfs and cgroup v2 with the memory controller (workloads with a
# memory limit need it) where the kernel has them.
{
  echo "tracefs $R/sys/kernel/tracing tracefs defaults 0 0"
  echo "cgroup2 $R/sys/fs/cgroup cgroup2 defaults 0 0"
  echo "debugfs $R/sys/kernel/debug debugfs defaults 0 0"
} > /fstab.optional
mount -a -T /fstab.optional 2>/dev/null
[ -e $R/sys/fs/cgroup/cgroup.subtree_control ] \
  && echo +memory > $R/sys/fs/cgroup/cgroup.subtree_control
dirs="$R/dev/pts $R/dev/shm $R/run/fslab/ctl"
for d in @OVERLAID@; do dirs="$dirs /overlay/$d/upper /overlay/$d/work"; done
if [ -n "$lib" ]; then
  dirs="$dirs /overlay/lib/upper/modules/$release /overlay/lib/work"
else
  dirs="$dirs $R/lib/modules/$release"
fi
mkdir -p $dirs || fail "mkdir -p $dirs"
{
  for d in @OVERLAID@; do
    echo "overlay $R/$d overlay lowerdir=$R/$d,upperdir=/overlay/$d/upper,workdir=/overlay/$d/work 0 0"
  done
  [ -n "$lib" ] && echo "overlay $lib overlay lowerdir=$lib,upperdir=/overlay/lib/upper,workdir=/overlay/lib/work 0 0"
  echo "devpts $R/dev/pts devpts defaults 0 0"
  echo "tmpfs $R/dev/shm tmpfs defaults 0 0"
  echo "modules $R/lib/modules/$release 9p $P9,ro,cache=loose 0 0"
  echo "fslabctl $R/run/fslab/ctl 9p $P9 0 0"
} > /fstab.run
mount -a -T /fstab.run || fail "a mount of /fstab.run (its error above)"
chmod 1777 $R/tmp
# /etc/mtab must list the mounts (nilfs2's tools read it). The host's is most often a link
# to /proc/self/mounts already, which the overlay shows as it is: linking it again (a
# whiteout and a symlink written into the overlay) took 20-90 ms of a TCG boot, median 35;
# the check instead 0-40 ms, median 20 (4 boots each, alternated, host load 4-5; init's
# marks, /proc/uptime's 10 ms steps).
[ $R/etc/mtab -ef $R/proc/self/mounts ] || ln -sf /proc/self/mounts $R/etc/mtab
if [ -f $R/run/fslab/ctl/shares ]; then
  while read -r tag path; do
    [ -n "$tag" ] || continue
    [ -d "$R$path" ] || mkdir -p "$R$path" 2>/dev/null
    mount -t 9p -o $P9 "$tag" "$R$path" || fail "mount of share $tag at $path"
  done < $R/run/fslab/ctl/shares
fi
mark "shares mounted"
late=
while read -r m; do late="$late /modules/$m"; done < /modules/late
cp /bin/busybox /agent.sh /modules/late $late $R/run/fslab/ || fail "copy of busybox and the agent"
echo fslab-guest > /proc/sys/kernel/hostname
exec switch_root $R /run/fslab/busybox sh /run/fslab/agent.sh
"""

AGENT = r"""B=/run/fslab/busybox
C=/run/fslab/ctl
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
# pydantic looks for plugins through every installed package's metadata at its first
# model: seconds under TCG, for plugins no job uses.
export PYDANTIC_DISABLE_PLUGINS=__all__
cd /
# The TSC rate the kernel measured (cpu MHz), for the host to pass to later TCG boots as
# lpj= (launcher.tcg_lpj); written before ready, so it is there once the host sees ready.
while read -r a b _ mhz; do [ "$a $b" = "cpu MHz" ] && break; done < /proc/cpuinfo
echo "$mhz" > $C/tsc_mhz
read -r up rest < /proc/uptime
read -r _ _ release _ < /proc/version
echo "fslab-guest: ready at $up s, kernel $release"
echo "$up" > $C/ready.tmp && $B mv $C/ready.tmp $C/ready
# The modules init left for after ready (build.LATE_MODULES) load while the host reacts to
# ready; the first command starts once they are in.
while read -r m; do
  $B insmod /run/fslab/$m || echo "FSLAB-AGENT: insmod $m failed"
done < /run/fslab/late &
late=$!
# The wait between looks is a read that times out on a FIFO no one writes: the shell's own
# builtin, where a `usleep` would fork and exec busybox 50 times a second (under TCG that
# loop kept an idle guest at 0.56 of a host core, and it runs beside every job of a
# session, whose server the agent started in the background). Looks come every 20 ms for
# a second after a command (the host's commands come in bursts), then every 250 ms: an
# idle guest then costs ~0.03 of a core (0.21 at 20 ms, 0.015 with no looks at all).
$B mkfifo /run/fslab/tick && exec 3<> /run/fslab/tick
# Every @BEAT@ s of uptime the agent rewrites $C/@ALIVE@: a guest whose vCPUs stopped making
# progress while QEMU runs on (seen once under TCG: 24 min of spinning, no console line)
# stops marking it, and the host abandons it then (session.py) instead of at the job's
# deadline. Builtins only, like the wait.
n=0
quick=50
beat=0
while :; do
  read -r up _ < /proc/uptime
  up=${up%.*}
  if [ "$up" -ge "$beat" ]; then
    echo "$up" > $C/@ALIVE@
    beat=$((up + @BEAT@))
  fi
  if [ -e $C/cmd-$n.sh ]; then
    [ -z "$late" ] || { wait $late; late=; }
    /bin/sh $C/cmd-$n.sh > $C/out-$n 2> $C/err-$n < /dev/null
    echo $? > $C/status-$n.tmp
    $B mv $C/status-$n.tmp $C/status-$n
    n=$((n+1))
    quick=50
  elif [ -e $C/shutdown ]; then
    $B sync
    echo "fslab-guest: powering off"
    $B reboot -f
  elif [ $quick -gt 0 ]; then
    quick=$((quick-1))
    read -r -t 0.02 _ <&3
  else
    read -r -t 0.25 _ <&3
  fi
done
"""


def render_init() -> str:
    return INIT.replace("@TMPFS@", " ".join(TMPFS)).replace("@OVERLAID@", " ".join(OVERLAID))


def render_agent() -> str:
    return AGENT.replace("@BEAT@", str(AGENT_BEAT_S)).replace("@ALIVE@", ALIVE_FILE)
