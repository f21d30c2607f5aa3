/*
 * grtrace-drain: a small, independent consumer of the grtrace relay protocol
 * (FORMAT.md section 7.2), used to check the kernel side without the Rust
 * recorder, and as a protocol checker next to it.
 *
 * It drives cardN/ctl (setup, start, stop, teardown), maps every trace<cpu>
 * read-only, follows the sub-buffer headers (subbuf_seq, commit, FINAL,
 * padding, lost), releases sub-buffers through `consumed`, and writes one
 * stream file per CPU in the grtrace format: BASE.grtrace.<cpu>, with
 * NOTE_LOST records for sub-buffer losses and a closing NOTE_STREAM_INFO.
 * Every record is checked: size, alignment, type, per-CPU seq continuity.
 *
 * usage: grtrace-drain [-r DEBUGFS] [-d cardN] [-o BASE] [-b SUBBUF] [-n N]
 *                      [-w SECONDS] [-x]
 *   -o /dev/null  check every record but keep none
 *   -x  do not set up, start or stop: drain what an already stopped
 *       session holds, then tear it down (overflow test)
 * Stops on SIGINT/SIGTERM or after -w seconds.  Prints "DRAIN: ..." lines;
 * exit 0 when no record was malformed and no seq was out of order.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "drm/grtrace.h"
#include "guest.h"

#define MAXCPU 64

struct cpu {
	int present;
	uint8_t *map;
	uint64_t expected;
	uint32_t cursor;
	FILE *out;
	uint64_t last_ns, last_seq;
	uint64_t pend_lost, lost_total;
	uint64_t records, bytes, kernel_records;
	uint64_t events, notes;
	uint64_t subbufs;
};

static struct cpu cpus[MAXCPU];
static char dir[512];
static uint32_t subbuf_size, n_subbufs;
static uint64_t session, anchor_real, anchor_mono;
static unsigned card;
static char driver[32];
static long bad;
static volatile sig_atomic_t stop_flag;
static int consumed_fd = -1;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int ctl(const char *cmd)
{
	char path[600];
	int fd, r;

	snprintf(path, sizeof(path), "%s/ctl", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	r = write(fd, cmd, strlen(cmd));
	r = r < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int read_file(const char *name, char *buf, size_t len)
{
	char path[600];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static int parse_info(void)
{
	char buf[4096], *line, *save;
	char state[32] = "";

	if (read_file("info", buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "subbuf_size %u", &subbuf_size) == 1 ||
		    sscanf(line, "n_subbufs %u", &n_subbufs) == 1 ||
		    sscanf(line, "card %u", &card) == 1 ||
		    sscanf(line, "session %llu", (unsigned long long *)&session) == 1 ||
		    sscanf(line, "driver %31s", driver) == 1 ||
		    sscanf(line, "state %31s", state) == 1)
			continue;
		if (sscanf(line, "anchor %llu %llu", (unsigned long long *)&anchor_real,
			   (unsigned long long *)&anchor_mono) == 2)
			continue;
		if (!strncmp(line, "cpus ", 5)) {
			char *p = line + 5;

			while (*p) {
				unsigned c = strtoul(p, &p, 10);

				if (c < MAXCPU)
					cpus[c].present = 1;
				if (*p == ',')
					p++;
				else
					break;
			}
		}
	}
	printf("DRAIN: info state=%s subbuf_size=%u n_subbufs=%u session=%llu driver=%s\n",
	       state, subbuf_size, n_subbufs, (unsigned long long)session, driver);
	return subbuf_size && n_subbufs ? 0 : -1;
}

static void put(struct cpu *c, const void *rec, size_t len)
{
	fwrite(rec, 1, len, c->out);
	c->records++;
	c->bytes += len;
}

static void note_lost(struct cpu *c, unsigned cpu, uint64_t count, uint64_t first, uint64_t last)
{
	struct grtrace_note_lost l;

	memset(&l, 0, sizeof(l));
	l.hdr.type = GRTRACE_REC_NOTE_LOST;
	l.hdr.size = sizeof(l);
	l.hdr.cpu = cpu;
	l.hdr.time_ns = last;
	l.lost_cpu = cpu;
	l.source = GRTRACE_LOST_KERNEL;
	l.count = count;
	l.first_ns = first;
	l.last_ns = last;
	put(c, &l, sizeof(l));
	c->lost_total += count;
}

static void open_stream(unsigned cpu, const char *base)
{
	struct grtrace_stream_header h;

	cpus[cpu].out = open_cpu_out(base, ".grtrace.", cpu);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, GRTRACE_STREAM_MAGIC, 8);
	h.byte_order = GRTRACE_BYTE_ORDER_LITTLE;
	h.version_major = GRTRACE_VERSION_MAJOR;
	h.version_minor = GRTRACE_VERSION_MINOR;
	h.header_size = GRTRACE_STREAM_HEADER_SIZE;
	h.clock_id = GRTRACE_CLOCK_MONOTONIC;
	h.cpu = cpu;
	h.card = card;
	h.session_id = session;
	h.anchor_realtime_ns = anchor_real;
	h.anchor_clock_ns = anchor_mono;
	memcpy(h.driver, driver, strnlen(driver, sizeof(h.driver)));
	fwrite(&h, 1, sizeof(h), cpus[cpu].out);
}

/*
 * copy and check the records in [from, to) of one sub-buffer; checked records are
 * written a stretch at a time (one fwrite), split where a NOTE_LOST goes in
 */
