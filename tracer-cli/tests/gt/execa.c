/* Fork, then the child makes syscalls from its own call chain (30 times),
 * writes its maps as maps-preexec.<pid> and execs argv[1] ("plain 30"),
 * which maps other code at the same addresses when both are non-PIE. */
#include <sys/wait.h>
#include "gt.h"

__attribute__((noinline)) void a_leaf(void) { syscall(SYS_getppid); asm volatile(""); }
__attribute__((noinline)) void a_two(void) { a_leaf(); asm volatile(""); }
__attribute__((noinline)) void a_one(void) { a_two(); asm volatile(""); }

int main(int argc, char **argv)
{
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < 30; i++)
			a_one();
		gt_maps_named("maps-preexec");
		execl(argv[1], argv[1], "plain", "30", (char *)NULL);
		_exit(127);
	}
	waitpid(child, NULL, 0);
	gt_maps();
	return 0;
}
