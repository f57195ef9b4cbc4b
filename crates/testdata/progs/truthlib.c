/* A dlopen()ed library for truth.c: the marked call is made from here. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static void lib_leaf(int how)
{
	void *chain[128];
	int n = backtrace(chain, 128);

	if (how & 1)
		write(-1, chain, 8 * n);
	else
		syscall(SYS_getppid, chain, n);
}

__attribute__((noinline)) static void lib_mid(int d, int how)
{
	if (d == 0)
		lib_leaf(how);
	else
		lib_mid(d - 1, how);
	sink += d;
}

void lib_work(int how)
{
	lib_mid(5, how);
}
