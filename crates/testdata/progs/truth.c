/*
 * Ground truth for the unwinder: before each marked system call a
 * function records its own call chain with glibc's backtrace() (libgcc's
 * CFI unwinder, not ours) and hands it to the tracer in the call's
 * arguments:
 *   write(-1, chain, 8 * n)             through libc's write wrapper
 *   syscall(SYS_getppid, chain, n)      through libc's syscall wrapper
 * The tracer (tests/common) stops at the call, snapshots the stack and
 * checks the unwound stack against the chain.
 *
 * usage: truth CASE   (recurse, qsort, dlopen LIB, deep)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX 256
#define NOINLINE __attribute__((noinline))

static int depth_of_recursion = 40;

NOINLINE static void work(int how)
{
	void *chain[MAX];
	int n = backtrace(chain, MAX);

	if (how & 1)
		write(-1, chain, 8 * n);
	else
		syscall(SYS_getppid, chain, n);
}

/* Keeps the recursion from becoming a loop or a tail call. */
static volatile int sink;

NOINLINE static void recurse(int d, int how)
{
	if (d == 0)
		work(how);
	else
		recurse(d - 1, how);
	sink += d;
}

static void *thread_main(void *arg)
{
	int i;

	for (i = 0; i < 3; i++)
		recurse(depth_of_recursion, (int)(long)arg + i);
	return NULL;
}

NOINLINE static int compare(const void *a, const void *b)
{
	void *chain[MAX];
	int n = backtrace(chain, MAX);

	write(-1, chain, 8 * n);
	return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "recurse";

	if (!strcmp(what, "recurse")) {
		pthread_t t[4];
		long i;

		for (i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)i);
		for (i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		thread_main(0);
	} else if (!strcmp(what, "qsort")) {
		int v[] = { 5, 3, 9, 1, 7, 2 };

		qsort(v, 6, sizeof(v[0]), compare);
	} else if (!strcmp(what, "dlopen") && argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW);
		void (*f)(int);

		if (!h)
			return 2;
		f = (void (*)(int))dlsym(h, "lib_work");
		if (!f)
			return 2;
		f(3);
		f(4);
	} else if (!strcmp(what, "deep")) {
		depth_of_recursion = 200;
		thread_main((void *)1);
	} else {
		return 2;
	}
	return 0;
}
