// SPDX-License-Identifier: GPL-2.0
/* Loader and consumer for blockprobe.bpf.c.
 *
 *   blockprobe MODE MAJOR MINOR
 *
 * MODE picks the programs: btf-ring, pcpu-ring, pcpu-array, btf-count, btf-nop, raw-ring,
 * tp-ring. The probe attaches, prints "ready" and drains the records in batches until
 * SIGINT/SIGTERM: the ring buffers when the kernel side wakes it (once BLOCKPROBE_WAKE_KB
 * of records wait, default 1024) or a 200 ms poll times out; the array every 10 ms
 * (BLOCKPROBE_SLOTS records a CPU, default 262144). Then it detaches, drains what is left
 * and prints one JSON line: records by event, events each program passed, records with no
 * room, the consumer's CPU time while attached and its wake-ups, and per program the
 * calls the kernel skipped (recursion_misses).
 * With kernel.bpf_stats_enabled=1 it also prints each program's run count and run time.
 * BLOCKPROBE_RING_KB sizes the ring (each CPU's for pcpu-ring; default 32768, 4096 a CPU).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "blockprobe.skel.h"

struct rec {
	unsigned long long time_ns, sector;
	unsigned int nr_sector, opf, pid;
	unsigned short event, error;
};

static volatile sig_atomic_t stopping;
static unsigned long long seen[2], bad;

static void on_signal(int sig) { (void)sig; stopping = 1; }

/* One record: count it by event; anything not a whole record of a known event is bad. */
static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	const struct rec *r = data;
	if (size != sizeof(*r) || r->event > 1) {
		bad++;
		return 0;
	}
	seen[r->event]++;
	return 0;
}

/* pcpu-array: take every published record of each CPU's region, oldest first, up to the
 * first one not yet published; free their slots and advance the CPU's tail. */
