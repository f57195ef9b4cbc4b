/* One program for several cases, by its first argument:
 *   plain N     make N syscalls from the call chain, then exit;
 *   fork N      fork without exec: parent and child both do it;
 *   forkexec N  fork, the child execs this program (plain), the parent
 *               does it too. */
#include <string.h>
#include <sys/wait.h>
#include "gt.h"

static void run(int loops)
{
	for (int i = 0; i < loops; i++)
		gt_depth1();
	gt_maps();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	const char *n = argc > 2 ? argv[2] : "50";
	pid_t child = -1;

	if (!strcmp(mode, "fork")) {
		child = fork();
	} else if (!strcmp(mode, "forkexec")) {
		child = fork();
		if (child == 0) {
			execl("/proc/self/exe", argv[0], "plain", n, (char *)NULL);
			_exit(127);
		}
	}
	run(atoi(n));
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
}
