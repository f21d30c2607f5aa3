// SPDX-License-Identifier: MIT
/*
 * grtrace-ioctl: checks the session-control ioctls of include/uapi/drm/grtrace.h against
 * the debugfs ctl file, on an idle card (test guest, root).
 *
 * usage: grtrace-ioctl [CARD_INDEX [lockdown]]      (default 0)
 *
 * 1. The same sequence of commands, once through DRM_IOCTL_GRTRACE_* on /dev/dri/cardN and
 *    once through /sys/kernel/debug/grtrace/cardN/ctl, must give the same errno at every
 *    step, and the expected one (EINVAL start while idle, EBUSY second setup, ...).
 * 2. SETUP returns the session id that info shows.
 * 3. The render node refuses the ioctls (EACCES), and so does the primary node once the
 *    caller has dropped root (DRM_ROOT_ONLY: EACCES), while the card stays idle.
 * 4. The trace files of a set-up session are read-only, root included.
 * With "lockdown" (the kernel already locked down, lockdown=integrity or higher): SETUP
 *    fails with EPERM through the ioctl, the ctl file cannot be opened for writing, and
 *    the card stays idle (nothing set up that nobody could drain).
 * Prints "GRT: ioctl ..." lines and "GRT: ioctl check PASS" or "... FAIL"; exit 0 on PASS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <drm/grtrace.h>

static int fails;
static char ctl_path[128], info_path[128];

static void check(int ok, const char *what)
{
	printf("GRT: ioctl %s %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok)
		fails++;
}

enum cmd { SETUP, SETUP_BAD, SETUP_FLAG, SETUP_HUGE, SETUP_MBZ, START, STOP, TEARDOWN };
static const char *const cmd_names[] = {
	"setup", "setup (bad size)", "setup (unknown flag)", "setup (> RAM/4)",
	"setup (must-be-zero field set)", "start", "stop", "teardown",
};

/* 0 or the errno of one command through the ioctl */
static int by_ioctl(int fd, enum cmd c, unsigned long long *session)
{
	struct drm_grtrace_setup s = { .subbuf_size = 8192, .n_subbufs = 4 };
	unsigned long req;
	void *arg = NULL;

	switch (c) {
	case SETUP_BAD:
		s.subbuf_size = 100;
		/* fall through */
	case SETUP:
		req = DRM_IOCTL_GRTRACE_SETUP, arg = &s;
		break;
	case SETUP_FLAG:
		s.flags = GRTRACE_SETUP_KNOWN + 1;
		req = DRM_IOCTL_GRTRACE_SETUP, arg = &s;
		break;
	case SETUP_MBZ:
		/* a filter value without its flag (the ctl file: an event bit of no event) */
		s.pid = 1;
		req = DRM_IOCTL_GRTRACE_SETUP, arg = &s;
		break;
	case SETUP_HUGE:
		s.subbuf_size = GRTRACE_MAX_SUBBUF_SIZE, s.n_subbufs = GRTRACE_MAX_N_SUBBUFS;
		req = DRM_IOCTL_GRTRACE_SETUP, arg = &s;
		break;
	case START:
		req = DRM_IOCTL_GRTRACE_START;
		break;
	case STOP:
		req = DRM_IOCTL_GRTRACE_STOP;
		break;
	default:
		req = DRM_IOCTL_GRTRACE_TEARDOWN;
		break;
	}
	if (ioctl(fd, req, arg))
		return errno;
	if (arg && session)
		*session = s.session;
	return 0;
}

/* 0 or the errno of one command written to ctl */
static int by_ctl(enum cmd c)
{
	static const char *const text[] = {
		[SETUP] = "setup subbuf_size=8192 n_subbufs=4",
		[SETUP_BAD] = "setup subbuf_size=100 n_subbufs=4",
		[SETUP_FLAG] = "setup subbuf_size=8192 n_subbufs=4 colour=red",
		[SETUP_HUGE] = "setup subbuf_size=67108864 n_subbufs=4096",
		[SETUP_MBZ] = "setup subbuf_size=8192 n_subbufs=4 events=1",
		[START] = "start", [STOP] = "stop", [TEARDOWN] = "teardown",
	};
	int fd = open(ctl_path, O_WRONLY), ret = 0;

	if (fd < 0)
		return errno;
	if (write(fd, text[c], strlen(text[c])) < 0)
		ret = errno;
	close(fd);
	return ret;
}

