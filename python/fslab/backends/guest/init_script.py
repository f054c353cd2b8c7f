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

INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
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
for m in $(cat /modules/order); do
  insmod "/modules/$m" || fail "insmod $m"
done
R=/newroot
mkdir -p $R
mark "modules loaded"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot $R \
  || fail "mount of the host root over 9p"
mark "host root mounted"
mount -t devtmpfs devtmpfs $R/dev || fail "devtmpfs"
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t tracefs tracefs $R/sys/kernel/tracing 2>/dev/null
# cgroup v2 with the memory controller: workloads with a memory limit (page cache) need it
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null \
  && echo +memory > $R/sys/fs/cgroup/cgroup.subtree_control
mount -t debugfs debugfs $R/sys/kernel/debug 2>/dev/null
mkdir -p /overlay
mount -t tmpfs -o mode=0755 tmpfs /overlay
for d in @TMPFS@; do
  [ -d $R/$d ] && mount -t tmpfs -o mode=0755 tmpfs $R/$d
done
for d in @OVERLAID@; do
  mkdir -p /overlay/$d/upper /overlay/$d/work
  mount -t overlay overlay -o lowerdir=$R/$d,upperdir=/overlay/$d/upper,workdir=/overlay/$d/work $R/$d \
    || fail "overlay on /$d"
done
chmod 1777 $R/tmp
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
ln -sf /proc/self/mounts $R/etc/mtab
# /lib/modules/<release> must exist for modprobe. Where the host has /lib/modules, a
# tmpfs goes on it; where it has none (no kernel installed), an overlay on /usr/lib.
if [ -d $R/lib/modules ]; then
  mount -t tmpfs -o mode=0755 tmpfs $R/lib/modules || fail "tmpfs on /lib/modules"
else
  lib=$R/usr/lib; [ -L $R/lib ] || lib=$R/lib
  mkdir -p /overlay/lib/upper/modules /overlay/lib/work
  mount -t overlay overlay -o lowerdir=$lib,upperdir=/overlay/lib/upper,workdir=/overlay/lib/work $lib \
    || fail "overlay on /usr/lib"
fi
mkdir -p $R/lib/modules/$(uname -r)
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose modules $R/lib/modules/$(uname -r) \
  || fail "mount of the kernel modules"
mkdir -p $R/run/fslab/ctl
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 fslabctl $R/run/fslab/ctl \
  || fail "mount of the control folder"
if [ -f $R/run/fslab/ctl/shares ]; then
  while read -r tag path; do
    [ -n "$tag" ] || continue
    mkdir -p "$R$path" 2>/dev/null
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "$tag" "$R$path" \
      || fail "mount of share $tag at $path"
  done < $R/run/fslab/ctl/shares
fi
mark "shares mounted"
cp /bin/busybox $R/run/fslab/busybox
cp /agent.sh $R/run/fslab/agent.sh
hostname fslab-guest
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
read -r up rest < /proc/uptime
read -r _ _ release _ < /proc/version
echo "fslab-guest: ready at $up s, kernel $release"
echo "$up" > $C/ready.tmp && $B mv $C/ready.tmp $C/ready
n=0
while :; do
  if [ -e $C/cmd-$n.sh ]; then
    /bin/sh $C/cmd-$n.sh > $C/out-$n 2> $C/err-$n < /dev/null
    echo $? > $C/status-$n.tmp
    $B mv $C/status-$n.tmp $C/status-$n
    n=$((n+1))
  elif [ -e $C/shutdown ]; then
    $B sync
    echo "fslab-guest: powering off"
    $B reboot -f
  else
    $B usleep 20000
  fi
done
"""


def render_init() -> str:
    return INIT.replace("@TMPFS@", " ".join(TMPFS)).replace("@OVERLAID@", " ".join(OVERLAID))


def render_agent() -> str:
    return AGENT