static void copy_records(struct cpu *c, unsigned cpu, const uint8_t *sb, uint32_t from, uint32_t to)
{
	uint32_t run = from;

	while (from < to) {
		const struct grtrace_record_header *r = (const void *)(sb + from);

		if (to - from < sizeof(*r) || r->size < 32 || r->size % 8 || r->size > to - from) {
			printf("DRAIN: BAD record cpu=%u subbuf=%llu off=%u size=%u\n", cpu,
			       (unsigned long long)c->expected, from, r->size);
			bad++;
			break;
		}
		if (r->cpu != cpu || r->seq != c->last_seq + 1 || r->time_ns < c->last_ns) {
			printf("DRAIN: BAD order cpu=%u rec.cpu=%u seq=%llu expected=%llu time=%llu last=%llu\n",
			       cpu, r->cpu, (unsigned long long)r->seq,
			       (unsigned long long)c->last_seq + 1, (unsigned long long)r->time_ns,
			       (unsigned long long)c->last_ns);
			bad++;
		}
		if (r->type == GRTRACE_REC_EVENT)
			c->events++;
		else if (r->type >= GRTRACE_REC_NOTE_PROCESS && r->type <= GRTRACE_REC_NOTE_MSG)
			c->notes++;
		else {
			printf("DRAIN: BAD type %u cpu=%u\n", r->type, cpu);
			bad++;
		}
		if (c->pend_lost) {
			fwrite(sb + run, 1, from - run, c->out);
			run = from;
			note_lost(c, cpu, c->pend_lost, c->last_ns, r->time_ns);
			c->pend_lost = 0;
		}
		c->last_seq = r->seq;
		c->last_ns = r->time_ns;
		c->records++;
		c->bytes += r->size;
		c->kernel_records++;
		from += r->size;
	}
	fwrite(sb + run, 1, from - run, c->out);
}

static void drain_cpu(unsigned cpu)
{
	struct cpu *c = &cpus[cpu];
	unsigned released = 0;
	char buf[64];

	for (;;) {
		uint8_t *sb = c->map + (c->expected % n_subbufs) * (uint64_t)subbuf_size;
		struct grtrace_subbuf_header *h = (void *)sb;
		uint32_t flags, commit;

		if (h->magic != GRTRACE_SUBBUF_MAGIC ||
		    __atomic_load_n(&h->subbuf_seq, __ATOMIC_ACQUIRE) != c->expected)
			break;
		if (c->cursor == 0) {
			c->cursor = h->header_size;
			c->pend_lost += h->lost;
			c->subbufs++;
		}
		flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
		commit = __atomic_load_n(&h->commit, __ATOMIC_ACQUIRE);
		if (commit > subbuf_size || commit < c->cursor) {
			printf("DRAIN: BAD commit %u cpu=%u\n", commit, cpu);
			bad++;
			break;
		}
		copy_records(c, cpu, sb, c->cursor, commit);
		c->cursor = commit;
		if (!(flags & GRTRACE_SUBBUF_FINAL))
			break;
		if (commit + h->padding != subbuf_size) {
			printf("DRAIN: BAD padding cpu=%u commit=%u padding=%u\n", cpu, commit, h->padding);
			bad++;
		}
		c->expected++;
		c->cursor = 0;
		released++;
	}
	if (released) {
		int n = snprintf(buf, sizeof(buf), "%u %u\n", cpu, released);

		if (write(consumed_fd, buf, n) != n) {
			printf("DRAIN: consumed write failed: %s\n", strerror(errno));
			bad++;
		}
	}
}