/*
 * The trace files of a set-up session are read-only for everyone, root
 * included: no O_RDWR open, no writable mapping, no mprotect() to writable.
 */
#define TRACE_MAP (8192 * 4)	/* relay maps a whole buffer: SETUP's geometry */

static void check_trace_read_only(int card)
{
	char path[128];
	void *map;
	int fd, e;

	snprintf(path, sizeof(path), "/sys/kernel/debug/grtrace/card%d/trace0", card);
	fd = open(path, O_RDWR);
	e = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	check(e == EPERM, "trace file: O_RDWR open refused (EPERM)");
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		check(0, "trace file: O_RDONLY open");
		return;
	}
	map = mmap(NULL, TRACE_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	check(map == MAP_FAILED, "trace file: writable private mapping refused");
	if (map != MAP_FAILED)
		munmap(map, TRACE_MAP);
	map = mmap(NULL, TRACE_MAP, PROT_READ, MAP_SHARED, fd, 0);
	check(map != MAP_FAILED, "trace file: read-only shared mapping");
	if (map != MAP_FAILED) {
		check(mprotect(map, TRACE_MAP, PROT_READ | PROT_WRITE) && errno == EACCES,
		      "trace file: mprotect() to writable refused (EACCES)");
		munmap(map, TRACE_MAP);
	}
	map = mmap(NULL, TRACE_MAP, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED) {
		check(mprotect(map, TRACE_MAP, PROT_READ | PROT_WRITE) && errno == EACCES,
		      "trace file: mprotect() of a private mapping to writable refused (EACCES)");
		munmap(map, TRACE_MAP);
	}
	close(fd);
}

/* the value of KEY in info, or "" */
static const char *info(const char *key)
{
	static char line[256], val[256];
	FILE *f = fopen(info_path, "r");
	size_t n = strlen(key);

	val[0] = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			snprintf(val, sizeof(val), "%s", line + n + 1);
			val[strcspn(val, "\n")] = 0;
		}
	if (f)
		fclose(f);
	return val;
}

