// SPDX-License-Identifier: GPL-2.0
/* Block-layer probes for the capture-cost experiment (bench/bpf_probe/bench_bpf.py).
 *
 * Each pair of programs hooks block_rq_issue and block_rq_complete, keeps only requests of
 * one device (dev == major<<20|minor, the tracefs filter's rule) and does one of:
 *   - ring:  writes a 32-byte record (the fields fslab's trace keeps) into one BPF ring
 *            buffer shared by the CPUs (pcpu-ring: one ring a CPU), waking the consumer
 *            only once wake_bytes are waiting, so it drains in batches;
 *   - array: writes the same record into a CPU's region of an mmap-able array (below);
 *   - count: increments a per-CPU counter (the lower bound of any BPF capture);
 *   - nop:   returns at once (no filter): the cost of the hook itself.
 * Three ways to attach the same work are compared: tp_btf (the raw tracepoint with typed
 * arguments, plain loads), raw_tp (the raw tracepoint, fields through probe reads) and the
 * classic tracepoint (the kernel fills its trace_event record first, then runs the program).
 * The loader picks one pair by name and leaves the others unloaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <stdbool.h>

char LICENSE[] SEC("license") = "GPL";

#define EV_ISSUE 0
#define EV_COMPLETE 1

/* One event. op/flags are the request's cmd_flags (REQ_OP_* in the low 8 bits, REQ_* above),
 * or for the classic tracepoint the first four characters of its rwbs string. comm is left to
 * the consumer (pid -> name), as tracefs records it only on issue. */
struct rec {
	__u64 time_ns;   /* bpf_ktime_get_ns: CLOCK_MONOTONIC, tracefs' "mono" clock */
	__u64 sector;
	__u32 nr_sector;
	__u32 opf;
	__u32 pid;
	__u16 event;     /* EV_ISSUE or EV_COMPLETE */
	__u16 error;     /* blk_status_t on complete */
};

const volatile __u32 target_dev = 0;        /* major<<20 | minor */
const volatile __u64 wake_bytes = 1 << 20;  /* wake the consumer once this much waits */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} rb SEC(".maps");

/* One ring a CPU (pcpu programs): no lock or line shared between CPUs on the hot path.
 * The loader creates the rings (the kernel does not hold them to the template's size). */
struct pcpu_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set to the number of CPUs by the loader */
	__type(key, __u32);
	__array(values, struct pcpu_ring);
} rings SEC(".maps");

/* [0] issue, [1] complete events that passed the filter, [2] records the ring had no room
 * for, [3] issue, [4] complete events recorded by a backup program (below) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline void bump(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &slot);
	if (c)
		*c += 1;
}

/* A record's fields but its time, which each writer sets in its own order. */
static __always_inline void fill(struct rec *r, __u16 event, __u64 sector, __u32 nr_sector, __u32 opf,
				 __u16 error)
{
	r->sector = sector;
	r->nr_sector = nr_sector;
	r->opf = opf;
	r->pid = bpf_get_current_pid_tgid() >> 32;
	r->event = event;
	r->error = error;
}

static __always_inline int emit_to(void *ring, __u16 event, __u64 sector, __u32 nr_sector, __u32 opf,
				   __u16 error)
{
	bump(event); /* events seen, to check the consumer's count against */
	struct rec *r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
	if (!r) {
		bump(2);
		return 0;
	}
	r->time_ns = bpf_ktime_get_ns();
	fill(r, event, sector, nr_sector, opf, error);
	/* Batch the consumer's wake-ups: one per wake_bytes of records, not one per record. */
	__u64 flags = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP
										: BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
	return 0;
}

static __always_inline int emit(__u16 event, __u64 sector, __u32 nr_sector, __u32 opf, __u16 error)
{
	return emit_to(&rb, event, sector, nr_sector, opf, error);
}

static __always_inline int emit_pcpu(__u16 event, __u64 sector, __u32 nr_sector, __u32 opf, __u16 error)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&rings, &cpu);
	if (!ring) {
		bump(2);
		return 0;
	}
	return emit_to(ring, event, sector, nr_sector, opf, error);
}

/* pcpu-array: records in one mmap-able array, a region of array_slots records a CPU, used as
 * a ring by plain stores. A record's slot is claimed with an atomic add on its CPU's head
 * (a program preempted or interrupted on that CPU by another cannot take the same slot) and
 * published by writing time_ns last; the consumer reads records in slot order up to the
 * first unpublished one, zeroes their time_ns and advances its tail. No lock, no wake-up:
 * the consumer drains on a timer. */
const volatile __u32 array_slots = 1 << 18; /* a CPU's records; a power of two */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* CPUs x array_slots, set by the loader */
	__type(key, __u32);
	__type(value, struct rec);
} recs SEC(".maps");

/* a CPU's [head, tail] at index 8*cpu: a 64-byte line each */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 8); /* 8 x CPUs, set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} heads SEC(".maps");

static __always_inline int emit_array(__u16 event, __u64 sector, __u32 nr_sector, __u32 opf, __u16 error)
{
	bump(event);
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 hk = cpu * 8, tk = cpu * 8 + 1;
	__u64 *head = bpf_map_lookup_elem(&heads, &hk);
	__u64 *tail = bpf_map_lookup_elem(&heads, &tk);
	if (!head || !tail)
		return 0;
	__u64 idx = __sync_fetch_and_add(head, 1);
	if (idx - *(volatile __u64 *)tail >= array_slots) {
		bump(2); /* full: the slot stays unwritten, the consumer skips it by the count */
		return 0;
	}
	__u32 key = cpu * array_slots + (__u32)(idx & (array_slots - 1));
	struct rec *r = bpf_map_lookup_elem(&recs, &key);
	if (!r)
		return 0;
	fill(r, event, sector, nr_sector, opf, error);
	*(volatile __u64 *)&r->time_ns = bpf_ktime_get_ns(); /* published */
	return 0;
}