/* the drain's own CPU time, user and system, in microseconds */
static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *root = "/sys/kernel/debug", *devname = "card0", *base = "trace";
	unsigned long sb = 262144, nsb = 8;
	double wait_s = 0;
	int opt, existing = 0, r;
	char buf[4096], cmd[256], *line, *save;
	uint64_t dropped = 0, t_end;
	unsigned cpu;

	while ((opt = getopt(argc, argv, "r:d:o:b:n:w:x")) != -1) {
		switch (opt) {
		case 'r': root = optarg; break;
		case 'd': devname = optarg; break;
		case 'o': base = optarg; break;
		case 'b': sb = strtoul(optarg, NULL, 0); break;
		case 'n': nsb = strtoul(optarg, NULL, 0); break;
		case 'w': wait_s = atof(optarg); break;
		case 'x': existing = 1; break;
		default:
			fprintf(stderr, "usage: %s [-r root] [-d cardN] [-o base] [-b subbuf] [-n count] [-w s] [-x]\n", argv[0]);
			return 2;
		}
	}
	snprintf(dir, sizeof(dir), "%s/grtrace/%s", root, devname);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!existing) {
		snprintf(cmd, sizeof(cmd), "setup subbuf_size=%lu n_subbufs=%lu\n", sb, nsb);
		r = ctl(cmd);
		if (r) {
			printf("DRAIN: setup failed: %s\n", strerror(-r));
			return 1;
		}
	}
	if (parse_info())
		return 1;
	snprintf(buf, sizeof(buf), "%s/consumed", dir);
	consumed_fd = open(buf, O_WRONLY);
	if (consumed_fd < 0) {
		perror(buf);
		return 1;
	}
	/* resume where a previous consumer stopped */
	if (!read_file("state", buf, sizeof(buf)))
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned long long prod, cons, pend;

			if (sscanf(line, "%u %llu %llu %llu", &cpu, &prod, &cons, &pend) == 4 && cpu < MAXCPU)
				cpus[cpu].expected = cons;
		}
	for (cpu = 0; cpu < MAXCPU; cpu++) {
		char path[600];
		int fd;

		if (!cpus[cpu].present)
			continue;
		snprintf(path, sizeof(path), "%s/trace%u", dir, cpu);
		fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		cpus[cpu].map = mmap(NULL, (size_t)subbuf_size * n_subbufs, PROT_READ, MAP_SHARED, fd, 0);
		if (cpus[cpu].map == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		close(fd);
		open_stream(cpu, base);
	}
	if (!existing && (r = ctl("start\n"))) {
		printf("DRAIN: start failed: %s\n", strerror(-r));
		return 1;
	}
	t_end = wait_s > 0 ? now_ns() + (uint64_t)(wait_s * 1e9) : 0;
	while (!existing && !stop_flag && (!t_end || now_ns() < t_end)) {
		for (cpu = 0; cpu < MAXCPU; cpu++)
			if (cpus[cpu].present)
				drain_cpu(cpu);
		usleep(20000);
	}
	if (!existing)
		ctl("stop\n");
	for (cpu = 0; cpu < MAXCPU; cpu++)
		if (cpus[cpu].present)
			drain_cpu(cpu);
	/* records refused since the last sub-buffer switch */
	if (!read_file("state", buf, sizeof(buf)))
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned long long prod, cons, pend;

			if (sscanf(line, "%u %llu %llu %llu", &cpu, &prod, &cons, &pend) == 4 &&
			    cpu < MAXCPU && cpus[cpu].present && pend)
				cpus[cpu].pend_lost += pend;
		}
	if (!read_file("dropped", buf, sizeof(buf)))
		dropped = strtoull(buf, NULL, 10);
	{
		uint64_t lost = 0, recs = 0;

		for (cpu = 0; cpu < MAXCPU; cpu++) {
			struct cpu *c = &cpus[cpu];
			struct grtrace_note_stream_info si;

			if (!c->present)
				continue;
			if (c->pend_lost)
				note_lost(c, cpu, c->pend_lost, c->last_ns, c->last_ns);
			memset(&si, 0, sizeof(si));
			si.hdr.type = GRTRACE_REC_NOTE_STREAM_INFO;
			si.hdr.size = sizeof(si);
			si.hdr.cpu = cpu;
			si.hdr.time_ns = c->last_ns;
			si.kernel_dropped = dropped;
			si.records = c->records;
			si.bytes = c->bytes;
			si.info_flags = GRTRACE_INFO_STOPPED_CLEANLY;
			fwrite(&si, 1, sizeof(si), c->out);
			bad += close_cpu_out("grtrace-drain", c->out, cpu);
			printf("DRAIN: cpu %u subbufs=%llu records=%llu events=%llu notes=%llu lost=%llu last_seq=%llu\n",
			       cpu, (unsigned long long)c->subbufs,
			       (unsigned long long)c->kernel_records, (unsigned long long)c->events,
			       (unsigned long long)c->notes, (unsigned long long)c->lost_total,
			       (unsigned long long)c->last_seq);
			lost += c->lost_total;
			recs += c->kernel_records;
		}
		printf("DRAIN: TOTAL records=%llu lost=%llu dropped=%llu bad=%ld cpu_us=%llu\n",
		       (unsigned long long)recs, (unsigned long long)lost,
		       (unsigned long long)dropped, bad, (unsigned long long)cpu_us());
		ctl("teardown\n");
		return bad || lost != dropped ? 1 : 0;
	}
}
