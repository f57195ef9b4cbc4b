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
 * With TRUTH_OUT set, each chain is also written, after its call, as a line
 * "tid n addr..." (hex) to that file: for tracers that cannot read the
 * arguments (a recording in a guest).
 *
 * The vdso case's marked call, clock_gettime(CLOCK_PROCESS_CPUTIME_ID),
 * is made by the vDSO (it has no fast path for that clock), and its chain
 * cannot ride in the arguments: the program announces once where it keeps
 * its latest chain, write(-2, &latest, 16), and the tracer reads it there.
 *
 * usage: truth CASE   (recurse, qsort, dlopen LIB, deep, signal, vdso)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX 128
#define NOINLINE __attribute__((noinline))

static int depth_of_recursion = 40;
static int truth_fd = -1;

/* Writes a chain to TRUTH_OUT, after the marked call. */
static void tell(void **chain, int n)
{
	char line[MAX * 20 + 32];
	int i, len;

	if (truth_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%ld %d", (long)gettid(), n);
	for (i = 0; i < n; i++)
		len += snprintf(line + len, sizeof(line) - len, " %lx", (unsigned long)chain[i]);
	line[len++] = '\n';
	write(truth_fd, line, len);
}

NOINLINE static void work(int how)
{
	void *chain[MAX];
	int n = backtrace(chain, MAX);

	if (how & 1)
		write(-1, chain, 8 * n);
	else
		syscall(SYS_getppid, chain, n);
	tell(chain, n);
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
	tell(chain, n);
	return *(const int *)a - *(const int *)b;
}

static struct {
	void **chain;
	long n;
} latest;

NOINLINE static void work_vdso(void)
{
	void *chain[MAX];
	struct timespec ts;

	latest.chain = chain;
	latest.n = backtrace(chain, MAX);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	tell(chain, latest.n);
}

NOINLINE static void vdso_at(int d)
{
	if (d == 0)
		work_vdso();
	else
		vdso_at(d - 1);
	sink += d;
}

/* The marked calls of the signal case are made from a signal handler,
 * so that the unwinder goes through the signal frame (__restore_rt). */
static void on_signal(int sig)
{
	work(sig & 1);
	work((sig & 1) + 1);
}

NOINLINE static void signal_at(int d)
{
	if (d == 0)
		raise(SIGUSR1);
	else
		signal_at(d - 1);
	sink += d;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "recurse";
	const char *out = getenv("TRUTH_OUT");

	if (out)
		truth_fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

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
	} else if (!strcmp(what, "vdso")) {
		write(-2, &latest, sizeof(latest));
		vdso_at(5);
		vdso_at(7);
	} else if (!strcmp(what, "signal")) {
		signal(SIGUSR1, on_signal);
		signal_at(10);
	} else if (!strcmp(what, "deep")) {
		depth_of_recursion = 200;
		thread_main((void *)1);
	} else {
		return 2;
	}
	return 0;
}
