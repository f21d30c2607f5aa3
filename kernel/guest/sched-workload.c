/*
 * sched-workload: the drm_sched workload of the grtrace test guest.  Drives
 * the vsched test GPU (patch 13: two rings, each a drm_gpu_scheduler with 2
 * credits, engines that are timers) through its uapi, in a known pattern, so
 * that the host can check what grtrace recorded against the truth.
 *
 * Three contexts (open files) A, B, C; per round:
 *
 *   L   A gfx   30 ms                   the long job ahead of short ones
 *   s1  B gfx    2 ms                   s1 runs behind L on the engine;
 *   s2  B gfx    2 ms                   s2 and s3 wait for a credit (queue
 *   s3  B gfx    2 ms                   time) until L is done
 *   X   C copy   5 ms  deps L           cross ring: waits for L's finished
 *                                       fence (drm_sched_entity_wakeup)
 *   Y   B copy   2 ms  deps X           same ring, other entity: the scheduler
 *                                       waits for X's *scheduled* fence only
 *   M   A gfx    2 ms  deps L           same entity: the dependency is ignored
 *   P   C gfx    2 ms  deps Y of the previous round (already signalled: no wait)
 *   F   A copy   1 ms                   the engine fails it: END with -EIO
 *
 * then every job's out-syncobj is waited for.  One line per job on stdout:
 *   JOB <round> <label> <ctx A|B|C> <ring> <fence context> <fence seqno>
 *       <sched job id> <deps: label@round,... or ->
 * and "DONE jobs=N rounds=R us=T" at the end.  Exit 0 iff every ioctl and wait
 * succeeded.
 *
 * Build: gcc -static -O2 -I<drm uapi> -I<drm uapi>/drm sched-workload.c
 * Usage: sched-workload [rounds] [/dev/dri/cardN]   (default: the vsched card)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <drm/drm.h>
#include <drm/vsched_drm.h>

#include "guest.h"

#define NCTX 3
#define MAX_ROUNDS 256

struct job {
	const char *label;
	int ctx;		/* 0 A, 1 B, 2 C */
	uint32_t ring;
	uint32_t exec_us;
	const char *dep;	/* label in this round, "Y@prev" = Y of the previous */
	uint32_t flags;		/* VSCHED_SUBMIT_* */
	uint32_t syncobj;	/* on ctx's file */
	struct drm_vsched_submit s;
};

static const struct job pattern[] = {
	{ "L", 0, VSCHED_RING_GFX, 30000, NULL },
	{ "s1", 1, VSCHED_RING_GFX, 2000, NULL },
	{ "s2", 1, VSCHED_RING_GFX, 2000, NULL },
	{ "s3", 1, VSCHED_RING_GFX, 2000, NULL },
	{ "X", 2, VSCHED_RING_COPY, 5000, "L" },
	{ "Y", 1, VSCHED_RING_COPY, 2000, "X" },
	{ "M", 0, VSCHED_RING_GFX, 2000, "L" },
	{ "P", 2, VSCHED_RING_GFX, 2000, "Y@prev" },
	{ "F", 0, VSCHED_RING_COPY, 1000, NULL, VSCHED_SUBMIT_FAULT },
};
#define NJOBS (sizeof(pattern) / sizeof(pattern[0]))

static int fds[NCTX];

