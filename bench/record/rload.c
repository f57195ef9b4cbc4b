// SPDX-License-Identifier: GPL-2.0
/*
 * rload: the load of bench/record.sh, run under each recorder in the guest.
 *
 *   rload N OUTFILE
 *
 * Makes N getppid calls through a raw `syscall` instruction (no libc
 * wrapper, no vDSO: every call is one kernel entry and, with raw_syscalls
 * enabled, exactly two events), then writes one line to OUTFILE:
 *
 *   ls=<start ns> le=<end ns> calls=<N> ns_call=<ns per call> lcpu_us=<CPU us>
 *
 * ls/le are CLOCK_MONOTONIC at the start of main and after the loop (under
 * QEMU -icount, guest nanoseconds are guest instructions); lcpu_us is this
 * process's own user+system time (getrusage), exec included, so that the
 * recorder's share can be told from the load's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define NR_GETPPID 110

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long long ls = now_ns(), le, us;
	long n, i, ret;
	struct rusage ru;
	FILE *out;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: rload N OUTFILE\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		asm volatile("syscall" : "=a"(ret) : "0"((long)NR_GETPPID) : "rcx", "r11", "memory");
	le = now_ns();
	getrusage(RUSAGE_SELF, &ru);
	us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
	     ru.ru_stime.tv_usec;
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "ls=%lld le=%lld calls=%ld ns_call=%lld lcpu_us=%lld\n", ls, le, n,
		(le - ls) / n, us);
	return fclose(out) ? 1 : 0;
}
