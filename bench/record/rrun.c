// SPDX-License-Identifier: GPL-2.0
/*
 * rrun: runs one recorder command in the bench/record.sh guest and prints
 * how long it ran and the CPU it used.
 *
 *   rrun COMMAND [ARGS...]
 *
 * prints on stdout:
 *
 *   t0=<ns> t1=<ns> cpu_us=<us> rc=<exit status>
 *
 * t0 is CLOCK_MONOTONIC just before the fork, t1 once wait4() returned;
 * cpu_us is the user+system time wait4() reports for the command: its own
 * threads plus every descendant it waited for (trace-cmd's per-CPU recorder
 * processes, the traced load). The load's own share is subtracted by the
 * caller (rload reports it).
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long long t0, t1, us;
	struct rusage ru;
	int st = 0, rc;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: rrun COMMAND [ARGS...]\n");
		return 2;
	}
	fflush(stdout);
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) < 0) {
		perror("wait4");
		return 1;
	}
	t1 = now_ns();
	us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
	     ru.ru_stime.tv_usec;
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("t0=%lld t1=%lld cpu_us=%lld rc=%d\n", t0, t1, us, rc);
	return 0;
}