/* the kernel is locked down: SETUP refused, nothing set up */
static int lockdown_check(int fd)
{
	int e = by_ioctl(fd, SETUP, NULL), c = by_ctl(SETUP);
	char what[160];

	snprintf(what, sizeof(what), "locked down: setup ioctl %s (want %s)",
		 e ? strerror(e) : "0", strerror(EPERM));
	check(e == EPERM, what);
	snprintf(what, sizeof(what), "locked down: ctl setup %s (want %s)",
		 c ? strerror(c) : "0", strerror(EPERM));
	check(c == EPERM, what);
	check(!strcmp(info("state"), "idle"), "locked down: card still idle");
	by_ioctl(fd, TEARDOWN, NULL);
	printf("GRT: ioctl lockdown check %s (%d failed)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct { enum cmd c; int err; } seq[] = {
		{ START, EINVAL }, { STOP, 0 }, { TEARDOWN, 0 },
		{ SETUP_BAD, EINVAL }, { SETUP_FLAG, EINVAL }, { SETUP_HUGE, EINVAL },
		{ SETUP_MBZ, EINVAL },
		{ SETUP, 0 }, { SETUP, EBUSY }, { START, 0 }, { START, 0 }, { SETUP, EBUSY },
		{ STOP, 0 }, { STOP, 0 }, { START, 0 }, { STOP, 0 }, { SETUP, EBUSY },
		{ TEARDOWN, 0 }, { TEARDOWN, 0 }, { START, EINVAL },
	};
	int card = argc > 1 ? atoi(argv[1]) : 0, fd, rfd, status;
	unsigned long long session = 0;
	char node[64], what[200];
	unsigned int i;
	pid_t pid;

	snprintf(node, sizeof(node), "/dev/dri/card%d", card);
	snprintf(ctl_path, sizeof(ctl_path), "/sys/kernel/debug/grtrace/card%d/ctl", card);
	snprintf(info_path, sizeof(info_path), "/sys/kernel/debug/grtrace/card%d/info", card);
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("GRT: ioctl FAIL open %s: %s\nGRT: ioctl check FAIL\n", node, strerror(errno));
		return 1;
	}
	/* not the KMS master of a workload that comes later */
	ioctl(fd, DRM_IOCTL_DROP_MASTER, NULL);
	if (argc > 2 && !strcmp(argv[2], "lockdown"))
		return lockdown_check(fd);
	check(!strcmp(info("state"), "idle"), "card idle before the check");

	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		unsigned long long *sp = seq[i].c == SETUP && !seq[i].err ? &session : NULL;
		int ei = by_ioctl(fd, seq[i].c, sp);
		char st[32];

		snprintf(st, sizeof(st), "%s", info("state"));
		if (sp)
			check(session && strtoull(info("session"), NULL, 10) == session,
			      "setup returns the session id info shows");
		snprintf(what, sizeof(what), "step %2u %-21s ioctl %-6s (want %s) -> state %s",
			 i, cmd_names[seq[i].c], ei ? strerror(ei) : "0",
			 seq[i].err ? strerror(seq[i].err) : "0", st);
		check(ei == seq[i].err, what);
	}
	/* the same sequence through ctl, from idle again */
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		int ec = by_ctl(seq[i].c);

		snprintf(what, sizeof(what), "step %2u %-21s ctl   %-6s (want %s, as the ioctl)",
			 i, cmd_names[seq[i].c], ec ? strerror(ec) : "0",
			 seq[i].err ? strerror(seq[i].err) : "0");
		check(ec == seq[i].err, what);
	}
	/* mixed: a session set up through the ioctl is busy for ctl and the other way round */
	check(by_ioctl(fd, SETUP, NULL) == 0 && by_ctl(SETUP) == EBUSY,
	      "ioctl setup, then ctl setup: EBUSY");
	check(by_ctl(TEARDOWN) == 0 && by_ctl(SETUP) == 0 && by_ioctl(fd, SETUP, NULL) == EBUSY,
	      "ctl teardown frees it, ctl setup, then ioctl setup: EBUSY");
	check(by_ioctl(fd, TEARDOWN, NULL) == 0 && !strcmp(info("state"), "idle"),
	      "ioctl teardown of a ctl session: idle");
	check(by_ioctl(fd, SETUP, NULL) == 0, "setup for the trace file checks");
	check_trace_read_only(card);
	check(by_ioctl(fd, TEARDOWN, NULL) == 0, "teardown after the trace file checks");

	/* the render node: refused (no DRM_RENDER_ALLOW) */
	rfd = open("/dev/dri/renderD128", O_RDWR | O_CLOEXEC);
	if (rfd >= 0) {
		int e = by_ioctl(rfd, SETUP, NULL);

		snprintf(what, sizeof(what), "setup on a render node refused: %s",
			 e ? strerror(e) : "accepted");
		check(e == EACCES, what);
		close(rfd);
	}

	/* not root any more, with the primary node still open: DRM_ROOT_ONLY */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int e1, e2;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		e1 = by_ioctl(fd, SETUP, NULL);
		e2 = by_ioctl(fd, STOP, NULL);
		printf("GRT: ioctl as uid 65534: setup %s, stop %s\n",
		       e1 ? strerror(e1) : "accepted", e2 ? strerror(e2) : "accepted");
		fflush(stdout);
		_exit(e1 == EACCES && e2 == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "setup and stop refused without CAP_SYS_ADMIN (EACCES)");
	check(!strcmp(info("state"), "idle"), "card idle after the check");
	close(fd);
	printf("GRT: ioctl check %s (%d failed)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
