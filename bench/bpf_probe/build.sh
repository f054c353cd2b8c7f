#!/bin/sh
# Builds blockprobe into $1 (default ./build): vmlinux.h from the running kernel's BTF,
# the BPF object (clang -target bpf), its skeleton (bpftool), the loader (libbpf).
# Needs Debian's clang, llvm, libbpf-dev and bpftool.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-$src/build}
mkdir -p "$out"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out/vmlinux.h"
arch=$(uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
clang -g -O2 -target bpf -D__TARGET_ARCH_$arch -I"$out" -c "$src/blockprobe.bpf.c" -o "$out/blockprobe.bpf.o"
bpftool gen skeleton "$out/blockprobe.bpf.o" name blockprobe_bpf > "$out/blockprobe.skel.h"
cc -O2 -Wall -Wextra -I"$out" "$src/blockprobe.c" -lbpf -lelf -lz -o "$out/blockprobe"