/* ---- tp_btf: typed arguments, fields read with plain loads ---- */

static __always_inline __u32 dev_of(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;
	return disk ? ((__u32)disk->major << 20) | (__u32)disk->first_minor : 0;
}

/* A tp_btf program does not run again on a CPU where it is already running: the kernel
 * skips the call and counts a recursion miss. The block tracepoints run preemptibly on
 * this kernel (the loop device completes requests in its workers' task context), so a
 * completion on a CPU whose earlier completion was preempted inside the program would be
 * lost. Each ring program therefore has a backup attached after it to the same tracepoint:
 * the primary marks itself busy on its CPU while it runs; the backup records an event only
 * when the primary is busy there, i.e. was skipped for this event. A call skipped in the
 * few instructions between the kernel's recursion check and the primary's first store is
 * still lost; the kernel counts every skipped call (recursion_misses), so the loss is known:
 * the primary's misses less the backup's records. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} busy SEC(".maps");

#define TO_RING 0
#define TO_PCPU_RING 1
#define TO_ARRAY 2

static __always_inline int on_rq(struct request *rq, __u16 event, __u32 nr_sector, __u16 error, int to,
				 bool backup)
{
	__u32 key = event;
	__u32 *b = bpf_map_lookup_elem(&busy, &key);
	if (!b || (backup && !*b))
		return 0;
	if (!backup)
		*b = 1; /* first: the window in which a skipped call goes unseen is the kernel's entry */
	if (dev_of(rq) != target_dev)
		goto out;
	if (backup)
		bump(3 + event);
	if (to == TO_PCPU_RING)
		emit_pcpu(event, rq->__sector, nr_sector, rq->cmd_flags, error);
	else if (to == TO_ARRAY)
		emit_array(event, rq->__sector, nr_sector, rq->cmd_flags, error);
	else
		emit(event, rq->__sector, nr_sector, rq->cmd_flags, error);
out:
	if (!backup)
		*b = 0;
	return 0;
}

#define RING_PROGS(name, to, backup)                                                             \
	SEC("tp_btf/block_rq_issue")                                                               \
	int BPF_PROG(name##_issue, struct request *rq)                                             \
	{                                                                                          \
		return on_rq(rq, EV_ISSUE, rq->__data_len >> 9, 0, to, backup);                 \
	}                                                                                          \
	SEC("tp_btf/block_rq_complete")                                                            \
	int BPF_PROG(name##_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes) \
	{                                                                                          \
		return on_rq(rq, EV_COMPLETE, nr_bytes >> 9, error, to, backup);                 \
	}

RING_PROGS(btf_ring, TO_RING, false)
RING_PROGS(btf_ring_backup, TO_RING, true)
RING_PROGS(pcpu_ring, TO_PCPU_RING, false)
RING_PROGS(pcpu_ring_backup, TO_PCPU_RING, true)
RING_PROGS(pcpu_array, TO_ARRAY, false)
RING_PROGS(pcpu_array_backup, TO_ARRAY, true)

/* The hooks alone: what attaching any program to these tracepoints costs. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_nop_issue, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_nop_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_count_issue, struct request *rq)
{
	if (dev_of(rq) == target_dev)
		bump(EV_ISSUE);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_count_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	if (dev_of(rq) == target_dev)
		bump(EV_COMPLETE);
	return 0;
}

/* ---- raw_tp: untyped context, fields through bpf_probe_read_kernel ---- */

static __always_inline __u32 dev_of_core(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_ring_issue, struct request *rq)
{
	if (dev_of_core(rq) != target_dev)
		return 0;
	return emit(EV_ISSUE, BPF_CORE_READ(rq, __sector), BPF_CORE_READ(rq, __data_len) >> 9,
		    BPF_CORE_READ(rq, cmd_flags), 0);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_ring_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	if (dev_of_core(rq) != target_dev)
		return 0;
	return emit(EV_COMPLETE, BPF_CORE_READ(rq, __sector), nr_bytes >> 9, BPF_CORE_READ(rq, cmd_flags),
		    error);
}

/* ---- classic tracepoint: the kernel's own record, already filled ---- */

static __always_inline __u32 rwbs4(const char *rwbs)
{
	__u32 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), rwbs);
	return v;
}

SEC("tracepoint/block/block_rq_issue")
int tp_ring_issue(struct trace_event_raw_block_rq *ctx)
{
	if (ctx->dev != target_dev)
		return 0;
	return emit(EV_ISSUE, ctx->sector, ctx->nr_sector, rwbs4(ctx->rwbs), 0);
}

SEC("tracepoint/block/block_rq_complete")
int tp_ring_complete(struct trace_event_raw_block_rq_completion *ctx)
{
	if (ctx->dev != target_dev)
		return 0;
	return emit(EV_COMPLETE, ctx->sector, ctx->nr_sector, rwbs4(ctx->rwbs), (__u16)ctx->error);
}
