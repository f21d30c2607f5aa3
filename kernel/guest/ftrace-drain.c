/*
 * ftrace-drain: the ftrace side of the transport benchmark (bench mode of
 * guest/init), drained the way grtrace-drain drains the relay buffers: every
 * POLL_MS milliseconds, every CPU's trace_pipe_raw of a tracefs instance is
 * read until empty, each page is written to BASE.<cpu> and parsed.
 *
 * It counts, per CPU: pages, events of the benchmark's event id (-e, from
 * events/vsched/vsched_bench/id), the events the ring buffer says it lost
 * (the page header's missed-events count, where it was stored; pages flagged
 * as missing an unknown count are counted apart), and the gaps in each
 * generating CPU's seqno sequence (the payload's ctx is the generator's CPU,
 * its seqno counts from 0), an account of losses independent of ftrace's own.
 *
 * The page layout is that of a 64-bit kernel (header_page): u64 timestamp,
 * local_t commit (data length, bit 31 missed events, bit 30 count stored
 * after the data), data from byte 16.
 *
 * usage: ftrace-drain -i INSTANCE_DIR -e EVENT_ID [-o BASE] [-p POLL_MS]
 *   -o /dev/null  parse every page but keep none
 * Prints "FDRAIN: ready" once a signal stops it; stops on SIGINT/SIGTERM
 * after a last pass.  Prints "FDRAIN: ..." lines;
 * exit 0 when every page parsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "guest.h"

#define MAXCPU 64
#define PAGE 4096
#define MISSED_EVENTS (1ULL << 31)
#define MISSED_STORED (1ULL << 30)
#define COMMIT_MASK ((1ULL << 30) - 1)

struct cpu {
	int fd;
	FILE *out;
	uint64_t pages, events, bench, missed, missed_unknown, bad;
};

static struct cpu cpus[MAXCPU];
/* next seqno expected from each generating CPU (the payload's ctx) */
static uint64_t expect[MAXCPU], gaps, disorder;
static unsigned int event_id;
static volatile sig_atomic_t stop_flag;

/* the drain's own CPU time, user and system, in microseconds */
static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void bench_event(const uint8_t *data, uint32_t len)
{
	uint32_t ctx;
	uint64_t seqno;

	if (len < 24)
		return;
	ctx = u32_at(data + 8);
	seqno = u64_at(data + 16);
	if (ctx >= MAXCPU)
		return;
	if (seqno > expect[ctx])
		gaps += seqno - expect[ctx];
	else if (seqno < expect[ctx])
		disorder++;
	expect[ctx] = seqno + 1;
}

/* one ring-buffer page: its events, counted */
static void parse_page(struct cpu *c, const uint8_t *page, size_t n)
{
	uint64_t commit, len;
	const uint8_t *p = page + 16, *end;

	c->pages++;
	if (n < 16) {
		c->bad++;
		return;
	}
	commit = u64_at(page + 8);
	len = commit & COMMIT_MASK;
	if (16 + len > n) {
		c->bad++;
		return;
	}
	end = page + 16 + len;
	if (commit & MISSED_STORED && 16 + len + 8 <= n)
		c->missed += u64_at(end);
	else if (commit & MISSED_EVENTS)
		c->missed_unknown++;
	while (p + 4 <= end) {
		uint32_t h = u32_at(p), type_len = h & 31, size;
		const uint8_t *data;

		if (type_len == 29) {			/* padding */
			if (!(h >> 5))
				break;			/* the rest of the page */
			if (p + 8 > end) {
				c->bad++;
				return;
			}
			size = 4 + u32_at(p + 4);
			/* a length past the page, or one that wrapped */
			if (size < 8 || size > (size_t)(end - p)) {
				c->bad++;
				return;
			}
		} else if (type_len >= 30) {		/* time extend, time stamp */
			size = 8;
		} else {
			if (type_len) {
				size = 4 + type_len * 4;
				data = p + 4;
			} else {
				if (p + 8 > end) {
					c->bad++;
					return;
				}
				size = 4 + u32_at(p + 4);
				data = p + 8;
			}
			/* the event's data holds at least its common type */
			if (size < 8 || size > (size_t)(end - p) ||
			    p + size - data < 4) {
				c->bad++;
				return;
			}
			c->events++;
			if ((u32_at(data) & 0xffff) == event_id) {
				c->bench++;
				bench_event(data, (uint32_t)(p + size - data));
			}
		}
		p += size;
	}
}

static void drain(unsigned int cpu)
{
	struct cpu *c = &cpus[cpu];
	uint8_t page[PAGE];
	ssize_t n;

	while ((n = read(c->fd, page, sizeof(page))) > 0) {
		if (c->out)
			fwrite(page, 1, (size_t)n, c->out);
		parse_page(c, page, (size_t)n);
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		c->bad++;
}

int main(int argc, char **argv)
{
	const char *inst = NULL, *base = NULL;
	uint64_t pages = 0, bench = 0, missed = 0, unknown = 0, bad = 0;
	unsigned int cpu, poll_ms = 20;
	char path[512];
	int opt;

	while ((opt = getopt(argc, argv, "i:e:o:p:")) != -1) {
		switch (opt) {
		case 'i': inst = optarg; break;
		case 'e': event_id = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'o': base = optarg; break;
		case 'p': poll_ms = (unsigned int)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s -i instance -e event_id [-o base] [-p poll_ms]\n", argv[0]);
			return 2;
		}
	}
	if (!inst || !event_id) {
		fprintf(stderr, "usage: %s -i instance -e event_id [-o base] [-p poll_ms]\n", argv[0]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (cpu = 0; cpu < MAXCPU; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", inst, cpu);
		cpus[cpu].fd = open(path, O_RDONLY | O_NONBLOCK);
		if (cpus[cpu].fd < 0)
			continue;
		if (base)
			cpus[cpu].out = open_cpu_out(base, ".", cpu);
	}
	/*
	 * The handlers are in place: the caller may start the run now.  A shell's
	 * background job starts with SIGINT ignored, so one sent before this point
	 * would be lost and the drain would never stop.
	 */
	printf("FDRAIN: ready\n");
	fflush(stdout);
	while (!stop_flag) {
		for (cpu = 0; cpu < MAXCPU; cpu++)
			if (cpus[cpu].fd >= 0)
				drain(cpu);
		usleep(poll_ms * 1000);
	}
	for (cpu = 0; cpu < MAXCPU; cpu++) {
		struct cpu *c = &cpus[cpu];

		if (c->fd < 0)
			continue;
		drain(cpu);
		if (c->out)
			c->bad += close_cpu_out("ftrace-drain", c->out, cpu);
		printf("FDRAIN: cpu %u pages=%llu events=%llu bench=%llu missed=%llu missed_unknown=%llu bad=%llu\n",
		       cpu, (unsigned long long)c->pages, (unsigned long long)c->events,
		       (unsigned long long)c->bench, (unsigned long long)c->missed,
		       (unsigned long long)c->missed_unknown, (unsigned long long)c->bad);
		pages += c->pages;
		bench += c->bench;
		missed += c->missed;
		unknown += c->missed_unknown;
		bad += c->bad;
	}
	printf("FDRAIN: TOTAL pages=%llu bench=%llu missed=%llu missed_unknown=%llu gaps=%llu disorder=%llu bad=%llu cpu_us=%llu\n",
	       (unsigned long long)pages, (unsigned long long)bench, (unsigned long long)missed,
	       (unsigned long long)unknown, (unsigned long long)gaps,
	       (unsigned long long)disorder, (unsigned long long)bad,
	       (unsigned long long)cpu_us());
	return bad ? 1 : 0;
}