static int xioctl(int fd, unsigned long req, void *arg, const char *what)
{
	return xioctl_as("sched-workload", fd, req, arg, what);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* the first /dev/dri/cardN whose driver is vsched */
static int open_vsched(char *path, size_t len)
{
	for (int i = 0; i < 16; i++) {
		char name[32] = "";
		struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
		int fd;

		snprintf(path, len, "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, "vsched") == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* handle, on context @to's file, of the syncobj @from_handle of context @from */
static int share(int from, uint32_t from_handle, int to, uint32_t *out)
{
	struct drm_syncobj_handle h = { .handle = from_handle };
	struct drm_syncobj_handle g = { 0 };

	if (from == to) {
		*out = from_handle;
		return 0;
	}
	if (xioctl(fds[from], DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h, "SYNCOBJ_HANDLE_TO_FD"))
		return -1;
	g.fd = h.fd;
	if (xioctl(fds[to], DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &g, "SYNCOBJ_FD_TO_HANDLE")) {
		close(h.fd);
		return -1;
	}
	close(h.fd);
	*out = g.handle;
	return 0;
}

static struct job *find(struct job *round, const char *label)
{
	for (size_t i = 0; i < NJOBS; i++)
		if (strcmp(round[i].label, label) == 0)
			return &round[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static struct job jobs[MAX_ROUNDS][NJOBS];
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	char path[64];
	int n = 0;
	uint64_t t0;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: sched-workload [rounds 1..%d] [/dev/dri/cardN]\n", MAX_ROUNDS);
		return 2;
	}
	if (argc > 2) {
		snprintf(path, sizeof(path), "%s", argv[2]);
		fds[0] = open(path, O_RDWR | O_CLOEXEC);
	} else {
		fds[0] = open_vsched(path, sizeof(path));
	}
	if (fds[0] < 0) {
		fprintf(stderr, "sched-workload: no vsched device (%s)\n", argc > 2 ? path : "/dev/dri/card*");
		return 1;
	}
	for (int c = 1; c < NCTX; c++) {
		fds[c] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[c] < 0) {
			perror(path);
			return 1;
		}
	}
	t0 = now_ns();
	for (int r = 0; r < rounds; r++) {
		struct job *round = jobs[r];

		memcpy(round, pattern, sizeof(pattern));
		for (size_t i = 0; i < NJOBS; i++) {
			struct job *j = &round[i];
			struct drm_syncobj_create sc = { 0 };
			uint32_t in[1];
			uint32_t n_in = 0;

			if (j->dep) {
				const struct job *d = strcmp(j->dep, "Y@prev") == 0 ?
					(r > 0 ? find(jobs[r - 1], "Y") : NULL) :
					find(round, j->dep);

				if (d && share(d->ctx, d->syncobj, j->ctx, &in[n_in++]))
					return 1;
				if (!d)
					j->dep = NULL;
			}
			if (xioctl(fds[j->ctx], DRM_IOCTL_SYNCOBJ_CREATE, &sc, "SYNCOBJ_CREATE"))
				return 1;
			j->syncobj = sc.handle;
			j->s = (struct drm_vsched_submit) {
				.in_syncs = (uintptr_t)in, .n_in_syncs = n_in,
				.out_sync = j->syncobj, .ring = j->ring, .exec_us = j->exec_us,
				.flags = j->flags,
			};
			if (xioctl(fds[j->ctx], DRM_IOCTL_VSCHED_SUBMIT, &j->s, "VSCHED_SUBMIT"))
				return 1;
			n++;
		}
		for (size_t i = 0; i < NJOBS; i++) {
			struct job *j = &round[i];
			struct drm_syncobj_wait w = {
				.handles = (uintptr_t)&j->syncobj, .count_handles = 1,
				.timeout_nsec = (int64_t)(now_ns() + 20000000000ull),
				.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
			};

			if (xioctl(fds[j->ctx], DRM_IOCTL_SYNCOBJ_WAIT, &w, "SYNCOBJ_WAIT"))
				return 1;
		}
	}
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < NJOBS; i++) {
			const struct job *j = &jobs[r][i];

			printf("JOB %d %s %c %u %llu %llu %llu %s%s\n", r, j->label, 'A' + j->ctx,
			       j->ring, (unsigned long long)j->s.fence_context,
			       (unsigned long long)j->s.fence_seqno,
			       (unsigned long long)j->s.job_id, j->dep ? j->dep : "-",
			       j->dep && strcmp(j->dep, "Y@prev") != 0 ? "@this" : "");
		}
	}
	printf("DONE jobs=%d rounds=%d us=%llu\n", n, rounds,
	       (unsigned long long)((now_ns() - t0) / 1000));
	return 0;
}
