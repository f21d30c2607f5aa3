/*
 * What the guest programs share.  Each is built alone, static, by
 * mkinitramfs.sh; a program includes this after the C library's headers.
 */
#ifndef GRT_GUEST_H
#define GRT_GUEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

/*
 * ioctl(), again while it is interrupted or the device is busy; a failure is
 * said on stderr as "PROG: WHAT: error".
 */
static inline int xioctl_as(const char *prog, int fd, unsigned long req,
			    void *arg, const char *what)
{
	int r;

	do {
		r = ioctl(fd, req, arg);
	} while (r == -1 && (errno == EINTR || errno == EAGAIN));
	if (r)
		fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	return r;
}

/*
 * The output file of CPU cpu's records, BASE SUFFIX CPU ("run.grtrace.0"),
 * or /dev/null itself for -o /dev/null: every page parsed, none kept (the
 * transport benchmark).  Exits 1 if it cannot be opened.
 */
static inline FILE *open_cpu_out(const char *base, const char *suffix,
				 unsigned int cpu)
{
	char path[600];
	FILE *f;

	if (!strcmp(base, "/dev/null"))
		snprintf(path, sizeof(path), "%s", base);
	else
		snprintf(path, sizeof(path), "%s%s%u", base, suffix, cpu);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

/*
 * Closes a file open_cpu_out() opened; 1 (said on stderr as "PROG: cpu N:
 * writing failed") if any write to it failed, so that the program does not
 * end as if its output were whole.
 */
static inline int close_cpu_out(const char *prog, FILE *f, unsigned int cpu)
{
	int failed = ferror(f);

	if (fclose(f))
		failed = 1;
	if (failed)
		fprintf(stderr, "%s: cpu %u: writing failed\n", prog, cpu);
	return failed;
}

#endif
