/* A shared library with its own call chain down to getppid(2). */
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) void lib_leaf(void) { syscall(SYS_getppid); asm volatile(""); }
__attribute__((noinline)) void lib_depth2(void) { lib_leaf(); asm volatile(""); }
__attribute__((noinline)) void lib_depth1(void) { lib_depth2(); asm volatile(""); }

void lib_run(int loops)
{
	for (int i = 0; i < loops; i++)
		lib_depth1();
}