static void drain_array(struct rec *recs, unsigned long long *heads, int ncpu, unsigned slots)
{
	for (int cpu = 0; cpu < ncpu; cpu++) {
		unsigned long long head = __atomic_load_n(&heads[8 * cpu], __ATOMIC_ACQUIRE);
		unsigned long long tail = heads[8 * cpu + 1];
		for (; tail < head; tail++) {
			struct rec *r = &recs[(size_t)cpu * slots + (tail & (slots - 1))];
			if (!__atomic_load_n(&r->time_ns, __ATOMIC_ACQUIRE))
				break; /* claimed, not yet written */
			on_record(NULL, r, sizeof(*r));
			__atomic_store_n(&r->time_ns, 0, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&heads[8 * cpu + 1], tail, __ATOMIC_RELEASE);
	}
}

static unsigned long long env_kb(const char *name, unsigned long long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static double cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void prog_stats(struct bpf_program *p, int first)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return;
	printf("%s\"%s\": {\"run_cnt\": %llu, \"run_time_ns\": %llu, \"recursion_misses\": %llu}",
	       first ? "" : ", ", bpf_program__name(p), (unsigned long long)info.run_cnt,
	       (unsigned long long)info.run_time_ns, (unsigned long long)info.recursion_misses);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s btf-ring|pcpu-ring|pcpu-array|btf-count|btf-nop|raw-ring|tp-ring MAJOR MINOR\n",
			argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	char prefix[32];
	/* "btf-ring" -> programs named btf_ring_*, and so on */
	snprintf(prefix, sizeof(prefix), "%s_", mode);
	for (char *c = prefix; *c; c++)
		if (*c == '-')
			*c = '_';

	struct blockprobe_bpf *skel = blockprobe_bpf__open();
	if (!skel) {
		fprintf(stderr, "blockprobe: open failed: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->target_dev = ((unsigned)atoi(argv[2]) << 20) | (unsigned)atoi(argv[3]);
	int pcpu = strcmp(mode, "pcpu-ring") == 0;
	int ncpu = libbpf_num_possible_cpus();
	int array = strcmp(mode, "pcpu-array") == 0;
	unsigned slots = (unsigned)env_kb("BLOCKPROBE_SLOTS", 1 << 18);
	if (array) {
		skel->rodata->array_slots = slots;
		bpf_map__set_max_entries(skel->maps.recs, ncpu * slots);
		bpf_map__set_max_entries(skel->maps.heads, 8 * ncpu);
	}
	unsigned ring_bytes = (unsigned)env_kb("BLOCKPROBE_RING_KB", pcpu ? 4096 : 32768) << 10;
	skel->rodata->wake_bytes = env_kb("BLOCKPROBE_WAKE_KB", 1024) << 10;
	if (pcpu) {
		bpf_map__set_max_entries(skel->maps.rings, ncpu);
		bpf_map__set_max_entries(skel->maps.rb, 4096); /* unused */
	} else {
		bpf_map__set_max_entries(skel->maps.rb, array ? 4096 : ring_bytes);
	}
	struct bpf_program *p;
	int chosen = 0;
	/* BLOCKPROBE_BACKUPS=0: the primaries alone (what a capture without the backup costs) */
	int backups = env_kb("BLOCKPROBE_BACKUPS", 1) != 0;
	bpf_object__for_each_program(p, skel->obj) {
		int mine = strncmp(bpf_program__name(p), prefix, strlen(prefix)) == 0 &&
			   (backups || strstr(bpf_program__name(p), "_backup_") == NULL);
		bpf_program__set_autoload(p, mine);
		chosen += mine;
	}
	if (chosen < 2) {
		fprintf(stderr, "blockprobe: unknown mode %s (no programs named %s*)\n", mode, prefix);
		return 2;
	}
	int err = blockprobe_bpf__load(skel);
	if (err) {
		fprintf(stderr, "blockprobe: load failed: %d\n", err);
		return 1;
	}
	/* primaries first: a tracepoint calls its programs in the order they were attached, and
	 * a backup must run after its primary */
	struct bpf_link *links[8];
	int n = 0;
	for (int backups = 0; backups < 2; backups++) {
		bpf_object__for_each_program(p, skel->obj) {
			if (!bpf_program__autoload(p) || (strstr(bpf_program__name(p), "_backup_") != NULL) != backups)
				continue;
			links[n] = bpf_program__attach(p);
			if (!links[n]) {
				fprintf(stderr, "blockprobe: attach %s failed: %s\n", bpf_program__name(p),
					strerror(errno));
				return 1;
			}
			n++;
		}
	}
	struct ring_buffer *rb = NULL;
	struct rec *recs = NULL;
	unsigned long long *heads = NULL;
	if (array) {
		recs = mmap(NULL, (size_t)ncpu * slots * sizeof(struct rec), PROT_READ | PROT_WRITE, MAP_SHARED,
			    bpf_map__fd(skel->maps.recs), 0);
		heads = mmap(NULL, 8 * ncpu * sizeof(*heads), PROT_READ | PROT_WRITE, MAP_SHARED,
			     bpf_map__fd(skel->maps.heads), 0);
		if (recs == MAP_FAILED || heads == MAP_FAILED) {
			fprintf(stderr, "blockprobe: mmap failed: %s\n", strerror(errno));
			return 1;
		}
	} else if (pcpu) {
		/* one ring a CPU, put into the outer map the programs look them up in */
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "pcpu_ring", 0, 0, ring_bytes, NULL);
			unsigned key = cpu;
			if (fd < 0 || bpf_map_update_elem(bpf_map__fd(skel->maps.rings), &key, &fd, 0)) {
				fprintf(stderr, "blockprobe: ring for CPU %d failed: %s\n", cpu, strerror(errno));
				return 1;
			}
			if (cpu == 0)
				rb = ring_buffer__new(fd, on_record, NULL, NULL);
			else if (rb && ring_buffer__add(rb, fd, on_record, NULL))
				rb = NULL;
			if (!rb)
				break;
		}
	} else {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), on_record, NULL, NULL);
	}
	if (!rb && !array) {
		fprintf(stderr, "blockprobe: ring buffer failed: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	double cpu0 = cpu_s();
	printf("ready\n");
	fflush(stdout);

	unsigned long long wakeups = 0;
	while (!stopping && array) {
		struct timespec nap = {0, 10 * 1000 * 1000}; /* 10 ms: a tenth of a region at 2.6M events/s */
		nanosleep(&nap, NULL);
		drain_array(recs, heads, ncpu, slots);
		wakeups++;
	}
	while (!stopping && !array) {
		int got = ring_buffer__poll(rb, 200);
		if (got == 0) /* timed out: records below the wake-up mark wait, take them */
			got = ring_buffer__consume(rb);
		if (got < 0 && got != -EINTR) {
			fprintf(stderr, "blockprobe: poll failed: %d\n", got);
			return 1;
		}
		wakeups++;
	}
	double cpu_during = cpu_s() - cpu0;
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	if (array)
		drain_array(recs, heads, ncpu, slots);
	else
		ring_buffer__consume(rb);

	/* counters summed over CPUs */
	unsigned long long sum[5] = {0};
	unsigned long long *vals = calloc(ncpu, sizeof(*vals));
	for (unsigned key = 0; key < 5; key++) {
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.counts), &key, vals) == 0)
			for (int c = 0; c < ncpu; c++)
				sum[key] += vals[c];
	}
	printf("{\"mode\": \"%s\", \"issue_records\": %llu, \"complete_records\": %llu, \"bad_records\": %llu, "
	       "\"dropped\": %llu, \"issue_counted\": %llu, \"complete_counted\": %llu, "
	       "\"backup_issue\": %llu, \"backup_complete\": %llu, "
	       "\"consumer_cpu_s\": %.6f, \"polls\": %llu, \"progs\": {",
	       mode, seen[0], seen[1], bad, sum[2], sum[0], sum[1], sum[3], sum[4], cpu_during, wakeups);
	int first = 1;
	bpf_object__for_each_program(p, skel->obj) {
		if (bpf_program__autoload(p)) {
			prog_stats(p, first);
			first = 0;
		}
	}
	printf("}}\n");
	if (rb)
		ring_buffer__free(rb);
	blockprobe_bpf__destroy(skel);
	free(vals);
	return 0;
}
