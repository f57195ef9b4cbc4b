/* Frame-pointer test program: a known call chain that makes syscalls. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

__attribute__((noinline)) void level3(int n)
{
	for (int i = 0; i < n; i++) {
		long ret;

		/* Inline, so that the innermost user frame is level3 itself */
		__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_getppid)
				 : "rcx", "r11", "memory");
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level2(int n)
{
	level3(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level1(int n)
{
	level2(n);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;

	printf("FP-PROG pid=%d level1=%p level2=%p level3=%p main=%p\n", getpid(),
	       (void *)level1, (void *)level2, (void *)level3, (void *)main);
	fflush(stdout);
	level1(n);
	if (argc > 2)
		sleep(atoi(argv[2]));
	return 0;
}
